"""Incremental and streaming reads that remember where they stopped (consumers).

``read_incremental(..., consumer_id=c)`` resumes after the last batch consumer ``c`` read and
records the new position. A reader with no recorded progress starts as Paimon's ``scan.mode``
says, the same for both: by default (``latest-full``) with every row of the latest snapshot,
then the changes of each newer one; ``latest`` only the changes after the latest snapshot;
``from-snapshot``/``from-snapshot-full`` at ``scan.snapshot-id``. So a new consumer always
works, also after old snapshots were expired. ``TableStream`` follows new snapshots, one batch per snapshot; it
records a batch as consumed when the caller asks for the next one (or calls ``ack``), so a
reader killed while handling a batch gets that batch again after a restart, and never a batch
it had finished (exactly-once for a reader whose handling of a batch is atomic).
"""
from __future__ import annotations

import time
from typing import Optional
from collections.abc import Iterator, Sequence

import pyarrow as pa

from lakeformat.errors import LakeformatError, NotFoundError, OptionError
from lakeformat.format import options as O
from lakeformat.format import predicate as P

ROW_KIND = "_row_kind"


def _consumer_id(table, consumer_id: Optional[str]) -> Optional[str]:
    return consumer_id if consumer_id is not None else table.typed_options.get(O.CONSUMER_ID)


def _check_available(table, first: int, consumer_id: Optional[str]) -> None:
    """Fail clearly when the snapshot a read must start at has been expired."""
    earliest = table.snapshot_manager.earliest_id()
    if earliest is not None and first < earliest:
        who = f"consumer {consumer_id!r} needs" if consumer_id else "this read needs"
        raise NotFoundError(f"{who} snapshot {first} of {table.name} onwards, but snapshots before {earliest} "
                            f"were expired; reset the consumer or start at snapshot {earliest} or later")


# Paimon's scan.mode for a reader with no start and no recorded progress: (read the start snapshot
# whole first?, where to start). 'default' and 'latest-full': the whole latest snapshot, then its
# changes; 'latest': only changes after the latest; 'from-snapshot[-full]': at scan.snapshot-id.
_SCAN_MODES = {"default": (True, "latest"), "latest-full": (True, "latest"), "latest": (False, "after-latest"),
               "from-snapshot": (False, "snapshot-id"), "from-snapshot-full": (True, "snapshot-id")}


def start_position(table, end: Optional[int]) -> tuple[Optional[int], bool]:
    """(first snapshot to read, whether to read it whole) of a new reader, by ``scan.mode``;
    the first snapshot is None when the table has none yet."""
    mode = table.typed_options.get(O.SCAN_MODE)
    if mode not in _SCAN_MODES:
        raise OptionError(f"option 'scan.mode' = {mode!r} is not supported for incremental and streaming reads; "
                          f"lakeformat supports {', '.join(_SCAN_MODES)}")
    full, where = _SCAN_MODES[mode]
    latest = end if end is not None else table.snapshot_manager.latest_id()
    if where == "snapshot-id":
        sid = table.typed_options.get(O.SCAN_SNAPSHOT_ID)
        if sid is None:
            raise OptionError(f"option 'scan.mode' = {mode!r} needs 'scan.snapshot-id'")
        return sid, full
    if latest is None:
        return None, False
    return (latest, True) if full else (latest + 1, False)


def full_snapshot(table, sid: int, columns, filter) -> pa.Table:
    """Every row of snapshot ``sid``, as inserts (``_row_kind`` +I on changelog reads)."""
    scan = table.scan(filter, columns, snapshot_id=sid, fallback=False)   # streams ignore scan.fallback-branch
    data = scan.table.read_splits(scan.plan(), columns, filter)
    if table._changelog_read():
        data = data.append_column(ROW_KIND, pa.array(["+I"] * data.num_rows, pa.string()))
    return data


