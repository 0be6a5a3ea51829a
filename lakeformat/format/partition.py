"""Partition directory names, spelled exactly as Java Paimon spells them.

Readers derive a data file's directory from its partition values, so every implementation must
agree on the text: a different spelling is a missing file on the other side. With
``partition.legacy-name = true`` (Paimon's default) the text is Java's ``toString()`` of the
internal value: a DATE is its epoch day (``-165``), a TIME its millisecond of the day, a
TIMESTAMP ``LocalDateTime.toString()`` (``2024-01-01T12:00``), a DOUBLE ``Double.toString()``
(``1.0E20``). With ``false`` it is a cast to string (``2024-02-29``, ``2024-01-01 12:00:00``).
Null, empty and blank values all name the default partition.
"""
from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any, Optional
from collections.abc import Sequence

import numpy as np

from lakeformat.errors import DataError
from lakeformat.format import predicate as P
from lakeformat.format.binary_row import deserialize_row, timestamp_to_nanos
from lakeformat.format.types import AtomicType, DataField, DataType

_EPOCH_DATE = dt.date(1970, 1, 1)
MAX_SEGMENT_BYTES = 255   # a directory name
# Hive/Paimon escape these in a path segment (PartitionPathUtils.CHAR_TO_ESCAPE).
_ESCAPED = frozenset("\"#%'*/:=?\\{}[]^\x7f") | frozenset(chr(c) for c in range(1, 32))


def escape_path_name(text: str) -> str:
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in text)


def partition_path(values: Sequence[Any], fields: Sequence[DataField], default_name: str,
                   legacy: bool = True) -> str:
    """``k1=v1/k2=v2`` for one partition."""
    parts = []
    for value, field in zip(values, fields):
        text = partition_text(value, field.type, legacy)
        if text is None or not text.strip():
            text = default_name
        segment = f"{escape_path_name(field.name)}={escape_path_name(text)}"
        if "\0" in segment or len(segment.encode("utf-8", "surrogatepass")) > MAX_SEGMENT_BYTES:
            shown = text if len(text) <= 40 else text[:40] + "..."
            raise DataError(f"partition value {shown!r} of column {field.name!r} cannot be a directory name: "
                            + ("it contains a NUL character" if "\0" in segment else
                               f"'{field.name}=<value>' is {len(segment.encode('utf-8', 'surrogatepass'))} bytes "
                               f"escaped, more than the {MAX_SEGMENT_BYTES} a file system allows"))
        parts.append(segment)
    return "/".join(parts)


def partition_text(value: Any, type_: DataType, legacy: bool = True) -> Optional[str]:
    if value is None:
        return None
    root = getattr(type_, "root", None)
    params = type_.params if isinstance(type_, AtomicType) else ()
    if isinstance(value, bool):
        return "true" if value else "false"
    if root in ("FLOAT", "DOUBLE"):
        return java_float_text(float(value), single=root == "FLOAT")
    if root == "DECIMAL":
        return format(Decimal(value), "f")
    if root == "DATE":
        return str((value - _EPOCH_DATE).days) if legacy else value.isoformat()
    if root == "TIME":
        millis = (value.hour * 3600 + value.minute * 60 + value.second) * 1000 + value.microsecond // 1000
        return str(millis) if legacy else _time_text(millis * 10**6, params[0])
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        nanos = timestamp_to_nanos(value, root == "TIMESTAMP_LTZ")
        return _java_local_date_time(nanos) if legacy else _cast_timestamp(nanos, params[0])
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def java_float_text(v: float, single: bool = False) -> str:
    """Java's ``Double.toString`` / ``Float.toString``: shortest digits that round-trip, plain
    between 10^-3 and 10^7, else ``d.dddE±n``."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    sign = "-" if math.copysign(1.0, v) < 0 else ""
    v = abs(v)
    if v == 0:
        return sign + "0.0"
    shortest = np.format_float_scientific(np.float32(v) if single else v, unique=True, trim="-")
    mantissa, exp_text = shortest.split("e")
    digits, exp = mantissa.replace(".", ""), int(exp_text)
    if 1e-3 <= v < 1e7:
        if exp >= 0:
            whole, frac = digits[:exp + 1].ljust(exp + 1, "0"), digits[exp + 1:]
        else:
            whole, frac = "0", "0" * (-exp - 1) + digits
        return f"{sign}{whole}.{frac or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exp}"


def _split_nanos(nanos: int) -> tuple[dt.datetime, int]:
    seconds, nano = divmod(nanos, 10**9)
    return dt.datetime(1970, 1, 1) + dt.timedelta(seconds=seconds), nano


def _java_local_date_time(nanos: int) -> str:
    """``LocalDateTime.toString()``: seconds only when non-zero, fraction in groups of 3 digits."""
    d, nano = _split_nanos(nanos)
    text = f"{d.date().isoformat()}T{d.hour:02d}:{d.minute:02d}"
    if d.second or nano:
        text += f":{d.second:02d}"
    if nano:
        width = 3 if nano % 10**6 == 0 else 6 if nano % 1000 == 0 else 9
        text += "." + f"{nano:09d}"[:width]
    return text


def _fraction(nano: int, precision: int) -> str:
    """Paimon's cast keeps ``precision`` digits, dropping only trailing zeros beyond them."""
    digits = f"{nano:09d}"
    while len(digits) > precision and digits.endswith("0"):
        digits = digits[:-1]
    return "." + digits if digits else ""


