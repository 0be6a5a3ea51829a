"""A flipped byte in a Parquet data file is never read as data: the read fails with a
CorruptFileError naming the file, or returns exactly the rows written. Page checksums (CRC32,
written by lakeformat and by Paimon Java's parquet-mr, verified on read) catch flips in the pages;
the footer is parsed and checked against the manifest's row count."""
import errno
import json
import random
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakeformat as lf
from lakeformat.errors import CorruptFileError
from lakeformat.io.data_file import corruption

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "paimon-java"
JAVA_TABLE = "append_table_with_alter_table"
ROWS = 3000
FLIPS = 100
# Share of the flips between the magic and the footer that must raise. Measured: 95 of 95 (append)
# and 87 of 97 (primary keys: the other 10 fell in the pages of the key column _KEY_id, which
# a read of one sorted run does not need); with verification off, 17 of 95 and 21 of 97.
CAUGHT_IN_PAGES = {False: 0.95, True: 0.8}


def rows(n: int, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"id": pa.array(np.arange(n, dtype=np.int64)),
                     "name": pa.array(np.char.add("user-", rng.integers(0, 10**6, n).astype(str))),
                     "kind": pa.array(np.array(["pv", "buy", "cart", "fav"])[rng.integers(0, 4, n)]),
                     "price": pa.array(rng.random(n) * 100)})


def one_file_table(catalog, pk: bool):
    t = catalog.create_table("db.t", rows(1).schema, primary_keys=["id"] if pk else (),
                             options={"bucket": "1"} if pk else None)
    t.write(rows(ROWS))
    [f] = t.files()
    return t, Path(f["path"])


def footer_start(data: bytes) -> int:
    return len(data) - 8 - int.from_bytes(data[-8:-4], "little")


def read_or_corrupt(t, path: Path):
    """The table's rows sorted by id, or the CorruptFileError of the read (checked to name the file)."""
    try:
        return t.read().sort_by("id")
    except CorruptFileError as e:
        assert path.name in str(e) and "corrupt" in str(e), e
        return e


@pytest.mark.parametrize("pk", [False, True], ids=["append", "primary-key"])
def test_single_byte_flips_fail_or_read_the_written_rows(catalog, pk):
    t, path = one_file_table(catalog, pk)
    want = t.read().sort_by("id")
    original = path.read_bytes()
    pages = range(4, footer_start(original))
    rng = random.Random(20240601)
    outcome = {"wrong": 0, "raised": 0, "same": 0}
    in_pages = caught_in_pages = 0
    try:
        for _ in range(FLIPS):
            at = rng.randrange(len(original))
            flipped = bytearray(original)
            flipped[at] ^= rng.randrange(1, 256)
            path.write_bytes(flipped)
            got = read_or_corrupt(t, path)
            raised = isinstance(got, CorruptFileError)
            outcome["raised" if raised else "same" if got.equals(want) else "wrong"] += 1
            if at in pages:
                in_pages += 1
                caught_in_pages += raised
    finally:
        path.write_bytes(original)
    assert outcome["wrong"] == 0, outcome
    assert outcome["raised"] + outcome["same"] == FLIPS
    assert in_pages > FLIPS // 2 and caught_in_pages >= CAUGHT_IN_PAGES[pk] * in_pages, (in_pages, caught_in_pages)
    assert t.read().sort_by("id").equals(want)


def test_a_flip_in_a_page_is_a_checksum_mismatch(catalog):
    t, path = one_file_table(catalog, pk=False)
    data = bytearray(path.read_bytes())
    chunk = pq.ParquetFile(path).metadata.row_group(0).column(0)
    data[(chunk.dictionary_page_offset or chunk.data_page_offset) + chunk.total_compressed_size - 1] ^= 1
    path.write_bytes(data)
    with pytest.raises(CorruptFileError, match=f"{path.name}.*page checksum mismatch"):
        t.read()
    with pytest.raises(CorruptFileError, match=f"{path.name}.*page checksum mismatch"):
        list(t.to_batches())


@pytest.mark.parametrize("keep", [0, 0.5, 0.99, -1])
def test_a_truncated_data_file_is_corrupt(catalog, keep):
    t, path = one_file_table(catalog, pk=False)
    data = path.read_bytes()
    path.write_bytes(data[:int(len(data) * keep) if keep >= 0 else keep])
    with pytest.raises(CorruptFileError, match=f"{path.name}.*corrupt"):
        t.read()


