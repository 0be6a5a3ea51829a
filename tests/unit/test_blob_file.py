"""The .blob file codec: Paimon's layout byte for byte, streamed reads, and corruption refused."""
from __future__ import annotations

import os
import struct
import zlib

import numpy as np
import pyarrow as pa
import pytest

from lakeformat.errors import CorruptFileError, UnsupportedError
from lakeformat.io.blob_file import (
    MAGIC,
    BlobFileReader,
    BlobFileWriter,
    decode_lengths,
    encode_lengths,
)

VALUES = [b"x" * 100, None, b"", os.urandom(3000), None, b"\x00\xff" * 7]


def _write(path, values) -> int:
    w = BlobFileWriter(pa.OSFile(str(path), "wb"))
    for v in values:
        w.write(v)
    return w.close()


def _reader(path, **kw) -> BlobFileReader:
    return BlobFileReader(pa.OSFile(str(path)), os.path.getsize(path), str(path), **kw)


def test_layout_is_paimons(tmp_path):
    """Hand-built from the layout: records (magic, bytes, record length, CRC over all three),
    then the zigzag delta-varint index of record lengths, its length and version 1."""
    p = tmp_path / "a.blob"
    size = _write(p, [b"abc", None])
    rec = struct.pack("<I", MAGIC) + b"abc" + struct.pack("<Q", 19)
    rec += struct.pack("<I", zlib.crc32(rec))
    index = bytes([38, 39])            # zigzag(19) = 38; zigzag(-1 - 19 = -20) = 39
    assert p.read_bytes() == rec + index + struct.pack("<IB", 2, 1)
    assert size == len(p.read_bytes())


@pytest.mark.parametrize("values", [[0], [1, -1, -2, 16, 2**40, 127, 128, -64, -65, 2**62, 5], []])
def test_index_varints_round_trip(values):
    a = np.array(values, dtype=np.int64)
    assert decode_lengths(encode_lengths(a)).tolist() == values


def test_streamed_batches_hold_at_most_the_byte_budget(tmp_path):
    p = tmp_path / "b.blob"
    values = [os.urandom(n) if n >= 0 else None for n in [500, 500, -1, 500, 2000, 0, 10, -1]]
    _write(p, values)
    r = _reader(p)
    batches = list(r.iter_arrays(batch_bytes=1100))
    assert all(b.type == pa.large_binary() for b in batches)
    assert [x for b in batches for x in b.to_pylist()] == values
    for b in batches:   # a batch is one blob, or blobs whose records fit the budget
        assert len(b) == 1 or sum(len(x) + 16 for x in b.to_pylist() if x is not None) <= 1100
    assert len(batches) > 2
    assert [x for b in r.iter_arrays(2, 5) for x in b.to_pylist()] == values[2:5]
    assert [x for b in r.iter_arrays(batch_rows=3) for x in b.to_pylist()] == values


def test_one_blob_by_row_and_by_offset(tmp_path):
    p = tmp_path / "c.blob"
    _write(p, VALUES)
    r = _reader(p)
    assert r.row_count == len(VALUES)
    assert [r.read(i) for i in range(len(VALUES))] == VALUES
    offset, length = r.index.value_range(3)
    assert r.read_range(offset, length) == VALUES[3]


def test_chunked_values_and_arrow_arrays_write_the_same_bytes(tmp_path):
    a, b, c = tmp_path / "a.blob", tmp_path / "b.blob", tmp_path / "c.blob"
    _write(a, VALUES)
    w = BlobFileWriter(pa.OSFile(str(b), "wb"))
    for v in VALUES:
        w.write(None if v is None else iter([v[:7], v[7:]]))
    w.close()
    w = BlobFileWriter(pa.OSFile(str(c), "wb"))
    arr = pa.array(VALUES, pa.binary())
    w.write_array(pa.chunked_array([arr.slice(0, 2), arr.slice(2)]))
    w.close()
    assert a.read_bytes() == b.read_bytes() == c.read_bytes()


def test_a_flipped_byte_is_refused(tmp_path):
    p = tmp_path / "d.blob"
    _write(p, VALUES)
    data = bytearray(p.read_bytes())
    data[4 + 50] ^= 1          # inside the first blob
    p.write_bytes(bytes(data))
    with pytest.raises(CorruptFileError, match="CRC32"):
        list(_reader(p).iter_arrays())
    with pytest.raises(CorruptFileError, match="CRC32"):
        _reader(p).read(0)


def test_truncated_or_foreign_files_are_refused(tmp_path):
    p = tmp_path / "e.blob"
    _write(p, VALUES)
    data = p.read_bytes()
    p.write_bytes(data[:-1] + b"\x02")
    with pytest.raises(CorruptFileError, match="version 2"):
        _reader(p)
    p.write_bytes(data[100:])
    with pytest.raises(CorruptFileError):
        _reader(p)
    p.write_bytes(b"abc")
    with pytest.raises(CorruptFileError, match="no footer"):
        _reader(p)


def test_placeholders_are_refused_by_name(tmp_path):
    p = tmp_path / "f.blob"
    w = BlobFileWriter(pa.OSFile(str(p), "wb"))
    w.write(b"abc")
    w.lengths.append(-2)      # what a blob update writes for a row it keeps
    w.close()
    r = _reader(p)
    assert r.read(0) == b"abc"
    with pytest.raises(UnsupportedError, match="placeholder"):
        list(r.iter_arrays())
