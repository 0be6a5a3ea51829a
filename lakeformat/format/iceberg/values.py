"""Values in Iceberg's encodings: single-value binary serialization (column bounds and manifest
partition summaries) and the physical Avro form of partition values.

Paimon's statistics are BinaryRows of Python values (``binary_row``); here they become Iceberg's
bytes: little-endian ints, longs, floats and doubles, epoch days for dates, epoch microseconds
for timestamps, UTF-8 for strings, the unscaled big-endian two's complement for decimals.
lakeformat truncates string statistics to 16 characters as Iceberg's default metrics mode does,
with an upper bound that is still an upper bound, so Iceberg's pruning stays correct.
"""
from __future__ import annotations

import datetime as dt
import math
import struct
from decimal import Decimal
from typing import Any, Optional
from collections.abc import Sequence

from lakeformat.format import types as T
from lakeformat.format.binary_row import decimal_to_unscaled, deserialize_row, java_big_integer_bytes
from lakeformat.format.manifest import SimpleStats

_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = _EPOCH.replace(tzinfo=dt.UTC)
_EPOCH_DATE = dt.date(1970, 1, 1)
_INTS = {"TINYINT", "SMALLINT", "INT"}


def epoch_micros(value: Any) -> int:
    """Microseconds since the epoch of a naive (TIMESTAMP) or aware (TIMESTAMP_LTZ) datetime, or of
    an int of epoch nanoseconds (what BinaryRow decoding returns for sub-microsecond values)."""
    if isinstance(value, int):
        return value // 1000
    base = _EPOCH_UTC if value.tzinfo is not None else _EPOCH
    return (value - base) // dt.timedelta(microseconds=1)


def physical(value: Any, t: T.AtomicType) -> Any:
    """The value as Iceberg stores it in Avro: dates as epoch days, timestamps as epoch micros,
    decimals as the unscaled integer; everything else as it is."""
    if value is None:
        return None
    r = t.root
    if r == "DATE":
        return (value - _EPOCH_DATE).days
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return epoch_micros(value)
    if r == "DECIMAL":
        return decimal_to_unscaled(Decimal(value), t.params[0], t.params[1])
    return value


def to_bytes(value: Any, t: T.AtomicType) -> Optional[bytes]:
    """Iceberg's single-value serialization of a Paimon value; None where no bound can be given
    (null, NaN)."""
    if value is None:
        return None
    r = t.root
    if r == "BOOLEAN":
        return b"\x01" if value else b"\x00"
    if r in _INTS:
        return struct.pack("<i", value)
    if r == "BIGINT":
        return struct.pack("<q", value)
    if r in ("FLOAT", "DOUBLE"):
        if math.isnan(value):
            return None
        return struct.pack("<f" if r == "FLOAT" else "<d", value)
    if r == "DATE":
        return struct.pack("<i", physical(value, t))
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return struct.pack("<q", physical(value, t))
    if r in ("CHAR", "VARCHAR"):
        return value.encode("utf-8")
    if r in ("BINARY", "VARBINARY"):
        return bytes(value)
    if r == "DECIMAL":
        return java_big_integer_bytes(physical(value, t))
    raise ValueError(f"no Iceberg single-value encoding for {t}")


def from_bytes(data: bytes, t: T.AtomicType) -> Any:
    """The physical value (as in Avro: epoch days, epoch micros, unscaled decimal) of
    single-value bytes."""
    r = t.root
    if r == "BOOLEAN":
        return data != b"\x00"
    if r in _INTS or r == "DATE":
        return struct.unpack("<i", data)[0]
    if r in ("BIGINT", "TIMESTAMP", "TIMESTAMP_LTZ"):
        return struct.unpack("<q", data)[0]
    if r in ("FLOAT", "DOUBLE"):
        return struct.unpack("<f" if r == "FLOAT" else "<d", data)[0]
    if r in ("CHAR", "VARCHAR"):
        return data.decode("utf-8")
    if r == "DECIMAL":
        return int.from_bytes(data, "big", signed=True)
    return bytes(data)


def decimal_bytes(precision: int) -> int:
    """Bytes of Iceberg's fixed Avro type for a decimal of ``precision`` digits."""
    n = 1
    while 2 ** (8 * n - 1) <= 10 ** precision:
        n += 1
    return n


def fixed_decimal(unscaled: int, precision: int) -> bytes:
    return unscaled.to_bytes(decimal_bytes(precision), "big", signed=True)


def column_metrics(stats: SimpleStats, stats_cols: Optional[Sequence[str]],
                   fields: Sequence[T.DataField]) -> tuple[dict, dict, dict]:
    """(null_value_counts, lower_bounds, upper_bounds) keyed by field id, from a data file's
    value statistics. ``fields`` are those of the file's schema; ``stats_cols`` the columns the
    statistics cover (None: all of ``fields``). An unknown count or bound is left out, never
    published as 0 or as a guess."""
    names = list(stats_cols) if stats_cols is not None else [f.name for f in fields]
    by_name = {f.name: f for f in fields}
    covered = [by_name[n] for n in names if n in by_name]
    if len(covered) != len(names):
        return {}, {}, {}
    types = [f.type for f in covered]
    mins = deserialize_row(stats.min_values, types) if stats.min_values else [None] * len(types)
    maxs = deserialize_row(stats.max_values, types) if stats.max_values else [None] * len(types)
    nulls = stats.null_counts or ()
    null_counts, lower, upper = {}, {}, {}
    for i, f in enumerate(covered):
        if i < len(nulls) and nulls[i] is not None:
            null_counts[f.id] = nulls[i]
        if not isinstance(f.type, T.AtomicType):
            continue
        lo, hi = to_bytes(mins[i], f.type), to_bytes(maxs[i], f.type)
        if lo is not None and hi is not None:
            lower[f.id], upper[f.id] = lo, hi
    return null_counts, lower, upper
