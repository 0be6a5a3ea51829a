"""Global indexes (index manifest entries with ``_GLOBAL_INDEX``) across implementations: carried
forward by lakeformat's commits, cleaned up by expiration and orphan removal, and read by pypaimon.

The paimon-cpp fixture ``append_with_global_index`` (bitmap indexes on f0, f1, f2 over row ids
0..7, one per snapshot 2-4) gives the real entries and index files."""
import datetime as dt
import os
import shutil
from pathlib import Path

import pytest

from lakeformat.format.commit_message import CommitMessage
from lakeformat.format.index_manifest import GlobalIndexMeta, IndexFileMeta, IndexManifestEntry
from lakeformat.io.index_files import IndexFiles, decode_manifest, encode_manifest
from tests.interop.helpers import Oracle, assert_same_rows, check_readers, lit, pred
from tests.unit.test_global_index_manifest import FIXTURE, MANIFESTS, ROWS, SCHEMA, TABLE, rows


@pytest.mark.slow
def test_pypaimon_reads_the_fixture_with_lakeformats_reencoded_index_manifests(tmp_path):
    """Filtered reads by pypaimon (which may use the bitmap indexes) give the same rows from the
    index manifests paimon-cpp wrote and from lakeformat's re-encoding of them."""
    whs = {}
    for kind in ("original", "reencoded"):
        wh = tmp_path / kind
        shutil.copytree(FIXTURE.parent, wh / FIXTURE.parent.name)
        for p in wh.rglob("*"):
            p.chmod(0o755 if p.is_dir() else 0o644)
        if kind == "reencoded":
            for m in (wh / FIXTURE.parent.name / FIXTURE.name / "manifest").glob("index-manifest-*"):
                m.write_bytes(encode_manifest(decode_manifest(m.read_bytes()), "zstandard", False))
        whs[kind] = str(wh)
    oracle = Oracle(tmp_path / "oracle")
    filters = [None, pred("equal", "f0", lit("Alice")), pred("equal", "f1", lit(20)), pred("equal", "f2", lit(0))]
    ids = {(k, i): oracle.read(wh, TABLE, readers=["pypaimon"], filter=f)
           for k, wh in whs.items() for i, f in enumerate(filters)}
    res = oracle.run()
    for i in range(len(filters)):
        a = res.table(ids[("original", i)], "pypaimon", SCHEMA)
        b = res.table(ids[("reencoded", i)], "pypaimon", SCHEMA)
        assert_same_rows(b, a, ["f0", "f1", "f2", "f3"], f"filter {filters[i]}")
    assert res.table(ids[("original", 0)], "pypaimon", SCHEMA).num_rows == 8


def _global_index_message(t, m: CommitMessage, src: str, field_id: int, end: int) -> IndexFileMeta:
    """Commit the fixture's bitmap index file ``src`` as a global index of ``t`` (as Paimon's
    index builders do: a commit message adding the file)."""
    name = f"bitmap-global-index-lf-{field_id}.index"
    Path(t.path, "index").mkdir(exist_ok=True)
    shutil.copy(FIXTURE / "index" / src, Path(t.path, "index", name))
    meta = IndexFileMeta("bitmap", name, (FIXTURE / "index" / src).stat().st_size, end + 1,
                         global_index=GlobalIndexMeta(0, end, field_id))
    t.new_commit().commit([CommitMessage(m.partition, m.bucket, m.total_buckets, index_added=(meta,))])
    return meta


def _globals(t) -> list[IndexManifestEntry]:
    return [e for e in IndexFiles.of(t.ctx).read_manifest(t.latest_snapshot().index_manifest)
            if e.file.global_index is not None]


@pytest.mark.slow
def test_global_index_files_carried_through_appends_compaction_expiration_and_orphans(catalog, tmp_path):
    t = catalog.create_table("db.gi", SCHEMA, options={"bucket": "-1"})
    w = t.new_write()
    with w:
        w.write(rows(ROWS))
        msgs = w.prepare_commit()
    t.new_commit().commit(msgs)
    src = {e.file.global_index.index_field_id: e.file.file_name for e in decode_manifest(
        max(MANIFESTS, key=lambda p: len(decode_manifest(p.read_bytes()))).read_bytes())}
    f0 = _global_index_message(t, msgs[0], src[0], 0, 7)
    f1 = _global_index_message(t, msgs[0], src[1], 1, 7)
    assert {e.file.file_name for e in _globals(t)} == {f0.file_name, f1.file_name}
    assert_same_rows(t.read(), rows(ROWS), SCHEMA.names, "with global indexes")

    more = [("Zed", 30, 2, 1.0), ("Ann", 30, 3, 2.0)]
    t.write(rows(more))                                 # an append carries them forward
    t.write(rows([("Kim", 40, 4, 3.0)]))
    t.compact(full=True)                                # so does a compaction
    everything = rows(ROWS + more + [("Kim", 40, 4, 3.0)])
    assert {e.file for e in _globals(t)} == {f0, f1}
    assert_same_rows(t.read(), everything, SCHEMA.names, "after append and compaction")

    t.expire_snapshots(retain_min=1, retain_max=1, older_than=dt.timedelta(0))   # and expiration
    assert {e.file for e in _globals(t)} == {f0, f1}
    index_dir = Path(t.path, "index")
    assert (index_dir / f0.file_name).exists() and (index_dir / f1.file_name).exists()

    stray = index_dir / "bitmap-global-index-stray.index"       # no snapshot names it
    stray.write_bytes(b"x")
    for p in index_dir.iterdir():
        os.utime(p, (0, 0))
    result = t.maintenance.remove_orphan_files()
    assert [Path(p).name for p in result.orphans] == [stray.name]
    assert (index_dir / f0.file_name).exists() and (index_dir / f1.file_name).exists()

    oracle = Oracle(tmp_path / "oracle")
    i = oracle.read(catalog.warehouse, "db.gi", readers=["pypaimon"])
    check_readers(oracle.run(), i, everything, SCHEMA.names, readers=["pypaimon"], what="with global indexes")

    # a commit that drops one: once no kept snapshot names it, expiration deletes it
    t.new_commit().commit([CommitMessage(msgs[0].partition, msgs[0].bucket, msgs[0].total_buckets,
                                         index_deleted=(f0,))])
    assert {e.file for e in _globals(t)} == {f1}
    t.expire_snapshots(retain_min=1, retain_max=1, older_than=dt.timedelta(0))
    assert not (index_dir / f0.file_name).exists() and (index_dir / f1.file_name).exists()
    assert_same_rows(t.read(), everything, SCHEMA.names, "after dropping an index")


