"""Paimon's cast rules for columns whose type was changed after files were written, vectorised.

A file keeps the type its column had when it was written (its schema id says which); reading it
under the table's current schema converts each value the way Paimon's ``CastExecutors`` do, so
lakeformat returns the rows Paimon returns:

- integers narrow as Java's primitive casts (two's complement wrap), floating point to integer
  truncates toward zero, NaN becomes 0 and out-of-range values saturate (Java's ``(int) d``);
- numbers and decimals to DECIMAL(p, s) round half up; a value too large for p becomes null;
- BOOLEAN to a number is 1 or 0; a number to BOOLEAN is ``value != 0``;
- STRING to BOOLEAN accepts (trimmed, any case) t/true/y/yes/1 and f/false/n/no/0: 'nO' is false;
- STRING to numbers, dates and timestamps parses the trimmed text; text that does not parse is an
  error naming the column, as in Paimon;
- TIMESTAMP to an integer is its epoch seconds (floor); an integer to TIMESTAMP is epoch seconds;
- TIMESTAMP to DATE drops the time of day, DATE to TIMESTAMP is midnight, a smaller precision
  truncates;
- anything to STRING is Paimon's text: booleans true/false, decimals with their scale, timestamps
  ``yyyy-MM-dd HH:mm:ss`` plus as many fraction digits as the precision; CHAR/VARCHAR(n) keep n
  characters (CHAR pads with spaces).

Pairs Paimon cannot cast (and lakeformat would only guess at) are an ``UnsupportedError``.
"""
from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import DataError, UnsupportedError
from lakeformat.format import types as T

_INTS = ("TINYINT", "SMALLINT", "INT", "BIGINT")
_FLOATS = ("FLOAT", "DOUBLE")
_STRINGS = ("CHAR", "VARCHAR")
_BINARIES = ("BINARY", "VARBINARY")
_TIMESTAMPS = ("TIMESTAMP", "TIMESTAMP_LTZ")
_TRUE = ["t", "true", "y", "yes", "1"]
_FALSE = ["f", "false", "n", "no", "0"]
_BITS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}


def cast_column(arr, old: T.DataType, new: T.DataType, column: str):
    """``arr`` (values of type ``old``, as Arrow) converted to ``new`` by Paimon's rules."""
    target = T.to_arrow(new)
    if not isinstance(old, T.AtomicType) or not isinstance(new, T.AtomicType):
        if arr.type.equals(target):
            return arr
        try:   # nested columns: only the widenings Arrow does losslessly
            return arr.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise UnsupportedError(f"column {column!r}: cannot read {T.type_to_json(old)} values as "
                                   f"{T.type_to_json(new)}") from None
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    o, n = old.root, new.root
    try:
        if n in _STRINGS:
            return _to_string(arr, old, new)
        if o in _STRINGS:
            return _from_string(pc.utf8_trim_whitespace(arr.cast(pa.string())), new, target)
        if n in _INTS:
            return _to_int(arr, old, n)
        if n in _FLOATS:
            if o in _TIMESTAMPS:
                return _epoch_seconds(arr).cast(target)
            return arr.cast(target, safe=False)
        if n == "BOOLEAN" and o in _INTS + _FLOATS + ("DECIMAL",):
            return pc.not_equal(arr, pa.scalar(0, arr.type))
        if n == "DECIMAL":
            if o in _INTS + _FLOATS + ("DECIMAL",):
                return _to_decimal(arr, o, new.params)
            if o == "BOOLEAN":
                return _to_decimal(arr.cast(pa.int8()), "TINYINT", new.params)
        if n in _TIMESTAMPS:
            if o in _TIMESTAMPS or o == "DATE":
                return arr.cast(pa.timestamp(arr.type.unit if o != "DATE" else "s",
                                             target.tz)).cast(target, safe=False)
            if o in _INTS:
                return pc.multiply(arr.cast(pa.int64()), 1000).cast(pa.timestamp("ms", target.tz)).cast(target)
        if n == "DATE" and o in _TIMESTAMPS:
            return _floor_days(arr)
        if n == "TIME":
            if o == "TIME":
                return arr.cast(target, safe=False)
            if o in _TIMESTAMPS:
                ms = _floor_mod(arr.cast(pa.timestamp("ms"), safe=False).cast(pa.int64()), 86_400_000)
                return ms.cast(pa.int32()).cast(target)
        if n in _BINARIES and o in _BINARIES:
            return _fit_binary(arr, new)
    except (pa.ArrowInvalid, ValueError, decimal.InvalidOperation) as e:
        raise DataError(f"column {column!r}: a value written as {T.type_to_json(old)} cannot be read as "
                        f"{T.type_to_json(new)}: {e}") from None
    raise UnsupportedError(f"column {column!r}: lakeformat cannot read {T.type_to_json(old)} values as "
                           f"{T.type_to_json(new)} (no such cast in Paimon's rules)")