def read_incremental(table, start_snapshot: Optional[int] = None, end_snapshot: Optional[int] = None,
                     columns: Optional[Sequence[str]] = None, filter: Optional[P.Predicate] = None,
                     consumer_id: Optional[str] = None) -> pa.Table:
    """Changes after ``start_snapshot`` up to ``end_snapshot`` (default: latest). Without a
    start, a consumer resumes where it stopped; a new reader starts as ``scan.mode`` says
    (default: the whole latest snapshot, Paimon's latest-full). With a consumer, its next
    snapshot becomes ``end + 1`` once the rows are read."""
    for name, v in (("start_snapshot", start_snapshot), ("end_snapshot", end_snapshot)):
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
            raise LakeformatError(f"read_incremental: {name} must be a snapshot id (an integer >= 0), not {v!r}")
    if start_snapshot is not None and end_snapshot is not None and end_snapshot < start_snapshot:
        raise LakeformatError(f"read_incremental: end_snapshot {end_snapshot} is before start_snapshot "
                              f"{start_snapshot}; changes run from an older snapshot to a newer one")
    cid = _consumer_id(table, consumer_id)
    start = start_snapshot
    end = end_snapshot if end_snapshot is not None else table.snapshot_manager.latest_id()
    if start is None:
        recorded = table.consumers.get(cid) if cid is not None else None
        if recorded is not None:
            start = recorded - 1
        else:
            first, full = start_position(table, end)
            if first is None:
                return table._read_changes(0, None, columns, filter)   # no snapshot yet: nothing
            if full:
                data = full_snapshot(table, first, columns, filter)
                if cid is not None:
                    table.consumers.record(cid, first + 1)
                return data
            start = first - 1
            if cid is not None and end is not None and end <= start:
                table.consumers.record(cid, start + 1)   # 'latest': remember where reading begins
    if end is not None and end > start:
        _check_available(table, start + 1, cid)
    data = table._read_changes(start, end, columns, filter)
    if cid is not None and end is not None and end > start:
        table.consumers.record(cid, end + 1)
    return data


class TableStream:
    """Iterator of ``(snapshot_id, pa.Table)``: with no start and no recorded progress, first
    the whole latest snapshot, then the changes of each new snapshot as it appears (snapshots
    without changes, like compactions of an append table, are passed over). ``start_snapshot``
    is the first snapshot to read. Stops after ``max_batches`` batches or ``idle_timeout``
    seconds without a new snapshot; waits forever otherwise."""

    def __init__(self, table, consumer_id: Optional[str] = None, start_snapshot: Optional[int] = None,
                 poll_interval: float = 1.0, max_batches: Optional[int] = None,
                 idle_timeout: Optional[float] = None, columns: Optional[Sequence[str]] = None,
                 filter: Optional[P.Predicate] = None):
        self.table, self.columns, self.filter = table, columns, filter
        self.consumer_id = _consumer_id(table, consumer_id)
        self.poll_interval, self.max_batches, self.idle_timeout = poll_interval, max_batches, idle_timeout
        recorded = table.consumers.get(self.consumer_id) if self.consumer_id is not None else None
        # the next snapshot to read; None: start as scan.mode says (a full read by default)
        self.next_snapshot: Optional[int] = recorded if recorded is not None else start_snapshot
        self._full_at: Optional[int] = None
        if self.next_snapshot is None and table.snapshot_manager.latest_id() is not None:
            first, full = start_position(table, None)
            self.next_snapshot, self._full_at = (None, first) if full else (first, None)
        self.batches = 0
        self._pending: Optional[int] = None   # position to record once the last batch is consumed

    def __iter__(self) -> Iterator[tuple[int, pa.Table]]:
        return self

    def ack(self) -> None:
        """Record the last batch handed out as consumed (done anyway on the next request)."""
        if self._pending is not None and self.consumer_id is not None:
            self.table.consumers.record(self.consumer_id, self._pending)
        self._pending = None

    def __next__(self) -> tuple[int, pa.Table]:
        self.ack()
        if self.max_batches is not None and self.batches >= self.max_batches:
            raise StopIteration
        idle_since = time.monotonic()
        sm = self.table.snapshot_manager
        while True:
            latest = sm.latest_id()
            if self.next_snapshot is None:
                if latest is None:
                    self.next_snapshot = 1          # empty table: every snapshot is new
                else:
                    sid = self._full_at if self._full_at is not None else latest
                    return self._hand_out(sid, full_snapshot(self.table, sid, self.columns, self.filter))
            elif latest is not None and self.next_snapshot <= latest:
                sid = self.next_snapshot
                _check_available(self.table, sid, self.consumer_id)
                data = self.table._read_changes(sid - 1, sid, self.columns, self.filter)
                if data.num_rows:
                    return self._hand_out(sid, data)
                self.next_snapshot = sid + 1        # nothing to hand out: move on at once
                self._pending = sid + 1
                self.ack()
                idle_since = time.monotonic()
                continue
            if self.idle_timeout is not None and time.monotonic() - idle_since >= self.idle_timeout:
                raise StopIteration
            time.sleep(self.poll_interval)

    def _hand_out(self, sid: int, data: pa.Table) -> tuple[int, pa.Table]:
        self.next_snapshot = self._pending = sid + 1
        self.batches += 1
        return sid, data

