"""Data file formats: Parquet, ORC and Avro files read and written as Arrow.

A file's format is its extension (``data-<uuid>-0.orc``), as Paimon reads it, so a table whose
``file.format`` changed, or that sets ``file.format.per.level``, holds files of several formats.
Parquet and ORC are columnar in pyarrow. Avro is row-oriented: fastavro decodes and encodes the
rows (in C) and the columns are assembled from them, so Avro files cost a Python object per value;
Paimon's Java writers use Avro mostly for small level-0 files.

Parquet pages carry a CRC32 of their bytes, written and verified here, as parquet-mr writes them:
a flipped bit in a page fails the read instead of being read as data. Pages without one (files of
older lakeformat versions, other writers) are read unverified.
"""
from __future__ import annotations

from typing import Any, BinaryIO, Optional, cast
from collections.abc import Iterator, Sequence

import fastavro
import pyarrow as pa
import pyarrow.orc as po
import pyarrow.parquet as pq

from lakeformat.errors import UnsupportedError
from lakeformat.format.options import FILE_FORMAT, FILE_FORMAT_PER_LEVEL, Options

FORMATS = ("parquet", "orc", "avro")


def format_of(file_name: str) -> str:
    """The format of a data file from its extension; an unknown one is refused, naming it."""
    ext = file_name.rsplit(".", 1)[-1].lower() if "." in file_name else ""
    if ext not in FORMATS:
        raise UnsupportedError(f"data file {file_name!r}: format {ext or '(no extension)'!r} is not supported "
                               f"by lakeformat (it reads {', '.join(FORMATS)})")
    return ext


# -- reading -------------------------------------------------------------------------------------
class RowCountError(ValueError):
    """A file holding another number of rows than its metadata says: it is corrupt."""


def _check_rows(found: int, rows: Optional[int]) -> None:
    if rows is not None and found != rows:
        raise RowCountError(f"it holds {found} rows where its metadata says {rows}")


def _parquet(src: BinaryIO, columns: Sequence[str]) -> pq.ParquetFile:
    """The file, its page checksums verified as it is read. A column missing from its footer is
    an error: pyarrow would leave it out of the result."""
    f = pq.ParquetFile(src, page_checksum_verification=True)
    missing = [c for c in columns if c not in f.schema_arrow.names]
    if missing:
        raise KeyError(f"columns {missing} are not in the Parquet file")
    return f


def read_table(src: BinaryIO, fmt: str, columns: Sequence[str], rows: Optional[int] = None) -> pa.Table:
    """The file's ``columns``; RowCountError unless it holds ``rows`` rows (when given)."""
    if fmt == "parquet":
        table = _parquet(src, columns).read(columns=list(columns), use_threads=True)
    elif fmt == "orc":
        table = po.ORCFile(src).read(columns=list(columns))
    else:
        table = _avro_table(src, columns)
    _check_rows(table.num_rows, rows)
    return table


def iter_tables(src: BinaryIO, fmt: str, columns: Sequence[str], batch_size: int,
                rows: Optional[int] = None) -> Iterator[pa.Table]:
    """The file in order, ``batch_size`` rows at a time (one row group, stripe or block at most).
    A file whose footer counts other than ``rows`` rows fails before its first batch; one whose
    batches add up to other than ``rows``, after its last."""
    count = 0
    if fmt == "parquet":
        f = _parquet(src, columns)
        _check_rows(f.metadata.num_rows, rows)
        for batch in f.iter_batches(batch_size, columns=list(columns)):
            count += batch.num_rows
            yield pa.Table.from_batches([batch])
    elif fmt == "orc":
        f = po.ORCFile(src)
        _check_rows(f.nrows, rows)
        for i in range(f.nstripes):
            stripe = pa.Table.from_batches([f.read_stripe(i, columns=list(columns))])
            for start in range(0, stripe.num_rows, batch_size):
                count += min(batch_size, stripe.num_rows - start)
                yield stripe.slice(start, batch_size)
    else:
        table = _avro_table(src, columns)
        _check_rows(table.num_rows, rows)
        count = table.num_rows
        for start in range(0, max(table.num_rows, 1), batch_size):
            yield table.slice(start, batch_size)
    _check_rows(count, rows)


