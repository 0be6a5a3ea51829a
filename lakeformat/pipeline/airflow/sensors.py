"""``LakeformatSnapshotSensor``: wait until a table has a snapshot newer than a given one
(e.g. to start a downstream job when ingestion commits). Deferrable by default: the wait runs
in Airflow's triggerer (triggers.py) and holds no worker slot; ``deferrable=False`` pokes.
``LakeformatLandingSensor``: an ingest run's wait for its landing data (always deferred)."""
from __future__ import annotations

import datetime as dt
from typing import Any, Optional, Union
from collections.abc import Sequence

from airflow.sdk import BaseOperator, BaseSensorOperator, PokeReturnValue
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from lakeformat.errors import LakeformatError
from lakeformat.format.human import human_duration
from lakeformat.pipeline import landing_wait
from lakeformat.pipeline.airflow.hooks import LakeformatHook
from lakeformat.pipeline.airflow.triggers import (
    LakeformatLandingTrigger,
    LakeformatSnapshotTrigger,
    newer_snapshot,
)
from lakeformat.pipeline.config import LandingWait, TableSpec


class LakeformatSnapshotSensor(BaseSensorOperator):
    """Succeeds when ``table`` has a snapshot newer than ``after_snapshot_id`` (of one of
    ``kinds`` such as ``["APPEND"]``, if given); its XCom is that snapshot's id, kind and row
    count. Without ``after_snapshot_id`` it waits for the next commit after the sensor starts."""

    template_fields: Sequence[str] = ("table", "after_snapshot_id")
    ui_color = "#d6eaf8"

    def __init__(self, *, table: str, after_snapshot_id: Union[None, int, str] = None,
                 conn_id: str = LakeformatHook.default_conn_name, kinds: Optional[Sequence[str]] = None,
                 config: Optional[str] = None, deferrable: bool = True, **kwargs):
        super().__init__(**kwargs)
        self.table = table
        self.after_snapshot_id = after_snapshot_id
        self.conn_id = conn_id
        self.kinds = list(kinds) if kinds else None
        self.config = config
        self.deferrable = deferrable
        self._baseline: Optional[int] = None

    def _after(self, table) -> int:
        if self.after_snapshot_id not in (None, ""):
            try:
                return int(self.after_snapshot_id)
            except (TypeError, ValueError):
                raise LakeformatError(
                    f"after_snapshot_id must be a snapshot id, not {self.after_snapshot_id!r}") from None
        if self.reschedule:
            raise LakeformatError("mode='reschedule' needs after_snapshot_id: each reschedule would "
                                  "otherwise wait for a commit after itself")
        if self._baseline is None:
            self._baseline = table.snapshot_manager.latest_id() or 0
            self.log.info("Waiting for a snapshot of %s after the latest one, %d", table.name, self._baseline)
        return self._baseline

    def _check(self) -> tuple[Optional[dict[str, Any]], int]:
        table = LakeformatHook(self.conn_id).get_table(self.table, self.config)
        after = self._after(table)
        found = newer_snapshot(table, after, self.kinds)
        if found:
            self._report(found, after)
        else:
            self.log.info("%s has no %ssnapshot after %d yet", table.name,
                          f"{'/'.join(self.kinds)} " if self.kinds else "", after)
        return found, after

    def _report(self, found: dict, after: int) -> None:
        self.log.info("%s has snapshot %d (%s, %s records) after %d: %d new snapshot(s)", found["table"],
                      found["snapshot_id"], found["commit_kind"], f"{found['total_record_count']:,}",
                      after, found["new_snapshots"])

    def poke(self, context) -> PokeReturnValue:
        found, _ = self._check()
        return PokeReturnValue(is_done=found is not None, xcom_value=found)

    def execute(self, context) -> Any:
        if not self.deferrable:
            return super().execute(context)
        found, after = self._check()
        if found:
            return found
        self.defer(trigger=LakeformatSnapshotTrigger(
            table=self.table, after_snapshot_id=after, conn_id=self.conn_id, kinds=self.kinds,
            poll_interval=self.poke_interval, config=self.config),
            method_name="execute_complete",
            timeout=dt.timedelta(seconds=self.timeout))

    def execute_complete(self, context, event: Optional[dict] = None) -> dict:
        if not event or event.get("status") != "success":
            raise LakeformatError(f"waiting for a snapshot of {self.table} failed: "
                                  f"{(event or {}).get('message', 'no event from the trigger')}")
        result = {k: v for k, v in event.items() if k not in ("status", "after_snapshot_id")}
        self._report(result, event["after_snapshot_id"])
        return result


class LakeformatLandingSensor(BaseOperator):
    """Before any Spark work of an ingest run: succeeds when the landing data of the run's
    units is there; waits for it in the triggerer when the run waits (``landing_wait.waits``),
    until ``settings.wait_timeout`` has passed; is skipped with the reason when no unit of the
    run has landed by then. Units that landed while others did not are ingested (``plan``
    leaves the others out, naming them). A deferring operator, not a poking sensor: it never
    holds a worker slot while it waits."""

    ui_color = "#d6eaf8"

    def __init__(self, *, spec: TableSpec, config: str, landing: str, settings: LandingWait,
                 conn_id: str = LakeformatHook.default_conn_name, **kwargs):
        super().__init__(**kwargs)
        self.spec, self.config, self.landing, self.settings = spec, config, landing, settings
        self.conn_id = conn_id   # the warehouse's storage options: an object-store landing root shares them

    def execute(self, context) -> None:
        dag_run, params = context["dag_run"], context["params"]
        units = landing_wait.run_units(self.spec, context.get("logical_date"), dag_run.run_after)
        options = LakeformatHook(self.conn_id).settings().options
        missing = landing_wait.missing(self.spec, units, self.landing, options)
        if not missing:
            self.log.info("landing data of %s is there: %s", self.spec.identifier, ", ".join(u.label for u in units))
            return
        if not landing_wait.waits(dag_run.run_type, params.get(landing_wait.WAIT_PARAM), self.settings):
            return self._decide(missing, len(units), waited=None)
        deadline = dt.datetime.now(dt.UTC) + self.settings.wait_timeout
        self.log.info("waiting up to %s (until %s UTC, looking every %s; then the run is skipped) for landing "
                      "data: %s", human_duration(self.settings.wait_timeout),
                      deadline.strftime("%Y-%m-%d %H:%M:%S"), human_duration(self.settings.poke_interval),
                      "; ".join(missing))
        self.defer(trigger=LakeformatLandingTrigger(
            table=self.spec.name, config=self.config, landing=self.landing, conn_id=self.conn_id,
            units=[[u.date, u.hour] for u in units], deadline=deadline.isoformat(),
            poke_interval=self.settings.poke_interval.total_seconds()), method_name="execute_complete")

    def execute_complete(self, context, event: Optional[dict] = None) -> None:
        if not event or event.get("status") != "done":
            raise AirflowFailException(f"waiting for landing data of {self.spec.identifier} failed: "
                                       f"{(event or {}).get('message', 'no event from the trigger')}")
        missing = event["missing"]
        if not missing:
            self.log.info("landing data of %s is there: the wait is over", self.spec.identifier)
            return
        self._decide(missing, event["units"], waited=self.settings.wait_timeout)

    def _decide(self, missing: list[str], total: int, waited: Optional[dt.timedelta]) -> None:
        reason = landing_wait.skip_reason(missing, total, waited, self.settings)
        if reason:
            raise AirflowSkipException(reason)
        self.log.warning("%d of %d unit(s) have no landing data; ingesting the others: %s",
                         len(missing), total, "; ".join(missing))
