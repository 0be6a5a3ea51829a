"""Writing: conform input to the table schema, route rows to (partition, bucket), write files.

A ``TableWrite`` never touches ``snapshot/``: it produces ``CommitMessage``s that one committer
turns into a snapshot (the two-phase shape that lets many Spark tasks write and one driver commit).
"""
from __future__ import annotations

import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakeformat import options as O
from lakeformat import types as T
from lakeformat.binary_row import serialize_row
from lakeformat.bucket import bucket_ids
from lakeformat.errors import DataError
from lakeformat.fileio import join
from lakeformat.manifest import DataFileMeta, SimpleStats
from lakeformat.schema import TableSchema

Data = Union[pa.Table, pa.RecordBatch, pa.RecordBatchReader]
STATS_TRUNCATE = 16


@dataclass(frozen=True)
class CommitMessage:
    """The files one writer produced for one (partition, bucket)."""

    partition: bytes          # serialized BinaryRow of the partition values
    bucket: int
    total_buckets: int
    new_files: tuple[DataFileMeta, ...] = ()
    deleted_files: tuple[DataFileMeta, ...] = ()
    changelog_files: tuple[DataFileMeta, ...] = ()
    compact_before: tuple[DataFileMeta, ...] = ()
    compact_after: tuple[DataFileMeta, ...] = ()
    compact_changelog: tuple[DataFileMeta, ...] = ()

    def is_empty(self) -> bool:
        return not (self.new_files or self.deleted_files or self.changelog_files
                    or self.compact_before or self.compact_after or self.compact_changelog)

    def all_files(self) -> list[DataFileMeta]:
        return [*self.new_files, *self.changelog_files, *self.compact_after, *self.compact_changelog]


# ---------------------------------------------------------------- input conformance

def _compatible(src: pa.DataType, dst: T.DataType) -> bool:
    if pa.types.is_dictionary(src):
        src = src.value_type
    try:
        s = T.from_arrow(src, True)
    except Exception:
        return False
    d = T.with_nullable(dst, True)
    if s == d or T.can_widen(s, d):
        return True
    if isinstance(s, T.AtomicType) and isinstance(d, T.AtomicType):
        same_family = [("CHAR", "VARCHAR"), ("BINARY", "VARBINARY"), ("TIMESTAMP",), ("TIMESTAMP_LTZ",),
                       ("TIME",), ("DECIMAL",)]
        return any(s.root in fam and d.root in fam for fam in same_family)
    return T.to_arrow(d).equals(src) or _nested_castable(src, d)


def _nested_castable(src: pa.DataType, dst: T.DataType) -> bool:
    if isinstance(dst, T.ArrayType) and (pa.types.is_list(src) or pa.types.is_large_list(src)):
        return _compatible(src.value_type, dst.element)
    if isinstance(dst, T.MapType) and pa.types.is_map(src):
        return _compatible(src.key_type, dst.key) and _compatible(src.item_type, dst.value)
    if isinstance(dst, T.RowType) and pa.types.is_struct(src):
        names = [src.field(i).name for i in range(src.num_fields)]
        return names == dst.names and all(
            _compatible(src.field(i).type, f.type) for i, f in enumerate(dst.fields))
    return False


