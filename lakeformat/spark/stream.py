"""Streaming reads: Spark's offsets are snapshot ids.

An offset ``{"snapshot": n}`` means "every change up to snapshot n"; ``{"snapshot": n, "full":
true}`` means "before the whole of snapshot n", the start of a stream that first reads the table
as it is (``scan.mode`` ``latest-full``, the default) and then its changes. A micro-batch from
offset a to b reads the whole snapshot a (if a is full) and the changes of snapshots a+1..b.
Spark's checkpoint keeps the offsets, so a restarted query re-reads exactly the batch it had not
finished. The changes of a snapshot are the rows its APPEND commit added, or for a primary-key
table with a changelog producer its changelog; OVERWRITE and COMPACT snapshots of other tables
add no new rows to a stream (as in Paimon). With ``consumer-id`` the stream also records, after each finished batch, the
next snapshot it needs in ``consumer/consumer-<id>``: snapshot expiration keeps everything from there
on, and a new query with the same consumer id and no checkpoint resumes there. Spark reports a
batch as finished when it plans the next one, so after a stop the consumer may trail by the last
batch: a new query without the checkpoint reads that batch again (the checkpoint never does).
"""
from __future__ import annotations

import logging
from typing import Optional

from pyspark.sql.datasource import DataSourceStreamReader

from lakeformat.errors import NotFoundError
from lakeformat.spark.options import SourceOptions
from lakeformat.spark.read import read_partition
from lakeformat.spark.scan import change_units, partitions, snapshot_units

log = logging.getLogger(__name__)
SNAPSHOT, FULL = "snapshot", "full"


def start_offset(latest: Optional[int], mode: str, start_snapshot: Optional[int],
                 consumer_next: Optional[int]) -> dict:
    """Where a new stream starts (pure): a consumer's recorded position first, then an explicit
    start snapshot (changes after it), then the scan mode."""
    if consumer_next is not None:
        return {SNAPSHOT: consumer_next - 1}
    if start_snapshot is not None:
        return {SNAPSHOT: start_snapshot}
    if latest is None:
        return {SNAPSHOT: 0}
    if mode == "latest":
        return {SNAPSHOT: latest}
    return {SNAPSHOT: latest, FULL: True}


def next_offset(start: dict, latest: Optional[int]) -> dict:
    """The end of the next micro-batch (pure): everything up to the latest snapshot."""
    latest = latest or 0
    if start.get(FULL):
        return {SNAPSHOT: max(start[SNAPSHOT], latest)}
    return {SNAPSHOT: latest} if latest > start[SNAPSHOT] else start


def next_snapshot_needed(offset: dict) -> int:
    """The consumer position for a stream standing at ``offset``."""
    return offset[SNAPSHOT] if offset.get(FULL) else offset[SNAPSHOT] + 1


class StreamReader(DataSourceStreamReader):
    def __init__(self, opts: SourceOptions, columns, predicate, row_kind: bool, parallelism: int = 1):
        self.opts, self.columns, self.predicate, self.row_kind = opts, list(columns), predicate, row_kind
        self.parallelism = parallelism

    def _table(self):
        return self.opts.table.open()

    def initialOffset(self) -> dict:
        # asked more than once per query: decided once, so a consumer recorded meanwhile by
        # this very stream cannot move the start
        if getattr(self, "_initial", None) is None:
            self._initial = self._initial_offset()
        return self._initial

    def _initial_offset(self) -> dict:
        table, spec = self._table(), self.opts.read
        consumer_next = None
        if spec.consumer_id is not None:
            consumer_next = table.consumers.get(spec.consumer_id)
            if consumer_next is not None:
                earliest = table.snapshot_manager.earliest_id()
                if earliest is not None and consumer_next < earliest:
                    raise NotFoundError(
                        f"consumer {spec.consumer_id!r} of {table.name} needs snapshot {consumer_next}, but "
                        f"snapshots before {earliest} were expired; reset the consumer")
        return start_offset(table.snapshot_manager.latest_id(), spec.stream_start, spec.start_snapshot,
                            consumer_next)

    def latestOffset(self, start: dict, limit) -> dict:
        # Spark plans a batch only once the one before it is done: ``start`` is finished work
        self._record(start)
        return next_offset(start, self._table().snapshot_manager.latest_id())

    def partitions(self, start: dict, end: dict):
        table = self._table()
        units = []
        if start.get(FULL):
            units += snapshot_units(table, table.snapshot(start[SNAPSHOT]), self.predicate)
        units += change_units(table, start[SNAPSHOT], end[SNAPSHOT], self.predicate)
        return partitions(table, units, self.parallelism)

    def read(self, partition):
        return read_partition(self.opts, self.columns, self.predicate, self.row_kind, partition, None)

    def commit(self, end: dict) -> None:
        self._record(end)

    def _record(self, offset: dict) -> None:
        cid = self.opts.read.consumer_id
        n = next_snapshot_needed(offset)
        if cid is not None and n >= 1 and n != getattr(self, "_recorded", None):
            self._table().consumers.record(cid, n)
            self._recorded = n
