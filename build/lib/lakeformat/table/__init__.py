"""The façade users hold: ``Catalog`` and ``Table``, the commit that runs post-commit steps, streams
and system tables."""
