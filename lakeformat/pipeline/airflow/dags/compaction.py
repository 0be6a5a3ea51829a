"""Dedicated compaction: the only writer that compacts, so ingest writers never conflict with it.

Writers run with ``write-only = true`` (see ``config/tables.yaml``): they only add files. This DAG
compacts every configured table, one task group per table:

    exists ─► plan ─► compact (spark-submit jobs/compact.py) ─► expire_snapshots (the plugin's operator)

``plan`` asks the table which buckets need compacting (the same decision the job makes); with
none, the compact task is skipped, naming why, and no Spark job starts; expiration still runs.

It runs on ``pipeline.compaction.schedule`` (hourly by default) OR as soon as any ingest DAG
publishes into a table (the tables' Assets, ``pipeline.compaction.on_publish``): Airflow 3's
``AssetOrTimeSchedule``. A run compacts every table; a table with nothing to compact makes no
snapshot, so the extra work of compacting the tables that did not change is a scan of their
metadata. Compaction commits COMPACT snapshots, which never conflict with concurrent APPEND
commits of writers (the committer retries on the new latest snapshot), and ``max_active_runs=1``
keeps two compactions of one table from racing. Param ``full`` rewrites each bucket completely.
"""
from __future__ import annotations

import logging

from airflow.sdk import DAG, AssetAny, AssetOrTimeSchedule, CronTriggerTimetable, Param, TaskGroup, task

from lakeformat.pipeline.airflow.dags import (LakeformatSparkSubmitOperator, job_args, shared_dag_args,
                                              spark_conf, table_asset, table_exists_task)
from lakeformat.pipeline.airflow.hooks import LakeformatHook
from lakeformat.pipeline.airflow.operators import LakeformatExpireSnapshotsOperator
from lakeformat.pipeline.config import PipelineConfig, TableSpec
from lakeformat.pipeline.submit import job_file


def _schedule(config: PipelineConfig):
    s = config.compaction
    assets = AssetAny(*(table_asset(t, config) for t in config.tables)) if s.on_publish else None
    cron = CronTriggerTimetable(s.schedule, timezone="UTC") if s.schedule else None
    if assets is not None and cron is not None:
        return AssetOrTimeSchedule(timetable=cron, assets=assets)
    return assets or cron


def compaction_plan_task(spec: TableSpec, config: PipelineConfig):
    """Whether the table has buckets to compact (``plan_compaction``, as the job decides); with
    none only the compact task is skipped: the tasks after it keep their trigger rules."""
    @task.short_circuit(task_id="plan", retries=0, ignore_downstream_trigger_rules=False)
    def plan(params=None) -> bool:
        full = bool((params or {}).get("full"))
        t = LakeformatHook(config.connection).get_catalog().get_table(spec.identifier)
        jobs = t.maintenance.plan_compaction(full=full)
        log = logging.getLogger("lakeformat.dags.compaction")
        if not jobs:
            log.info("%s: nothing to compact (%s): no Spark job", spec.identifier,
                     "every bucket is already one sorted run" if full else "no bucket has enough small files")
        else:
            log.info("%s: %d bucket(s) to compact%s", spec.identifier, len(jobs), " fully" if full else "")
        return bool(jobs)
    return plan()


def build_compaction_dag(config: PipelineConfig) -> DAG:
    with DAG(
        dag_id="lakeformat_compaction",
        description="Compact every configured table, then expire its snapshots",
        doc_md=__doc__,
        schedule=_schedule(config),
        **shared_dag_args(config),
        tags=["lakeformat", "compaction"],
        params={"full": Param(config.compaction.full, type="boolean",
                              description="Full compaction: rewrite every bucket into one sorted run")},
    ) as dag:
        for spec in config.tables:
            with TaskGroup(group_id=spec.name, tooltip=f"compact {spec.identifier}"):
                compact = LakeformatSparkSubmitOperator(
                    task_id="compact", application=job_file("compact"), conn_id=config.spark_connection,
                    lakeformat_conn_id=config.connection,
                    application_args=job_args(config, spec, "{{ '--full' if params.full else '' }}"),
                    conf=spark_conf(config), name=f"lakeformat-compact-{spec.name}", verbose=False)
                expire = LakeformatExpireSnapshotsOperator(
                    task_id="expire_snapshots", table=spec.identifier, conn_id=config.connection,
                    config=config.path, trigger_rule="none_failed")
                table_exists_task(spec, config) >> compaction_plan_task(spec, config) >> compact >> expire
    return dag

