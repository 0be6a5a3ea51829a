"""Ingest: landing files -> Spark -> staged commit -> Great Expectations audit -> publish.

One DAG per table of ``config/tables.yaml`` (``lakeformat_ingest_<table>``): each table has its
own schedule (hourly or daily), and a table's bad day must not hold up, fail or re-run another
table's ingest. Adding a table to the config adds its DAG.

Each run ingests one or more units (a day, or an hour for tables whose landing path has
``{hour}``), as a mapped task group, one group instance per unit:

    plan ─► ingest[unit]: stage (spark-submit jobs/ingest.py --stage) ─► audit ─► publish ─► Asset

- scheduled runs ingest the unit of their logical date (the start of the data interval:
  ``CronDataIntervalTimetable``, so the 06-02 00:00 run of a daily table ingests 06-01);
- a manual run with params ``start`` (and ``end``, inclusive) backfills every unit of that
  range, each in its own group instance, so one bad day fails its own audit while the good days
  publish; the run then fails and names the bad day.
- re-runs never duplicate rows: the stage id of a unit is stable (``ingest-<table>-<unit>``),
  leftovers of failed attempts are cleared first, and publish commits exactly once per
  (commit user, identifier) with the identifier ``identifier_for("ingest", table, date[, hour])``
  that the Spark job stamps on the stage. A unit whose commit is still among the retained
  snapshots is not even staged again: the job says so, and audit and publish are skipped.
- a failed audit discards the staged files and fails the run with the audit's summary (which
  expectations failed, how many rows, sample values), also kept as the audit task's XCom.
- publishing updates the table's Asset ``lakeformat://<connection>/<db>/<table>``, which
  triggers the compaction DAG.
"""
from __future__ import annotations

import logging

from airflow.sdk import DAG, CronDataIntervalTimetable, Param, task, task_group

from lakeformat.pipeline.config import PipelineConfig, TableSpec, load_config

from lakeformat.pipeline.dags import (DEFAULT_ARGS, START_DATE, LakeformatSparkSubmitOperator, job, job_args,
                                      spark_conf, table_asset)

CONFIG = load_config()
log = logging.getLogger("lakeformat.dags.ingest")


def _timetable(spec: TableSpec):
    return CronDataIntervalTimetable(spec.schedule, timezone="UTC") if spec.schedule else None