def conform(data: Union[pa.Table, pa.RecordBatch], schema: TableSchema) -> pa.Table:
    """Return ``data`` with exactly the table's columns, order and Arrow types, or raise
    ``DataError`` naming the offending column. Nothing is written before this passes."""
    table = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
    expected = schema.names
    missing = [n for n in expected if n not in table.column_names]
    extra = [n for n in table.column_names if n not in expected]
    if missing or extra:
        raise DataError(f"data does not match the table's columns: missing {missing}, unexpected {extra}")
    cols = []
    for f in schema.fields:
        arr = table.column(f.name)
        target = T.to_arrow(f.type)
        if not arr.type.equals(target):
            if not _compatible(arr.type, f.type):
                raise DataError(f"column {f.name!r}: expected {T.type_to_json(f.type)}, got Arrow type {arr.type}")
            try:
                arr = pc.cast(arr, target, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise DataError(f"column {f.name!r}: cannot convert {arr.type} to {T.type_to_json(f.type)}: {e}") from None
        if not f.type.nullable and arr.null_count:
            raise DataError(f"column {f.name!r} is NOT NULL but the data has {arr.null_count} null value(s)")
        cols.append(arr)
    return pa.Table.from_arrays(cols, schema=schema.arrow_schema())


# ---------------------------------------------------------------- statistics

def _truncate_max(v):
    """Smallest value > every string/bytes starting with the truncated prefix, or None."""
    if isinstance(v, str):
        head = v[:STATS_TRUNCATE]
        for i in range(len(head) - 1, -1, -1):
            if ord(head[i]) < 0x10FFFF:
                return head[:i] + chr(ord(head[i]) + 1)
        return None
    head = v[:STATS_TRUNCATE]
    for i in range(len(head) - 1, -1, -1):
        if head[i] < 255:
            return head[:i] + bytes([head[i] + 1])
    return None


def column_stats(arr: pa.ChunkedArray, t: T.DataType):
    """(min, max, null_count) of a column, Paimon's default ``truncate(16)`` for strings and
    bytes; min/max None for nested types."""
    nulls = arr.null_count
    if not isinstance(t, T.AtomicType) or nulls == len(arr):
        return None, None, nulls
    mm = pc.min_max(arr)
    lo, hi = mm["min"], mm["max"]
    if t.root in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
        lo, hi = lo.as_py(), hi.as_py()
        if len(lo) > STATS_TRUNCATE:
            lo = lo[:STATS_TRUNCATE]
        if len(hi) > STATS_TRUNCATE:
            hi = _truncate_max(hi)
    elif t.root in ("FLOAT", "DOUBLE"):
        lo, hi = lo.as_py(), hi.as_py()
    return lo, hi, nulls


class StatsCollector:
    """Accumulates per-column min/max/null counts over the batches of one file."""

    def __init__(self, fields: Iterable[T.DataField]):
        self.fields = list(fields)
        self.mins: list = [None] * len(self.fields)
        self.maxs: list = [None] * len(self.fields)
        self.nulls = [0] * len(self.fields)

    def add(self, table: pa.Table) -> None:
        for i, f in enumerate(self.fields):
            lo, hi, n = column_stats(table.column(i), f.type)
            self.nulls[i] += n
            self.mins[i] = _pick(self.mins[i], lo, min)
            self.maxs[i] = _pick(self.maxs[i], hi, max)

    def result(self) -> SimpleStats:
        types = [f.type for f in self.fields]
        return SimpleStats(serialize_row(self.mins, types), serialize_row(self.maxs, types), tuple(self.nulls))


def _key(v):
    return v.as_py() if isinstance(v, pa.Scalar) and not pa.types.is_timestamp(v.type) else (
        v.value if isinstance(v, pa.Scalar) else v)


def _pick(a, b, fn):
    if a is None:
        return b
    if b is None:
        return a
    return a if fn(_key(a), _key(b)) == _key(a) else b


# ---------------------------------------------------------------- files

class RollingFileWriter:
    """Appends Arrow tables to Parquet files of one bucket, starting a new file at ``target_size``."""

    def __init__(self, table, bucket_dir: str, schema: TableSchema, seq_start: int = 0, prefix: str = "data-"):
        self.table, self.dir, self.schema = table, bucket_dir, schema
        self.arrow_schema = self._file_schema()
        self.files: list[DataFileMeta] = []
        self.seq = seq_start
        self._writer = self._stream = None
        self._prefix = f"{prefix}{uuid.uuid4()}-"
        self._count = 0
        self._bytes_per_row = 0.0

    # hooks for other file layouts (the merge tree's key-value files)
    def _file_schema(self) -> pa.Schema:
        return _with_field_ids(self.schema)

    def _start_file(self) -> None:
        self._stats = StatsCollector(self.schema.fields)

    def _observe(self, part: pa.Table) -> None:
        self._stats.add(part)

    def _file_meta(self, name: str, size: int, rows: int) -> DataFileMeta:
        meta = DataFileMeta(
            file_name=name, file_size=size, row_count=rows, value_stats=self._stats.result(),
            min_sequence_number=self.seq, max_sequence_number=self.seq + rows - 1,
            schema_id=self.schema.id, level=0, creation_time_millis=int(time.time() * 1000))
        self.seq += rows
        return meta

    def write(self, data: pa.Table) -> None:
        """Append rows, rolling to a new file at the target size. Chunk sizes come from the
        bytes per row seen so far, so a large input rolls close to the target."""
        target = self.table.target_file_size
        offset = 0
        while offset < data.num_rows:
            if self._writer is None:
                self._open()
            written = self._stream.tell()
            chunk = data.num_rows - offset
            if self._bytes_per_row:
                chunk = min(chunk, max(256, int((target - written) / self._bytes_per_row)))
            else:
                chunk = min(chunk, 16384)   # learn the bytes per row on a first small chunk
            part = data.slice(offset, chunk)
            self._writer.write_table(part.cast(self.arrow_schema), row_group_size=1 << 20)
            self._observe(part)
            self._rows += part.num_rows
            offset += part.num_rows
            grown = self._stream.tell() - written
            if grown:
                self._bytes_per_row = grown / part.num_rows
            if self._stream.tell() >= target:
                self._close_file()

    def _open(self) -> None:
        opts = self.table.options
        self._name = f"{self._prefix}{self._count}.{opts.get('file.format', 'parquet')}"
        self._count += 1
        self._stream = self.table.io.open_output(join(self.dir, self._name))
        compression = opts.get("file.compression", "zstd")
        level = int(opts.get("file.compression.zstd-level", "1")) if compression == "zstd" else None
        self._writer = pq.ParquetWriter(self._stream, self.arrow_schema, compression=compression,
                                        compression_level=level, write_statistics=False)
        self._rows = 0
        self._start_file()

    def _close_file(self) -> None:
        self._writer.close()
        size = self._stream.tell()
        self._stream.close()
        self.files.append(self._file_meta(self._name, size, self._rows))
        self._writer = self._stream = None

    def close(self) -> list[DataFileMeta]:
        if self._writer is not None:
            self._close_file()
        return self.files

    def abort(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._stream.close()
            self.files.append(DataFileMeta(self._name, 0, 0))
            self._writer = None
        for f in self.files:
            self.table.io.delete(join(self.dir, f.file_name))
        self.files = []


def _with_field_ids(schema: TableSchema) -> pa.Schema:
    """The Parquet schema carries Paimon field ids, as Paimon's own writers do."""
    fields = []
    for f, af in zip(schema.fields, schema.arrow_schema()):
        fields.append(af.with_metadata({b"PARQUET:field_id": str(f.id).encode()}))
    return pa.schema(fields)


# ---------------------------------------------------------------- routing

def group_rows(table: pa.Table, schema: TableSchema) -> list[tuple[list, int, pa.Table]]:
    """Split ``table`` into (partition values, bucket, rows) groups, vectorised: one combined
    integer code per row, one stable argsort, one take."""
    n = table.num_rows
    codes = np.zeros(n, dtype=np.int64)
    for name in schema.partition_keys:
        enc = pc.dictionary_encode(table.column(name)).combine_chunks()
        idx = enc.indices.fill_null(len(enc.dictionary)).to_numpy(zero_copy_only=False)
        codes = codes * (len(enc.dictionary) + 1) + idx
    num_buckets = schema.num_buckets
    if num_buckets > 0:
        key_fields = [schema.field(k) for k in schema.bucket_keys]
        buckets = bucket_ids([table.column(f.name) for f in key_fields], [f.type for f in key_fields],
                             num_buckets)
        codes = codes * num_buckets + buckets
    else:
        buckets = None
    if n and codes.min() == codes.max():
        bounds, ordered = [0, n], table
    else:
        steps = np.diff(codes)
        if (steps >= 0).all():   # already clustered (e.g. landing data sorted by day): no shuffle
            ordered = table
        else:
            order = np.argsort(codes, kind="stable")
            codes = codes[order]
            steps = np.diff(codes)
            ordered = table.take(pa.array(order))
            if buckets is not None:
                buckets = buckets[order]
        bounds = [0, *(np.flatnonzero(steps) + 1).tolist(), n]
    groups = []
    part_cols = [ordered.column(k) for k in schema.partition_keys]
    for start, end in zip(bounds[:-1], bounds[1:]):
        if start == end:
            continue
        values = [c[start].as_py() for c in part_cols]
        bucket = int(buckets[start]) if buckets is not None else 0
        groups.append((values, bucket, ordered.slice(start, end - start)))
    return groups


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
                from lakeformat.mergetree.writer import MergeTreeWriter
                w = MergeTreeWriter(self.table, key[0], bucket, d, self._restore(key[0], bucket))
            elif self.schema.num_buckets > 0:   # continues the bucket's sequence, compacts it
                from lakeformat.append_compact import AppendBucketWriter
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
            for e in entries:
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
