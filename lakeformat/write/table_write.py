"""Writing: conform input to the table schema, route rows to (partition, bucket), write files.

A ``TableWrite`` never touches ``snapshot/``: it produces ``CommitMessage``s that one committer
turns into a snapshot (the two-phase shape that lets many Spark tasks write and one driver commit).
"""
from __future__ import annotations

import itertools
import dataclasses
import os
import uuid
from concurrent.futures import ThreadPoolExecutor
import logging
from collections.abc import Callable
from typing import Any, Optional, TypeVar, Union

import numpy as np
import pyarrow as pa

from lakeformat.errors import CorruptFileError, DataError, OptionError, UnsupportedError
from lakeformat.format import options as O
from lakeformat.format import arrays as A
from lakeformat.format.binary_row import serialize_row
from lakeformat.format.blob import is_blob
from lakeformat.format.commit_message import CommitMessage
from lakeformat.format.index_manifest import DELETION_VECTORS, IndexFileMeta
from lakeformat.format.manifest import DataFileMeta
from lakeformat.format.schema import TableSchema
from lakeformat.format.snapshot import Snapshot
from lakeformat.io.data_file import RollingFileWriter
from lakeformat.io.index_files import IndexFiles
from lakeformat.io.table_context import TableContext
from lakeformat.mergetree.writer import MergeTreeWriter
from lakeformat.read.entries import live_entries
from lakeformat.write.append_compact import AppendBucketWriter
from lakeformat.write.blob_write import BlobTableWriter
from lakeformat.write.conform import as_arrow, conform
from lakeformat.write.dynamic_bucket import DynamicBuckets
from lakeformat.write.routing import group_rows

Data = Union[pa.Table, pa.RecordBatch, pa.RecordBatchReader]
T = TypeVar("T")
log = logging.getLogger(__name__)
RESTORE_ATTEMPTS = 20   # reads of the newest snapshot's metadata racing a fast expiration


# ---------------------------------------------------------------- input conformance


# ---------------------------------------------------------------- statistics


# ---------------------------------------------------------------- files


# ---------------------------------------------------------------- routing


def _write_all(writer, parts: list[pa.Table], row_kind: Optional[int] = None) -> None:
    for rows in parts:
        if row_kind is None:
            writer.write(rows)
        else:
            writer.write(rows, np.full(rows.num_rows, row_kind, dtype=np.int8))


