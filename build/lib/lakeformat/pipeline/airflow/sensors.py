"""``LakeformatSnapshotSensor``: wait until a table has a snapshot newer than a given one
(e.g. to start a downstream job when ingestion commits). Deferrable by default: the wait runs
in Airflow's triggerer (triggers.py) and holds no worker slot; ``deferrable=False`` pokes."""
from __future__ import annotations

import datetime as dt
from typing import Any, Optional, Sequence, Union

from airflow.sdk import BaseSensorOperator, PokeReturnValue

from lakeformat.errors import LakeformatError
from lakeformat.pipeline.airflow.hooks import LakeformatHook
from lakeformat.pipeline.airflow.triggers import (
    LakeformatSnapshotTrigger,
    newer_snapshot,
)


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
                raise LakeformatError(f"after_snapshot_id must be a snapshot id, not {self.after_snapshot_id!r}") from None
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
