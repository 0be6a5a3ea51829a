"""Data file formats: Parquet, ORC and Avro files read and written as Arrow.

A file's format is its extension (``data-<uuid>-0.orc``), as Paimon reads it, so a table whose
``file.format`` changed, or that sets ``file.format.per.level``, holds files of several formats.
Parquet and ORC are columnar in pyarrow. Avro is row-oriented: fastavro decodes and encodes the
rows (in C) and the columns are assembled from them, so Avro files cost a Python object per value;
Paimon's Java writers use Avro mostly for small level-0 files.
"""
from __future__ import annotations

from typing import BinaryIO, Iterator, Optional, Sequence

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
def read_table(src: BinaryIO, fmt: str, columns: Sequence[str]) -> pa.Table:
    if fmt == "parquet":
        return pq.ParquetFile(src).read(columns=list(columns), use_threads=True)
    if fmt == "orc":
        return po.ORCFile(src).read(columns=list(columns))
    return _avro_table(src, columns)


def iter_tables(src: BinaryIO, fmt: str, columns: Sequence[str], batch_size: int) -> Iterator[pa.Table]:
    """The file in order, ``batch_size`` rows at a time (one row group, stripe or block at most)."""
    if fmt == "parquet":
        for batch in pq.ParquetFile(src).iter_batches(batch_size, columns=list(columns)):
            yield pa.Table.from_batches([batch])
    elif fmt == "orc":
        f = po.ORCFile(src)
        for i in range(f.nstripes):
            stripe = pa.Table.from_batches([f.read_stripe(i, columns=list(columns))])
            for start in range(0, stripe.num_rows, batch_size):
                yield stripe.slice(start, batch_size)
    else:
        table = _avro_table(src, columns)
        for start in range(0, max(table.num_rows, 1), batch_size):
            yield table.slice(start, batch_size)


def _branch(t):
    """The non-null branch of a nullable union."""
    if isinstance(t, list):
        rest = [x for x in t if x != "null"]
        return rest[0] if len(rest) == 1 else t
    return t


def _logical(t) -> tuple[str, Optional[str], dict]:
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
    types = {f["name"]: f["type"] for f in reader.writer_schema["fields"]}
    missing = [c for c in columns if c not in types]
    if missing:
        raise KeyError(f"columns {missing} are not in the Avro file")
    records = list(reader)
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
                                       write_statistics=False)
        elif fmt == "orc":
            self._w = po.ORCWriter(stream, compression=_codec(_ORC_CODECS, compression, "ORC"))
        else:
            codec = _codec(_AVRO_CODECS, compression, "Avro")
            self._w = fastavro.write.Writer(stream, fastavro.parse_schema(avro_schema(schema)), codec=codec)

    def write(self, table: pa.Table) -> None:
        if self.fmt == "parquet":
            self._w.write_table(table, row_group_size=1 << 20)
        elif self.fmt == "orc":
            self._w.write(_orc_ready(table, self._orc_schema))
        else:
            for record in _avro_records(table):
                self._w.write(record)

    def close(self) -> None:
        if self.fmt == "avro":
            self._w.flush()
        else:
            self._w.close()


def _orc_ready(table: pa.Table, orc_schema: Optional[pa.Schema] = None) -> pa.Table:
    """ORC has no TIME type: Paimon stores a TIME as its milliseconds of the day (INT). The
    fields' metadata become the ORC types' attributes: ``orc_schema``'s when given."""
    if orc_schema is None and not any(pa.types.is_time(f.type) for f in table.schema):
        return table
    target = orc_schema or table.schema
    return table.cast(pa.schema([f.with_type(pa.int32()) if pa.types.is_time(f.type) else f for f in target]))


def _codec(table: dict, compression: str, what: str) -> str:
    if compression not in table:
        raise UnsupportedError(f"file.compression {compression!r} is not supported for {what} data files "
                               f"(supported: {', '.join(table)})")
    return table[compression]


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


def _avro_records(table: pa.Table) -> list[dict]:
    names = table.column_names
    columns = [_avro_values(table.column(i)) for i in range(table.num_columns)]
    return [dict(zip(names, row)) for row in zip(*columns)]