def _cast_timestamp(nanos: int, precision: int) -> str:
    d, nano = _split_nanos(nanos)
    return d.strftime("%Y-%m-%d %H:%M:%S") + _fraction(nano, precision)


def _time_text(nanos: int, precision: int) -> str:
    d, nano = _split_nanos(nanos)
    return d.strftime("%H:%M:%S") + _fraction(nano, precision)


# ---------------------------------------------------------------- order and filtering

def sortable(types: Sequence[DataType]) -> bool:
    """Whether partitions of these types have a total order (NaN has none)."""
    return bool(types) and all(getattr(t, "root", None) not in ("FLOAT", "DOUBLE") for t in types)


def sort_key(values: Sequence[Any]) -> tuple:
    """The order of partitions inside our manifests: nulls first, then by value."""
    return tuple((False, 0) if v is None else (True, _comparable(v)) for v in values)


def _comparable(v: Any) -> Any:
    if isinstance(v, dt.datetime):   # TIMESTAMP(7..9) decodes to int nanos when datetime can't hold it
        return timestamp_to_nanos(v, v.tzinfo is not None)
    return v


class PartitionFilter:
    """The partition part of a filter, evaluated on serialized partitions, each decoded once.

    ``may_match_range`` decides for a run of partitions known only by its first and last
    partition in :func:`sort_key` order: that is how a scan skips the Avro blocks of a sorted
    manifest without decoding them."""

    def __init__(self, predicate: P.Predicate, fields: Sequence[DataField]):
        self.predicate = predicate
        self.names = [f.name for f in fields]
        self.types = [f.type for f in fields]
        self._values: dict[bytes, tuple] = {}
        self._matches: dict[bytes, bool] = {}

    def values(self, partition: bytes) -> tuple:
        v = self._values.get(partition)
        if v is None:
            v = self._values[partition] = tuple(deserialize_row(partition, self.types))
        return v

    def matches(self, partition: bytes) -> bool:
        m = self._matches.get(partition)
        if m is None:
            exact = {n: (v, v, 1 if v is None else 0, 1) for n, v in zip(self.names, self.values(partition))}
            m = self._matches[partition] = P.may_match(self.predicate, exact.get)
        return m

    def may_match_range(self, first: bytes, last: Optional[bytes]) -> bool:
        """``last`` None: unbounded above."""
        lo = self.values(first)
        hi = self.values(last) if last is not None else None
        bounds = {}
        for j, name in enumerate(self.names):
            if j and (hi is None or lo[:j] != hi[:j]):
                break   # past the first differing field the order bounds nothing
            if lo[j] is None:
                continue   # nulls sort first: the run may hold nulls and any value up to hi
            upper = hi[j] if hi is not None else None
            bounds[name] = (lo[j], upper, 0, 1)
        return P.may_match(self.predicate, bounds.get)


def parse_partition_spec(text: str) -> dict[str, str]:
    """Paimon's partition syntax ``dt=2024-06-01,hour=3`` as {key: value}; an empty text is {}
    (the whole table, where a caller allows that)."""
    out = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise DataError(f"partition spec {text!r}: expected key=value[,key=value...]")
        out[key.strip()] = value.strip()
    return out
