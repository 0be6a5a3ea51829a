"""Deletion vectors as bytes: the positions of a data file's deleted rows, and the index file
that holds the vectors of one bucket (Paimon's ``DeletionVectorsIndexFile``, format version 1).

A vector is stored as ``<length:int BE><bin><crc32 of bin:int BE>`` where the bin is either

- 32-bit (Paimon's default ``BitmapDeletionVector``): magic 1581511376 as a big-endian int, then
  a portable RoaringBitmap;
- 64-bit (``deletion-vectors.bitmap64``, ``Bitmap64DeletionVector``, Iceberg-compatible): magic
  1681511377 as a little-endian int, then the portable 64-bit bitmap (a little-endian count of
  32-bit bitmaps, each a little-endian key and a portable RoaringBitmap).

An index file is one version byte (1) followed by such vectors; the index manifest names, per
data file, the offset of its length field and a length: the bin's for 32-bit vectors, the whole
block's (length field, bin and checksum) for 64-bit ones, as Paimon's writers record them.
Positions come out as a sorted numpy array so readers build their row masks vectorised.
"""
from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping

import numpy as np
from pyroaring import BitMap, BitMap64

MAGIC_32 = 1581511376
MAGIC_64 = 1681511377
INDEX_FILE_VERSION = 1


class DeletionVectorError(ValueError):
    """Bytes that are not a deletion vector Paimon wrote (bad magic, length or checksum)."""


def serialize_bin(positions: np.ndarray, bitmap64: bool = False) -> bytes:
    """The bin (magic + bitmap) for deleted row ``positions``."""
    positions = np.asarray(positions, dtype=np.uint64)
    if bitmap64:
        bm = BitMap64(positions.tolist())
        bm.run_optimize()
        return struct.pack("<i", MAGIC_64) + bm.serialize()
    if positions.size and int(positions.max()) > 0x7FFFFFFF:
        raise DeletionVectorError("a 32-bit deletion vector holds positions below 2^31; use deletion-vectors.bitmap64")
    bm32 = BitMap(positions.astype(np.uint32))
    bm32.run_optimize()
    return struct.pack(">i", MAGIC_32) + bm32.serialize()


def deserialize_bin(data: bytes) -> np.ndarray:
    """Sorted deleted positions (uint64) of a bin of either bitmap format."""
    if len(data) < 4:
        raise DeletionVectorError(f"a deletion vector of {len(data)} bytes is too short")
    try:
        if struct.unpack(">i", data[:4])[0] == MAGIC_32:
            return np.frombuffer(BitMap.deserialize(data[4:]).to_array(), dtype=np.uint32).astype(np.uint64)
        if struct.unpack("<i", data[:4])[0] == MAGIC_64:
            return np.asarray(BitMap64.deserialize(data[4:]).to_array(), dtype=np.uint64)
    except (ValueError, OverflowError) as e:
        raise DeletionVectorError(f"cannot decode the bitmap of a deletion vector: {e}") from None
    raise DeletionVectorError(f"unknown deletion vector magic number {data[:4].hex()} (neither "
                              f"{MAGIC_32} big-endian nor {MAGIC_64} little-endian)")


def encode_index_file(vectors: Mapping[str, bytes]) -> tuple[bytes, dict[str, tuple[int, int]]]:
    """An index file holding the bins of ``vectors`` (data file name -> bin), and each data
    file's (offset, length) range in it, in the order given."""
    out = bytearray([INDEX_FILE_VERSION])
    ranges: dict[str, tuple[int, int]] = {}
    for name, b in vectors.items():
        ranges[name] = (len(out), len(b) + 8 if _is_64(b) else len(b))
        out += struct.pack(">i", len(b)) + b + struct.pack(">I", zlib.crc32(b))
    return bytes(out), ranges


def _is_64(b: bytes) -> bool:
    return struct.unpack("<i", b[:4])[0] == MAGIC_64


def read_bin(data: bytes, offset: int, length: int) -> bytes:
    """The bin at ``offset`` of an index file's bytes, its length and checksum verified."""
    if not data or data[0] != INDEX_FILE_VERSION:
        raise DeletionVectorError(f"deletion vector index file version {data[:1].hex() or 'missing'}, "
                                  f"expected {INDEX_FILE_VERSION}")
    if offset < 1 or offset + 8 > len(data):
        raise DeletionVectorError(f"range ({offset}, {length}) lies outside the file of {len(data)} bytes")
    stored = struct.unpack(">i", data[offset:offset + 4])[0]
    end = offset + 4 + stored + 4
    if stored < 4 or end > len(data):
        raise DeletionVectorError(f"vector length {stored} at offset {offset} runs past the file's {len(data)} bytes")
    b = data[offset + 4:offset + 4 + stored]
    if stored != (length - 8 if _is_64(b) else length):
        raise DeletionVectorError(f"vector length {stored} at offset {offset} does not fit the length {length} "
                                  "the index manifest records")
    if struct.unpack(">I", data[end - 4:end])[0] != zlib.crc32(b):
        raise DeletionVectorError(f"checksum mismatch of the vector at offset {offset}")
    return b


def keep_mask(num_rows: int, deleted: np.ndarray, start: int = 0) -> np.ndarray:
    """Boolean mask of the rows ``start .. start + num_rows - 1`` a deletion vector keeps
    (``deleted`` sorted, as :func:`deserialize_bin` returns it)."""
    mask = np.ones(num_rows, dtype=bool)
    if deleted.size:
        lo, hi = np.searchsorted(deleted, [start, start + num_rows])
        mask[(deleted[lo:hi] - start).astype(np.int64)] = False
    return mask
