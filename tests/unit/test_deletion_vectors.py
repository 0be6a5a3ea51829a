"""Deletion vectors: Paimon's bitmap and index file formats, and reading the tables Paimon's Java
writers made with ``deletion-vectors.enabled`` (tests/fixtures/paimon-java, see PROVENANCE.md)."""
import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

import lakeformat as lf
from lakeformat.format import deletion_vector as DV
from lakeformat.format import index_manifest as IM
from lakeformat.io.fileio import FileIO
from lakeformat.io.index_files import IndexFiles

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "paimon-java"
DV_TABLE = "pk_table_scan_and_read_dv.pk_table_scan_and_read_dv"
CARDINALITY_TABLE = "pk_table_with_dv_cardinality.pk_table_with_dv_cardinality"


def expected(table: str, snapshot):
    for case in json.loads((FIXTURES / "expected.json").read_text()):
        if case["table"] == table and case["snapshot"] == snapshot:
            return case
    raise KeyError((table, snapshot))


def as_set(t):
    return sorted(tuple(r.values()) for r in t.to_pylist())


@pytest.fixture
def java_warehouse(tmp_path):
    """A writable copy of the Parquet fixtures."""
    wh = tmp_path / "parquet"
    shutil.copytree(FIXTURES / "parquet", wh)
    for p in wh.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return str(wh)


# -- bitmaps and index files ---------------------------------------------------------------------

@pytest.mark.parametrize("bitmap64", [False, True])
def test_bitmap_round_trip_in_both_formats(bitmap64):
    positions = np.array([0, 3, 4, 5, 70_000, 1 << 20], dtype=np.uint64)
    b = DV.serialize_bin(positions, bitmap64)
    magic = struct.unpack("<i" if bitmap64 else ">i", b[:4])[0]
    assert magic == (DV.MAGIC_64 if bitmap64 else DV.MAGIC_32)
    assert DV.deserialize_bin(b).tolist() == positions.tolist()


def test_64_bit_positions_need_the_64_bit_format():
    far = np.array([1, 1 << 33], dtype=np.uint64)
    assert DV.deserialize_bin(DV.serialize_bin(far, bitmap64=True)).tolist() == [1, 1 << 33]
    with pytest.raises(DV.DeletionVectorError, match="bitmap64"):
        DV.serialize_bin(far)


def test_index_file_layout_matches_what_java_wrote():
    """The same vector Java wrote (row 0 deleted) encodes to the same bytes, at the same range."""
    java = (FIXTURES / "parquet/pk_table_scan_and_read_dv.db/pk_table_scan_and_read_dv/index/"
            "index-16bec1d6-fa31-49bd-a240-deadcfff6003-0").read_bytes()
    data, ranges = DV.encode_index_file({"f": DV.serialize_bin(np.array([0]))})
    assert ranges == {"f": (1, 22)}
    assert data == java
    assert DV.deserialize_bin(DV.read_bin(java, 1, 22)).tolist() == [0]


def test_corrupt_vectors_are_refused():
    data, _ = DV.encode_index_file({"f": DV.serialize_bin(np.array([7]))})
    with pytest.raises(DV.DeletionVectorError, match="checksum"):
        DV.read_bin(data[:-1] + bytes([data[-1] ^ 1]), 1, 22)
    with pytest.raises(DV.DeletionVectorError, match="length"):
        DV.read_bin(data, 1, 21)
    with pytest.raises(DV.DeletionVectorError, match="magic"):
        DV.deserialize_bin(b"\0\0\0\0" + DV.serialize_bin(np.array([1]))[4:])


def test_keep_mask_over_a_window():
    deleted = np.array([1, 5, 9], dtype=np.uint64)
    assert DV.keep_mask(4, deleted, start=4).tolist() == [True, False, True, True]
    assert DV.keep_mask(3, deleted).tolist() == [True, False, True]