def _branch(t):
    """The non-null branch of a nullable union."""
    if isinstance(t, list):
        rest = [x for x in t if x != "null"]
        return rest[0] if len(rest) == 1 else t
    return t


def _logical(t) -> tuple[Any, Optional[str], dict]:
    t = _branch(t)
    if isinstance(t, dict):
        if isinstance(t.get("type"), (dict, list)) and "logicalType" not in t:
            return _logical(t["type"])
        return t.get("type"), t.get("logicalType"), t
    return t, None, {}


_AVRO_PRIMITIVES = {"boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
                    "double": pa.float64(), "string": pa.string(), "bytes": pa.binary()}
_AVRO_TIMES = {"timestamp-millis": pa.timestamp("ms"), "timestamp-micros": pa.timestamp("us"),
               "local-timestamp-millis": pa.timestamp("ms", "UTC"), "local-timestamp-micros": pa.timestamp("us", "UTC"),
               "date": pa.date32(), "time-millis": pa.time32("ms"), "time-micros": pa.time64("us")}


def _avro_column(values: list, avro_type, name: str) -> pa.Array:
    """One column from fastavro's values (logical types already decoded: dates, datetimes, Decimals)."""
    base, logical, spec = _logical(avro_type)
    if logical == "decimal":
        return pa.array(values, pa.decimal128(int(spec["precision"]), int(spec.get("scale", 0))))
    if logical in _AVRO_TIMES:
        return pa.array(values, _AVRO_TIMES[logical])
    if base in _AVRO_PRIMITIVES:
        return pa.array(values, _AVRO_PRIMITIVES[base])
    raise UnsupportedError(f"Avro column {name!r} of type {avro_type!r} is not supported by lakeformat")


def _avro_table(src: BinaryIO, columns: Sequence[str]) -> pa.Table:
    reader = fastavro.reader(src)
    # a data file's schema is a record, so its values are dicts
    types = {f["name"]: f["type"] for f in cast(dict, reader.writer_schema)["fields"]}
    missing = [c for c in columns if c not in types]
    if missing:
        raise KeyError(f"columns {missing} are not in the Avro file")
    records = cast(list[dict], list(reader))
    arrays = [_avro_column([r[c] for r in records], types[c], c) for c in columns]
    return pa.Table.from_arrays(arrays, names=list(columns))


# -- writing -------------------------------------------------------------------------------------
_ORC_CODECS = {"zstd": "zstd", "snappy": "snappy", "lz4": "lz4", "lz4_raw": "lz4", "gzip": "zlib",
               "none": "uncompressed"}
_AVRO_CODECS = {"zstd": "zstandard", "snappy": "snappy", "gzip": "deflate", "none": "null", "lz4": "lz4"}


def check_writable(fmt: str, schema: pa.Schema) -> None:
    """Refuse, before any file exists, columns that lakeformat cannot write in ``fmt`` (Avro: nested
    and nanosecond types), naming the column."""
    if fmt == "avro":
        avro_schema(schema)


def check_table_formats(schema) -> None:
    """:func:`check_writable` for every format a table's options write (``file.format`` and
    ``file.format.per.level``): a create or alter that could not be written is refused."""
    opts = Options(schema.options)
    arrow = schema.arrow_schema()
    for fmt in {opts.get(FILE_FORMAT), *(opts.get(FILE_FORMAT_PER_LEVEL) or {}).values()}:
        check_writable(fmt, arrow)


class FormatWriter:
    """Appends Arrow tables of one schema to one data file of ``fmt``."""

    def __init__(self, stream, fmt: str, schema: pa.Schema, compression: str, zstd_level: int,
                 orc_schema: Optional[pa.Schema] = None):
        """``orc_schema``: ``schema`` with the field metadata an ORC file's types carry as
        attributes (Paimon's ids: ``io/orc_ids.py``); none when not given."""
        self.fmt, self.schema, self._stream = fmt, schema, stream
        self._orc_schema = orc_schema
        if fmt == "parquet":
            level = zstd_level if compression == "zstd" else None
            self._w = pq.ParquetWriter(stream, schema, compression=compression, compression_level=level,
                                       write_statistics=False, write_page_checksum=True)
        elif fmt == "orc":
            self._w = po.ORCWriter(stream, compression=_codec(_ORC_CODECS, compression, "ORC"))
        else:
            codec = _codec(_AVRO_CODECS, compression, "Avro")
            self._w = fastavro.write.Writer(stream, fastavro.parse_schema(avro_schema(schema)), codec=codec)

    def write(self, data: pa.Table) -> None:
        if self.fmt == "parquet":
            self._w.write_table(data, row_group_size=1 << 20)
        elif self.fmt == "orc":
            self._w.write(_orc_ready(data, self._orc_schema))
        else:
            for record in _avro_records(data):
                self._w.write(record)

    def close(self) -> None:
        if self.fmt == "avro":
            self._w.flush()
        else:
            self._w.close()


