"""Registers the lakeformat Airflow plugin (lakeformat/pipeline/airflow/plugin.py) with Airflow's plugin manager."""
from lakeformat.pipeline.airflow.plugin import LakeformatPlugin

__all__ = ["LakeformatPlugin"]