class TableWrite:
    """Writes data into new files of one table; ``prepare_commit`` hands over the messages."""

    def __init__(self, ctx: TableContext, commit_user: Optional[str] = None, ignore_previous_files: bool = False,
                 sequence_offset: int = 0):
        """``sequence_offset``: added to the sequence numbers of primary-key rows, so that writers
        of the same buckets in one commit (write-only, e.g. Spark tasks) never share a number."""
        O.check_supported(ctx.schema.options, O.WRITE, ctx.name)
        self.ctx = ctx
        self.sequence_offset = sequence_offset
        self.ignore_previous_files = ignore_previous_files
        self.schema: TableSchema = ctx.schema
        self.commit_user = commit_user or str(uuid.uuid4())
        self._writers: dict[tuple[bytes, int], Any] = {}   # RollingFileWriter or MergeTreeWriter
        self._restored: dict[bytes, dict[int, list[DataFileMeta]]] = {}
        self._index: Optional[dict[tuple[bytes, int], list[IndexFileMeta]]] = None
        self._dynamic = (DynamicBuckets(ctx, ignore_previous_files)
                         if self.schema.primary_keys and self.schema.num_buckets <= 0 else None)
        self._part_types = [f.type for f in self.schema.partition_fields]
        self._executor: Optional[ThreadPoolExecutor] = None

    def write(self, data: Data, row_kind: Optional[int] = None) -> None:
        """Route and write rows. Different (partition, bucket) writers encode their Parquet
        files in parallel threads: Arrow releases the GIL, so this uses every core.
        ``row_kind`` (primary-key tables) forces one kind on every row, e.g. -D for deletes."""
        data = as_arrow(data)
        batches = data if isinstance(data, pa.RecordBatchReader) else [data]
        for batch in batches:
            table = conform(batch, self.schema)
            if not table.num_rows:
                continue
            jobs = [(self._writer(values, bucket), rows) for values, bucket, rows in self._route(table)]
            if len(jobs) == 1:
                _write_all(jobs[0][0], [jobs[0][1]], row_kind)
                continue
            by_writer: dict[int, list] = {}
            for w, rows in jobs:
                by_writer.setdefault(id(w), [w]).append(rows)
            for f in [self._pool().submit(_write_all, group[0], group[1:], row_kind) for group in by_writer.values()]:
                f.result()
            if self.schema.primary_keys:
                self._bound_buffers()

    def _route(self, data: pa.Table) -> list[tuple[list, int, pa.Table]]:
        """(partition values, bucket, rows) groups; in dynamic bucket mode the HASH index picks
        each key's bucket."""
        groups = group_rows(data, self.schema)
        if self._dynamic is None:
            return groups
        out = []
        for values, _, rows in groups:
            buckets = self._dynamic.assign(serialize_row(values, self._part_types), rows)
            order = np.argsort(buckets, kind="stable")
            ordered = buckets[order]
            bounds = [0, *(np.flatnonzero(np.diff(ordered)) + 1).tolist(), len(ordered)]
            for start, end in itertools.pairwise(bounds):
                out.append((values, int(ordered[start]), rows.take(A.indices(order[start:end]))))
        return out

    def _bound_buffers(self) -> None:
        """``write-buffer-size`` bounds the buffers of all of this writer's buckets together (as
        Paimon's shared memory pool does): past it, the largest buffer is flushed or spilled."""
        limit = self.ctx.typed_options.get(O.WRITE_BUFFER_SIZE)
        writers = list(self._writers.values())
        while writers and sum(w.buffer_bytes for w in writers) >= limit:
            max(writers, key=lambda w: w.buffer_bytes).release()

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max(2, os.cpu_count() or 2), thread_name_prefix="lakeformat-write")
        return self._executor

    def _writer(self, values: list, bucket: int):
        key = (serialize_row(values, self._part_types), bucket)
        w = self._writers.get(key)
        if w is None:
            d = self.ctx.bucket_dir(values, bucket)
            if self.schema.primary_keys:
                w = MergeTreeWriter(self.ctx, key[0], bucket, d, self._restore(key[0], bucket),
                                    self._restore_index(key[0], bucket), self.sequence_offset)
            elif self.schema.num_buckets > 0 and any(is_blob(f.type) for f in self.schema.fields):
                raise UnsupportedError(f"table {self.ctx.name}: lakeformat writes BLOB tables with 'bucket' = -1 only")
            elif self.schema.num_buckets > 0:   # continues the bucket's sequence, compacts it
                o = self.ctx.typed_options
                if o.get(O.DELETION_VECTORS) and not o.get(O.WRITE_ONLY):
                    raise OptionError(f"{self.ctx.name}: compacting append tables with 'deletion-vectors.enabled' "
                                      "is not supported; write with 'write-only' = 'true'")
                w = AppendBucketWriter(self.ctx, key[0], bucket, d, self._restore(key[0], bucket))
            elif any(is_blob(f.type) for f in self.schema.fields):
                w = BlobTableWriter(self.ctx, d, self.schema)
            else:
                w = RollingFileWriter(self.ctx, d, self.schema)
            self._writers[key] = w
        return w

    def _restore(self, partition: bytes, bucket: int) -> list[DataFileMeta]:
        """Live files of a primary-key or fixed-bucket append bucket as of the latest snapshot
        (read once per partition): the writer continues their sequence numbers and compacts with them."""
        if self.ignore_previous_files:
            return []
        if partition not in self._restored:
            entries = self._of_latest(lambda latest: live_entries(self.ctx, latest, {partition}))
            by_bucket: dict[int, list[DataFileMeta]] = {}
            total = self.schema.num_buckets
            for e in entries:
                if total > 0 and e.total_buckets != total:
                    raise DataError(
                        f"partition {dict(zip(self.schema.partition_keys, self.ctx.partition_values(partition)))} "
                        f"of {self.ctx.name} holds files written with {e.total_buckets} buckets, but 'bucket' is "
                        f"now {total}: new rows would land in other buckets than the rows already there. "
                        "Rewrite the partition with an overwrite first (which places every row by the new count)")
                by_bucket.setdefault(e.bucket, []).append(e.file)
            self._restored[partition] = by_bucket
        return self._restored[partition].get(bucket, [])

    def _restore_index(self, partition: bytes, bucket: int) -> list[IndexFileMeta]:
        """The bucket's deletion-vector index files as of the latest snapshot (index manifest read once)."""
        if self.ignore_previous_files or not self.ctx.typed_options.get(O.DELETION_VECTORS):
            return []
        if self._index is None:
            self._index = {}
            for e in self._of_latest(lambda latest: IndexFiles.of(self.ctx).read_manifest(latest.index_manifest)):
                if e.file.index_type == DELETION_VECTORS:
                    self._index.setdefault((e.partition, e.bucket), []).append(e.file)
        return self._index.get((partition, bucket), [])

    def _of_latest(self, read: Callable[[Snapshot], list[T]]) -> list[T]:
        """``read`` of the latest snapshot's metadata (nothing without a snapshot). Metadata that
        vanishes meanwhile was removed by a concurrent expiration, which only expires snapshots
        once newer ones exist: read the newest again. Without a newer one the file is really missing."""
        attempts = 0
        while True:
            latest = self.ctx.latest_snapshot()
            if latest is None:
                return []
            try:
                return read(latest)
            except CorruptFileError:
                attempts += 1
                if attempts >= RESTORE_ATTEMPTS or not self.ctx.snapshot_manager.newer_exists(latest.id):
                    raise
                log.info("%s: snapshot %d was expired while this writer read it; reading the newest",
                         self.ctx.name, latest.id)

    def prepare_commit(self, full_compaction: bool = False) -> list[CommitMessage]:
        """Close every open file and return one message per (partition, bucket) written."""
        total = self.schema.num_buckets
        if self.schema.primary_keys or total > 0:   # writers live on: sequence numbers, levels continue
            writers = list(self._writers.values())
            if len(writers) > 1:   # flushes and compactions of different buckets run in parallel
                msgs = list(self._pool().map(lambda w: w.prepare_commit(total, full_compaction), writers))
            else:
                msgs = [w.prepare_commit(total, full_compaction) for w in writers]
            if self._dynamic is not None:   # each bucket that gained keys: its new HASH index file
                grown = self._dynamic.hand_over()
                msgs = [dataclasses.replace(m, index_added=m.index_added + grown[(m.partition, m.bucket)][0],
                                            index_deleted=m.index_deleted + grown[(m.partition, m.bucket)][1])
                        if (m.partition, m.bucket) in grown else m for m in msgs]
        else:
            msgs = [CommitMessage(part, bucket, total, tuple(w.close()))
                    for (part, bucket), w in self._writers.items()]
            self._writers = {}
        self._shutdown()
        return [m for m in msgs if not m.is_empty()]

    def abort(self) -> None:
        """Delete every file this writer produced that has not been handed over."""
        for w in self._writers.values():
            w.abort()
        self._writers = {}
        self._shutdown()

    def _shutdown(self) -> None:
        if self._executor is not None:
            self._executor.shutdown()
            self._executor = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *_):
        if exc_type is not None:
            self.abort()