def _orc_ready(data: pa.Table, orc_schema: Optional[pa.Schema] = None) -> pa.Table:
    """ORC has no TIME type: Paimon stores a TIME as its milliseconds of the day (INT). The
    fields' metadata become the ORC types' attributes: ``orc_schema``'s when given."""
    if orc_schema is None and not any(pa.types.is_time(f.type) for f in data.schema):
        return data
    target = orc_schema or data.schema
    return data.cast(pa.schema([f.with_type(pa.int32()) if pa.types.is_time(f.type) else f for f in target]))


def _codec(ctx: dict, compression: str, what: str) -> str:
    if compression not in ctx:
        raise UnsupportedError(f"file.compression {compression!r} is not supported for {what} data files "
                               f"(supported: {', '.join(ctx)})")
    return ctx[compression]


def avro_type(t: pa.DataType, name: str):
    """Paimon's Avro type for an Arrow column type (nullable unions are added by the caller)."""
    T = pa.types
    if T.is_boolean(t):
        return "boolean"
    if T.is_int8(t) or T.is_int16(t) or T.is_int32(t):
        return "int"
    if T.is_int64(t):
        return "long"
    if T.is_float32(t):
        return "float"
    if T.is_float64(t):
        return "double"
    if T.is_string(t) or T.is_large_string(t):
        return "string"
    if T.is_binary(t) or T.is_large_binary(t):
        return "bytes"
    if T.is_date32(t):
        return {"type": "int", "logicalType": "date"}
    if T.is_decimal(t):
        return {"type": "bytes", "logicalType": "decimal", "precision": t.precision, "scale": t.scale}
    if T.is_timestamp(t) and t.unit in ("s", "ms", "us"):
        unit = "micros" if t.unit == "us" else "millis"
        return {"type": "long", "logicalType": ("local-timestamp-" if t.tz else "timestamp-") + unit}
    if T.is_time32(t):
        return {"type": "int", "logicalType": "time-millis"}
    raise UnsupportedError(f"column {name!r} of type {t} cannot be written to an Avro data file by lakeformat")


def avro_schema(schema: pa.Schema) -> dict:
    fields = []
    for f in schema:
        t = avro_type(f.type, f.name)
        fields.append({"name": f.name, "type": ["null", t] if f.nullable else t}
                      | ({"default": None} if f.nullable else {}))
    return {"type": "record", "name": "org.apache.paimon.avro.generated.record", "fields": fields}


def _avro_values(col: pa.ChunkedArray) -> list:
    """Raw Avro values of a column: numbers for dates and times, unscaled bytes for decimals."""
    t = col.type
    T = pa.types
    if T.is_timestamp(t):
        unit = "us" if t.unit == "us" else "ms"
        return col.cast(pa.timestamp(unit, t.tz)).cast(pa.int64()).to_pylist()
    if T.is_date32(t) or T.is_time32(t):
        return col.cast(pa.int32()).to_pylist()
    if T.is_decimal(t):
        size = (t.precision * 4 + 9) // 10 + 1   # enough bytes for the unscaled value and its sign
        return [None if v is None else int(v.scaleb(t.scale)).to_bytes(size, "big", signed=True)
                for v in col.to_pylist()]
    return col.to_pylist()


def _avro_records(data: pa.Table) -> list[dict]:
    names = data.column_names
    columns = [_avro_values(data.column(i)) for i in range(data.num_columns)]
    return [dict(zip(names, row)) for row in zip(*columns)]
