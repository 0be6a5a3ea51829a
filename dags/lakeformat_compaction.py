"""The dedicated compaction DAG of the pipeline config's tables ($LAKEFORMAT_CONFIG). Built by
lakeformat/pipeline/airflow/dags/compaction.py."""
from lakeformat.pipeline.airflow.dags.compaction import build_compaction_dag
from lakeformat.pipeline.config import load_config

dag = build_compaction_dag(load_config())