def test_index_manifest_round_trip_keeps_java_fields(tmp_path):
    table = FIXTURES / "parquet/pk_table_with_dv_cardinality.db/pk_table_with_dv_cardinality"
    name = next((table / "manifest").glob("index-manifest-*")).name
    entries = IndexFiles(FileIO.for_uri(str(table)), str(table)).read_manifest(name)
    assert {e.file.dv_ranges[0].cardinality for e in entries} == {1, 2}
    assert IM.decode(IM.encode(entries, "null")) == entries


def test_combine_replaces_a_buckets_index_file():
    def entry(kind, bucket, name):
        return IM.IndexManifestEntry(kind, b"p", bucket, IM.IndexFileMeta(IM.DELETION_VECTORS, name, 1, 1, ()))
    live = [entry(0, 0, "a"), entry(0, 1, "b")]
    out = IM.combine(live, [entry(1, 0, "a"), entry(0, 0, "c")])
    assert sorted(e.file.file_name for e in out) == ["b", "c"]
    assert sorted(e.file.file_name for e in IM.combine(out, [entry(1, 1, "b")])) == ["c"]


# -- reading Java's tables -----------------------------------------------------------------------

@pytest.mark.parametrize("snapshot", [6, 1])
def test_java_dv_table_reads_the_rows_its_source_test_states(snapshot):
    case = expected(DV_TABLE, snapshot)
    t = lf.Catalog(str(FIXTURES / "parquet")).get_table(DV_TABLE)
    got = t.read(snapshot_id=snapshot, columns=case["columns"])
    assert as_set(got) == sorted(tuple(r) for r in case["rows"])


def test_deletion_vectors_apply_with_filters_and_projections():
    t = lf.Catalog(str(FIXTURES / "parquet")).get_table(DV_TABLE)
    # Alex's update (16.1 -> 21.2) and delete are still at level 0 in snapshot 6: Java shows 16.1;
    # Tony's row was deleted by a deletion vector in snapshot 4
    got = t.read(columns=["f0", "f3"], filter=lf.col("f1") == 10)
    names = [r["f0"] for r in got.to_pylist()]
    assert "Tony" not in names and ["Alex"] == [n for n in names if n == "Alex"]
    assert t.read(filter=lf.col("f0") == "Tony").num_rows == 0


def test_java_dv_table_with_cardinality_metadata():
    t = lf.Catalog(str(FIXTURES / "parquet")).get_table(CARDINALITY_TABLE)
    names = {r["f0"] for r in t.read(columns=["f0"]).to_pylist()}
    assert not names & {"Tony", "Lily"} and "Alice" in names
    assert t.read(snapshot_id=2).num_rows == 9 and t.read(snapshot_id=1).num_rows == 0


def test_a_commit_keeps_the_index_manifest(java_warehouse):
    """A snapshot lakeformat makes on a table with deletion vectors names the same index
    manifest: dropping it would bring deleted rows back for every reader."""
    t = lf.Catalog(java_warehouse).get_table(DV_TABLE)
    before = t.latest_snapshot()
    commit = t.new_commit()
    commit.ignore_empty = False   # snapshot.ignore-empty-commit=false, without an alter
    made = commit.commit([])
    assert made.id == before.id + 1 and made.index_manifest == before.index_manifest
    assert as_set(t.read(columns=expected(DV_TABLE, 6)["columns"])) == \
        sorted(tuple(r) for r in expected(DV_TABLE, 6)["rows"])


def test_writing_a_dv_table_is_refused_until_supported(java_warehouse):
    t = lf.Catalog(java_warehouse).get_table(DV_TABLE)
    latest = t.latest_snapshot().id
    import pyarrow as pa
    rows = pa.table({"f0": ["Zed"], "f1": [10], "f2": [0], "f3": [1.0]}, schema=t.arrow_schema())
    with pytest.raises(lf.OptionError, match="deletion-vectors.enabled"):
        t.write(rows)
    assert t.latest_snapshot().id == latest
