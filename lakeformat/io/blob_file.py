"""Paimon's ``.blob`` file format: the values of one BLOB column, one record per row.

Layout (all integers little-endian), as Paimon's blob format writer lays it out:

    record*    magic u32 (1481511375) | the blob's bytes | record length u64 | CRC32 u32
    index      the record lengths, delta- then zigzag-varint encoded (-1: null, -2: placeholder)
    footer     index length u32 | version u8 (1)

A record's length counts all of it (bytes + 16); its CRC covers magic, bytes and length. A null
row has no record, only its -1 in the index. A placeholder (-2) is a row whose blob a later
update did not rewrite (Paimon reads it from an older blob file); lakeformat refuses it by name.

Reads are streamed: the index is read from the end of the file, then values come in batches of
consecutive records (one ranged read each), so a reader never holds more than a batch; one blob
can be fetched by its offset and length alone. Writes stream too: a blob may be given as chunks.
"""
from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Optional, Union

import numpy as np
import pyarrow as pa

from lakeformat.errors import CorruptFileError, UnsupportedError

MAGIC = 1481511375
VERSION = 1
NULL_LENGTH = -1
PLACEHOLDER_LENGTH = -2
OVERHEAD = 16                 # magic (4) + record length (8) + CRC (4)
FOOTER = 5                    # index length (4) + version (1)
BATCH_BYTES = 16 << 20        # a streamed read holds at most this much blob data (or one blob)
BATCH_ROWS = 1024
_MAGIC_BYTES = struct.pack("<I", MAGIC)


# ------------------------------------------------------------------ the index (pure, vectorised)

def encode_lengths(lengths: Iterable[int]) -> bytes:
    """Record lengths as Paimon's index: the first value, then successive differences, each
    zigzag-mapped and written as a little-endian base-128 varint."""
    values = np.asarray(list(lengths) if not isinstance(lengths, np.ndarray) else lengths, dtype=np.int64)
    if values.size == 0:
        return b""
    deltas = np.diff(values, prepend=np.int64(0))
    zig = ((deltas << 1) ^ (deltas >> 63)).astype(np.uint64)
    nbytes = np.ones(zig.size, dtype=np.int64)
    for k in range(1, 10):
        nbytes += zig >= np.uint64(1 << (7 * k))
    starts = np.concatenate(([0], np.cumsum(nbytes)[:-1]))
    out = np.zeros(int(nbytes.sum()), dtype=np.uint8)
    for k in range(int(nbytes.max())):
        has = nbytes > k
        byte = (zig[has] >> np.uint64(7 * k)) & np.uint64(0x7F)
        more = (nbytes[has] > k + 1).astype(np.uint64) << np.uint64(7)
        out[starts[has] + k] = (byte | more).astype(np.uint8)
    return out.tobytes()


def decode_lengths(index: bytes, where: str = "blob index") -> np.ndarray:
    """Inverse of :func:`encode_lengths` (int64 record lengths)."""
    raw = np.frombuffer(index, dtype=np.uint8)
    if raw.size == 0:
        return np.zeros(0, dtype=np.int64)
    ends = np.flatnonzero(raw < 0x80)
    if ends.size == 0 or ends[-1] != raw.size - 1:
        raise CorruptFileError(where, "the blob index ends inside a varint")
    starts = np.concatenate(([0], ends[:-1] + 1))
    if int((ends - starts).max()) >= 10:
        raise CorruptFileError(where, "the blob index holds a varint longer than 64 bits")
    group = np.repeat(np.arange(ends.size), ends - starts + 1)
    shift = (np.arange(raw.size) - starts[group]) * 7
    parts = (raw & 0x7F).astype(np.uint64) << shift.astype(np.uint64)
    zig = np.add.reduceat(parts, starts)
    deltas = (zig >> np.uint64(1)).astype(np.int64) ^ -(zig & np.uint64(1)).astype(np.int64)
    return np.cumsum(deltas)


# ------------------------------------------------------------------ reading

