"""Index manifests as Paimon writes them: global index entries (``_GLOBAL_INDEX``) decoded,
re-encoded field for field and checked, and where index files live fixed for a table's life. The
interop side (commits, expiration, orphans, pypaimon) is tests/interop/test_global_index.py.

The paimon-cpp fixture ``append_with_global_index`` (bitmap indexes on f0, f1, f2 over row ids
0..7, one per snapshot 2-4) gives the real entries and index files."""
import io
import shutil
from pathlib import Path

import fastavro

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.format import index_manifest as IM
from lakeformat.format.index_manifest import GlobalIndexMeta, IndexFileMeta, IndexManifestEntry
from lakeformat.io.index_files import decode_manifest, encode_manifest
from tests.interop.helpers import assert_same_rows

FIXTURE = (Path(__file__).resolve().parents[1] / "fixtures" / "paimon-java" / "parquet" / "append_with_global_index.db"
           / "append_with_global_index")
TABLE = "append_with_global_index.append_with_global_index"
MANIFESTS = sorted((FIXTURE / "manifest").glob("index-manifest-*"))
SCHEMA = pa.schema([("f0", pa.string()), ("f1", pa.int32()), ("f2", pa.int32()), ("f3", pa.float64())])
ROWS = [("Alice", 10, 1, 11.1), ("Bob", 10, 1, 12.1), ("Emily", 10, 0, 13.1), ("Tony", 10, 0, 14.1),
        ("Lucy", 20, 1, 15.1), ("Bob", 10, 1, 16.1), ("Tony", 20, 0, 17.1), ("Alice", 20, None, 18.1)]


def rows(rs):
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in rs], schema=SCHEMA)


def records(data: bytes) -> list[dict]:
    return list(fastavro.reader(io.BytesIO(data)))   # type: ignore[arg-type]


def test_fixture_global_index_entries_decode():
    latest = max(MANIFESTS, key=lambda p: len(decode_manifest(p.read_bytes())))
    entries = decode_manifest(latest.read_bytes())
    assert {e.file.index_type for e in entries} == {"bitmap"}
    assert sorted(e.file.global_index.index_field_id for e in entries) == [0, 1, 2]
    for e in entries:
        assert e.file.global_index == GlobalIndexMeta(0, 7, e.file.global_index.index_field_id)
        assert (FIXTURE / "index" / e.file.file_name).stat().st_size == e.file.file_size
    # three files of one (partition, bucket, type): a global index is kept by file name
    assert len(IM.combine(entries, [])) == 3


@pytest.mark.parametrize("orc", [False, True])
def test_reencoded_global_index_entries_are_the_same_records(orc):
    for path in MANIFESTS:
        data = path.read_bytes()
        entries = decode_manifest(data)
        again = encode_manifest(entries, "null", orc)
        assert decode_manifest(again) == entries
        if not orc:   # field for field what paimon-cpp wrote (plus pypaimon's null _SOURCE_META)
            want = [dict(r, _GLOBAL_INDEX=None if r["_GLOBAL_INDEX"] is None else
                         dict(r["_GLOBAL_INDEX"], _SOURCE_META=None)) for r in records(data)]
            assert records(again) == want


def test_an_unknown_field_of_a_global_index_is_refused():
    from lakeformat.format.metadata_checks import UnsupportedMetadataError
    rec = records(MANIFESTS[0].read_bytes())[0]
    rec = dict(rec, _GLOBAL_INDEX=dict(rec["_GLOBAL_INDEX"], _NEW_THING=1))
    with pytest.raises(UnsupportedMetadataError, match="_NEW_THING"):
        IM.from_records([rec])


def _fixture_table(tmp_path) -> lf.Table:
    """The fixture in a writable copy."""
    wh = tmp_path / "wh"
    shutil.copytree(FIXTURE.parent, wh / FIXTURE.parent.name)
    for p in wh.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return lf.Catalog(str(wh)).get_table(TABLE)


def test_a_table_with_global_indexes_reads_at_every_snapshot(tmp_path):
    t = _fixture_table(tmp_path)
    for s in range(1, 5):   # the README: the same 8 rows, indexes added by snapshots 2-4
        assert_same_rows(t.read(snapshot_id=s), rows(ROWS), SCHEMA.names, f"the fixture at snapshot {s}")


def test_an_update_of_an_indexed_column_is_refused_and_of_another_goes_through(tmp_path):
    t = _fixture_table(tmp_path)
    before = t.latest_snapshot().id
    ids = pa.array([0], pa.int64())
    with pytest.raises(lf.errors.UnsupportedError, match=r"global indexes stale: bitmap index .* \['f1'\]"):
        t.update_columns(pa.table({"_ROW_ID": ids, "f1": pa.array([99], pa.int32())}))
    assert t.latest_snapshot().id == before   # nothing written
    t.update_columns(pa.table({"_ROW_ID": ids, "f3": pa.array([0.5])}))   # f3 has no index
    want = rows([("Alice", 10, 1, 0.5)] + ROWS[1:])
    assert_same_rows(t.read(), want, SCHEMA.names, "after updating f3 of row 0")


def test_global_indexes_on_names_what_a_column_update_would_make_stale():
    entries = decode_manifest(max(MANIFESTS, key=lambda p: len(decode_manifest(p.read_bytes()))).read_bytes())
    assert [e.file.global_index.index_field_id for e in IM.global_indexes_on(entries, [1, 3])] == [1]
    assert IM.global_indexes_on(entries, [3]) == []
    extra = IndexManifestEntry(IM.ADD, b"", 0, IndexFileMeta("btree", "btree-x.index", 1, 1,
                                                            global_index=GlobalIndexMeta(0, 0, 0, (3,))))
    assert IM.global_indexes_on([extra], [3]) == [extra]


def test_global_index_options_are_known(catalog):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = catalog.create_table("db.gopts", SCHEMA, options={
            "bucket": "-1", "global-index.enabled": "true", "bitmap-index.compression": "zstd",
            "global-index.column-update-action": "THROW_ERROR"})
        t.write(rows(ROWS[:2]))
        assert t.read().num_rows == 2



def test_where_index_files_live_cannot_change_under_a_table(catalog):
    """The index manifest names files, not where they are: toggling ``index-file-in-data-file-dir``
    would send every reader to the wrong directory."""
    from lakeformat.errors import SchemaError
    t = catalog.create_table("db.loc", SCHEMA, options={"bucket": "-1"})
    t.alter(lf.SetOption("index-file-in-data-file-dir", "false"))    # the default: no change
    with pytest.raises(SchemaError, match="index-file-in-data-file-dir"):
        t.alter(lf.SetOption("index-file-in-data-file-dir", "true"))
