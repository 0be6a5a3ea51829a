"""Writing from Spark: every task writes its rows with its own ``TableWrite`` and hands its
CommitMessages back; the driver commits them all at once, exactly once, or deletes the files.

Batch writes commit with the job's ``commit-user`` and ``commit-identifier`` (when given, a re-run
that finds its identifier already committed deletes its new files and commits nothing), as an
OVERWRITE of the partitions written (``mode("overwrite")``), of a static partition
(``overwrite-partition``), or staged for a later publish (``stage-id``). Streaming writes commit
each micro-batch with its batch id as identifier under a commit user that outlives restarts, so a
batch Spark replays after a crash is never committed twice.
"""
from __future__ import annotations

import logging
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Optional
from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)

from lakeformat.table.table_commit import BATCH_IDENTIFIER, Overwrite
from lakeformat.table.staging import find_committed, stage
from lakeformat.errors import CommitError, CommitOutcomeUnknownError, DataError, LakeformatError
from lakeformat.format.commit_message import CommitMessage
from lakeformat.io.fileio import join
from lakeformat.spark.options import BUCKETS_BY_TASK, SourceOptions
from lakeformat.spark.types import from_spark

log = logging.getLogger(__name__)
CHUNK_ROWS, CHUNK_BYTES = 1 << 20, 128 << 20
CLOCK_SKEW_MILLIS = 60_000   # snapshot times come from the committing process's clock
TASK_SEQUENCE_RANGE = 1 << 32   # sequence numbers of one task when tasks share primary-key buckets


@dataclass(frozen=True)
class TaskCommit(WriterCommitMessage):
    """What one Spark task wrote."""

    messages: tuple[CommitMessage, ...]
    rows: int


def shared_buckets(opts: SourceOptions, table) -> bool:
    """Whether several tasks may write one primary-key bucket: a plain DataFrame write, not
    shuffled by bucket. Its tasks then write level-0 runs only (no compaction, which would make
    them conflict) with disjoint sequence-number ranges, and the runs commit together, as Paimon
    allows several level-0 runs per bucket; compaction happens on a later write or compaction."""
    return bool(table.schema.primary_keys) and not opts.write.buckets_by_task


def write_task(opts: SourceOptions, schema_id: int, commit_user: str, overwrite: bool,
               batches: Iterator[pa.RecordBatch], task: int = 0) -> TaskCommit:
    """One task's share: route its rows to (partition, bucket) files. On any failure, including
    one raised while Spark computes the incoming rows, the task's files are deleted. ``task``
    (Spark's partition id) places the task's sequence numbers when buckets are shared."""
    table = opts.table.open(schema_id)
    offset = 0
    if shared_buckets(opts, table):
        table = opts.table.with_options({"write-only": "true"}).open(schema_id)
        offset = task * TASK_SEQUENCE_RANGE
    w = table.new_write(commit_user, ignore_previous_files=overwrite, sequence_offset=offset)
    rows = 0
    # files are written in a background thread while the next rows arrive from Spark: Arrow
    # releases the GIL, so receiving and encoding overlap (one chunk in flight bounds memory)
    pool = ThreadPoolExecutor(1, thread_name_prefix="lakeformat-task-write")
    pending = None
    try:
        for chunk in coalesce(batches):
            data = from_spark(chunk, table.schema)
            if pending is not None:
                pending.result()
            pending = pool.submit(w.write, data)
            rows += chunk.num_rows
            if offset and rows >= TASK_SEQUENCE_RANGE:
                raise DataError(f"a Spark task wrote {rows} rows into {table.name}, more than the "
                                f"{TASK_SEQUENCE_RANGE} sequence numbers a task has; use more partitions")
        if pending is not None:
            pending.result()
        messages = tuple(w.prepare_commit())
    except BaseException:
        if pending is not None and not pending.cancel():
            _settle(pending)
        w.abort()
        raise
    finally:
        pool.shutdown()
    return TaskCommit(messages, rows)


def _settle(future) -> None:
    """Wait for a write that could not be cancelled (its files must exist before abort deletes them)."""
    try:
        future.result()
    except BaseException:
        pass


