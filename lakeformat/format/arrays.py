"""Conversions between numpy or Python values and Arrow that never import pandas.

pyarrow (26) imports pandas, which takes 0.4 s with a warm disk cache and over 2 s with a cold one,
the first time a process does any of: ``pa.array`` of a list *or* of a numpy array,
``pa.scalar`` of a Python value, a compute function given a Python scalar (``pc.equal(a, 1)``,
``arr.fill_null(0)``), ``Array.to_numpy`` or ``ChunkedArray.to_numpy`` (whatever
``zero_copy_only``), ``np.asarray`` of an Arrow array, ``Schema.empty_table()``,
``Table.from_batches([])``, ``Table.take`` of a list or numpy array, and importing
``pyarrow.dataset`` (its module creates a scalar). Its pandas shim asks whether a value *is* a
pandas object before converting it, and asking imports pandas.

The functions here do the same work from the buffers: numpy views of an array's data buffer,
arrays made with ``pa.Array.from_buffers`` over numpy memory, Python lists turned into numpy
arrays by numpy's own converters. Types they don't cover (nested, decimal, dictionary, arrays
with nulls where a numpy value is asked for) fall back to pyarrow's converters, which are
correct and merely slow to start. ``tests/unit/test_no_pandas.py`` checks that lakeformat's read
and commit paths keep pandas out of the process.
"""
from __future__ import annotations

from itertools import repeat
from typing import Optional
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

_INT = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}
_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
_FLOAT = {32: np.float32, 64: np.float64}


def _np_dtype(t: pa.DataType) -> Optional[np.dtype]:
    """The numpy dtype of a fixed-width type's data buffer, as pyarrow's ``to_numpy`` returns it."""
    if pa.types.is_signed_integer(t):
        return np.dtype(_INT[t.bit_width])
    if pa.types.is_unsigned_integer(t):
        return np.dtype(_UINT[t.bit_width])
    if pa.types.is_floating(t) and t.bit_width in _FLOAT:
        return np.dtype(_FLOAT[t.bit_width])
    if pa.types.is_timestamp(t) and t.tz is None:
        return np.dtype(f"datetime64[{t.unit}]")
    if pa.types.is_duration(t):
        return np.dtype(f"timedelta64[{t.unit}]")
    if pa.types.is_date32(t):
        return np.dtype("datetime64[D]")
    return None


def _chunk_to_numpy(arr: pa.Array) -> Optional[np.ndarray]:
    n, off = len(arr), arr.offset
    if pa.types.is_boolean(arr.type):
        buf = arr.buffers()[1]
        bits = np.frombuffer(buf, np.uint8) if buf is not None else np.zeros(0, np.uint8)
        return np.unpackbits(bits, count=off + n, bitorder="little")[off:].view(np.bool_)
    dtype = _np_dtype(arr.type)
    if dtype is None:
        return None
    buf = arr.buffers()[1]
    if buf is None or n == 0:
        return np.empty(0, dtype)
    return np.frombuffer(buf, dtype=dtype, count=off + n)[off:]


def to_numpy(arr) -> np.ndarray:
    """An Array or ChunkedArray as numpy, like ``to_numpy(zero_copy_only=False)`` (read-only when
    it is a view of one chunk). Integers, floats, booleans and naive timestamps, durations and
    dates without nulls come from the buffers; anything else goes through pyarrow."""
    if isinstance(arr, pa.ChunkedArray):
        if arr.null_count == 0 and (pa.types.is_boolean(arr.type) or _np_dtype(arr.type) is not None):
            if arr.num_chunks == 1:
                return to_numpy(arr.chunk(0))
            if arr.num_chunks == 0:
                return np.empty(0, np.bool_ if pa.types.is_boolean(arr.type) else _np_dtype(arr.type))
            return np.concatenate([to_numpy(c) for c in arr.chunks])
        return arr.to_numpy()
    if arr.null_count == 0:
        out = _chunk_to_numpy(arr)
        if out is not None:
            return out
    return arr.to_numpy(zero_copy_only=False)


def is_valid(arr) -> np.ndarray:
    """``arr.is_valid()`` as a numpy bool array."""
    return to_numpy(arr.is_valid())


