"""Data files of a bucket (Parquet, ORC or Avro: ``io/file_format.py``) written with Paimon's field
ids and statistics, and read back in a table's current schema.

Files written under an older schema are mapped by field id: a renamed column is found under its
old name, a column added later reads as nulls, a column whose type changed is converted by
Paimon's cast rules (``format/casts.py``).
"""
from __future__ import annotations

import time
import uuid
from typing import Any, Optional
from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import CorruptFileError, LakeformatError
from lakeformat.format import types as T
from lakeformat.format.casts import cast_column
from lakeformat.format.binary_row import serialize_row
from lakeformat.format.deletion_vector import keep_mask
from lakeformat.format.manifest import DataFileMeta, SimpleStats
from lakeformat.format.names import under_root
from lakeformat.format import options as O
from lakeformat.format.options import parse_list
from lakeformat.format.schema import TableSchema
from lakeformat.io.file_format import FormatWriter, check_writable, format_of, iter_tables, read_table
from lakeformat.io.fileio import join, storage_error
from lakeformat.io.orc_ids import data_schema
from lakeformat.io.table_context import TableContext


EXTERNAL_PATHS = "data-file.external-paths"   # Paimon's roots for data files outside the table


def file_path(ctx: TableContext, bucket_dir: str, f: DataFileMeta) -> str:
    """Where data file ``f`` of ``bucket_dir`` is: beside it, or at its external path when that lies
    under a root the table's ``data-file.external-paths`` allows. A file anywhere else is never
    read nor deleted: metadata naming it is treated as corrupt."""
    if f.external_path is None:
        return join(bucket_dir, f.file_name)
    roots = parse_list(ctx.schema.options.get(EXTERNAL_PATHS, ""))
    if not under_root(f.external_path, roots):
        raise CorruptFileError(f.external_path, f"data file {f.file_name} of {getattr(ctx, 'name', ctx)} has an "
                               f"external path outside the roots the table's {EXTERNAL_PATHS!r} allows "
                               f"({', '.join(roots) or 'none set'}); lakeformat neither reads nor deletes it")
    return f.external_path


def _located(ctx: TableContext, path: str, f: DataFileMeta) -> str:
    """``path`` (bucket dir + file name) or, for a file stored elsewhere, its checked external path."""
    return path if f.external_path is None else file_path(ctx, path.rsplit("/", 1)[0], f)


# What pyarrow, fastavro and the row count check raise for a file that does not parse. Not memory,
# capacity or cancellation errors: those are not the file's.
_UNREADABLE = (OSError, ValueError, KeyError, EOFError, IndexError, pa.ArrowTypeError, pa.ArrowSerializationError)


def corruption(error: BaseException) -> Optional[str]:
    """Why ``error``, raised reading a data file, means the file is corrupt; None when it is not
    the file's fault and must propagate as it is. pyarrow raises OSError both for storage failures
    (an errno, an S3 "AWS Error") and for Parquet's own parse and checksum failures."""
    text = " ".join(str(error).split())
    if isinstance(error, LakeformatError) or (isinstance(error, OSError) and (error.errno or "AWS Error" in text)):
        return None
    if "CRC checksum verification failed" in text:
        return f"it is corrupt: page checksum mismatch ({text})"
    if "deserialize thrift" in text:
        return f"it is corrupt: unparseable page header or footer ({text})"
    if isinstance(error, pa.ArrowNotImplementedError):   # a flipped type or encoding, mostly
        return f"it is corrupt, or uses a feature pyarrow does not implement: {text}"
    if isinstance(error, _UNREADABLE):
        return f"it is corrupt: {text or type(error).__name__}"
    return None


def _raise_if_corrupt(path: str, fmt: str, error: Exception) -> None:
    """Raise the CorruptFileError naming ``path`` that ``error`` means, if it means one."""
    if isinstance(error, FileNotFoundError):
        raise CorruptFileError(path, "data file is missing") from None
    reason = corruption(error)
    if reason is not None:
        raise CorruptFileError(path, f"cannot read {fmt.upper()} data file: {reason}") from None


