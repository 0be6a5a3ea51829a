"""Paimon's fixed-bucket assignment, vectorised over whole Arrow columns.

Paimon puts a row in bucket ``abs(h % num_buckets)`` (Java ``int`` arithmetic), where ``h`` is
MurmurHash3-x86-32 (seed 42) over the ``BinaryRow`` bytes of the bucket-key fields, read as
little-endian 4-byte words, finished with the byte length. Any difference in those bytes moves
rows to other buckets than Java would, so the rows are built exactly as
:mod:`lakeformat.binary_row` encodes them -- but for all rows at once:

* the fixed part (header + one 8-byte slot per field) becomes one uint32 array per 4-byte word;
  words that are the same for every row (the header when nothing is null, the upper half of
  narrow slots) stay scalars, so hashing them costs nothing per row;
* variable-part bytes (long strings, wide decimals, fine timestamps) go into one flat buffer,
  rows one after another, and are hashed word by word for the rows that are that long.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from lakeformat.errors import DataError, OptionError, SchemaError
from lakeformat.format.binary_row import (
    MAX_INLINE,
    NANOS_PER_UNIT,
    encode_row,
    header_size,
    is_compact_decimal,
    is_compact_timestamp,
)
from lakeformat.format.types import AtomicType, DataType, to_arrow

SEED = 42
_C1, _C2 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593)
_U32 = np.uint32
_FIXED_WIDTH = {"BOOLEAN": 1, "TINYINT": 1, "SMALLINT": 2, "INT": 4, "DATE": 4, "FLOAT": 4,
                "BIGINT": 8, "DOUBLE": 8}
_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
# _LOW_BYTES[k] keeps the low k bytes of a uint64.
_LOW_BYTES = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [2**64 - 1], dtype=np.uint64)


def _mix(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    """One murmur3 body step for word ``k`` (arrays broadcast; uint32 wraps like Java int)."""
    k = k * _C1
    k = (k << _U32(15)) | (k >> _U32(17))
    k *= _C2
    h = h ^ k
    h = (h << _U32(13)) | (h >> _U32(19))
    return h * _U32(5) + _U32(0xE6546B64)


def _fmix(h: npt.NDArray[np.uint32], length) -> npt.NDArray[np.uint32]:
    h = h ^ np.asarray(length).astype(np.uint32)
    h ^= h >> _U32(16)
    h *= _U32(0x85EBCA6B)
    h ^= h >> _U32(13)
    h *= _U32(0xC2B2AE35)
    h ^= h >> _U32(16)
    return h


@dataclass
class _Field:
    """One bucket-key column, reduced to what the row layout needs."""
    valid: Optional[np.ndarray]      # bool per row, None when nothing is null
    slot: np.ndarray                 # uint64 slot; rows in ``in_var`` hold only the low half
    narrow: bool = False             # slot never uses its upper 4 bytes
    reserve: Optional[np.ndarray] = None   # int64 variable-part bytes per row
    in_var: Optional[np.ndarray] = None    # rows whose slot still needs ``offset << 32``
    write: Optional[Callable[[np.ndarray, np.ndarray], None]] = None  # (var64, first word)


def _fixed_values(arr: pa.Array, dtype) -> np.ndarray:
    """The values buffer of a fixed-width array as numpy, without copying."""
    width = np.dtype(dtype).itemsize
    per_value = arr.type.byte_width // width
    values = np.frombuffer(arr.buffers()[1], dtype=dtype)
    return values[arr.offset * per_value:(arr.offset + len(arr)) * per_value]


def _normalize(col, t: DataType) -> pa.Array:
    if not isinstance(col, (pa.Array, pa.ChunkedArray)):
        col = pa.array(col, type=to_arrow(t))
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks else pa.array([], type=col.type)
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    if not isinstance(t, AtomicType):
        return col
    T = pa.types
    if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and T.is_timestamp(col.type):
        return col  # any unit: converted exactly below
    if t.root == "TIME" and (T.is_time32(col.type) or T.is_time64(col.type)):
        return col
    if t.root in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
        if any(is_(col.type) for is_ in (T.is_string, T.is_binary, T.is_large_string,
                                         T.is_large_binary)):
            return col
        return col.cast(pa.string() if T.is_string_view(col.type) else pa.binary())
    target = to_arrow(t)
    return col if col.type == target else col.cast(target)


def _var_bytes_field(arr: pa.Array, valid, n: int) -> _Field:
    """Strings/binaries: inline in the slot up to 7 bytes, else padded into the variable part."""
    off_dtype = np.int64 if arr.type in (pa.large_string(), pa.large_binary()) else np.int32
    offsets = np.frombuffer(arr.buffers()[1], dtype=off_dtype)[arr.offset:arr.offset + n + 1]
    data_buf = arr.buffers()[2]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.empty(0, np.uint8)
    # 8 spare zero bytes so an unaligned 8-byte load at any string start stays in bounds.
    padded = np.zeros(len(data) + 8, dtype=np.uint8)
    padded[:len(data)] = data
    windows = np.ndarray((len(data) + 1,), dtype="<u8", buffer=padded, strides=(1,))
    starts = offsets[:-1].astype(np.int64)
    lengths = np.diff(offsets).astype(np.int64)
    if valid is not None:
        lengths[~valid] = 0
    long_ = lengths > MAX_INLINE
    short = np.minimum(lengths, 8)
    slot = windows[starts] & _LOW_BYTES[short]
    slot |= (short.astype(np.uint64) | np.uint64(0x80)) << np.uint64(56)
    slot[long_] = lengths[long_].astype(np.uint64)
    if valid is not None:
        slot[~valid] = 0
    reserve = np.where(long_, (lengths + 7) & ~7, 0)

    def write(var64: np.ndarray, word: np.ndarray) -> None:
        # Copy 8 bytes at a time; chunk c of all rows is at (row base + c) on both sides.
        rows = np.flatnonzero(long_)
        chunks = (lengths[rows] + 7) // 8
        first = np.cumsum(chunks) - chunks                # first chunk of each row, flattened
        c = np.arange(int(chunks.sum()))
        values = windows[np.repeat(starts[rows] - 8 * first, chunks) + 8 * c]
        last = first + chunks - 1                         # only last chunks hold padding
        values[last] &= _LOW_BYTES[lengths[rows] - 8 * (chunks - 1)]
        var64[np.repeat(word[rows] - first, chunks) + c] = values

    return _Field(valid, slot, reserve=reserve, in_var=long_, write=write)


def _decimal_field(arr: pa.Array, valid, precision: int) -> _Field:
    raw = _fixed_values(arr, "<u8").reshape(-1, 2)     # little-endian 128-bit: low, high
    if is_compact_decimal(precision):
        slot = raw[:, 0].copy()                        # the low long is the unscaled value
        if valid is not None:
            slot[~valid] = 0
        return _Field(valid, slot)
    # BigInteger.toByteArray(): big-endian, without leading bytes that only repeat the sign.
    be = raw.view(np.uint8).reshape(-1, 16)[:, ::-1]
    sign = np.where(be[:, :1] >= 0x80, 0xFF, 0).astype(np.uint8)
    redundant = (be[:, :15] == sign) & ((be[:, 1:] & 0x80) == (sign & 0x80))
    skip = np.cumprod(redundant, axis=1).sum(axis=1)
    idx = np.arange(16) + skip[:, None]
    payload = np.take_along_axis(be, np.minimum(idx, 15), axis=1)
    payload[idx > 15] = 0
    payload = np.ascontiguousarray(payload).view("<u8")          # (n, 2) words
    length = (16 - skip).astype(np.uint64)
    if valid is not None:
        length[~valid] = 0
        payload[~valid] = 0

    def write(var64: np.ndarray, word: np.ndarray) -> None:
        var64[word] = payload[:, 0]
        var64[word + 1] = payload[:, 1]

    return _Field(valid, length, reserve=np.full(len(arr), 16), write=write,
                  in_var=np.ones(len(arr), dtype=bool))


def _timestamp_field(arr: pa.Array, valid, precision: int) -> _Field:
    per_unit = NANOS_PER_UNIT[arr.type.unit]
    values = _fixed_values(arr, np.int64)
    if per_unit >= 10**6:
        millis = values * (per_unit // 10**6)
        nano_of_milli = np.zeros(len(values), dtype=np.int64)
    else:
        millis, rest = np.divmod(values, 10**6 // per_unit)
        nano_of_milli = rest * per_unit
    if valid is not None:
        millis = np.where(valid, millis, 0)
        nano_of_milli[~valid] = 0
    if is_compact_timestamp(precision):
        return _Field(valid, millis.view(np.uint64))

    def write(var64: np.ndarray, word: np.ndarray) -> None:
        var64[word] = millis.view(np.uint64)

    return _Field(valid, nano_of_milli.astype(np.uint64), reserve=np.full(len(arr), 8),
                  write=write, in_var=np.ones(len(arr), dtype=bool))


def _time_field(arr: pa.Array, valid) -> _Field:
    per_unit = NANOS_PER_UNIT[arr.type.unit]
    values = _fixed_values(arr, np.int32 if pa.types.is_time32(arr.type) else np.int64)
    values = values.astype(np.int64)
    millis = values * (per_unit // 10**6) if per_unit >= 10**6 else values // (10**6 // per_unit)
    slot = millis.astype(np.int32).view(np.uint32).astype(np.uint64)
    if valid is not None:
        slot[~valid] = 0
    return _Field(valid, slot, narrow=True)


def _prepare(col, t: DataType, n: int) -> _Field:
    arr = _normalize(col, t)
    if len(arr) != n:
        raise DataError(f"bucket-key columns differ in length: {len(arr)} != {n}")
    valid = None if arr.null_count == 0 else arr.is_valid().to_numpy(zero_copy_only=False)
    if not isinstance(t, AtomicType):
        if valid is not None and not valid.any():
            return _Field(valid, np.zeros(n, dtype=np.uint64), narrow=True)
        raise SchemaError(f"cannot hash values of nested type {t}")
    r = t.root
    if r in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
        return _var_bytes_field(arr, valid, n)
    if r == "DECIMAL":
        return _decimal_field(arr, valid, t.params[0])
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return _timestamp_field(arr, valid, t.params[0])
    if r == "TIME":
        return _time_field(arr, valid)
    if r == "BOOLEAN":
        values = arr.fill_null(False).to_numpy(zero_copy_only=False).astype(np.uint64)
        return _Field(valid, values, narrow=True)
    width = _FIXED_WIDTH[r]
    slot = _fixed_values(arr, _UNSIGNED[width]).astype(np.uint64)
    if valid is not None:
        slot[~valid] = 0
    return _Field(valid, slot, narrow=width <= 4)


def hash_rows(columns: Sequence, types: Sequence[DataType]) -> np.ndarray:
    """Paimon's BinaryRow hash code (int32) of every row formed by ``columns``."""
    if len(columns) != len(types):
        raise DataError(f"{len(columns)} columns for {len(types)} types")
    if not columns:
        raise DataError("hashing needs at least one bucket-key column")
    n = len(columns[0])
    if n == 0:
        return np.empty(0, dtype=np.int32)
    fields = [_prepare(c, t, n) for c, t in zip(columns, types)]
    arity = len(fields)
    fixed_size = header_size(arity) + 8 * arity

    # Variable part: each field's entries follow those of the fields before it.
    reserve = np.zeros(n, dtype=np.int64)
    var_start = {}
    for i, f in enumerate(fields):
        if f.reserve is not None:
            var_start[i] = reserve.copy()
            f.slot[f.in_var] |= ((fixed_size + var_start[i][f.in_var]).astype(np.uint64)
                                 << np.uint64(32))
            reserve += f.reserve

    # Fixed part, one 4-byte word at a time: header words carry row kind 0 and the null bits.
    h = np.full(1, SEED, dtype=np.uint32)
    for w in range(header_size(arity) // 4):
        word = np.zeros(1, dtype=np.uint32)
        for i in range(max(0, 32 * w - 8), min(arity, 32 * w + 24)):
            valid = fields[i].valid
            if valid is not None:
                word = word | ((~valid).astype(np.uint32) << _U32((i + 8) % 32))
        h = _mix(h, word)
    for f in fields:
        h = _mix(h, f.slot.astype(np.uint32))
        h = _mix(h, np.zeros(1, np.uint32) if f.narrow else (f.slot >> np.uint64(32)).astype(np.uint32))
    h = np.broadcast_to(h, (n,)).copy()

    total = int(reserve.sum())
    if total:
        row_start = np.cumsum(reserve) - reserve
        var64 = np.zeros(total // 8, dtype="<u8")
        for i, start in var_start.items():
            write = fields[i].write
            assert write is not None, "a field with a variable part has its writer"
            write(var64, (row_start + start) // 8)
        var32 = var64.view("<u4")
        words = reserve // 4
        if (words == words[0]).all():
            matrix = var32.reshape(n, -1)
            for j in range(matrix.shape[1]):
                h = _mix(h, matrix[:, j])
        else:
            # Longest rows first, so the rows still having a word j are a prefix.
            order = np.argsort(-words, kind="stable")
            hs, first, counts = h[order], (row_start // 4)[order], words[order]
            active = np.searchsorted(-counts, -np.arange(counts[0]), side="left")
            for j, cnt in enumerate(active):
                hs[:cnt] = _mix(hs[:cnt], var32[first[:cnt] + j])
            h[order] = hs
    return _fmix(h, fixed_size + reserve).view(np.int32)


def bucket_ids(columns: Sequence, types: Sequence[DataType], num_buckets: int) -> np.ndarray:
    """The bucket (int32) Paimon assigns each row: ``abs(hash % num_buckets)`` in Java ints."""
    if num_buckets <= 0:
        raise OptionError(f"fixed-bucket assignment needs bucket > 0, got {num_buckets}")
    return np.abs(np.fmod(hash_rows(columns, types), np.int32(num_buckets))).astype(np.int32)


def hash_row(values: Sequence, types: Sequence[DataType]) -> int:
    """The hash of one row from its encoded bytes: the scalar reference for :func:`hash_rows`."""
    data = encode_row(values, types)
    h = np.full(1, SEED, dtype=np.uint32)
    for word in np.frombuffer(data, dtype="<u4"):
        h = _mix(h, np.full(1, word, dtype=np.uint32))
    return int(_fmix(h, len(data)).view(np.int32)[0])
