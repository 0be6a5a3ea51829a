"""The lakeformat DAGs, built from the pipeline config: ``ingest`` (one per table),
``compaction`` and ``maintenance``. The files in the project's ``dags/`` folder only call these
builders, so an installed package is all Airflow needs. This module has what they share.

Parse-time code stays cheap: the config is YAML read once per parse, and nothing here opens the
warehouse or reads a connection until a task runs. Spark jobs learn the warehouse from the
lakeformat connection when they are submitted (``LakeformatSparkSubmitOperator``), so the jobs,
the plugin's operators and the hook always agree on it, and no connection detail ends up in a
DAG file, an XCom or a rendered template.
"""
from __future__ import annotations

import datetime as dt
import logging
import os

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Asset, task

from lakeformat.errors import LakeformatError
from lakeformat.pipeline.landing_wait import LANDING_DAYS_ENV
from lakeformat.pipeline import submit
from lakeformat.pipeline.airflow.hooks import LakeformatHook
from lakeformat.pipeline.config import PipelineConfig, TableSpec, asset_name, asset_uri
from lakeformat.table.settings import CatalogSettings

DEFAULT_ARGS = {"owner": "lakeformat", "retries": 1, "retry_delay": dt.timedelta(minutes=1)}


def start_date(config: PipelineConfig) -> dt.datetime:
    """The DAGs' start date (``pipeline.dags.start_date``, midnight UTC): catchup is off, so it
    is only the earliest day a backfill can run."""
    d = config.dags.start_date
    return dt.datetime(d.year, d.month, d.day, tzinfo=dt.UTC)


def shared_dag_args(config: PipelineConfig) -> dict:
    """What every lakeformat DAG shares: start date and pause state from the config, no catchup,
    one active run at a time (two runs of one ingest unit must not stage at once; compaction and
    maintenance runs must not race each other)."""
    return dict(start_date=start_date(config), is_paused_upon_creation=config.dags.paused_at_creation,
                catchup=False, max_active_runs=1, default_args=DEFAULT_ARGS)


def ingest_dag_args(config: PipelineConfig) -> dict:
    """``shared_dag_args`` for an ingest DAG. With ``$LAKEFORMAT_LANDING_DAYS`` (``FIRST..LAST``)
    its start and end dates are those days: a local setup whose landing data is a fixed demo
    range schedules no run for a day that will never land (unpausing starts nothing), and a
    backfill covers the range. Without it, the config's start date and no end."""
    args = shared_dag_args(config)
    window = os.environ.get(LANDING_DAYS_ENV)
    if window:
        first, sep, last = window.partition("..")
        try:
            days = [dt.datetime.combine(dt.date.fromisoformat(d), dt.time(), dt.UTC) for d in (first, last)]
        except ValueError:
            days = []
        if not sep or len(days) != 2 or days[1] < days[0]:
            raise LakeformatError(f"${LANDING_DAYS_ENV} must read FIRST..LAST (days like 2024-06-01), "
                                  f"not {window!r}")
        args.update(start_date=days[0], end_date=days[1] + dt.timedelta(days=1, seconds=-1))   # LAST's hours too
    return args


def job_args(config: PipelineConfig, spec: TableSpec, *more: str) -> list[str]:
    """Arguments every job takes (the warehouse is added at submit time)."""
    return ["--table", spec.name, "--config", os.path.abspath(config.path), *more]


def table_asset(spec: TableSpec, config: PipelineConfig) -> Asset:
    """The Asset an ingest run updates when it publishes into ``spec``'s table."""
    return Asset(name=asset_name(spec), uri=asset_uri(spec, config.connection),
                 extra={"table": spec.identifier})


class LakeformatSparkSubmitOperator(SparkSubmitOperator):
    """The provider's SparkSubmitOperator, for lakeformat's jobs: when it runs, the submission is
    built by :func:`lakeformat.pipeline.submit.build`, as ``lakeformat submit`` builds it: the
    catalog settings of the lakeformat connection ``lakeformat_conn_id`` in the environment of
    spark-submit (never its command line), the interpreter, lakeformat's Spark jar (``--jars``,
    unless ``jars`` says otherwise). Empty arguments (an optional flag a template left out, such
    as ``{{ '--full' if params.full else '' }}``) are dropped."""

    template_fields = (*SparkSubmitOperator.template_fields, "unit_label")   # a mapped group's argument too

    def __init__(self, *, lakeformat_conn_id: str = "lakeformat_default", unit_label: str = "", **kwargs):
        kwargs.setdefault("jars", submit.jar_path())   # shown with the task in the UI
        super().__init__(**kwargs)
        self.lakeformat_conn_id = lakeformat_conn_id
        self.unit_label = unit_label   # the day (or hour) a mapped ingest stage loads: its map_index_template

    def prepare_submission(self) -> CatalogSettings:
        """Set the operator's application, arguments, jars, py-files, conf and environment from the one
        builder; returns the connection's settings (for the log line)."""
        settings = LakeformatHook(self.lakeformat_conn_id).settings()
        sub = submit.build(self.application, self.application_args or [], settings, name=self.name,
                           conf=self.conf, jars=self.jars, py_files=self.py_files)
        self.application, self.application_args = sub.application, list(sub.application_args)
        self.name, self.jars, self.conf, self.py_files = sub.name, sub.jars, dict(sub.conf), sub.py_files
        # the spark-submit process's environment: the driver inherits it (client mode)
        self.env_vars = {**(self.env_vars or {}), **sub.env}
        return settings

    def execute(self, context):
        settings = self.prepare_submission()
        self.log.info("Submitting %s for %s", self.application, settings.describe())
        return super().execute(context)


def spark_conf(config: PipelineConfig) -> dict:
    """Spark settings from ``pipeline.spark_conf``. The jobs' Python is the worker's
    ``$PYSPARK_PYTHON`` (spark-submit inherits the task's environment)."""
    return dict(config.spark_conf)


def table_exists_task(spec: TableSpec, config: PipelineConfig):
    """A short-circuit task: the rest of the table's group is skipped while the table does not
    exist (no ingest has created it yet), instead of failing."""
    @task.short_circuit(task_id="exists", retries=0)
    def exists() -> bool:
        found = LakeformatHook(config.connection).get_catalog().table_exists(spec.identifier)
        if not found:
            logging.getLogger("lakeformat.dags").info(
                "%s does not exist yet (no ingest has created it): skipping its tasks", spec.identifier)
        return found
    return exists()
