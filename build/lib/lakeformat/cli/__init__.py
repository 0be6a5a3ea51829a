"""The ``lakeformat`` command."""
from lakeformat.cli.main import main

__all__ = ["main"]
