"""``LakeformatSnapshotTrigger``: waits in Airflow's triggerer for a new snapshot of a table,
so a waiting sensor holds no worker slot. Also ``newer_snapshot``, the check it shares with
the sensor's poke mode."""
from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Optional, Sequence

from airflow.triggers.base import BaseTrigger, TriggerEvent

import lakeformat as lf
from lakeformat.errors import LakeformatError
from lakeformat.pipeline.airflow.hooks import LakeformatHook
from lakeformat.pipeline.config import resolve_table


def newer_snapshot(table: lf.Table, after_snapshot_id: int,
                   kinds: Optional[Sequence[str]] = None) -> Optional[dict[str, Any]]:
    """The newest snapshot after ``after_snapshot_id`` (of one of ``kinds``, if given) as a
    small dict, or None. Snapshots expired meanwhile are skipped, not an error."""
    latest = table.snapshot_manager.latest_id()
    if latest is None or latest <= after_snapshot_id:
        return None
    new_ids = [i for i in table.snapshot_manager.list_ids() if i > after_snapshot_id]
    for sid in sorted(new_ids, reverse=True):
        try:
            snap = table.snapshot(sid)
        except lf.NotFoundError:
            continue
        if not kinds or snap.commit_kind in kinds:
            return {"table": table.name, "snapshot_id": snap.id, "commit_kind": snap.commit_kind,
                    "total_record_count": snap.total_record_count, "new_snapshots": len(new_ids)}
    return None


class LakeformatSnapshotTrigger(BaseTrigger):
    """Polls the table's snapshot directory every ``poll_interval`` seconds (metadata only)."""

    def __init__(self, *, table: str, after_snapshot_id: int, conn_id: str = LakeformatHook.default_conn_name,
                 kinds: Optional[Sequence[str]] = None, poll_interval: float = 30.0,
                 config: Optional[str] = None):
        super().__init__()
        self.table = table
        self.after_snapshot_id = int(after_snapshot_id)
        self.conn_id = conn_id
        self.kinds = list(kinds) if kinds else None
        self.poll_interval = float(poll_interval)
        self.config = config

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}",
                {"table": self.table, "after_snapshot_id": self.after_snapshot_id, "conn_id": self.conn_id,
                 "kinds": self.kinds, "poll_interval": self.poll_interval, "config": self.config})

    async def run(self) -> AsyncIterator[TriggerEvent]:
        try:
            settings = await LakeformatHook(self.conn_id).asettings()
            catalog = await asyncio.to_thread(lambda: lf.Catalog(settings.warehouse, **settings.options))
            table = await asyncio.to_thread(catalog.get_table, resolve_table(self.table, self.config))
            while True:
                found = await asyncio.to_thread(newer_snapshot, table, self.after_snapshot_id, self.kinds)
                if found:
                    yield TriggerEvent({"status": "success", "after_snapshot_id": self.after_snapshot_id, **found})
                    return
                await asyncio.sleep(self.poll_interval)
        except LakeformatError as e:
            yield TriggerEvent({"status": "error", "message": f"{type(e).__name__}: {e}"})
