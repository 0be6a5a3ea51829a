"""Registers the lakeformat plugin (see lakeformat_airflow/plugin.py) with Airflow's plugin manager."""
from lakeformat_airflow.plugin import LakeformatPlugin

__all__ = ["LakeformatPlugin"]