# -- numbers -------------------------------------------------------------------------------------
def _floor_mod(a: pa.Array, m: int) -> pa.Array:
    """Integer ``a mod m`` with the sign of ``m`` (Java's floorMod), exact for int64."""
    r = pc.subtract(a, pc.multiply(pc.divide(a, m), m))
    return pc.if_else(pc.less(r, 0), pc.add(r, m), r)


def _floor_div(a: pa.Array, m: int) -> pa.Array:
    return pc.divide(pc.subtract(a, _floor_mod(a, m)), m)


def _wrap(a: pa.Array, root: str) -> pa.Array:
    """An int64 array narrowed to ``root`` as Java's primitive cast does (two's complement)."""
    return a.cast(T.to_arrow(T.atomic(root)), safe=False)


def _to_int(arr: pa.Array, old: T.AtomicType, n: str) -> pa.Array:
    o = old.root
    if o in _INTS or o == "BOOLEAN":
        return _wrap(arr.cast(pa.int64()), n) if o != "BOOLEAN" else arr.cast(T.to_arrow(T.atomic(n)))
    if o in _FLOATS:   # Java: (long) d or (int) d saturate, NaN -> 0; byte and short narrow from int
        wide = "BIGINT" if n == "BIGINT" else "INT"
        lo, hi = -(1 << (_BITS[wide] - 1)), (1 << (_BITS[wide] - 1)) - 1
        d = pc.if_else(pc.is_nan(arr), 0.0, arr.cast(pa.float64()))
        t = pc.trunc(d)
        big = pc.greater_equal(t, float(hi))
        small = pc.less_equal(t, float(lo))
        safe = pc.if_else(pc.or_(big, small), 0.0, t).cast(pa.int64())
        v = pc.if_else(big, pa.scalar(hi, pa.int64()), pc.if_else(small, pa.scalar(lo, pa.int64()), safe))
        return _wrap(v, n)
    if o == "DECIMAL":   # BigDecimal.longValue(): the integer part toward zero, then the low bits
        return _wrap(arr.cast(pa.int64(), safe=False), n)
    if o in _TIMESTAMPS:
        return _wrap(_epoch_seconds(arr), n)
    if o == "DATE":
        return _wrap(arr.cast(pa.int32()).cast(pa.int64()), n)
    raise ValueError(f"no cast from {o}")


_PER_SECOND = {"s": 1, "ms": 1000, "us": 10**6, "ns": 10**9}


def _epoch_seconds(arr: pa.Array) -> pa.Array:
    """Whole seconds since the epoch, rounded down (before 1970 too)."""
    return _floor_div(arr.cast(pa.int64()), _PER_SECOND[arr.type.unit])


def _to_decimal(arr: pa.Array, o: str, params) -> pa.Array:
    p, s = params
    if o in _FLOATS:
        rounded = pc.round(arr.cast(pa.float64()), s, round_mode="half_up")
        wide = rounded.cast(pa.decimal128(38, s), safe=False)
    elif o == "DECIMAL":
        wide = pc.round(arr, s, round_mode="half_up").cast(pa.decimal128(38, s))
    else:
        wide = arr.cast(pa.decimal128(38, s))
    limit = pa.scalar(decimal.Decimal(10) ** (p - s), pa.decimal128(38, 0)).cast(pa.decimal128(38, s))
    fits = pc.less(pc.abs(wide), limit)
    return pc.if_else(fits, wide, pa.nulls(len(wide), wide.type)).cast(pa.decimal128(p, s))


def _floor_days(arr: pa.Array) -> pa.Array:
    return _floor_div(_epoch_seconds(arr), 86400).cast(pa.int32()).cast(pa.date32())