def read_columns(ctx: TableContext, path: str, f: DataFileMeta, wanted: Sequence[T.DataField],
                 extra: Sequence[str] = (), deleted: Optional[np.ndarray] = None) -> pa.Table:
    """The ``wanted`` fields of the current schema from one data file, found by field id, plus
    the file's own ``extra`` columns (the merge tree's sequence number and kind), without the
    rows at the ``deleted`` positions (the file's deletion vector)."""
    path = _located(ctx, path, f)
    by_id, columns = _file_columns(ctx, f, wanted, extra)
    fmt = format_of(f.file_name)
    try:
        with ctx.io.open_input(path) as src:
            data = read_table(src, fmt, columns, f.row_count)
    except Exception as e:
        _raise_if_corrupt(path, fmt, e)
        raise
    if deleted is not None and deleted.size:
        data = data.filter(keep_mask(data.num_rows, deleted))
    return _project(data, wanted, by_id, extra)


def iter_columns(ctx: TableContext, path: str, f: DataFileMeta, wanted: Sequence[T.DataField],
                 extra: Sequence[str] = (), batch_size: int = 65536,
                 deleted: Optional[np.ndarray] = None) -> Iterator[pa.Table]:
    """:func:`read_columns` as a stream of small tables, in file order (bounded memory)."""
    path = _located(ctx, path, f)
    by_id, columns = _file_columns(ctx, f, wanted, extra)
    fmt = format_of(f.file_name)
    position = 0
    try:
        with ctx.io.open_input(path) as src:
            for part in iter_tables(src, fmt, columns, batch_size, f.row_count):
                n = part.num_rows
                if deleted is not None and deleted.size:
                    part = part.filter(keep_mask(n, deleted, position))
                position += n
                yield _project(part, wanted, by_id, extra)
    except Exception as e:
        _raise_if_corrupt(path, fmt, e)
        raise


def _file_columns(ctx: TableContext, f: DataFileMeta, wanted: Sequence[T.DataField], extra: Sequence[str]):
    by_id = {x.id: x for x in ctx.schema_manager.get(f.schema_id).fields}
    return by_id, [by_id[w.id].name for w in wanted if w.id in by_id] + list(extra)


def _project(data: pa.Table, wanted: Sequence[T.DataField], by_id: dict, extra: Sequence[str]) -> pa.Table:
    arrays = []
    for w in wanted:
        target = T.to_arrow(w.type)
        if w.id in by_id:
            old = by_id[w.id].type
            arr = data.column(by_id[w.id].name)
            written = T.to_arrow(old)
            if not arr.type.equals(written):   # the format's own representation (ORC, Avro)
                arr = arr.cast(written)
            if T.with_nullable(old, True) != T.with_nullable(w.type, True):
                arr = cast_column(arr, old, w.type, w.name)
            arrays.append(arr)
        else:
            arrays.append(pa.nulls(data.num_rows, target))
    arrays += [data.column(x) for x in extra]
    return pa.Table.from_arrays(arrays, names=[w.name for w in wanted] + list(extra))


STATS_TRUNCATE = 16


def _truncate_max(v):
    """Smallest value > every string/bytes starting with the truncated prefix, or None."""
    if isinstance(v, str):
        head = v[:STATS_TRUNCATE]
        for i in range(len(head) - 1, -1, -1):
            if ord(head[i]) < 0x10FFFF:
                nxt = ord(head[i]) + 1
                return head[:i] + chr(0xE000 if 0xD800 <= nxt <= 0xDFFF else nxt)   # never a lone surrogate
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

    def add(self, data: pa.Table) -> None:
        for i, f in enumerate(self.fields):
            lo, hi, n = column_stats(data.column(i), f.type)
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


