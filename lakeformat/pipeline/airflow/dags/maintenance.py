"""Daily maintenance of every configured table, one task group per table:

    exists ─► clean_consumers ─► expire_partitions ─► expire_snapshots ─► remove_orphan_files

The steps run in the Airflow task with the plugin's operators (lakeformat/pipeline/airflow), not
with Spark: they read and delete metadata and whole files, work a Spark application would only
add start-up time to. The order matters: consumers that stopped reading are dropped first, since
a consumer keeps every snapshot from its next one; dropping expired partitions makes an
OVERWRITE snapshot; expiring snapshots then deletes the files no retained snapshot, tag or
consumer needs; orphan cleaning comes last and removes what failed writers left behind (files
older than ``orphan_older_than``, so commits in flight are safe; staged commits are kept).

``exists`` skips a table the ingest has not created yet. Partitioned tables get an
``expire_partitions`` step, which decides at run time from the table's own
``partition.expiration-time`` (the config's options apply only when a table is created; an
``ALTER`` since then counts): without one, nothing expires. Params: ``dry_run`` (every
step only reports what it would do) and ``orphan_older_than``; their defaults come from
``pipeline.maintenance`` in the config.
"""
from __future__ import annotations

import itertools
from typing import Any

from airflow.sdk import DAG, CronTriggerTimetable, Param, TaskGroup

from lakeformat.format.options import to_option_string
from lakeformat.pipeline.airflow.dags import shared_dag_args, table_exists_task
from lakeformat.pipeline.airflow.operators import (LakeformatCleanConsumersOperator,
                                                   LakeformatExpirePartitionsOperator,
                                                   LakeformatExpireSnapshotsOperator,
                                                   LakeformatRemoveOrphanFilesOperator)
from lakeformat.pipeline.config import PipelineConfig
DRY_RUN = "{{ params.dry_run }}"


def build_maintenance_dag(config: PipelineConfig) -> DAG:
    m = config.maintenance
    older = to_option_string("orphan_older_than", m.orphan_older_than)
    with DAG(
        dag_id="lakeformat_maintenance",
        description="Clean consumers, expire partitions and snapshots, remove orphan files",
        doc_md=__doc__,
        schedule=CronTriggerTimetable(m.schedule, timezone="UTC") if m.schedule else None,
        **shared_dag_args(config),
        tags=["lakeformat", "maintenance"],
        params={"dry_run": Param(m.dry_run, type="boolean",
                                 description="Only report what each step would delete"),
                "orphan_older_than": Param(older, type="string", description="Files younger than this are never "
                                                                                 "orphans (e.g. '1 d', '6 h')")},
    ) as dag:
        for spec in config.tables:
            common: dict[str, Any] = {"table": spec.identifier, "conn_id": config.connection, "config": config.path}
            with TaskGroup(group_id=spec.name, tooltip=f"maintain {spec.identifier}"):
                steps = [
                    table_exists_task(spec, config),
                    LakeformatCleanConsumersOperator(task_id="clean_consumers", dry_run=DRY_RUN, **common),
                ]
                if spec.partition_keys:   # fixed at creation; the expiration time is read from the table
                    steps.append(LakeformatExpirePartitionsOperator(task_id="expire_partitions", dry_run=DRY_RUN,
                                                                    **common))
                steps += [
                    LakeformatExpireSnapshotsOperator(task_id="expire_snapshots", dry_run=DRY_RUN, **common),
                    LakeformatRemoveOrphanFilesOperator(task_id="remove_orphan_files", dry_run=DRY_RUN,
                                                        older_than="{{ params.orphan_older_than }}", **common),
                ]
                for a, b in itertools.pairwise(steps):
                    a >> b
    return dag