def build_ingest_dag(spec: TableSpec, config: PipelineConfig) -> DAG:
    asset = table_asset(spec, config)
    conn = config.connection
    with DAG(
        dag_id=f"lakeformat_ingest_{spec.name}",
        description=f"Write-audit-publish of {spec.identifier} from {spec.landing_path}",
        doc_md=__doc__,
        schedule=_timetable(spec),
        start_date=START_DATE,
        catchup=False,
        max_active_runs=1,   # two runs of the same unit must not stage at the same time
        default_args=DEFAULT_ARGS,
        tags=["lakeformat", "ingest", spec.identifier],
        params={
            "start": Param(None, type=["null", "string"], format="date",
                           description="Backfill from this day (YYYY-MM-DD); empty: the run's logical date"),
            "end": Param(None, type=["null", "string"], format="date",
                         description="Backfill up to this day, inclusive (default: start)"),
        },
    ) as dag:

        @task(retries=0)
        def plan(params=None, logical_date=None) -> list[dict]:
            """The units to ingest, each with its stage id, commit identity and job arguments;
            clears what earlier attempts at these units left staged."""
            import os

            from lakeformat.pipeline.config import ingest_identity, ingest_units, stage_id_for
            from lakeformat.pipeline.wap import clear_leftover
            from lakeformat.pipeline.airflow.hooks import LakeformatHook

            units = ingest_units(spec, logical_date, params.get("start"), params.get("end"))
            catalog = LakeformatHook(conn).get_catalog()
            table = catalog.get_table(spec.identifier) if catalog.table_exists(spec.identifier) else None
            out = []
            for u in units:
                sid = stage_id_for(spec, u)
                if table is not None:
                    done = clear_leftover(table, sid)
                    if done:
                        log.info("%s", done)
                user, identifier = ingest_identity(spec, u)
                out.append({"stage_id": sid, "label": u.label,
                            "commit": {"user": user, "identifier": str(identifier)},
                            "args": job_args(config, spec, *u.job_args(), "--stage", sid,
                                             "--landing", os.path.abspath(config.landing))})
            log.info("%s: %d unit(s) to ingest: %s", spec.identifier, len(out), ", ".join(o["label"] for o in out))
            return out

        @task_group(group_id="ingest")
        def ingest(stage_id: str, label: str, commit: dict, args: list):
            stage = LakeformatSparkSubmitOperator(
                task_id="stage", application=job("ingest"), conn_id=config.spark_connection,
                lakeformat_conn_id=conn, application_args=args, conf=spark_conf(config),
                name=f"lakeformat-ingest-{spec.name}", verbose=False)

            @task(retries=0, multiple_outputs=False, map_index_template="{{ unit_label }}")
            def audit(stage_id: str, label: str, commit: dict, ti=None) -> dict:
                """Great Expectations on the staged rows; a failure discards the stage. When the
                job staged nothing because the unit is committed already (a re-run), skip."""
                from airflow.sdk import get_current_context
                from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

                from lakeformat.commit import staging
                from lakeformat.pipeline.wap import audit_stage
                from lakeformat.pipeline.airflow.hooks import LakeformatHook

                get_current_context()["unit_label"] = label
                table = LakeformatHook(conn).get_catalog().get_table(spec.identifier)
                if stage_id not in {s.stage_id for s in staging.list_staged(table)}:
                    done = staging.find_committed(table, commit["user"], int(commit["identifier"]))
                    if done is not None:
                        raise AirflowSkipException(f"{label} of {spec.identifier} is already published "
                                                   f"(snapshot {done.id}): nothing staged, nothing to do")
                    raise AirflowFailException(f"the ingest job staged nothing for {label} of {spec.identifier} "
                                               f"(stage {stage_id}); see the log of the stage task")
                outcome = audit_stage(table, stage_id, spec.quality, f"{spec.identifier} {label}")
                result = outcome.as_dict()
                if not result["success"]:
                    ti.xcom_push(key="audit", value=result)   # kept for the UI and reports
                    raise AirflowFailException(
                        f"{result['summary']}\nStage {stage_id} was discarded "
                        f"({outcome.discarded_files} files deleted): nothing of {label} was published.")
                log.info("%s", result["summary"])
                return result

            @task(outlets=[asset], multiple_outputs=False, map_index_template="{{ unit_label }}")
            def publish(stage_id: str, label: str, outlet_events=None) -> dict:
                """Commit the audited stage exactly once; tell the Asset's consumers, but only
                when a snapshot was made (a unit published before changes nothing)."""
                from airflow.sdk import get_current_context
                from airflow.sdk.exceptions import AirflowSkipException

                from lakeformat.commit import staging
                from lakeformat.pipeline.airflow.hooks import LakeformatHook

                get_current_context()["unit_label"] = label
                table = LakeformatHook(conn).get_catalog().get_table(spec.identifier)
                before = table.snapshot_manager.latest_id()
                snap = staging.publish(table, stage_id)
                if snap is None:
                    raise AirflowSkipException(
                        f"nothing committed for {label} of {spec.identifier}: the stage held no changes, or "
                        "the unit was published before and that snapshot has expired since")
                if before is not None and snap.id <= before:
                    raise AirflowSkipException(f"{label} of {spec.identifier} was published before as snapshot "
                                               f"{snap.id}: not committed again")
                result = {"table": spec.identifier, "unit": label, "stage_id": stage_id,
                          "snapshot_id": snap.id, "rows": snap.delta_record_count}
                outlet_events[asset].extra = result
                log.info("published %s of %s as snapshot %d (%s rows)", label, spec.identifier, snap.id,
                         f"{snap.delta_record_count:,}")
                return result

            stage >> audit(stage_id, label, commit) >> publish(stage_id, label)

        ingest.expand_kwargs(plan())
    return dag


for _spec in CONFIG.tables:
    _dag = build_ingest_dag(_spec, CONFIG)
    globals()[_dag.dag_id] = _dag
