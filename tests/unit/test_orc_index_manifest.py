"""Index manifests in ORC: Paimon writes them in the table's ``manifest.format``
(``AbstractFileStore#indexManifestFileFactory`` gives ``IndexManifestFile`` the manifest
``FileFormat``), so a table with ``manifest.format = orc`` and deletion vectors or dynamic-bucket
hash indexes has ORC index manifests. lakeformat reads them by their bytes and writes them in the
table's format; the strict checks (unknown fields, unknown index types) run on their records too.

pypaimon (the oracle) reads every manifest with fastavro, so no interop test reads these tables.
"""
import json
import shutil
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.orc as po
import pytest

import lakeformat as lf
from lakeformat.errors import CorruptFileError
from lakeformat.format.metadata_checks import UnsupportedMetadataError
from lakeformat.io.index_files import IndexFiles

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "paimon-java"
DV_TABLE = "pk_table_scan_and_read_dv.pk_table_scan_and_read_dv"
SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])

# Paimon Java's index manifest as ORC (IndexManifestEntry.SCHEMA behind _VERSION, through
# OrcTypeUtil): TINYINT _KIND a byte, the ranges a list of structs, and the newer columns
_RANGE = pa.struct([("f0", pa.string()), ("f1", pa.int32()), ("f2", pa.int32()), ("_CARDINALITY", pa.int64())])
_GLOBAL_INDEX = pa.struct([("_ROW_RANGE_START", pa.int64()), ("_ROW_RANGE_END", pa.int64()),
                           ("_INDEX_FIELD_ID", pa.int32()), ("_EXTRA_FIELD_IDS", pa.list_(pa.int32())),
                           ("_INDEX_META", pa.binary())])
JAVA_ORC_SCHEMA = pa.schema([
    ("_VERSION", pa.int32()), ("_KIND", pa.int8()), ("_PARTITION", pa.binary()), ("_BUCKET", pa.int32()),
    ("_INDEX_TYPE", pa.string()), ("_FILE_NAME", pa.string()), ("_FILE_SIZE", pa.int64()),
    ("_ROW_COUNT", pa.int64()), ("_DELETIONS_VECTORS_RANGES", pa.list_(_RANGE)),
    ("_EXTERNAL_PATH", pa.string()), ("_GLOBAL_INDEX", _GLOBAL_INDEX)])


def java_orc(records: list[dict]) -> bytes:
    """``records`` (the Avro form) as the ORC index manifest Paimon Java writes: written by pyarrow
    directly, not by lakeformat's writer, so reading is tested against Paimon's shape."""
    rows = [{name: r.get(name) for name in JAVA_ORC_SCHEMA.names} for r in records]
    for r in rows:
        r["_DELETIONS_VECTORS_RANGES"] = None if r["_DELETIONS_VECTORS_RANGES"] is None else [
            {k: x.get(k) for k in _RANGE.names} for x in r["_DELETIONS_VECTORS_RANGES"]]
    sink = pa.BufferOutputStream()
    po.write_table(pa.Table.from_pylist(rows, schema=JAVA_ORC_SCHEMA), sink, compression="zstd")
    return sink.getvalue().to_pybytes()


def by_id(t) -> dict:
    return {r["id"]: r["v"] for r in t.read().to_pylist()}


def index_manifest(t) -> Path:
    return Path(t.path, "manifest", t.latest_snapshot().index_manifest)


@pytest.fixture
def orc_dv_table(catalog):
    """A primary-key table with ``manifest.format = orc`` and deletion vectors: written,
    compacted, some keys updated (the write's own compaction marks their old versions in the
    compacted file with a deletion vector)."""
    t = catalog.create_table("db.pk", SCHEMA, primary_keys=["id"], options={
        "bucket": "1", "deletion-vectors.enabled": "true", "manifest.format": "orc"})
    t.write(pa.table({"id": range(200), "v": ["a"] * 200}, schema=SCHEMA))
    t.compact(full=True)
    t.write(pa.table({"id": [3, 7, 11], "v": ["b", "b", "b"]}, schema=SCHEMA))
    return t


EXPECTED = {i: ("b" if i in (3, 7, 11) else "a") for i in range(200)}


def test_a_dv_table_with_orc_manifests_writes_and_reads_orc_index_manifests(orc_dv_table):
    t = orc_dv_table
    assert t.latest_snapshot().index_manifest, "the update marked old versions with deletion vectors"
    assert index_manifest(t).read_bytes()[:3] == b"ORC"
    (entry,) = IndexFiles(t.io, t.path).read_manifest(t.latest_snapshot().index_manifest)
    assert entry.file.index_type == "DELETION_VECTORS" and [r.cardinality for r in entry.file.dv_ranges] == [3]
    assert by_id(t) == EXPECTED
    dv_snapshot = t.latest_snapshot().id
    fresh = lf.Catalog(str(Path(t.path).parents[1])).get_table("db.pk")
    assert by_id(fresh) == EXPECTED
    # the next commit reads the ORC index manifest back to replace its bucket's vectors
    fresh.write(pa.table({"id": [3, 4], "v": ["c", "c"]}, schema=SCHEMA))
    fresh.delete(pa.table({"id": [5]}, schema=pa.schema([pa.field("id", pa.int64(), False)])))
    later = {k: v for k, v in {**EXPECTED, 3: "c", 4: "c"}.items() if k != 5}
    assert by_id(lf.Catalog(str(Path(t.path).parents[1])).get_table("db.pk")) == later
    for s in fresh.snapshots():
        if s.index_manifest:
            assert Path(t.path, "manifest", s.index_manifest).read_bytes()[:3] == b"ORC", s.id
    assert {r["id"]: r["v"] for r in fresh.read(snapshot_id=dv_snapshot).to_pylist()} == EXPECTED