@dataclass(frozen=True)
class BlobIndex:
    """Where each row's blob lies: ``lengths`` as the index states them (record lengths, or
    -1 for null, -2 for a placeholder) and ``offsets`` of the records (-1 where none)."""
    lengths: np.ndarray
    offsets: np.ndarray

    @property
    def row_count(self) -> int:
        return int(self.lengths.size)

    def value_range(self, row: int) -> Optional[tuple[int, int]]:
        """(offset, length) of row ``row``'s blob bytes in the file; None for a null."""
        n = int(self.lengths[row])
        if n == NULL_LENGTH:
            return None
        if n == PLACEHOLDER_LENGTH:
            raise UnsupportedError(f"row {row} of a blob file is a placeholder (a blob update that kept an "
                                   "older version); lakeformat does not implement blob updates")
        return int(self.offsets[row]) + 4, n - OVERHEAD


def read_index(f: pa.NativeFile, size: int, where: str) -> BlobIndex:
    """The index of a blob file of ``size`` bytes, read from its end (two small ranged reads)."""
    if size < FOOTER:
        raise CorruptFileError(where, f"a blob file of {size} bytes has no footer")
    footer = f.read_at(FOOTER, size - FOOTER)
    index_len, version = struct.unpack("<IB", footer)
    if version != VERSION:
        raise CorruptFileError(where, f"blob file version {version}; lakeformat reads version {VERSION}")
    if index_len > size - FOOTER:
        raise CorruptFileError(where, f"blob index of {index_len} bytes does not fit in {size} bytes")
    lengths = decode_lengths(f.read_at(index_len, size - FOOTER - index_len), where)
    present = lengths >= 0
    if (lengths < PLACEHOLDER_LENGTH).any() or (present & (lengths < OVERHEAD)).any():
        raise CorruptFileError(where, "the blob index holds an impossible record length")
    ends = np.cumsum(np.where(present, lengths, 0))
    if lengths.size and int(ends[-1]) != size - FOOTER - index_len:
        raise CorruptFileError(where, f"blob records take {int(ends[-1])} bytes where the file has "
                               f"{size - FOOTER - index_len} before its index")
    offsets = np.where(present, ends - np.where(present, lengths, 0), -1)
    return BlobIndex(lengths, offsets)


class BlobFileReader:
    """Random-access reader of one blob file: its index up front, values on demand."""

    def __init__(self, f: pa.NativeFile, size: int, where: str, verify: bool = True):
        self.f, self.where, self.verify = f, where, verify
        self.index = read_index(f, size, where)

    @property
    def row_count(self) -> int:
        return self.index.row_count

    def read(self, row: int) -> Optional[bytes]:
        """One row's blob (None for null), reading only its record."""
        r = self.index.value_range(row)
        if r is None:
            return None
        offset, length = r
        record = self.f.read_at(length + OVERHEAD, offset - 4)
        self._check(record, 0, length + OVERHEAD, row)
        return record[4:4 + length]

    def read_range(self, offset: int, length: int) -> bytes:
        """Bytes by offset and length (a blob descriptor's view), without checks."""
        return self.f.read_at(length, offset)

    def iter_arrays(self, start: int = 0, stop: Optional[int] = None, batch_bytes: int = BATCH_BYTES,
                    batch_rows: int = BATCH_ROWS) -> Iterator[pa.LargeBinaryArray]:
        """Rows ``start`` .. ``stop`` as large_binary arrays of at most ``batch_rows`` rows and
        (beyond a single blob) ``batch_bytes`` bytes, each from one ranged read."""
        stop = self.row_count if stop is None else stop
        lengths = self.index.lengths
        if (lengths[start:stop] == PLACEHOLDER_LENGTH).any():
            self.index.value_range(start + int(np.argmax(lengths[start:stop] == PLACEHOLDER_LENGTH)))
        cum = np.cumsum(np.maximum(lengths[start:stop], 0))   # record bytes up to and including each row
        row = start
        while row < stop:
            before = int(cum[row - start - 1]) if row > start else 0
            end = start + int(np.searchsorted(cum, before + batch_bytes, side="right"))
            end = min(max(end, row + 1), row + batch_rows, stop)
            yield self._batch(row, end, int(cum[end - start - 1]) - before)
            row = end

    def _batch(self, row: int, end: int, total: int) -> pa.LargeBinaryArray:
        lengths = self.index.lengths[row:end]
        valid = lengths >= 0
        if total == 0:
            data = np.zeros(0, dtype=np.uint8)
        else:
            first = int(self.index.offsets[row:end][valid][0])
            span = self.f.read_at(total, first)
            if len(span) != total:
                raise CorruptFileError(self.where, f"blob records of rows {row}..{end - 1} are truncated")
            rec_starts = self.index.offsets[row:end][valid] - first
            rec_lens = lengths[valid]
            if self.verify:
                for s, n, r in zip(rec_starts.tolist(), rec_lens.tolist(), np.flatnonzero(valid).tolist()):
                    self._check(span, s, n, row + r)
            # drop each record's magic, length and CRC: the rest, in order, is the values' bytes
            meta = np.concatenate([np.arange(4, dtype=np.int64)[None, :] + rec_starts[:, None],
                                   np.arange(-12, 0, dtype=np.int64)[None, :] + (rec_starts + rec_lens)[:, None]],
                                  axis=1).ravel()
            data = np.delete(np.frombuffer(span, dtype=np.uint8), meta)
        value_lens = np.where(valid, lengths - OVERHEAD, 0)
        offsets = np.concatenate(([0], np.cumsum(value_lens))).astype(np.int64)
        mask = None
        if not valid.all():
            mask = pa.py_buffer(np.packbits(valid, bitorder="little").tobytes())
        return pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(lengths),
                                                [mask, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data)],
                                                null_count=int((~valid).sum()))

    def _check(self, buf: bytes, start: int, length: int, row: int) -> None:
        if bytes(buf[start:start + 4]) != _MAGIC_BYTES:
            raise CorruptFileError(self.where, f"the blob record of row {row} does not start with the blob magic")
        stored_len, crc = struct.unpack_from("<QI", buf, start + length - 12)
        if stored_len != length:
            raise CorruptFileError(self.where, f"the blob record of row {row} states {stored_len} bytes, "
                                   f"the index {length}")
        if self.verify and zlib.crc32(memoryview(buf)[start:start + length - 4]) != crc:
            raise CorruptFileError(self.where, f"the blob of row {row} fails its CRC32 check")