def is_null(arr) -> np.ndarray:
    return to_numpy(arr.is_null())


def _arrow_type(dtype: np.dtype) -> Optional[pa.DataType]:
    if dtype.kind == "i":
        return {1: pa.int8(), 2: pa.int16(), 4: pa.int32(), 8: pa.int64()}[dtype.itemsize]
    if dtype.kind == "u":
        return {1: pa.uint8(), 2: pa.uint16(), 4: pa.uint32(), 8: pa.uint64()}[dtype.itemsize]
    if dtype.kind == "f" and dtype.itemsize in (4, 8):
        return pa.float32() if dtype.itemsize == 4 else pa.float64()
    if dtype.kind in "Mm":
        unit, count = np.datetime_data(dtype)
        if count == 1 and unit in ("s", "ms", "us", "ns"):
            return pa.timestamp(unit) if dtype.kind == "M" else pa.duration(unit)
    return None


def from_numpy(values: np.ndarray, type: Optional[pa.DataType] = None,
               mask: Optional[np.ndarray] = None) -> pa.Array:
    """``pa.array(values, type, mask=mask)`` for a 1-d numeric, boolean, datetime64 or
    timedelta64 numpy array (``mask``: True where null), from the array's memory."""
    values = np.asarray(values)
    if values.ndim != 1:
        return pa.array(values, type, mask=mask)
    validity, nulls = None, 0
    if mask is not None:
        mask = np.asarray(mask, dtype=np.bool_)
        nulls = int(np.count_nonzero(mask))
        if nulls:
            validity = pa.py_buffer(np.packbits(~mask, bitorder="little"))
    n = len(values)
    if values.dtype.kind == "b":
        base = pa.bool_()
        data = pa.py_buffer(np.packbits(values, bitorder="little"))
    else:
        base = _arrow_type(values.dtype)
        if base is None or values.dtype.byteorder == ">":
            return pa.array(values, type, mask=mask)
        if values.dtype.kind == "M" and type is not None and pa.types.is_timestamp(type) and type.tz is not None:
            return pa.array(values, type, mask=mask)
        data = pa.py_buffer(np.ascontiguousarray(values))
    out = pa.Array.from_buffers(base, n, [validity, data], null_count=nulls)
    if type is not None and not out.type.equals(type):
        out = out.cast(type)
    return out


def _object_array(values: Sequence) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values if isinstance(values, list) else list(values)
    return out


def _strings(objs: np.ndarray, mask: np.ndarray, type: pa.DataType) -> Optional[pa.Array]:
    filled = np.where(mask, "" if pa.types.is_string(type) or pa.types.is_large_string(type) else b"", objs)
    if pa.types.is_string(type) or pa.types.is_large_string(type):
        encoded = list(map(str.encode, filled))
    else:
        if not all(map(isinstance, filled, repeat((bytes, bytearray)))):
            return None   # bytes(5) would be five zero bytes: let pyarrow reject what isn't binary
        encoded = list(map(bytes, filled))
    lengths = np.fromiter(map(len, encoded), np.int64, count=len(encoded))
    offsets = np.zeros(len(encoded) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    large = pa.types.is_large_string(type) or pa.types.is_large_binary(type)
    if not large:
        if offsets[-1] >= 2 ** 31:
            return None
        offsets = offsets.astype(np.int32)
    nulls = int(np.count_nonzero(mask))
    validity = pa.py_buffer(np.packbits(~mask, bitorder="little")) if nulls else None
    return pa.Array.from_buffers(type, len(encoded), [validity, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))],
                                 null_count=nulls)


