"""Ingest DAGs, one per table of the pipeline config ($LAKEFORMAT_CONFIG): write-audit-publish
from landing files. Built by lakeformat/pipeline/airflow/dags/ingest.py."""
from lakeformat.pipeline.airflow.dags.ingest import build_ingest_dags
from lakeformat.pipeline.config import load_config

globals().update(build_ingest_dags(load_config()))
