"""Paimon's ``BinaryRow``: the byte layout of partition values, min/max keys and statistics.

A row of arity ``n`` is a header of ``header_size(n)`` bytes (byte 0 is the row kind, then one
null bit per field, starting at bit 8), one 8-byte little-endian slot per field and a variable
part holding what does not fit a slot; every variable-part entry starts at a multiple of 8 so
the whole row is a multiple of 8 bytes, which the bucket hash relies on.

Where Java Paimon and pypaimon disagree, this module writes what Java writes, because Java's
bytes are what existing tables contain and what Java hashes to assign buckets:

* a decimal of precision > 18 is stored as ``BigInteger.toByteArray()``, the shortest
  big-endian two's complement, in a 16-byte variable-part entry (pypaimon 2.1 writes one byte
  too many for -2**7, -2**15, ... times a power of ten);
* a null decimal of precision > 18 or a null timestamp of precision > 3 still reserves its
  16 or 8 zero bytes and its slot points there (Java's ``RowHelper`` writes such nulls through
  ``writeDecimal``/``writeTimestamp`` so the field could later be updated in place).

Python values: ``bool``, ``int``, ``float``, ``str``, ``bytes``, ``Decimal``, ``date``, ``time``,
``datetime`` (naive for TIMESTAMP, UTC-aware for TIMESTAMP_LTZ) and ``None``; pyarrow scalars
are accepted too. A timestamp may also be given as an ``int`` of epoch nanoseconds, which is
also what decoding returns for TIMESTAMP(7..9) values with sub-microsecond digits, since
``datetime`` cannot hold them.
"""
from __future__ import annotations

import operator
import struct
from datetime import date, datetime, time, timedelta, UTC
from decimal import ROUND_HALF_UP, Context, Decimal, DecimalException
from typing import Any
from collections.abc import Sequence

import pyarrow as pa

from lakeformat.errors import DataError, SchemaError
from lakeformat.format.types import AtomicType, DataType

ROW_KIND_INSERT = 0
MAX_INLINE = 7  # strings/binaries up to this length live inside their slot
_STRINGS = ("CHAR", "VARCHAR")
_BINARIES = ("BINARY", "VARBINARY")
_EPOCH = datetime(1970, 1, 1)
_EPOCH_DAY = date(1970, 1, 1).toordinal()
NANOS_PER_UNIT = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
_DECIMAL_CTX = Context(prec=100)
_FIXED = {"BOOLEAN": "<?", "TINYINT": "<b", "SMALLINT": "<h", "INT": "<i", "BIGINT": "<q",
          "FLOAT": "<f", "DOUBLE": "<d"}