def from_pylist(values: Sequence, type: pa.DataType) -> pa.Array:
    """``pa.array(values, type)`` for a list of Python values (None is null) of a primitive type:
    integers, floats, booleans, strings, binaries, naive timestamps (``datetime``), durations
    (``timedelta``) and dates. Other types go through ``pa.array``."""
    n = len(values)
    objs = _object_array(values)
    # numpy's stubs take no None operand, though an object array compares with it element-wise
    mask = np.equal(objs, None).astype(np.bool_) if n else np.zeros(0, np.bool_)  # type: ignore[call-overload]
    try:
        if pa.types.is_integer(type):
            wide = _INT[64] if pa.types.is_signed_integer(type) else _UINT[64]
            return from_numpy(np.where(mask, 0, objs).astype(wide), type, mask)
        if pa.types.is_floating(type) and type.bit_width in _FLOAT:
            return from_numpy(np.where(mask, 0.0, objs).astype(np.float64), type, mask)
        if pa.types.is_boolean(type):
            return from_numpy(np.where(mask, False, objs).astype(np.bool_), type, mask)
        if pa.types.is_string(type) or pa.types.is_large_string(type) or pa.types.is_binary(type) \
                or pa.types.is_large_binary(type):
            out = _strings(objs, mask, type)
            if out is not None:
                return out
        if (pa.types.is_timestamp(type) and type.tz is None) or pa.types.is_duration(type):
            kind = "datetime64" if pa.types.is_timestamp(type) else "timedelta64"
            vals = np.where(mask, None, objs).astype(f"{kind}[{type.unit}]")  # type: ignore[call-overload]
            return from_numpy(vals.view(np.int64), pa.int64(), mask).view(type)
        if pa.types.is_date32(type):
            vals = np.where(mask, None, objs).astype("datetime64[D]")  # type: ignore[call-overload]
            return from_numpy(vals.view(np.int64).astype(np.int32), pa.int32(), mask).view(type)
    except (TypeError, ValueError, OverflowError):
        pass   # a value numpy won't take as this type: pyarrow says what is wrong with it
    return pa.array(values, type)


def scalar(value, type: pa.DataType) -> pa.Scalar:
    """``pa.scalar(value, type)``: a Python value as an Arrow scalar of ``type``."""
    if isinstance(value, pa.Scalar):
        return value if value.type.equals(type) else value.cast(type)
    return from_pylist([value], type)[0]


def infer_type(value) -> Optional[pa.DataType]:
    """The Arrow type ``pa.scalar(value)`` infers for a plain Python value, or None (others)."""
    import datetime as dt
    import decimal
    if isinstance(value, bool):
        return pa.bool_()
    if isinstance(value, int):
        return pa.int64() if -2 ** 63 <= value < 2 ** 63 else None
    if isinstance(value, float):
        return pa.float64()
    if isinstance(value, str):
        return pa.string()
    if isinstance(value, bytes):
        return pa.binary()
    if isinstance(value, dt.datetime):
        return pa.timestamp("us") if value.tzinfo is None else None
    if isinstance(value, dt.date):
        return pa.date32()
    if isinstance(value, decimal.Decimal):
        return None
    return None


def infer_scalar(value) -> pa.Scalar:
    """``pa.scalar(value)``: the type inferred from the Python value."""
    t = infer_type(value)
    return scalar(value, t) if t is not None else pa.scalar(value)


def infer_array(values: Sequence) -> pa.Array:
    """``pa.array(values)`` for values of one plain Python type (ints and floats mixed: double)."""
    types = {infer_type(v) for v in values if v is not None}
    if types == {pa.int64(), pa.float64()}:
        types = {pa.float64()}
    if len(types) == 1 and None not in types:
        return from_pylist(list(values), types.pop())
    return pa.array(list(values))


def table_from_pylist(rows: Sequence[dict], schema: pa.Schema) -> pa.Table:
    """``pa.Table.from_pylist(rows, schema=schema)`` (a missing key is null)."""
    return pa.Table.from_arrays([from_pylist(list(map(dict.get, rows, repeat(f.name))), f.type) for f in schema],
                                schema=schema)


def empty_table(schema: pa.Schema) -> pa.Table:
    """``schema.empty_table()``."""
    return pa.Table.from_arrays([pa.chunked_array([pa.nulls(0, f.type)], f.type) for f in schema], schema=schema)


def indices(values) -> pa.Array:
    """Row positions for ``take``: a numpy integer array as an Arrow array (Arrow arrays as they are)."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    values = np.asarray(values)
    return from_numpy(values if values.dtype.kind in "iu" else values.astype(np.int64))
