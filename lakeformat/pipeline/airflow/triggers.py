"""Waits in Airflow's triggerer, so a waiting sensor holds no worker slot:
``LakeformatSnapshotTrigger`` for a new snapshot of a table (with ``newer_snapshot``, the check
it shares with the sensor's poke mode), ``LakeformatLandingTrigger`` for an ingest run's landing
data. Their kwargs are what the triggerer stores and restarts them from: names, paths and times,
never a credential."""
from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any, Optional
from collections.abc import AsyncIterator, Sequence

from airflow.triggers.base import BaseTrigger, TriggerEvent

import lakeformat as lf
from lakeformat.errors import LakeformatError
from lakeformat.pipeline.airflow.hooks import LakeformatHook
from lakeformat.pipeline import landing_wait
from lakeformat.pipeline.config import load_config, resolve_table
from lakeformat.pipeline.units import IngestUnit


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


class LakeformatLandingTrigger(BaseTrigger):
    """Looks for the landing folders of ``units`` (``[date, hour]`` pairs) of config table
    ``table`` every ``poke_interval`` seconds until all are there or ``deadline`` (ISO, UTC) has
    passed; the event lists what is still missing. Storage options (an object-store landing
    root's credentials) come from the connection ``conn_id`` when the trigger starts. The deadline is absolute, so a
    trigger the triggerer restarts waits only for what is left of it. The looks run in a thread: on an
    object store they are network calls, and the triggerer's event loop serves every trigger."""

    def __init__(self, *, table: str, config: str, landing: str, units: Sequence[Sequence[Any]],
                 deadline: str, poke_interval: float, conn_id: str = LakeformatHook.default_conn_name):
        super().__init__()
        self.table, self.config, self.landing, self.conn_id = table, config, landing, conn_id
        self.units = [[d, h] for d, h in units]
        self.deadline, self.poke_interval = deadline, float(poke_interval)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}",
                {"table": self.table, "config": self.config, "landing": self.landing, "units": self.units,
                 "deadline": self.deadline, "poke_interval": self.poke_interval, "conn_id": self.conn_id})

    async def run(self) -> AsyncIterator[TriggerEvent]:
        try:
            spec = (await asyncio.to_thread(load_config, self.config)).table(self.table)
            options = (await LakeformatHook(self.conn_id).asettings()).options   # credentials: read here, never kept
            units = [IngestUnit(d, h) for d, h in self.units]
            deadline = dt.datetime.fromisoformat(self.deadline)
            self.log.info("waiting in the triggerer until %s UTC for the landing data of %s: %s",
                          deadline.strftime("%Y-%m-%d %H:%M:%S"), spec.identifier,
                          ", ".join(spec.landing_dir(self.landing, u.date, u.hour) for u in units))
            while True:
                missing = await asyncio.to_thread(landing_wait.missing, spec, units, self.landing, options)
                pause = landing_wait.next_look(dt.datetime.now(dt.UTC), deadline, self.poke_interval)
                if not missing or pause is None:
                    yield TriggerEvent({"status": "done", "missing": missing, "units": len(units)})
                    return
                await asyncio.sleep(pause)
        except LakeformatError as e:
            yield TriggerEvent({"status": "error", "message": f"{type(e).__name__}: {e}"})
