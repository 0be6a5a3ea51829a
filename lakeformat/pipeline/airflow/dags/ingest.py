"""Ingest: landing files -> Spark -> staged commit -> Great Expectations audit -> publish.

One DAG per table of the pipeline config (``lakeformat_ingest_<table>``): each table has its
own schedule (hourly or daily), and a table's bad day must not hold up, fail or re-run another
table's ingest. Adding a table to the config adds its DAG.

Each run ingests one or more units (a day, or an hour for tables whose landing path has
``{hour}``), as a mapped task group, one group instance per unit:

    landing ─► plan ─► ingest[unit]: stage (spark-submit jobs/ingest.py --stage) ─► audit ─► publish ─► Asset

- ``landing`` checks, before any Spark work, that the run's landing data is there. A scheduled
  run whose data is late waits for it in the triggerer, up to ``pipeline.landing.wait_timeout``
  (:mod:`lakeformat.pipeline.landing_wait`); manual runs and backfills look once, unless their
  ``wait_for_landing`` param is true. A run none of whose units landed is skipped with the
  reason (green, no Spark job); while a scheduled run waits, the table's later runs queue behind
  it (one active run per DAG; Airflow's backfills are not held up).
- every run ingests the unit of its logical date (the start of the data interval:
  ``CronDataIntervalTimetable``, so the 06-02 00:00 run of a daily table ingests 06-01). A range
  is Airflow's own backfill (the UI's Backfill dialog, ``POST /api/v2/backfills``): one run per
  day (or hour), so one bad day fails its own run while the good days publish.
- re-runs never duplicate rows: the stage id of a unit is stable (``ingest-<table>-<unit>``),
  leftovers of failed attempts are cleared first, and publish commits exactly once per
  (commit user, identifier) with the identifier ``identifier_for("ingest", table, date[, hour])``
  that the Spark job stamps on the stage. A loaded unit (its commit retained, or its stage
  published, however long ago: ``wap.loaded``, the same rule ``jobs/ingest.py`` follows) is left
  out by ``plan`` ("already published as snapshot N"): no Spark job starts, and the run is
  green with its ingest tasks skipped.
- a failed audit discards the staged files and fails the run with the audit's summary (which
  expectations failed, how many rows, sample values), also kept as the audit task's XCom.
- publishing updates the table's Asset ``lakeformat://<connection>/<db>/<table>``, which
  triggers the compaction DAG.
"""
from __future__ import annotations

import logging

from airflow.sdk import DAG, CronDataIntervalTimetable, Param, get_current_context, task, task_group
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException
from airflow.sdk.execution_time.task_runner import RuntimeTaskInstance

from lakeformat.errors import LakeformatError
from lakeformat.format.human import human_duration
from lakeformat.pipeline import landing_wait, wap
from lakeformat.pipeline.airflow.dags import (LakeformatSparkSubmitOperator, ingest_dag_args, job_args,
                                              spark_conf, table_asset)
from lakeformat.pipeline.airflow.hooks import LakeformatHook
from lakeformat.pipeline.airflow.sensors import LakeformatLandingSensor
from lakeformat.pipeline.config import PipelineConfig, TableSpec
from lakeformat.pipeline.submit import job_file
from lakeformat.table.settings import absolute_location
from lakeformat.pipeline.units import ingest_units

log = logging.getLogger("lakeformat.dags.ingest")


def _timetable(spec: TableSpec):
    return CronDataIntervalTimetable(spec.schedule, timezone="UTC") if spec.schedule else None


def run_owner(dag_run) -> str:
    """Who claims a unit (:mod:`lakeformat.pipeline.unit_claim`): the DAG run."""
    return f"{dag_run.dag_id}/{dag_run.run_id}"


def run_active(owner: str) -> bool:
    """Whether the DAG run ``owner`` (``run_owner``) is still queued or running, asked of Airflow."""
    dag_id, _, run_id = owner.partition("/")
    try:
        state = RuntimeTaskInstance.get_dagrun_state(dag_id, run_id)
    except Exception as e:   # a run Airflow does not know (deleted) has ended
        log.info("state of run %s unknown (%s): taken as ended", owner, e)
        return False
    return str(getattr(state, "value", state)) in ("queued", "running")


def _as_task_outcome(step, *args, **kwargs):
    """Run a step of :mod:`lakeformat.pipeline.wap`: a unit with nothing to do is a skipped task,
    a lakeformat error (a failed audit, a stage gone missing) a failed one, without retries."""
    try:
        return step(*args, **kwargs)
    except wap.UnitSkipped as e:
        raise AirflowSkipException(str(e)) from None
    except wap.AuditFailed as e:
        get_current_context()["ti"].xcom_push(key="audit", value=e.outcome.as_dict())   # for the UI and reports
        raise AirflowFailException(str(e)) from None
    except LakeformatError as e:
        raise AirflowFailException(str(e)) from None