class RollingFileWriter:
    """Appends Arrow tables to Parquet files of one bucket, starting a new file at ``target_size``."""

    level = 0   # LSM level of the files written; key-value writers set theirs
    roll = True   # start a new file at the target size (a file of one row id range is never rolled)

    def __init__(self, ctx: TableContext, bucket_dir: str, schema: TableSchema, seq_start: int = 0,
                 prefix: str = "data-"):
        self.ctx, self.dir, self.schema = ctx, bucket_dir, schema
        self.arrow_schema = self._file_schema()
        self.files: list[DataFileMeta] = []
        self.seq = seq_start
        self._writer: Optional[FormatWriter] = None
        self._stream: Any = None   # the output stream of the file being written
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
        target = self.ctx.target_file_size
        offset = 0
        while offset < data.num_rows:
            if self._writer is None:
                self._open()
            writer = self._writer
            assert writer is not None, "_open opens a file or raises"
            written = self._stream.tell()
            chunk = data.num_rows - offset
            if self._bytes_per_row:
                chunk = min(chunk, max(256, int((target - written) / self._bytes_per_row)))
            else:
                chunk = min(chunk, 16384)   # learn the bytes per row on a first small chunk
            part = data.slice(offset, chunk)
            rows = part.cast(self.arrow_schema)
            try:
                writer.write(rows)
            except OSError as e:
                raise self._failed(e) from None
            self._observe(part)
            self._rows += part.num_rows
            offset += part.num_rows
            grown = self._stream.tell() - written
            if grown:
                self._bytes_per_row = grown / part.num_rows
            if self.roll and self._stream.tell() >= target:
                self._close_file()

    def _format(self) -> str:
        """``file.format``, or the format ``file.format.per.level`` sets for this writer's level."""
        opts = self.ctx.typed_options
        return (opts.get(O.FILE_FORMAT_PER_LEVEL) or {}).get(self.level, opts.required(O.FILE_FORMAT))

    def _open(self) -> None:
        opts = self.ctx.typed_options
        fmt = self._format()
        check_writable(fmt, self.arrow_schema)
        self._name = f"{self._prefix}{self._count}.{fmt}"
        self._count += 1
        self._stream = self.ctx.io.open_output(join(self.dir, self._name))
        orc_schema = data_schema(self.arrow_schema, self.schema.fields) if fmt == "orc" else None
        try:
            self._writer = FormatWriter(self._stream, fmt, self.arrow_schema, opts.required(O.FILE_COMPRESSION),
                                        opts.required(O.FILE_COMPRESSION_ZSTD_LEVEL), orc_schema)
        except OSError as e:
            raise self._failed(e) from None
        except BaseException:
            self._discard_open_file()
            raise
        self._rows = 0
        self._start_file()

    def _close_file(self) -> None:
        writer = self._writer
        assert writer is not None, "a file is open"
        try:
            writer.close()
            size = self._stream.tell()
            self._stream.close()
        except OSError as e:
            raise self._failed(e) from None
        self.files.append(self._file_meta(self._name, size, self._rows))
        self._writer = self._stream = None

    def _failed(self, error: OSError) -> Exception:
        """The open file given up after a storage failure (disk full, connection lost): closed and
        deleted, so no half-written file stays behind; the error names it."""
        path = join(self.dir, self._name)
        self._discard_open_file()
        return storage_error("writing data file", path, error)

    def _discard_open_file(self) -> None:
        for closing in (self._writer, self._stream):
            try:
                if closing is not None:
                    closing.close()
            except Exception:   # it is being thrown away; its error is not the one to report
                pass
        if self._stream is not None:
            self.ctx.io.delete(join(self.dir, self._name))
        self._writer = self._stream = None

    def close(self) -> list[DataFileMeta]:
        if self._writer is not None:
            self._close_file()
        return self.files

    def abort(self) -> None:
        self._discard_open_file()
        for f in self.files:
            self.ctx.io.delete(join(self.dir, f.file_name))
        self.files = []


def _with_field_ids(schema: TableSchema) -> pa.Schema:
    """The Parquet schema carries Paimon field ids, as Paimon's own writers do."""
    fields = []
    for f, af in zip(schema.fields, schema.arrow_schema()):
        fields.append(af.with_metadata({b"PARQUET:field_id": str(f.id).encode()}))
    return pa.schema(fields)
