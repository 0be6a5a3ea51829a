"""The daily maintenance DAG of the pipeline config's tables ($LAKEFORMAT_CONFIG). Built by
lakeformat/pipeline/airflow/dags/maintenance.py."""
from lakeformat.pipeline.airflow.dags.maintenance import build_maintenance_dag
from lakeformat.pipeline.config import load_config

dag = build_maintenance_dag(load_config())