# ------------------------------------------------------------------ writing

def binary_values(values: Union[pa.Array, pa.ChunkedArray]) -> Iterator[Optional[memoryview]]:
    """The values of a binary array as views of its buffer (None for null), without copies."""
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    for chunk in chunks:
        chunk = chunk.cast(pa.large_binary()) if chunk.type != pa.large_binary() else chunk
        valid = np.ones(len(chunk), dtype=bool) if chunk.null_count == 0 else \
            np.asarray(chunk.is_valid().to_numpy(zero_copy_only=False))
        offs = np.frombuffer(chunk.buffers()[1], dtype=np.int64)[chunk.offset:chunk.offset + len(chunk) + 1]
        data = chunk.buffers()[2]
        view = memoryview(data) if data is not None else memoryview(b"")
        for ok, lo, hi in zip(valid.tolist(), offs[:-1].tolist(), offs[1:].tolist()):
            yield view[lo:hi] if ok else None


BlobValue = Union[bytes, bytearray, memoryview, Iterable[bytes], None]


class BlobFileWriter:
    """Writes records to ``out`` as they come (a blob may be an iterable of chunks, copied
    through without being joined); :meth:`close` writes the index and footer."""

    def __init__(self, out):
        self.out = out
        self.lengths: list[int] = []
        self.position = 0

    @property
    def row_count(self) -> int:
        return len(self.lengths)

    def write(self, value: BlobValue) -> None:
        if value is None:
            self.lengths.append(NULL_LENGTH)
            return
        chunks: Iterable = (value,) if isinstance(value, (bytes, bytearray, memoryview)) else value
        crc = self._put(_MAGIC_BYTES, 0)
        n = 0
        for chunk in chunks:
            crc = self._put(chunk, crc)
            n += len(chunk)
        length = n + OVERHEAD
        crc = self._put(struct.pack("<Q", length), crc)
        self._put(struct.pack("<I", crc & 0xFFFFFFFF), 0)
        self.lengths.append(length)

    def write_array(self, values: Union[pa.Array, pa.ChunkedArray]) -> None:
        """Every value of a binary array, in order (nulls as nulls)."""
        for v in binary_values(values):
            self.write(v)

    def _put(self, data, crc: int) -> int:
        self.out.write(data)
        self.position += len(data)
        return zlib.crc32(data, crc)

    def close(self) -> int:
        """Write the index and footer; return the file's size."""
        index = encode_lengths(self.lengths)
        self.out.write(index)
        self.out.write(struct.pack("<IB", len(index), VERSION))
        self.position += len(index) + FOOTER
        self.out.close()
        return self.position