def test_a_dynamic_bucket_table_with_orc_manifests_keeps_its_hash_index_in_orc(catalog):
    t = catalog.create_table("db.d", SCHEMA, primary_keys=["id"], options={
        "dynamic-bucket.target-row-num": "10", "manifest.format": "orc"})
    t.write(pa.table({"id": range(25), "v": ["a"] * 25}, schema=SCHEMA))
    assert index_manifest(t).read_bytes()[:3] == b"ORC"
    t.write(pa.table({"id": [1, 24, 30], "v": ["b"] * 3}, schema=SCHEMA))   # known keys stay in their bucket
    assert index_manifest(t).read_bytes()[:3] == b"ORC"
    expected = {**{i: "a" for i in range(25)}, 1: "b", 24: "b", 30: "b"}
    assert by_id(lf.Catalog(str(Path(t.path).parents[1])).get_table("db.d")) == expected
    entries = IndexFiles(t.io, t.path).read_manifest(t.latest_snapshot().index_manifest)
    assert {e.file.index_type for e in entries} == {"HASH"} and sum(e.file.row_count for e in entries) == 26


@pytest.mark.parametrize("snapshot", [6, None])
def test_a_java_dv_table_whose_index_manifest_is_orc_reads_its_rows(tmp_path, snapshot):
    """Paimon Java's deletion-vector fixture with its index manifest in ORC, as Paimon writes it
    under ``manifest.format = orc``: the rows its source test states."""
    wh = tmp_path / "parquet"
    shutil.copytree(FIXTURES / "parquet", wh)
    for p in wh.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    (manifest,) = (wh / "pk_table_scan_and_read_dv.db" / "pk_table_scan_and_read_dv" / "manifest").glob(
        "index-manifest-*")
    with open(manifest, "rb") as f:
        records = list(fastavro.reader(f))
    manifest.write_bytes(java_orc(records))
    case = next(c for c in json.loads((FIXTURES / "expected.json").read_text())
                if c["table"] == DV_TABLE and c["snapshot"] == 6)
    got = lf.Catalog(str(wh)).get_table(DV_TABLE).read(snapshot_id=snapshot, columns=case["columns"])
    assert sorted(tuple(r.values()) for r in got.to_pylist()) == sorted(tuple(r) for r in case["rows"])


def _rewrite_as_java_orc(t, change) -> Path:
    """The table's latest index manifest rewritten as Paimon Java's ORC, ``change(records)`` applied."""
    manifest = index_manifest(t)
    records = [e.to_avro() for e in IndexFiles(t.io, t.path).read_manifest(manifest.name)]
    manifest.write_bytes(java_orc(change(records)))
    return manifest


def test_an_unknown_index_type_in_an_orc_index_manifest_is_refused(orc_dv_table):
    t = orc_dv_table
    newer = "index-newer-kind-0"
    Path(t.path, "index", newer).write_bytes(b"newer index")
    manifest = _rewrite_as_java_orc(t, lambda rs: rs + [dict(
        rs[0], _INDEX_TYPE="NEWER_INDEX_KIND", _FILE_NAME=newer, _FILE_SIZE=11, _ROW_COUNT=1,
        _DELETIONS_VECTORS_RANGES=None)])
    latest = t.latest_snapshot().id
    for act in (lambda: t.read(), lambda: t.write(pa.table({"id": [1], "v": ["z"]}, schema=SCHEMA)),
                lambda: t.compact(full=True)):
        with pytest.raises(UnsupportedMetadataError) as e:
            act()
        msg = str(e.value)
        assert "NEWER_INDEX_KIND" in msg and newer in msg and manifest.name in msg, msg
    assert t.latest_snapshot().id == latest


def test_a_set_refused_field_of_an_orc_index_manifest_is_refused(orc_dv_table):
    """The record checks run on ORC records: Paimon's ``_EXTERNAL_PATH`` null is nothing, set is refused."""
    t = orc_dv_table
    _rewrite_as_java_orc(t, lambda rs: rs)   # its null _EXTERNAL_PATH and _GLOBAL_INDEX say nothing
    assert by_id(t) == EXPECTED
    manifest = _rewrite_as_java_orc(t, lambda rs: [dict(r, _EXTERNAL_PATH="s3://elsewhere/index-1") for r in rs])
    with pytest.raises(UnsupportedMetadataError, match=r"_EXTERNAL_PATH.*outside the table's index") as e:
        t.read()
    assert manifest.name in str(e.value)


def test_an_unreadable_orc_index_manifest_is_named_as_orc(orc_dv_table):
    t = orc_dv_table
    manifest = index_manifest(t)
    manifest.write_bytes(b"ORC" + b"\x00" * 40)
    with pytest.raises(CorruptFileError, match="cannot read ORC index manifest") as e:
        t.read()
    assert manifest.name in str(e.value)