def header_size(arity: int) -> int:
    """Bytes of the row-kind + null-bit header: 8 header bits, rounded up to whole longs."""
    return ((arity + 63 + 8) // 64) * 8


def pad8(n: int) -> int:
    return (n + 7) & ~7


def is_compact_decimal(precision: int) -> bool:
    """Decimals that fit a long (<= 18 digits) are stored in the slot itself."""
    return precision <= 18


def is_compact_timestamp(precision: int) -> bool:
    """Millisecond timestamps are stored in the slot; finer ones need the variable part."""
    return precision <= 3


def null_reserve(t: DataType) -> int:
    """Variable-part bytes Java reserves for a field even when it is null (see module doc)."""
    if isinstance(t, AtomicType):
        if t.root == "DECIMAL" and not is_compact_decimal(t.params[0]):
            return 16
        if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and not is_compact_timestamp(t.params[0]):
            return 8
    return 0


def decimal_to_unscaled(value: Any, precision: int, scale: int) -> int:
    """Unscaled integer of ``value`` rounded HALF_UP to ``scale`` (as Java's ``Decimal``)."""
    try:
        d = value if isinstance(value, Decimal) else Decimal(
            str(value) if isinstance(value, float) else operator.index(value))
        unscaled = int(d.quantize(Decimal(1).scaleb(-scale), ROUND_HALF_UP, _DECIMAL_CTX)
                       .scaleb(scale, _DECIMAL_CTX))
    except (DecimalException, TypeError, ValueError, OverflowError) as e:
        raise DataError(f"{value!r} is not a valid DECIMAL({precision}, {scale})") from e
    if abs(unscaled) >= 10**precision:
        raise DataError(f"{value!r} does not fit DECIMAL({precision}, {scale})")
    return unscaled


def java_big_integer_bytes(x: int) -> bytes:
    """``BigInteger.toByteArray()``: shortest big-endian two's complement, at least one byte."""
    return x.to_bytes((x if x >= 0 else ~x).bit_length() // 8 + 1, "big", signed=True)


def timestamp_to_nanos(value: Any, ltz: bool) -> int:
    """Epoch nanoseconds of a datetime (naive = UTC wall clock) or of an int of epoch nanos."""
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            if not ltz:
                raise DataError(f"TIMESTAMP takes a naive datetime, got {value!r}; "
                                "use TIMESTAMP_LTZ for instants")
            value = value.astimezone(UTC).replace(tzinfo=None)
        d = value - _EPOCH
        micros = (d.days * 86400 + d.seconds) * 10**6 + d.microseconds
        return micros * 1000 + getattr(value, "nanosecond", 0)  # pandas.Timestamp keeps nanos
    try:
        return operator.index(value)
    except TypeError:
        raise DataError(f"expected a datetime for a timestamp, got {value!r}") from None


def nanos_to_timestamp(nanos: int, precision: int, ltz: bool) -> datetime | int:
    """Inverse of :func:`timestamp_to_nanos`; an int when ``datetime`` would lose nanoseconds."""
    if precision > 6 and nanos % 1000:
        return nanos
    dt = _EPOCH + timedelta(microseconds=nanos // 1000)
    return dt.replace(tzinfo=UTC) if ltz else dt


def _unwrap(value: Any) -> Any:
    """Plain Python value of a pyarrow scalar; timestamps become epoch nanos to keep nanos."""
    if not isinstance(value, pa.Scalar):
        return value
    if not value.is_valid:
        return None
    if pa.types.is_timestamp(value.type):
        return value.value * NANOS_PER_UNIT[value.type.unit]
    if pa.types.is_time(value.type):  # stored as millis; as_py() refuses nanosecond times
        value = value.cast(pa.time32("ms"), safe=False)
    return value.as_py()


def _fixed_bytes(v: Any, t: AtomicType) -> bytes:
    """The bytes of a value stored wholly in its slot (at most 8)."""
    r = t.root
    try:
        if r in ("FLOAT", "DOUBLE"):
            return struct.pack(_FIXED[r], float(v))
        if r in _FIXED:
            return struct.pack(_FIXED[r], operator.index(v))
        if r == "DATE":
            days = v.toordinal() - _EPOCH_DAY if isinstance(v, date) else operator.index(v)
            return struct.pack("<i", days)
        if r == "TIME":
            if not isinstance(v, time):
                raise TypeError
            ms = ((v.hour * 60 + v.minute) * 60 + v.second) * 1000 + v.microsecond // 1000
            return struct.pack("<i", ms)
    except (TypeError, struct.error, AttributeError) as e:
        raise DataError(f"{v!r} is not a valid {r} value") from e
    raise SchemaError(f"BinaryRow cannot store type {t}")


def encode_row(values: Sequence[Any], types: Sequence[DataType]) -> bytes:
    """The ``BinaryRow`` bytes (row kind +I) of ``values`` typed by ``types``."""
    arity = len(types)
    if len(values) != arity:
        raise DataError(f"{len(values)} values for a row of {arity} fields")
    hs = header_size(arity)
    fixed = bytearray(hs + 8 * arity)
    fixed[0] = ROW_KIND_INSERT
    var = bytearray()

    def to_var(payload: bytes, reserve: int) -> int:
        """Append ``payload`` zero-padded to ``reserve`` bytes; return its offset in the row."""
        offset = len(fixed) + len(var)
        var.extend(payload)
        var.extend(bytes(reserve - len(payload)))
        return offset

    for i, (v, t) in enumerate(zip(values, types)):
        pos = hs + 8 * i
        v = _unwrap(v)
        if v is None:
            fixed[(i + 8) // 8] |= 1 << ((i + 8) % 8)
            if null_reserve(t):
                struct.pack_into("<Q", fixed, pos, to_var(b"", null_reserve(t)) << 32)
            continue
        if not isinstance(t, AtomicType):
            raise SchemaError(f"BinaryRow values of nested type {t} are not supported")
        r = t.root
        if r in _STRINGS or r in _BINARIES:
            if r in _STRINGS:
                if not isinstance(v, str):
                    raise DataError(f"{v!r} is not a valid {r} value")
                data = v.encode("utf-8")
            else:
                if not isinstance(v, (bytes, bytearray, memoryview)):
                    raise DataError(f"{v!r} is not a valid {r} value")
                data = bytes(v)
            if len(data) <= MAX_INLINE:
                fixed[pos:pos + len(data)] = data
                fixed[pos + 7] = 0x80 | len(data)
            else:
                struct.pack_into("<Q", fixed, pos, to_var(data, pad8(len(data))) << 32 | len(data))
        elif r == "DECIMAL":
            unscaled = decimal_to_unscaled(v, *t.params)
            if is_compact_decimal(t.params[0]):
                struct.pack_into("<q", fixed, pos, unscaled)
            else:
                data = java_big_integer_bytes(unscaled)
                struct.pack_into("<Q", fixed, pos, to_var(data, 16) << 32 | len(data))
        elif r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            millis, nano_of_milli = divmod(timestamp_to_nanos(v, r == "TIMESTAMP_LTZ"), 10**6)
            if is_compact_timestamp(t.params[0]):
                struct.pack_into("<q", fixed, pos, millis)
            else:
                offset = to_var(struct.pack("<q", millis), 8)
                struct.pack_into("<Q", fixed, pos, offset << 32 | nano_of_milli)
        else:
            data = _fixed_bytes(v, t)
            fixed[pos:pos + len(data)] = data
    return bytes(fixed + var)


def _decode_field(data: bytes, pos: int, t: DataType) -> Any:
    if not isinstance(t, AtomicType):
        raise SchemaError(f"BinaryRow values of nested type {t} are not supported")
    r = t.root
    (word,) = struct.unpack_from("<Q", data, pos)
    if r in _FIXED:
        return struct.unpack_from(_FIXED[r], data, pos)[0]
    if r in _STRINGS or r in _BINARIES:
        if word >> 63:
            raw = data[pos:pos + ((word >> 56) & 0x7F)]
        else:
            offset, length = word >> 32, word & 0xFFFFFFFF
            raw = data[offset:offset + length]
        return raw.decode("utf-8") if r in _STRINGS else bytes(raw)
    if r == "DATE":
        return date.fromordinal(_EPOCH_DAY + struct.unpack_from("<i", data, pos)[0])
    if r == "TIME":
        ms = struct.unpack_from("<i", data, pos)[0]
        return time(ms // 3_600_000, ms // 60_000 % 60, ms // 1000 % 60, ms % 1000 * 1000)
    if r == "DECIMAL":
        if is_compact_decimal(t.params[0]):
            unscaled = struct.unpack_from("<q", data, pos)[0]
        else:
            offset, length = word >> 32, word & 0xFFFFFFFF
            unscaled = int.from_bytes(data[offset:offset + length], "big", signed=True)
        return Decimal(f"{unscaled}E-{t.params[1]}")
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        if is_compact_timestamp(t.params[0]):
            nanos = struct.unpack_from("<q", data, pos)[0] * 10**6
        else:
            millis = struct.unpack_from("<q", data, word >> 32)[0]
            nanos = millis * 10**6 + (word & 0xFFFFFFFF)
        return nanos_to_timestamp(nanos, t.params[0], r == "TIMESTAMP_LTZ")
    raise SchemaError(f"BinaryRow cannot store type {t}")


def _decode(data: bytes, types: Sequence[DataType], arity: int) -> list[Any]:
    """Decode the first ``len(types)`` fields of a row laid out for ``arity`` fields."""
    hs = header_size(arity)
    if len(data) < hs + 8 * arity:
        raise DataError(f"BinaryRow of {len(data)} bytes is too short for {arity} fields")
    out: list[Any] = []
    for i, t in enumerate(types):
        if data[(i + 8) // 8] >> ((i + 8) % 8) & 1:
            out.append(None)
        else:
            out.append(_decode_field(data, hs + 8 * i, t))
    return out


def decode_row(data: bytes, types: Sequence[DataType]) -> list[Any]:
    """Values of the ``BinaryRow`` bytes ``data`` (without arity prefix) of arity ``len(types)``."""
    return _decode(bytes(data), types, len(types))


def serialize_row(values: Sequence[Any], types: Sequence[DataType]) -> bytes:
    """The form manifests store: 4-byte big-endian arity, then the row bytes."""
    return struct.pack(">i", len(types)) + encode_row(values, types)


def deserialize_row(data: bytes, types: Sequence[DataType]) -> list[Any]:
    """Inverse of :func:`serialize_row`. ``b""`` is an empty row; fields beyond the stored
    arity (added by schema evolution after the row was written) come back as None."""
    data = bytes(data)
    if not data:
        return [None] * len(types)
    if len(data) < 4:
        raise DataError(f"serialized BinaryRow of {len(data)} bytes has no arity")
    arity = struct.unpack_from(">i", data)[0]
    if arity < 0:
        raise DataError(f"serialized BinaryRow has negative arity {arity}")
    known = list(types)[:arity]
    return _decode(data[4:], known, arity) + [None] * (len(types) - len(known))
