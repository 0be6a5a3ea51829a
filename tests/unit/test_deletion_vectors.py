"""Deletion vectors: Paimon's bitmap and index file formats, and reading the tables Paimon's Java
writers made with ``deletion-vectors.enabled`` (tests/fixtures/paimon-java, see PROVENANCE.md)."""
import datetime as dt
import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
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
    assert "Tony" not in names and [n for n in names if n == "Alex"] == ["Alex"]
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


# -- writing: merge-on-write ---------------------------------------------------------------------

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string()), ("n", pa.int64())])


def kv(ids, tag, n=0):
    ids = list(ids)
    return pa.table({"id": ids, "v": [f"{tag}{i}" for i in ids], "n": [n] * len(ids)}, schema=SCHEMA)


def index_entries(t):
    return IndexFiles(t.io, t.path).read_manifest(t.latest_snapshot().index_manifest)


def test_compaction_marks_older_versions_instead_of_rewriting_them(catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={
        "bucket": "1", "deletion-vectors.enabled": "true"})
    t.write(kv(range(1000), "a"))
    big = {f["file_name"] for f in t.files()}
    t.write(kv(range(0, 1000, 10), "b"))
    t.delete(kv([5, 7], ""))
    files = t.files()
    assert big <= {f["file_name"] for f in files}, "the older file was rewritten, not marked"
    assert all(f["level"] > 0 for f in files)
    (entry,) = index_entries(t)
    vectors = IndexFiles(t.io, t.path).read_deletion_vectors(entry.file)
    assert vectors[next(iter(big))].tolist() == sorted([*range(0, 1000, 10), 5, 7])
    got = {r["id"]: r["v"] for r in t.read().to_pylist()}
    assert len(got) == 998 and got[10] == "b10" and got[11] == "a11" and 5 not in got
    t.compact(full=True)   # everything rewritten into one run: no vectors are left
    assert t.latest_snapshot().index_manifest is None
    assert {r["id"]: r["v"] for r in t.read().to_pylist()} == got


def test_64_bit_vectors_when_asked(catalog):
    t = catalog.create_table("db.t64", SCHEMA, primary_keys=["id"], options={
        "bucket": "1", "deletion-vectors.enabled": "true", "deletion-vectors.bitmap64": "true"})
    t.write(kv(range(100), "a"))
    t.write(kv([1, 2], "b"))
    (entry,) = index_entries(t)
    data = (Path(t.path) / "index" / entry.file.file_name).read_bytes()
    (r,) = entry.file.dv_ranges
    assert struct.unpack("<i", data[r.offset + 4:r.offset + 8])[0] == DV.MAGIC_64
    assert r.length == struct.unpack(">i", data[r.offset:r.offset + 4])[0] + 8   # Paimon's 64-bit range
    assert {x["id"]: x["v"] for x in t.read().to_pylist()}[2] == "b2"


def test_first_row_keeps_keys_unique_above_level_0(catalog):
    """With lookups, a first-row compaction drops the newer versions of keys that live above,
    so the upper levels hold each key once, as Java's raw reads of first-row tables assume."""
    t = catalog.create_table("db.fr", SCHEMA, primary_keys=["id"], options={
        "bucket": "1", "merge-engine": "first-row"})
    t.write(kv(range(10), "first"))
    t.write(kv(range(5, 15), "second"))
    t.write(kv(range(12, 20), "third"))
    files = t.files()
    assert all(f["level"] > 0 for f in files)
    ids = [i for f in files for i in pq.read_table(f["path"], columns=["id"]).column("id").to_pylist()]
    assert sorted(ids) == list(range(20))
    got = {r["id"]: r["v"] for r in t.read().to_pylist()}
    assert got == {i: ("first" if i < 10 else "second" if i < 15 else "third") + str(i) for i in range(20)}


def test_writes_keep_the_deletion_vectors_of_a_java_table(java_warehouse):
    t = lf.Catalog(java_warehouse).get_table(DV_TABLE)
    before = {e.bucket: e.file.file_name for e in index_entries(t)}
    rows = pa.table({"f0": ["Zed"], "f1": [20], "f2": [1], "f3": [1.0]}, schema=t.arrow_schema())
    t.write(rows)   # partition f1=20 has no vectors; those of f1=10 stay as they are
    assert {e.bucket: e.file.file_name for e in index_entries(t)} == before
    names = [r["f0"] for r in t.read(columns=["f0"]).to_pylist()]
    assert "Zed" in names and "Tony" not in names


