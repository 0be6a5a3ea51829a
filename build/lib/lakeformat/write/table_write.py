"""Writing: conform input to the table schema, route rows to (partition, bucket), write files.

A ``TableWrite`` never touches ``snapshot/``: it produces ``CommitMessage``s that one committer
turns into a snapshot (the two-phase shape that lets many Spark tasks write and one driver commit).
"""
from __future__ import annotations

import os
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional, Union

import numpy as np
import pyarrow as pa

from lakeformat.errors import DataError
from lakeformat.format import options as O
from lakeformat.format.binary_row import serialize_row
from lakeformat.format.commit_message import CommitMessage
from lakeformat.format.manifest import DataFileMeta
from lakeformat.format.schema import TableSchema
from lakeformat.io.data_file import RollingFileWriter
from lakeformat.mergetree.writer import MergeTreeWriter
from lakeformat.write.append_compact import AppendBucketWriter
from lakeformat.write.conform import as_arrow, conform
from lakeformat.write.routing import group_rows

Data = Union[pa.Table, pa.RecordBatch, pa.RecordBatchReader]


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

    def __init__(self, table, commit_user: Optional[str] = None, ignore_previous_files: bool = False):
        self.table = table
        self.ignore_previous_files = ignore_previous_files
        self.schema: TableSchema = table.schema
        self.commit_user = commit_user or str(uuid.uuid4())
        self._writers: dict[tuple[bytes, int], Any] = {}   # RollingFileWriter or MergeTreeWriter
        self._restored: dict[bytes, dict[int, list[DataFileMeta]]] = {}
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
            jobs = [(self._writer(values, bucket), rows) for values, bucket, rows in group_rows(table, self.schema)]
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

    def _bound_buffers(self) -> None:
        """``write-buffer-size`` bounds the buffers of all of this writer's buckets together (as
        Paimon's shared memory pool does): past it, the largest buffer is flushed or spilled."""
        limit = self.table.typed_options.get(O.WRITE_BUFFER_SIZE)
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
            d = self.table.bucket_dir(values, bucket)
            if self.schema.primary_keys:
                w = MergeTreeWriter(self.table, key[0], bucket, d, self._restore(key[0], bucket))
            elif self.schema.num_buckets > 0:   # continues the bucket's sequence, compacts it
                w = AppendBucketWriter(self.table, key[0], bucket, d, self._restore(key[0], bucket))
            else:
                w = RollingFileWriter(self.table, d, self.schema)
            self._writers[key] = w
        return w

    def _restore(self, partition: bytes, bucket: int) -> list[DataFileMeta]:
        """Live files of a primary-key or fixed-bucket append bucket as of the latest snapshot
        (read once per partition): the writer continues their sequence numbers and compacts with them."""
        if self.ignore_previous_files:
            return []
        if partition not in self._restored:
            latest = self.table.latest_snapshot()
            entries = self.table.live_entries(latest, {partition}) if latest else []
            by_bucket: dict[int, list[DataFileMeta]] = {}
            total = self.schema.num_buckets
            for e in entries:
                if total > 0 and e.total_buckets != total:
                    raise DataError(
                        f"partition {dict(zip(self.schema.partition_keys, self.table.partition_values(partition)))} "
                        f"of {self.table.name} holds files written with {e.total_buckets} buckets, but 'bucket' is "
                        f"now {total}: new rows would land in other buckets than the rows already there. "
                        "Rewrite the partition with an overwrite first (which places every row by the new count)")
                by_bucket.setdefault(e.bucket, []).append(e.file)
            self._restored[partition] = by_bucket
        return self._restored[partition].get(bucket, [])

    def prepare_commit(self, full_compaction: bool = False) -> list[CommitMessage]:
        """Close every open file and return one message per (partition, bucket) written."""
        total = self.schema.num_buckets
        if self.schema.primary_keys or total > 0:   # writers live on: sequence numbers, levels continue
            writers = list(self._writers.values())
            if len(writers) > 1:   # flushes and compactions of different buckets run in parallel
                msgs = list(self._pool().map(lambda w: w.prepare_commit(total, full_compaction), writers))
            else:
                msgs = [w.prepare_commit(total, full_compaction) for w in writers]
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
