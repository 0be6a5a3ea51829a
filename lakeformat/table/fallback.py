"""``scan.fallback-branch``: a batch read of a branch takes the partitions it lacks from another
branch (Paimon's ``FallbackReadFileStoreTable``).

The branch's own plan is read as it is; every partition the branch has (at the snapshot read,
whatever the filter) is complete there. The fallback branch is planned with the same filter,
its splits of those partitions dropped, and the rest read through the fallback branch's own
table (its schema, buckets and merge engine) with the branch's columns. Which fallback snapshot:
- no time travel: its latest;
- a snapshot id: the fallback's newest snapshot committed at or before that snapshot's time,
  else its earliest (snapshot ids of two branches are unrelated, times are comparable);
- a time: the fallback's snapshot at that time (none then: no fallback rows);
- a tag: the fallback's tag of that name (NotFoundError if it has none).

Incremental and streaming reads follow the branch alone, as in Paimon.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional
from collections.abc import Iterator, Sequence

import pyarrow as pa

from lakeformat.errors import NotFoundError
from lakeformat.format import options as O
from lakeformat.format import predicate as P
from lakeformat.format.branch import branch_identifier, check_fallback_schema, split_branch
from lakeformat.format.snapshot import Snapshot
from lakeformat.read.entries import live_entries
from lakeformat.read.scan import FileScan, Split
from lakeformat.read.split_read import SplitRead


@dataclass(frozen=True)
class FallbackPlan:
    """What a read takes from the fallback branch: its name, and its splits (``Split.branch``
    set) of the partitions the read branch lacks."""

    branch: str
    splits: tuple[Split, ...]


def fallback_table(table):
    """The Table of ``table``'s ``scan.fallback-branch`` (None if unset), checked compatible."""
    name = table.typed_options.get(O.SCAN_FALLBACK_BRANCH)
    if not name or not name.strip() or name == table.branch:
        return None
    base, _ = split_branch(table.name)
    try:
        fb = type(table)(table.io, table.path, branch_identifier(base, name), None, table.lock,
                         table.iceberg_cache, name)
    except NotFoundError:
        raise NotFoundError(f"{table.name} has scan.fallback-branch={name!r}, but that branch does not exist") from None
    check_fallback_schema(table.schema, fb.schema, table.branch, name)
    return fb


def _fallback_snapshot(table, fb, snapshot: Optional[Snapshot], snapshot_id, as_of, tag) -> Optional[Snapshot]:
    o = table.typed_options
    if snapshot_id is None and as_of is None and tag is None:   # time travel by the table's options
        tag, snapshot_id, as_of = o.get(O.SCAN_TAG_NAME), o.get(O.SCAN_SNAPSHOT_ID), o.get(O.SCAN_TIMESTAMP_MILLIS)
    if tag is not None:
        return fb.tags.snapshot_of(tag)
    if snapshot_id is not None:
        if snapshot is None:
            return None
        found = fb.snapshot_manager.at_or_before(snapshot.time_millis)
        if found is None:
            earliest = fb.snapshot_manager.earliest_id()
            found = fb.snapshot(earliest) if earliest is not None else None
        return found
    if as_of is not None:
        try:
            return fb.snapshot_as_of(as_of)
        except NotFoundError:
            return None
    return fb.latest_snapshot()


def plan_fallback(table, scan, filter: Optional[P.Predicate], snapshot_id=None, as_of=None,
                  tag=None) -> Optional[FallbackPlan]:
    """The fallback part of a batch read of ``table`` planned as ``scan`` (None: no fallback)."""
    fb = fallback_table(table)
    if fb is None:
        return None
    fb_snapshot = _fallback_snapshot(table, fb, scan.snapshot, snapshot_id, as_of, tag)
    if fb_snapshot is None:
        return FallbackPlan(fb.branch, ())
    ctx = scan.table.ctx
    have = set() if scan.snapshot is None else {ctx.partition_values(e.partition)
                                                for e in live_entries(ctx, scan.snapshot)}
    splits = tuple(replace(s, branch=fb.branch) for s in FileScan(fb.ctx, filter).plan(fb_snapshot)
                   if tuple(s.partition) not in have)
    return FallbackPlan(fb.branch, splits)


def _conform(data: pa.Table, schema: pa.Schema) -> pa.Table:
    """Fallback rows in the read branch's columns and types (nullability may differ)."""
    return pa.Table.from_arrays([data.column(f.name).cast(f.type) for f in schema], schema=schema)


def read_fallback(fb, splits: Sequence[Split], out_schema: pa.Schema, filter: Optional[P.Predicate]) -> pa.Table:
    """Rows of ``splits`` of the fallback branch's table ``fb``, in the read branch's columns."""
    return _conform(SplitRead(fb.ctx, out_schema.names, filter).read(splits), out_schema)


def fallback_batches(fb, splits: Sequence[Split], out_schema: pa.Schema, filter: Optional[P.Predicate],
                     buffer: Optional[int]) -> Iterator[pa.RecordBatch]:
    for batch in SplitRead(fb.ctx, out_schema.names, filter).to_batches(splits, buffer=buffer):
        yield from _conform(pa.Table.from_batches([batch]), out_schema).to_batches()
