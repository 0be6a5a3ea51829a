"""``index-file-in-data-file-dir``: deletion-vector index files beside their bucket's data files.

Read where Paimon puts them (a paimon-cpp fixture, every snapshot, against pypaimon), written there
by lakeformat (pypaimon reads the result), and found there by expiration and orphan removal."""
import datetime as dt
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.errors import CorruptFileError
from lakeformat.io.index_files import IndexFiles
from tests.interop.helpers import Oracle, assert_same_rows, check_readers

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "paimon-java" / "parquet"
NAME = "pk_dv_index_in_data_no_external"
TABLE = f"{NAME}.{NAME}"
SCHEMA = pa.schema([pa.field("f0", pa.string(), False), pa.field("f1", pa.int32(), False),
                    pa.field("f2", pa.int32(), False), ("f3", pa.float64())])
KEYS = ["f0", "f1", "f2"]


def fixture(tmp_path) -> Path:
    wh = tmp_path / "wh"
    shutil.copytree(FIXTURES / f"{NAME}.db", wh / f"{NAME}.db")
    for p in wh.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return wh


def rows(*rs):
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in rs], schema=SCHEMA)


def index_files_on_disk(table_dir: Path) -> dict[str, list[str]]:
    """Index files per area: in index/, and beside the data files."""
    beside = sorted(str(p.relative_to(table_dir)) for p in table_dir.glob("**/bucket-*/index-*"))
    in_index = sorted(p.name for p in (table_dir / "index").glob("*")) if (table_dir / "index").exists() else []
    return {"index": in_index, "beside": beside}


@pytest.mark.slow
def test_fixture_reads_the_rows_pypaimon_reads_at_every_snapshot(tmp_path):
    wh = fixture(tmp_path)
    t = lf.Catalog(str(wh)).get_table(TABLE)
    oracle = Oracle(tmp_path / "oracle")
    ids = {s: oracle.read(str(wh), TABLE, readers=["pypaimon"], snapshot_id=s) for s in range(1, 5)}
    res = oracle.run()
    for s, i in ids.items():
        check_readers(res, i, t.read(snapshot_id=s), KEYS, readers=["pypaimon"], what=f"snapshot {s}")
    # what the fixture's README says snapshots 3-4 did: Tony deleted, Alice updated (by her vector)
    latest = {r["f0"]: r["f3"] for r in t.read().to_pylist()}
    assert "Tony" not in latest and latest["Alice"] == 19.1 and len(latest) == 8


@pytest.mark.slow
def test_lakeformat_writes_vectors_beside_the_data_and_pypaimon_reads_them(tmp_path):
    wh = fixture(tmp_path)
    table_dir = wh / f"{NAME}.db" / NAME
    t = lf.Catalog(str(wh)).get_table(TABLE)
    expected = {(r["f0"], r["f1"], r["f2"]): r for r in t.read().to_pylist()}
    t.write(rows(("Bob", 10, 0, 99.0), ("Zoe", 20, 1, 5.5)))
    t.delete(rows(("Emily", 10, 0, None)))
    t.compact(full=False)
    expected.pop(("Emily", 10, 0))
    expected[("Bob", 10, 0)] = {"f0": "Bob", "f1": 10, "f2": 0, "f3": 99.0}
    expected[("Zoe", 20, 1)] = {"f0": "Zoe", "f1": 20, "f2": 1, "f3": 5.5}
    want = pa.Table.from_pylist(list(expected.values()), schema=SCHEMA)
    assert_same_rows(t.read(), want, KEYS, "lakeformat")
    on_disk = index_files_on_disk(table_dir)
    assert on_disk["index"] == [], "the option puts deletion vectors beside the data, never in index/"
    live = IndexFiles.of(t.ctx).read_manifest(t.latest_snapshot().index_manifest)
    assert live and all(e.file.directory for e in live)
    for e in live:   # each live vector file is in its own partition's bucket directory
        assert os.path.exists(os.path.join(t.ctx.bucket_dir_of(e.partition, e.bucket), e.file.file_name))
    oracle = Oracle(tmp_path / "oracle")
    i = oracle.read(str(wh), TABLE, readers=["pypaimon"])
    check_readers(oracle.run(), i, want, KEYS, readers=["pypaimon"], what="after lakeformat's merge-on-write")

    # expiration deletes the replaced vector files where they are, and keeps the live ones
    before = set(on_disk["beside"])
    t.expire_snapshots(retain_min=1, retain_max=1, older_than=dt.timedelta(0))
    after = set(index_files_on_disk(table_dir)["beside"])
    live_paths = {str(Path(t.ctx.bucket_dir_of(e.partition, e.bucket), e.file.file_name).relative_to(table_dir))
                  for e in live}
    assert after == live_paths and before - after, (before, after)
    # orphan removal keeps the live ones beside the data and deletes an unreferenced one there
    stray = Path(t.ctx.bucket_dir_of(live[0].partition, live[0].bucket)) / "index-00000000-stray-0"
    stray.write_bytes(b"x")
    old = 0
    os.utime(stray, (old, old))
    for p in table_dir.glob("**/bucket-*/index-*"):
        if p != stray:
            os.utime(p, (old, old))
    result = t.maintenance.remove_orphan_files()
    assert str(stray) in result.orphans and not stray.exists()
    assert set(index_files_on_disk(table_dir)["beside"]) == live_paths
    assert_same_rows(t.read(), want, KEYS, "after expiration and orphan removal")