# -- strings -------------------------------------------------------------------------------------
def _from_string(s: pa.Array, new: T.AtomicType, target: pa.DataType) -> pa.Array:
    n = new.root
    if n == "BOOLEAN":
        low = pc.utf8_lower(s)
        is_true, is_false = pc.is_in(low, pa.array(_TRUE)), pc.is_in(low, pa.array(_FALSE))
        bad = pc.and_(pc.invert(pc.or_(is_true, is_false)), pc.is_valid(s))
        if pc.any(bad).as_py():
            raise ValueError(f"{s.filter(bad)[0].as_py()!r} is not a BOOLEAN (t, true, y, yes, 1, f, false, n, no, 0)")
        return pc.if_else(pc.is_null(s), pa.nulls(len(s), pa.bool_()), is_true)
    if n in _INTS:
        wide = s.cast(pa.int64())
        return _wrap(wide, n)
    if n in _FLOATS:
        return s.cast(target)
    if n == "DECIMAL":
        p, sc = new.params
        q = decimal.Decimal(1).scaleb(-sc)
        vals = [None if v is None else decimal.Decimal(v).quantize(q, rounding=decimal.ROUND_HALF_UP)
                for v in s.to_pylist()]
        if any(v is not None and not v.is_finite() for v in vals):   # 'NaN' (infinities fail to quantize)
            raise decimal.InvalidOperation("not a finite number")
        vals = [None if v is None or _digits_before_point(v) > p - sc else v for v in vals]
        return pa.array(vals, target)
    if n == "DATE":
        return s.cast(pa.date32())
    if n in _TIMESTAMPS:
        iso = pc.replace_substring(s, " ", "T", max_replacements=1)
        return iso.cast(pa.timestamp("ns")).cast(pa.timestamp(target.unit, target.tz), safe=False)
    if n == "TIME":
        ts = pc.binary_join_element_wise("1970-01-01T", s, "").cast(pa.timestamp("ms"))
        return ts.cast(pa.int64()).cast(pa.int32()).cast(target)
    if n in _BINARIES:
        return _fit_binary(s.cast(pa.binary()), new)
    raise ValueError(f"no cast from STRING to {n}")


def _digits_before_point(v: decimal.Decimal) -> int:
    t = v.as_tuple()
    return len(t.digits) - max(0, -int(t.exponent))


def _to_string(arr: pa.Array, old: T.AtomicType, new: T.AtomicType) -> pa.Array:
    o = old.root
    if o in _TIMESTAMPS:
        text = _format_timestamp(arr, old.params[0])
    elif o == "TIME":
        day_ms = arr.cast(pa.int32()).cast(pa.int64()).cast(pa.timestamp("ms"))
        text = pc.utf8_slice_codeunits(_format_timestamp(day_ms, min(old.params[0], 3)), 11, 30)
    elif o in _FLOATS:
        single = o == "FLOAT"
        text = pa.array([None if v is None else _java_number(v, single) for v in arr.to_pylist()], pa.string())
    else:
        text = arr.cast(pa.string())
    length = new.params[0]
    if length < T.MAX_LENGTH:
        text = pc.utf8_slice_codeunits(text, 0, length)
        if new.root == "CHAR":
            text = pc.utf8_rpad(text, length, " ")
    return text


def _format_timestamp(arr: pa.Array, precision: int) -> pa.Array:
    """Paimon's timestamp text: ``yyyy-MM-dd HH:mm:ss`` and ``precision`` fraction digits."""
    ns = arr.cast(pa.timestamp("ns", arr.type.tz), safe=False).cast(pa.int64())
    nanos = _floor_mod(ns, 10**9)
    seconds = _floor_div(ns, 10**9).cast(pa.timestamp("s"))
    text = pc.strftime(seconds, "%Y-%m-%d %H:%M:%S")
    if precision == 0:
        return text
    fraction = pc.utf8_slice_codeunits(pc.utf8_lpad(nanos.cast(pa.string()), 9, "0"), 0, precision)
    return pc.binary_join_element_wise(text, fraction, ".")


def _java_number(v: float, single: bool) -> str:
    """Java's ``Double.toString`` / ``Float.toString``: shortest digits, plain for magnitudes in
    [1e-3, 1e7), else ``d.dddE<n>``."""
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "Infinity" if v > 0 else "-Infinity"
    shortest = str(np.float32(v)) if single else repr(v)
    d = decimal.Decimal(shortest)
    sign, digits, _ = d.as_tuple()
    if v == 0:
        return "-0.0" if sign else "0.0"
    if 1e-3 <= abs(v) < 1e7:
        text = format(d, "f")
        return text if "." in text else text + ".0"
    tail = "".join(map(str, digits[1:])).rstrip("0") or "0"
    return f"{'-' if sign else ''}{digits[0]}.{tail}E{d.adjusted()}"


def _fit_binary(arr: pa.Array, new: T.AtomicType) -> pa.Array:
    length = new.params[0]
    if length >= T.MAX_LENGTH:
        return arr.cast(pa.binary())
    out = pc.binary_slice(arr, 0, length) if hasattr(pc, "binary_slice") else arr
    if new.root == "BINARY":
        out = pa.array([None if v is None else v.ljust(length, b"\0") for v in out.to_pylist()], pa.binary())
    return out


def castable(old: T.DataType, new: T.DataType) -> bool:
    """Whether Paimon's rules convert ``old`` values to ``new`` (what an ALTER of a column's type
    may do): decided by the same dispatch that reads, on no values."""
    if not isinstance(old, T.AtomicType) or not isinstance(new, T.AtomicType):
        return T.can_widen(old, new)
    try:
        cast_column(pa.array([], T.to_arrow(old)), old, new, "")
        return True
    except UnsupportedError:
        return False