def test_row_count_other_than_the_manifests_is_corrupt(catalog):
    t, path = one_file_table(catalog, pk=False)
    pq.write_table(pq.read_table(path).slice(1), path)   # a valid file, one row short
    with pytest.raises(CorruptFileError, match=f"{path.name}.*{ROWS - 1} rows where its metadata says {ROWS}"):
        t.read()
    with pytest.raises(CorruptFileError, match=f"{path.name}.*{ROWS - 1} rows where its metadata says {ROWS}"):
        list(t.to_batches())


def test_a_file_written_without_checksums_still_reads(catalog):
    t, path = one_file_table(catalog, pk=False)
    want = t.read()
    unchecked = pq.read_table(path)   # the file's own schema, field ids included
    pq.write_table(unchecked, path, write_page_checksum=False, compression="zstd")
    checked = pa.BufferOutputStream()
    pq.write_table(unchecked, checked, write_page_checksum=True, compression="zstd")
    assert path.stat().st_size < checked.getvalue().size   # no CRCs in its page headers
    assert t.read().equals(want)
    assert pa.Table.from_batches(list(t.to_batches())).equals(want)


def test_paimon_java_files_read_and_their_checksums_are_verified(tmp_path):
    wh = tmp_path / "parquet"
    shutil.copytree(FIXTURES / "parquet", wh)
    for p in wh.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    t = lf.Catalog(str(wh)).get_table(f"{JAVA_TABLE}.{JAVA_TABLE}")
    [case] = [c for c in json.loads((FIXTURES / "expected.json").read_text())
              if c["table"] == f"{JAVA_TABLE}.{JAVA_TABLE}" and c["snapshot"] is None]
    got = t.read().select(case["columns"])
    assert sorted(map(list, zip(*got.to_pydict().values()))) == sorted(case["rows"])
    path = Path(t.files()[0]["path"])
    assert pq.ParquetFile(path).metadata.created_by.startswith("parquet-mr")
    data = bytearray(path.read_bytes())
    chunk = pq.ParquetFile(path).metadata.row_group(0).column(0)
    data[(chunk.dictionary_page_offset or chunk.data_page_offset) + chunk.total_compressed_size - 1] ^= 1
    path.write_bytes(data)
    with pytest.raises(CorruptFileError, match=f"{path.name}.*page checksum mismatch"):
        t.read()


# -- which errors mean a corrupt file: the messages pyarrow 26 raises ----------------------------
@pytest.mark.parametrize("error, reason", [
    (OSError("could not verify page integrity, CRC checksum verification failed for page_ordinal 0"),
     "page checksum mismatch"),
    (OSError("Couldn't deserialize thrift: TProtocolException: Invalid data\nDeserializing page header failed.\n"),
     "unparseable page header or footer"),
    (OSError("Couldn't deserialize thrift: No more data to read.\n"), "unparseable page header or footer"),
    (OSError("Unexpected end of stream"), "Unexpected end of stream"),
    (OSError("ZSTD decompression failed: Data corruption detected"), "ZSTD"),
    (pa.ArrowInvalid("Parquet magic bytes not found in footer. Either the file is corrupted or this is not a "
                     "parquet file."), "magic bytes"),
    (pa.ArrowInvalid("Parquet file size is 0 bytes"), "size is 0"),
    (pa.ArrowInvalid("Invalid flatbuffers message."), "flatbuffers"),
    (pa.ArrowNotImplementedError("Integers with more than 64 bits not implemented"), "64 bits"),
    (UnicodeDecodeError("utf-8", b"\xc9", 0, 1, "invalid continuation byte"), "utf-8"),
    (KeyError("columns ['id'] are not in the Parquet file"), "not in the Parquet file"),
])
def test_parse_and_checksum_failures_are_corruption(error, reason):
    assert reason in corruption(error) and "corrupt" in corruption(error)


@pytest.mark.parametrize("error", [
    OSError("When reading information for key 'a' in bucket 'b': AWS Error NETWORK_CONNECTION during "
            "HeadObject operation: curlCode: 7, Couldn't connect to server"),
    OSError("AWS Error SLOW_DOWN during GetObject operation: Please reduce your request rate."),
    OSError(errno.EIO, "Input/output error"),
    OSError(errno.ECONNRESET, "Connection reset by peer"),
    OSError(errno.ENOSPC, "No space left on device"),
    lf.LakeformatError("already a lakeformat error"),
    pa.ArrowMemoryError("malloc of size 1073741824 failed"),
    pa.ArrowCancelled("Operation cancelled"),
    RuntimeError("not a reading failure"),
])
def test_storage_and_other_failures_are_not_corruption(error):
    assert corruption(error) is None