PYPAIMON_GLOBAL_INDEXES = r'''
import json, sys
import pyarrow as pa
from pypaimon import CatalogFactory, Schema
wh, step = sys.argv[1], sys.argv[2]
cat = CatalogFactory.create({"warehouse": wh})
schema = pa.schema([("f0", pa.string()), ("f1", pa.int32()), ("f3", pa.float64())])
if step == "create":
    cat.create_database("db", True)
    cat.create_table("db.g", Schema.from_pyarrow_schema(schema, options={
        "bucket": "-1", "row-tracking.enabled": "true", "data-evolution.enabled": "true"}), False)
    t = cat.get_table("db.g")
    data = pa.table({"f0": ["a", "b", "c", "a"], "f1": [1, 2, 1, 3], "f3": [1.0, 2.0, 3.0, 4.0]}, schema=schema)
    wb = t.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(data)
    c.commit(w.prepare_commit())
    w.close()
    c.close()
    t.create_global_index("f0", index_type="btree")
    t.create_global_index("f1", index_type="bitmap")
t = cat.get_table("db.g")
out = {}
for name, field, value in (("f0", "f0", "a"), ("f1", "f1", 1)):
    rb = t.new_read_builder()
    rb = rb.with_filter(rb.new_predicate_builder().equal(field, value))
    out[name] = sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits()).column("f3").to_pylist())
print(json.dumps(out))
'''


@pytest.mark.slow
def test_pypaimon_global_indexes_decode_and_survive_lakeformats_reencoding(tmp_path):
    """pypaimon builds a btree and a bitmap global index; lakeformat decodes its index manifests
    (index bytes, field ids, row ranges), re-encodes them the same, and pypaimon's index-filtered
    reads answer the same from lakeformat's bytes."""
    import fastavro
    import io
    from tests.oracle import run_oracle
    wh = str(tmp_path / "wh")
    before = run_oracle(PYPAIMON_GLOBAL_INDEXES, wh, "create")
    assert before == {"f0": [1.0, 4.0], "f1": [1.0, 3.0]}
    manifests = sorted((tmp_path / "wh" / "db.db" / "g" / "manifest").glob("index-manifest-*"))
    assert manifests
    for m in manifests:
        data = m.read_bytes()
        entries = decode_manifest(data)
        assert {e.file.index_type for e in entries} <= {"btree", "bitmap"}
        assert all(e.file.global_index is not None and e.file.global_index.index_meta for e in entries)
        again = encode_manifest(entries, "zstandard", False)
        assert list(fastavro.reader(io.BytesIO(again))) == list(fastavro.reader(io.BytesIO(data)))
        m.write_bytes(again)
    assert run_oracle(PYPAIMON_GLOBAL_INDEXES, wh, "read") == before


def test_an_overwrite_drops_the_global_indexes_of_what_it_replaces(catalog):
    t = catalog.create_table("db.gow", SCHEMA, partition_keys=["f1"], options={"bucket": "-1"})
    w = t.new_write()
    with w:
        w.write(rows(ROWS))
        msgs = {m.partition: m for m in w.prepare_commit()}
    src = {e.file.global_index.index_field_id: e.file.file_name for e in decode_manifest(
        max(MANIFESTS, key=lambda p: len(decode_manifest(p.read_bytes()))).read_bytes())}
    t.new_commit().commit(list(msgs.values()))
    p10, p20 = (next(p for p in msgs if t.partition_values(p) == (v,)) for v in (10, 20))
    on10 = _global_index_message(t, msgs[p10], src[0], 0, 4)
    on20 = _global_index_message(t, msgs[p20], src[2], 2, 2)
    t.write(rows([("Neo", 20, 9, 9.9)]), overwrite={"f1": 20})
    assert {e.file for e in _globals(t)} == {on10}, "partition 20's index described rows that are gone"
    t.expire_snapshots(retain_min=1, retain_max=1, older_than=dt.timedelta(0))
    assert Path(t.path, "index", on10.file_name).exists() and not Path(t.path, "index", on20.file_name).exists()
    assert sorted(r["f0"] for r in t.read().to_pylist()) == ["Alice", "Bob", "Bob", "Emily", "Neo", "Tony"]
