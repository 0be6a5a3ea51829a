"""Paimon types as Spark SQL types, and Arrow data moved between Spark's layout and the table's.

Spark has no timestamp without a time zone in its classic type, so Paimon ``TIMESTAMP`` maps to
``TimestampNTZType`` and ``TIMESTAMP WITH LOCAL TIME ZONE`` to ``TimestampType`` (as Paimon's own
Spark connector does). Spark hands Arrow batches over with microsecond timestamps, zoned in the
session time zone; the table may keep milliseconds: conversion truncates, like Paimon's writers.
"""
from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as S
from pyspark.sql.pandas.types import to_arrow_schema

from lakeformat.errors import DataError, SchemaError, UnsupportedTypeError
from lakeformat.format import types as T
from lakeformat.format.schema import TableSchema

ROW_KIND = "_row_kind"   # the change's kind (+I, -U, +U, -D) in a changelog read
_UTC = ("UTC", "Etc/UTC", "GMT", "Etc/GMT", "Z", "+00:00", "Etc/Universal", "Universal", "Zulu")

_ATOMIC = {"BOOLEAN": S.BooleanType(), "TINYINT": S.ByteType(), "SMALLINT": S.ShortType(),
           "INT": S.IntegerType(), "BIGINT": S.LongType(), "FLOAT": S.FloatType(), "DOUBLE": S.DoubleType(),
           "DATE": S.DateType(), "CHAR": S.StringType(), "VARCHAR": S.StringType(),
           "BINARY": S.BinaryType(), "VARBINARY": S.BinaryType(),
           "TIMESTAMP": S.TimestampNTZType(), "TIMESTAMP_LTZ": S.TimestampType()}


def spark_type(t: T.DataType) -> S.DataType:
    if isinstance(t, T.AtomicType):
        if t.root == "DECIMAL":
            return S.DecimalType(t.params[0], t.params[1])
        if t.root == "TIME":
            return S.TimeType(min(t.params[0], 6))
        if t.root == "BLOB":   # Spark would read and write its values as rows of Parquet files
            raise UnsupportedTypeError("BLOB columns are not implemented by lakeformat's Spark integration; "
                                       "read and write BLOB tables with the library (Table.to_batches)")
        return _ATOMIC[t.root]
    if isinstance(t, T.ArrayType):
        return S.ArrayType(spark_type(t.element), t.element.nullable)
    if isinstance(t, T.MapType):
        return S.MapType(spark_type(t.key), spark_type(t.value), t.value.nullable)
    if isinstance(t, T.RowType):
        return S.StructType([spark_field(f) for f in t.fields])
    raise SchemaError(f"no Spark type for {t}")


def spark_field(f: T.DataField) -> S.StructField:
    return S.StructField(f.name, spark_type(f.type), f.type.nullable)


def spark_schema(fields: Sequence[T.DataField], row_kind: bool = False) -> S.StructType:
    """The Spark schema of ``fields``; ``row_kind`` appends the changelog's ``_row_kind`` column."""
    out = [spark_field(f) for f in fields]
    if row_kind:
        out.append(S.StructField(ROW_KIND, S.StringType(), False))
    return S.StructType(out)


def spark_arrow_schema(schema: S.StructType) -> pa.Schema:
    """The exact Arrow schema Spark accepts from a Python data source for ``schema``."""
    return to_arrow_schema(schema, timezone="UTC")


def to_spark(data: pa.Table, target: pa.Schema) -> pa.Table:
    """Cast rows read from the table to the Arrow layout Spark expects (by position)."""
    if data.schema.equals(target):
        return data
    cols = []
    for arr, f in zip(data.columns, target):
        try:
            cols.append(arr if arr.type.equals(f.type) else arr.cast(f.type))
        except pa.ArrowInvalid as e:   # e.g. nanoseconds, which Spark's timestamps do not hold
            raise UnsupportedTypeError(f"column {f.name!r}: its {arr.type} values do not fit Spark's {f.type} "
                                       f"without loss ({e}); read it with the library") from None
    return pa.Table.from_arrays(cols, schema=target)


def from_spark(batch, schema: TableSchema) -> pa.Table:
    """A batch (or table) from Spark in the table's columns: names matched case-insensitively (Spark's
    default), zoned timestamps turned into wall-clock time where the column has no zone (what
    Spark's own cast to TIMESTAMP_NTZ does), and timestamps truncated to the column's precision.
    Everything else is left to the writer's own conformance check."""
    by_lower: dict[str, int] = {}
    for i, name in enumerate(batch.schema.names):
        if name.lower() in by_lower:
            raise DataError(f"the DataFrame has two columns named {name!r} (ignoring case)")
        by_lower[name.lower()] = i
    names = schema.names
    missing = [n for n in names if n.lower() not in by_lower]
    extra = [n for n in batch.schema.names if n.lower() not in {x.lower() for x in names}]
    if missing or extra:
        raise DataError(f"the DataFrame does not match the columns of the table: missing {missing}, "
                        f"unexpected {extra} (table columns: {names})")
    cols = []
    for f in schema.fields:
        arr = batch.column(by_lower[f.name.lower()])
        cols.append(_timestamp_to_table(arr, f.type))
    return pa.Table.from_arrays(cols, names=names)


def _timestamp_to_table(arr: pa.Array, t: T.DataType) -> pa.Array:
    if not (isinstance(t, T.AtomicType) and t.root in ("TIMESTAMP", "TIMESTAMP_LTZ")
            and pa.types.is_timestamp(arr.type)):
        return arr
    target = T.to_arrow(t)
    if t.root == "TIMESTAMP" and arr.type.tz is not None:
        # a UTC zone: wall clock = the stored UTC value, so just drop the zone
        arr = arr.cast(pa.timestamp(arr.type.unit)) if arr.type.tz in _UTC else pc.local_timestamp(arr)
    elif t.root == "TIMESTAMP_LTZ" and arr.type.tz is None:
        raise DataError("a timestamp without time zone cannot go into a TIMESTAMP WITH LOCAL TIME ZONE "
                        "column: cast it to TIMESTAMP in Spark first")
    return arr.cast(target, safe=False) if not arr.type.equals(target) else arr
