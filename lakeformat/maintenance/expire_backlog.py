"""Expiring a whole backlog of snapshots, not only ``snapshot.expire.limit`` of them: runs of
:func:`lakeformat.maintenance.expire.expire_snapshots`, one step at a time, so memory and the work
a kill loses stay bounded (the expiration jobs, ``Table.expire_backlog`` and the CLI use it)."""
from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Optional, Union
from collections.abc import Sequence

from lakeformat.errors import LakeformatError
from lakeformat.format import options as O
from lakeformat.io.snapshots import SnapshotManager
from lakeformat.io.table_context import TableContext
from lakeformat.maintenance.expire import ExpireResult, ExpireSettings, Progress, _Reader, expire_snapshots, \
    reason_limits, resolve_settings
from lakeformat.maintenance.expire_reasons import expire_reasons, first_young


def expire_backlog(ctx: TableContext, *, step: Optional[int] = None, max_deletes: Optional[int] = None,
                   retain_min: Optional[int] = None, retain_max: Optional[int] = None,
                   older_than: Union[None, dt.timedelta, dt.datetime] = None, dry_run: bool = False,
                   progress: Optional[Progress] = None, now: Optional[dt.datetime] = None) -> ExpireResult:
    """Expire everything that is due, not only ``snapshot.expire.limit`` snapshots: runs of
    :func:`expire_snapshots` of ``step`` snapshots each (default ``snapshot.expire.limit``), so
    memory and the work lost to a kill stay bounded, until nothing is due or ``max_deletes``
    snapshots went. ``progress(done, total, what)`` counts snapshots against the backlog seen
    at the start. A dry run plans the whole backlog at once (nothing is deleted between steps).
    Returns the runs' results added up."""
    for name, value in (("step", step), ("max_deletes", max_deletes)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise LakeformatError(f"expire snapshots of {ctx.name}: {name} must be a positive integer, "
                                  f"not {value!r}")
    cfg = resolve_settings(ctx, retain_min, retain_max, older_than, step, now)
    cap = max_deletes if max_deletes is not None else O.LONG_MAX
    cutoff = dt.datetime.fromtimestamp(cfg.older_than_millis / 1000, dt.UTC)
    lim = reason_limits(ctx, cfg, retain_min, retain_max, older_than)
    if dry_run:
        r = expire_snapshots(ctx, retain_min=cfg.retain_min, retain_max=cfg.retain_max, older_than=cutoff,
                             max_deletes=cap, dry_run=True)
        return _explained(ctx, r, r.begin, lim)
    total = _backlog(ctx, cfg, cap)
    results: list[ExpireResult] = []
    held: tuple = ()   # why the last run kept what it kept
    done = 0
    while done < cap:
        # the first run lists snapshot/ (and finishes interrupted runs); the next go by the hints
        r = expire_snapshots(ctx, retain_min=cfg.retain_min, retain_max=cfg.retain_max, older_than=cutoff,
                             max_deletes=min(cfg.max_deletes, cap - done), from_hints=bool(results))
        held = r.held
        if r.begin is None:
            break
        results.append(r)
        done += r.snapshots
        if progress is not None:
            progress(done, max(total, done), "snapshots expired")
    r = _added_up(results, held)
    return _explained(ctx, r, results[0].begin if results else None, lim)


def _explained(ctx, r: ExpireResult, begin: Optional[int], lim) -> ExpireResult:
    """``r`` with the reasons worded for the limits as the caller gave them, over the whole
    backlog (the runs saw the settings as arguments and each only its own step)."""
    sm = SnapshotManager(ctx.io, ctx.branch_path)
    earliest = begin if begin is not None else sm.earliest_id()
    gone, kept = expire_reasons(earliest=earliest, end=r.end, latest=sm.latest_id(),
                                time_of=_Reader(ctx, sm).time_of, lim=lim)
    return dataclasses.replace(r, expired_because=gone, kept=kept)


def _backlog(ctx: TableContext, cfg: ExpireSettings, cap: int) -> int:
    """About how many snapshots are due now (tags and consumers aside), for progress: the
    first young one is found by bisection (commit times grow with ids), reading a few."""
    sm = SnapshotManager(ctx.io, ctx.branch_path)
    earliest, latest = sm.earliest_id(), sm.latest_id()
    if earliest is None or latest is None:
        return 0
    time_of = _Reader(ctx, sm).time_of
    young = first_young(max(latest - cfg.retain_max + 1, earliest), min(latest - cfg.retain_min + 1, earliest + cap),
                        time_of, cfg.older_than_millis)
    return max(0, young - earliest)


def _added_up(results: Sequence[ExpireResult], held: tuple = ()) -> ExpireResult:
    if not results:
        return ExpireResult(held=held)

    def total(counter: str) -> int:
        return sum(getattr(r, counter) for r in results)
    return ExpireResult(results[0].begin, results[-1].end, data_files=total("data_files"),
                        changelog_files=total("changelog_files"), manifests=total("manifests"),
                        manifest_lists=total("manifest_lists"), snapshots=total("snapshots"), dry_run=False,
                        paths=tuple(p for r in results for p in r.paths), held=held)