def test_index_files_are_live_files_for_maintenance(catalog):
    """Expiration, tags, rollback and orphan removal treat deletion vector files like data files:
    deleted once nothing kept uses them, never while a snapshot or tag does."""
    t = catalog.create_table("db.m", SCHEMA, primary_keys=["id"], options={
        "bucket": "1", "deletion-vectors.enabled": "true"})
    index_dir = Path(t.path) / "index"

    def dv_file():
        (entry,) = index_entries(t)
        return entry.file.file_name

    t.write(kv(range(20_000), "a"))   # large enough that the size ratio never picks it
    t.write(kv([1], "b"))
    tagged = dv_file()
    t.create_tag("t1")
    at_tag = t.read(tag="t1")
    t.write(kv([2], "c"))
    replaced = dv_file()
    t.write(kv([3], "d"))
    live = dv_file()
    assert len({tagged, replaced, live}) == 3
    assert t.remove_orphan_files(older_than=dt.timedelta(0), allow_deleting_in_flight_files=True).orphans == ()
    assert {p.name for p in index_dir.iterdir()} == {tagged, replaced, live}

    t.expire_snapshots(retain_min=1, retain_max=1, older_than=dt.timedelta(0))
    assert {p.name for p in index_dir.iterdir()} == {tagged, live}
    assert t.read(tag="t1").sort_by("id").equals(at_tag.sort_by("id"))
    t.delete_tag("t1")
    assert {p.name for p in index_dir.iterdir()} == {live}

    expected = t.read().sort_by("id")
    t.create_tag("t2")
    t.write(kv([4], "e"))
    assert dv_file() != live
    t.rollback_to("t2")
    assert {p.name for p in index_dir.iterdir()} == {live}
    assert t.read().sort_by("id").equals(expected)
    assert not any(p.name.startswith("index-manifest-") and p.name != t.latest_snapshot().index_manifest
                   for p in (Path(t.path) / "manifest").iterdir() if p.name not in
                   {s.index_manifest for s in t.snapshots()} | {t.tags.snapshot_of("t2").index_manifest})


@pytest.mark.parametrize("options, expected", [
    ({}, [("+I", 1, "a1"), ("+I", 2, "a2"), ("+I", 3, "a3"), ("-U", 2, "a2"), ("+U", 2, "b2"), ("+I", 4, "b4"),
          ("-U", 2, "b2"), ("+U", 2, "b2"), ("-D", 3, "a3")]),
    ({"deletion-vectors.enabled": "true"}, [("+I", 1, "a1"), ("+I", 2, "a2"), ("+I", 3, "a3"), ("-U", 2, "a2"),
                                            ("+U", 2, "b2"), ("+I", 4, "b4"), ("-U", 2, "b2"), ("+U", 2, "b2"),
                                            ("-D", 3, "a3")]),
    ({"merge-engine": "first-row", "ignore-delete": "true"},
     [("+I", 1, "a1"), ("+I", 2, "a2"), ("+I", 3, "a3"), ("+I", 4, "b4")]),
])
def test_lookup_changelog_producer(catalog, options, expected):
    """Each commit's compaction looks the keys it writes up and emits their change, as Paimon's
    lookup producer does: an update to equal values is still -U/+U, first-row emits new keys only."""
    t = catalog.create_table("db.c", SCHEMA, primary_keys=["id"], options={
        "bucket": "1", "changelog-producer": "lookup", **options})
    t.write(kv([1, 2, 3], "a"))
    t.write(kv([2, 4], "b"))
    t.write(kv([2], "b"))
    t.delete(kv([3], ""))
    got = [(r["_row_kind"], r["id"], r["v"]) for r in t.read_incremental(0).to_pylist()]
    assert got == expected


def test_lookup_changelog_refused_where_a_lookup_cannot_see_the_visible_version(catalog):
    t = catalog.create_table("db.c", SCHEMA, primary_keys=["id"], options={
        "bucket": "1", "changelog-producer": "lookup", "merge-engine": "aggregation"})
    with pytest.raises(lf.OptionError, match="changelog-producer 'lookup'"):
        t.write(kv([1], "a"))


def test_a_mostly_deleted_file_is_rewritten_in_place(catalog):
    t = catalog.create_table("db.r", SCHEMA, primary_keys=["id"], options={
        "bucket": "1", "deletion-vectors.enabled": "true"})
    t.write(kv(range(1000), "a"))
    (base,) = t.files()
    t.write(kv(range(0, 1000, 2), "b"))   # half of the base file's rows replaced
    files = t.files()
    assert base["file_name"] not in {f["file_name"] for f in files}
    assert base["level"] in {f["level"] for f in files}
    assert t.latest_snapshot().index_manifest is None or not any(
        e.file.dv_ranges for e in index_entries(t))
    got = {r["id"]: r["v"] for r in t.read().to_pylist()}
    assert got == {i: ("b" if i % 2 == 0 else "a") + str(i) for i in range(1000)}



def test_streamed_batches_apply_deletion_vectors(catalog):
    t = catalog.create_table("db.s", SCHEMA, primary_keys=["id"], options={
        "bucket": "1", "deletion-vectors.enabled": "true"})
    t.write(kv(range(1000), "a"))
    t.write(kv(range(0, 1000, 10), "b"))
    ids = [i for b in t.to_batches() for i in b.column("id").to_pylist()]
    assert sorted(ids) == list(range(1000))