def test_new_table_with_the_option_writes_vectors_in_bucket_dirs(catalog):
    t = catalog.create_table("db.dvd", SCHEMA, partition_keys=["f1"], primary_keys=KEYS, options={
        "bucket": "1", "deletion-vectors.enabled": "true", "index-file-in-data-file-dir": "true"})
    t.write(rows(*[(f"k{i}", 1, i, float(i)) for i in range(20)]))
    t.write(rows(("k3", 1, 3, 33.0)))
    t.write(rows(("k4", 1, 4, 44.0)))
    got = {r["f0"]: r["f3"] for r in t.read().to_pylist()}
    assert got["k3"] == 33.0 and got["k4"] == 44.0 and len(got) == 20
    table_dir = Path(t.path)
    on_disk = index_files_on_disk(table_dir)
    assert on_disk["index"] == [] and on_disk["beside"], on_disk
    assert all(p.startswith("f1=1/bucket-0/") for p in on_disk["beside"])


def test_a_missing_vector_file_names_the_path_it_was_looked_for_at(tmp_path):
    wh = fixture(tmp_path)
    t = lf.Catalog(str(wh)).get_table(TABLE)
    e = IndexFiles.of(t.ctx).read_manifest(t.latest_snapshot().index_manifest)[0]
    where = os.path.join(t.ctx.bucket_dir_of(e.partition, e.bucket), e.file.file_name)
    assert os.path.exists(where)
    os.remove(where)
    with pytest.raises(CorruptFileError, match="deletion vector index file is missing") as err:
        t.read()
    assert where in str(err.value)


def test_rollback_and_tag_deletion_remove_vector_files_beside_the_data(catalog):
    t = catalog.create_table("db.rb", SCHEMA, primary_keys=KEYS, options={
        "bucket": "1", "deletion-vectors.enabled": "true", "index-file-in-data-file-dir": "true"})
    t.write(rows(*[(f"k{i}", 1, i, float(i)) for i in range(10)]))
    t.write(rows(("k1", 1, 1, 1.5)))
    base = t.latest_snapshot().id
    kept = index_files_on_disk(Path(t.path))["beside"]
    assert kept
    t.create_tag("before", base)
    t.write(rows(("k2", 1, 2, 2.5)))
    t.write(rows(("k3", 1, 3, 3.5)))
    assert len(index_files_on_disk(Path(t.path))["beside"]) > len(kept)
    t.rollback_to(base)    # the later snapshots' vector files go, the tagged snapshot's stay
    assert index_files_on_disk(Path(t.path))["beside"] == kept
    assert {r["f0"]: r["f3"] for r in t.read().to_pylist()}["k2"] == 2.0
    t.write(rows(("k4", 1, 4, 4.5)))   # a new snapshot: the tagged vector file is no longer live
    t.expire_snapshots(retain_min=1, retain_max=1, older_than=dt.timedelta(0))
    assert set(kept) <= set(index_files_on_disk(Path(t.path))["beside"]), "the tag still names it"
    t.delete_tag("before")
    now = index_files_on_disk(Path(t.path))["beside"]
    live = IndexFiles.of(t.ctx).read_manifest(t.latest_snapshot().index_manifest)
    assert not set(kept) & set(now) and now == sorted(f"bucket-0/{e.file.file_name}" for e in live)
    assert {r["f0"]: r["f3"] for r in t.read().to_pylist()}["k4"] == 4.5


def test_dynamic_bucket_hash_index_files_beside_the_data(catalog, tmp_path):
    t = catalog.create_table("db.dyn", SCHEMA, partition_keys=["f1"], primary_keys=KEYS, options={
        "bucket": "-1", "index-file-in-data-file-dir": "true", "dynamic-bucket.target-row-num": "5"})
    t.write(rows(*[(f"k{i}", 1, i, float(i)) for i in range(12)]))
    t.write(rows(*[(f"k{i}", 1, i, -float(i)) for i in range(0, 12, 3)]))   # upserts find their buckets
    got = {r["f0"]: r["f3"] for r in t.read().to_pylist()}
    assert len(got) == 12 and got["k3"] == -3.0 and got["k4"] == 4.0
    on_disk = index_files_on_disk(Path(t.path))
    assert on_disk["index"] == [] and len(on_disk["beside"]) >= 3, on_disk
    live = IndexFiles.of(t.ctx).read_manifest(t.latest_snapshot().index_manifest)
    assert {e.file.index_type for e in live} == {"HASH"} and all(e.file.directory for e in live)
    oracle = Oracle(tmp_path / "oracle")
    i = oracle.read(catalog.warehouse, "db.dyn", readers=["pypaimon"])
    want = rows(*[(k, 1, int(k[1:]), v) for k, v in got.items()])
    check_readers(oracle.run(), i, want, KEYS, readers=["pypaimon"], what="dynamic buckets")