def coalesce(batches: Iterator[pa.RecordBatch], rows: int = CHUNK_ROWS,
             nbytes: int = CHUNK_BYTES) -> Iterator[pa.Table]:
    """Spark's Arrow batches (10,000 rows by default) gathered into chunks of about ``rows`` rows
    or ``nbytes`` bytes: per-write costs (conforming, routing, statistics) are paid per chunk,
    and Parquet row groups come out large."""
    pending: list[pa.RecordBatch] = []
    count = size = 0
    for b in batches:
        if not b.num_rows:
            continue
        pending.append(b)
        count, size = count + b.num_rows, size + b.nbytes
        if count >= rows or size >= nbytes:
            yield _combine(pending)
            pending, count, size = [], 0, 0
    if pending:
        yield _combine(pending)


def _combine(batches: list[pa.RecordBatch]) -> pa.Table:
    return pa.Table.from_batches(batches)


def collect(table, results: Sequence[Optional[TaskCommit]], shared: bool = False) -> list[CommitMessage]:
    """Every task's messages. Unless the tasks wrote shared buckets (see :func:`shared_buckets`),
    a primary-key bucket written by two tasks is refused: their sequence numbers would
    interleave and their compactions conflict."""
    messages = [m for r in results if r is not None for m in r.messages]
    if table.schema.primary_keys and not shared:
        seen: dict[tuple[bytes, int], int] = {}
        for i, r in enumerate(results):
            for m in (r.messages if r is not None else ()):
                key = (m.partition, m.bucket)
                if seen.setdefault(key, i) != i:
                    values = dict(zip(table.partition_keys, table.partition_values(m.partition)))
                    raise CommitError(
                        f"bucket {m.bucket} of partition {values} of primary-key table {table.name} was written "
                        f"by more than one Spark task although option {BUCKETS_BY_TASK!r} says every bucket is "
                        "in one task. Nothing was committed.")
    return messages


def delete_files(table, messages: Sequence[CommitMessage]) -> None:
    table.new_commit().abort(messages)


def delete_uncommitted(table, messages: Sequence[CommitMessage], commit_user: str, since_millis: int) -> None:
    """Delete the files of ``messages`` that no snapshot of ``commit_user`` made since
    ``since_millis`` added: after a commit that failed half-way (a COMPACT snapshot refused after
    its APPEND snapshot was made) the committed files must stay."""
    committed: set[str] = set()
    for snap in reversed(table.snapshots()):
        if snap.time_millis < since_millis:
            break
        if snap.commit_user == commit_user:
            committed |= {e.file.file_name for e in table.delta_entries(snap)}
    if not committed:
        delete_files(table, messages)
        return
    for m in messages:
        d = table.bucket_dir_of(m.partition, m.bucket)
        moved = {f.file_name for f in m.compact_before}
        for f in m.all_files():
            if f.file_name not in moved and f.file_name not in committed:
                table.io.delete(join(d, f.file_name))


def commit_job(opts: SourceOptions, schema_id: int, commit_user: str, overwrite: bool,
               results: Sequence[Optional[TaskCommit]], since_millis: int) -> None:
    table = opts.table.open(schema_id)
    spec = opts.write
    messages = collect_or_abort(table, results, shared_buckets(opts, table))
    rows = sum(r.rows for r in results if r is not None)
    identifier = spec.identifier if spec.identifier is not None else BATCH_IDENTIFIER
    try:
        if spec.stage_id is not None:
            if overwrite or spec.static_partition is not None:
                raise LakeformatError("a staged write cannot overwrite: stage appends, publish commits them")
            stage(table, messages, spec.stage_id, commit_user=commit_user, identifier=identifier)
            log.info("staged %d rows for %s as %s", rows, table.name, spec.stage_id)
            return
        if identifier != BATCH_IDENTIFIER:
            done = find_committed(table, commit_user, identifier)
            if done is not None:
                log.info("%s: identifier %d of %s is already committed as snapshot %d; the rows written "
                         "again are deleted", table.name, identifier, commit_user, done.id)
                delete_files(table, messages)
                return
        ow = None
        if spec.static_partition is not None:
            static = dict(spec.static_partition)
            table.partition_matcher(static)   # unknown keys fail here, before anything is committed
            ow = Overwrite(static)
        elif overwrite:
            ow = Overwrite() if table.partition_keys else Overwrite({})
        commit = table.new_commit(commit_user)
        snap = commit.commit(messages, identifier, overwrite=ow)
    except CommitOutcomeUnknownError:
        raise   # the snapshot may name these files: they stay
    except BaseException:
        delete_uncommitted(table, messages, commit_user, since_millis)
        raise
    if snap is not None:
        log.info("committed %d rows to %s as snapshot %d", rows, table.name, snap.id)


