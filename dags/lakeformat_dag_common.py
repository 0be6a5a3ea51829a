"""What the three lakeformat DAG files share (no DAG here; listed in .airflowignore).

Parse-time code stays cheap: the config is YAML read once per parse, and nothing here opens the
warehouse or reads a connection until a task runs. The warehouse a Spark job writes to comes
from the lakeformat connection at run time (``warehouse_macro`` for templated arguments), so
the DAGs and the plugin's operators always agree on it.
"""
from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from airflow.sdk import Asset, task

from lakeformat.pipeline import PROJECT_ROOT, PipelineConfig, TableSpec, asset_name, asset_uri

START_DATE = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)   # catchup is off: only a lower bound
DEFAULT_ARGS = {"owner": "lakeformat", "retries": 1, "retry_delay": dt.timedelta(minutes=1)}


def jobs_dir() -> Path:
    """The spark-submit entry points: ``$LAKEFORMAT_JOBS`` or the project's ``jobs/``."""
    return Path(os.environ.get("LAKEFORMAT_JOBS") or PROJECT_ROOT / "jobs")


def job(name: str) -> str:
    return str(jobs_dir() / f"{name}.py")


def table_asset(spec: TableSpec, config: PipelineConfig) -> Asset:
    """The Asset an ingest run updates when it publishes into ``spec``'s table."""
    return Asset(name=asset_name(spec), uri=asset_uri(spec, config.connection),
                 extra={"table": spec.identifier})


def catalog_settings(conn_id: str):
    """The connection's warehouse and options (at run time, in a task)."""
    from lakeformat_airflow.hooks import LakeformatHook
    return LakeformatHook(conn_id).settings()


def warehouse_of(conn_id: str) -> str:
    """The warehouse of a lakeformat connection, absolute when it is a local path (Spark jobs
    may run in another working directory)."""
    wh = catalog_settings(conn_id).warehouse
    return wh if "://" in wh else os.path.abspath(wh)


def warehouse_macro(conn_id: str):
    """``{{ lakeformat_warehouse() }}`` in templated fields: resolved when the task runs."""
    def lakeformat_warehouse() -> str:
        return warehouse_of(conn_id)
    return lakeformat_warehouse


def job_args(config: PipelineConfig, spec: TableSpec, warehouse: str, *more: str) -> list[str]:
    """Arguments every job takes: the table's config name, the config file, the warehouse."""
    return ["--table", spec.name, "--config", os.path.abspath(config.path), "--warehouse", warehouse, *more]


def spark_conf(config: PipelineConfig) -> dict:
    """Spark settings from ``pipeline.spark_conf``. The jobs' Python is the worker's
    ``$PYSPARK_PYTHON`` (spark-submit inherits the task's environment)."""
    return dict(config.spark_conf)


def table_exists_task(spec: TableSpec, config: PipelineConfig):
    """A short-circuit task: the rest of the table's group is skipped while the table does not
    exist (no ingest has created it yet), instead of failing."""
    @task.short_circuit(task_id="exists", retries=0)
    def exists() -> bool:
        from lakeformat_airflow.hooks import LakeformatHook
        found = LakeformatHook(config.connection).get_catalog().table_exists(spec.identifier)
        if not found:
            print(f"{spec.identifier} does not exist yet (no ingest has created it): skipping its tasks")
        return found
    return exists()