def build_ingest_dag(spec: TableSpec, config: PipelineConfig) -> DAG:
    asset = table_asset(spec, config)
    conn = config.connection

    def table():
        return LakeformatHook(conn).get_catalog().get_table(spec.identifier)

    with DAG(
        dag_id=f"lakeformat_ingest_{spec.name}",
        description=f"Write-audit-publish of {spec.identifier} from {spec.landing_path}",
        doc_md=__doc__,
        schedule=_timetable(spec),
        **ingest_dag_args(config),
        tags=["lakeformat", "ingest", spec.identifier],
        params={
            landing_wait.WAIT_PARAM: Param(
                False, type="boolean",
                description="Wait for landing data that is not there yet, as scheduled runs do (up to "
                            f"{human_duration(config.landing_wait.wait_timeout)}); else days without it are "
                            "skipped at once"),
        },
    ) as dag:
        landing_check = LakeformatLandingSensor(
            task_id="landing", spec=spec, config=absolute_location(config.path),
            landing=absolute_location(config.landing), conn_id=conn, settings=config.landing_wait, retries=0)

        @task(retries=0)
        def plan(logical_date=None, dag_run=None) -> list[dict]:
            """The units to ingest, each with its stage id, commit identity and job arguments;
            units already published, without landing data, or that another run is loading, are
            left out with the reason (no Spark work for them); clears what ended attempts left
            staged."""
            when = logical_date or dag_run.run_after   # a manual run without a logical date: its time
            units, skipped = _as_task_outcome(
                wap.plan_units, LakeformatHook(conn).get_catalog(), spec, ingest_units(spec, when),
                landing_root=config.landing, owner=run_owner(dag_run), active=run_active)
            for reason in skipped:
                log.info("not ingested: %s", reason)
            if not units:
                raise AirflowSkipException("nothing to ingest: " + "; ".join(skipped))
            log.info("%s: %d unit(s) to ingest: %s", spec.identifier, len(units),
                     ", ".join(u["label"] for u in units))
            landing = ["--landing", absolute_location(config.landing)]
            return [{"stage_id": u["stage_id"], "label": u["label"], "commit": u["commit"],
                     "args": job_args(config, spec, *u["unit_args"], "--stage", u["stage_id"], *landing)}
                    for u in units]

        @task_group(group_id="ingest")
        def ingest(stage_id: str, label: str, commit: dict, args: list):
            stage = LakeformatSparkSubmitOperator(
                task_id="stage", application=job_file("ingest"), conn_id=config.spark_connection,
                lakeformat_conn_id=conn, application_args=args, conf=spark_conf(config),
                name=f"lakeformat-ingest-{spec.name}", verbose=False,
                unit_label=label, map_index_template="{{ task.unit_label }}")   # the grid shows the day

            @task(retries=0, multiple_outputs=False, map_index_template="{{ unit_label }}")
            def audit(stage_id: str, label: str, commit: dict, dag_run=None) -> dict:
                """Great Expectations on the staged rows; a failure discards the stage."""
                # read by map_index_template; Airflow's Context type lists only its own keys
                get_current_context()["unit_label"] = label  # type: ignore[typeddict-unknown-key]
                outcome = _as_task_outcome(wap.audit_unit, table(), spec, stage_id, label, commit,
                                           run_owner(dag_run))
                log.info("%s", outcome.report.summary())
                return outcome.as_dict()

            @task(outlets=[asset], multiple_outputs=False, map_index_template="{{ unit_label }}")
            def publish(stage_id: str, label: str, outlet_events=None, dag_run=None) -> dict:
                """Commit the audited stage exactly once; tell the Asset's consumers, but only
                when a snapshot was made."""
                # read by map_index_template; Airflow's Context type lists only its own keys
                get_current_context()["unit_label"] = label  # type: ignore[typeddict-unknown-key]
                result = _as_task_outcome(wap.publish_unit, table(), spec, stage_id, label, run_owner(dag_run))
                outlet_events[asset].extra = result
                return result

            stage >> audit(stage_id, label, commit) >> publish(stage_id, label)

        planned = plan()
        landing_check >> planned
        ingest.expand_kwargs(planned)
    return dag


def build_ingest_dags(config: PipelineConfig) -> dict[str, DAG]:
    """One ingest DAG per configured table, by DAG id."""
    dags = [build_ingest_dag(spec, config) for spec in config.tables]
    return {d.dag_id: d for d in dags}