def collect_or_abort(table, results, shared: bool = False) -> list[CommitMessage]:
    try:
        return collect(table, results, shared)
    except BaseException:
        delete_files(table, [m for r in results if r is not None for m in r.messages])
        raise


class BatchWriter(DataSourceArrowWriter):
    def __init__(self, opts: SourceOptions, schema_id: int, overwrite: bool):
        self.opts, self.schema_id, self.overwrite = opts, schema_id, overwrite
        self.commit_user = opts.write.commit_user or f"spark-{uuid.uuid4()}"
        self.since_millis = int(time.time() * 1000) - CLOCK_SKEW_MILLIS   # snapshots this job may make
        self.outcome_unknown = False   # the commit may have happened: abort deletes nothing

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TaskCommit:
        ctx = TaskContext.get()
        return write_task(self.opts, self.schema_id, self.commit_user, self.overwrite, iterator,
                          ctx.partitionId() if ctx is not None else 0)

    def commit(self, messages: list) -> None:
        try:
            commit_job(self.opts, self.schema_id, self.commit_user, self.overwrite, messages, self.since_millis)
        except CommitOutcomeUnknownError:
            self.outcome_unknown = True
            raise

    def abort(self, messages: list) -> None:
        if self.outcome_unknown:
            log.warning("not deleting the files of the write to %s: its commit's outcome is unknown", self.opts.table)
            return
        table = self.opts.table.open(self.schema_id)
        found = [m for r in messages if r is not None for m in r.messages]
        delete_uncommitted(table, found, self.commit_user, self.since_millis)
        log.info("aborted the write to %s: deleted the files of %d finished task(s)", table.name,
                 sum(r is not None for r in messages))


class StreamWriter(DataSourceStreamArrowWriter):
    """Micro-batches committed with their batch id as identifier."""

    def __init__(self, opts: SourceOptions, schema_id: int, commit_user: str):
        self.opts, self.schema_id, self.commit_user = opts, schema_id, commit_user
        self.outcome_unknown = False   # a micro-batch's commit may have happened: abort deletes nothing

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TaskCommit:
        ctx = TaskContext.get()
        return write_task(self.opts, self.schema_id, self.commit_user, False, iterator,
                          ctx.partitionId() if ctx is not None else 0)

    def commit(self, messages: list, batchId: int) -> None:
        table = self.opts.table.open(self.schema_id)
        found = collect_or_abort(table, messages, shared_buckets(self.opts, table))
        commit = table.new_commit(self.commit_user)
        if batchId not in commit.filter_committed([batchId]):
            log.info("micro-batch %d of %s was committed before the restart; its rows written again are "
                     "deleted", batchId, self.commit_user)
            delete_files(table, found)
            return
        try:
            commit.commit(found, batchId)
        except CommitOutcomeUnknownError:
            self.outcome_unknown = True   # the snapshot may name these files: they stay
            raise
        except BaseException:
            self._delete_unless_committed(table, found, batchId)
            raise

    def abort(self, messages: list, batchId: int) -> None:
        if self.outcome_unknown:
            log.warning("not deleting the files of micro-batch %d: its commit's outcome is unknown", batchId)
            return
        table = self.opts.table.open(self.schema_id)
        self._delete_unless_committed(table, [m for r in messages if r is not None for m in r.messages], batchId)

    def _delete_unless_committed(self, table, messages, batch_id: int) -> None:
        if batch_id in table.new_commit(self.commit_user).filter_committed([batch_id]):
            delete_files(table, messages)


def stream_commit_user(opts: SourceOptions, options) -> str:
    """A commit user that is the same after a restart: the ``commit-user`` option, else one
    derived from the query's checkpoint location."""
    if opts.write.commit_user:
        return opts.write.commit_user
    location = options.get("checkpointlocation") or options.get("__checkpointlocation")
    if not location:
        raise LakeformatError("a streaming write to lakeformat needs option 'commit-user' (stable across "
                              "restarts) or a checkpointLocation to derive it from")
    return f"spark-stream-{uuid.uuid5(uuid.NAMESPACE_URL, location.rstrip('/'))}"
