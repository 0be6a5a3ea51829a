"""Branches both ways with pypaimon: a branch pypaimon creates and writes reads the same rows in
lakeformat, and a branch lakeformat creates, writes and fast-forwards reads the same rows in
pypaimon (as ``db.t$branch_b``)."""
import json

import pyarrow as pa
import pytest

from lakeformat.table.catalog import Catalog
from tests.oracle import run_oracle

pytestmark = pytest.mark.slow

READ = r'''
import json, sys
from pypaimon import CatalogFactory
spec = json.load(open(sys.argv[1]))
cat = CatalogFactory.create({"warehouse": spec["warehouse"]})
out = {}
for name in spec["read"]:
    t = cat.get_table(name)
    rb = t.new_read_builder()
    out[name] = sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist(), key=lambda r: r["id"])
print(json.dumps(out))
'''

WRITE = r'''
import json, sys
import pyarrow as pa
from pypaimon import CatalogFactory, Schema
spec = json.load(open(sys.argv[1]))
cat = CatalogFactory.create({"warehouse": spec["warehouse"]})
cat.create_database("db", True)
schema = pa.schema([("id", pa.int64()), ("dt", pa.string())])
cat.create_table("db.t", Schema.from_pyarrow_schema(schema, partition_keys=["dt"]), False)


def write(name, ids, dt):
    t = cat.get_table(name)
    wb = t.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(pa.table({"id": pa.array(ids, pa.int64()), "dt": [dt] * len(ids)}, schema=schema))
    c.commit(w.prepare_commit())
    w.close(); c.close()


write("db.t", [1, 2], "a")
cat.get_table("db.t").create_tag("v1")
write("db.t", [3], "a")
cat.create_branch("db.t", "b", "v1")       # from the tag
write("db.t$branch_b", [10, 11], "b")
cat.create_branch("db.t", "e")             # empty: schemas only
write("db.t$branch_e", [20], "e")
print(json.dumps({}))
'''


def _ids(t, **kw):
    return sorted(r["id"] for r in t.read(**kw).to_pylist())


def _oracle(script, tmp_path, spec):
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    return run_oracle(script, str(path))


def test_lakeformat_reads_branches_pypaimon_wrote(tmp_path):
    wh = str(tmp_path / "wh")
    _oracle(WRITE, tmp_path, {"warehouse": wh})
    names = ["db.t", "db.t$branch_b", "db.t$branch_e"]
    theirs = _oracle(READ, tmp_path, {"warehouse": wh, "read": names})
    cat = Catalog(wh)
    for name in names:
        ours = sorted(cat.get_table(name).read().to_pylist(), key=lambda r: r["id"])
        assert ours == theirs[name], name
    assert [r["id"] for r in theirs["db.t$branch_b"]] == [1, 2, 10, 11]
    assert cat.get_table("db.t").branches.list() == ["b", "e"]
    b = cat.get_table("db.t$branch_b")
    assert b.tags.names() == ["v1"] and _ids(b, tag="v1") == [1, 2]
    b.write(pa.table({"id": pa.array([12], pa.int64()), "dt": ["b"]}))   # and lakeformat goes on writing it
    assert _oracle(READ, tmp_path, {"warehouse": wh, "read": ["db.t$branch_b"]})["db.t$branch_b"] == \
        sorted(b.read().to_pylist(), key=lambda r: r["id"])


def test_pypaimon_reads_branches_lakeformat_wrote(tmp_path):
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64()), ("dt", pa.string())]), partition_keys=["dt"],
                         options={"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})

    def data(ids, dt="a"):
        return pa.table({"id": pa.array(ids, pa.int64()), "dt": [dt] * len(ids)})

    t.write(data([1, 2]))
    t.create_tag("v1")
    t.branches.create("b")                       # from the latest snapshot
    t.branches.create("tagged", from_tag="v1")
    t.branches.create("blank", empty=True)
    cat.get_table("db.t$branch_b").write(data([10], "b"))
    cat.get_table("db.t$branch_blank").write(data([30], "c"))
    t.write(data([3]), overwrite=True)           # main expires snapshot 1: the branches still need its files
    names = ["db.t", "db.t$branch_b", "db.t$branch_tagged", "db.t$branch_blank"]
    theirs = _oracle(READ, tmp_path, {"warehouse": wh, "read": names})
    for name in names:
        assert sorted(cat.get_table(name).read().to_pylist(), key=lambda r: r["id"]) == theirs[name], name
    assert [r["id"] for r in theirs["db.t$branch_b"]] == [1, 2, 10]

    t.branches.fast_forward("b")
    theirs = _oracle(READ, tmp_path, {"warehouse": wh, "read": ["db.t"]})
    assert [r["id"] for r in theirs["db.t"]] == [1, 2, 10] == _ids(cat.get_table("db.t"))


FIXTURE_READ = r'''
import json, sys
from pypaimon import CatalogFactory
spec = json.load(open(sys.argv[1]))
cat = CatalogFactory.create({"warehouse": spec["warehouse"]})
out = {}
for name, ids in spec["read"].items():
    t = cat.get_table(name)
    for sid in ids:
        rb = t.copy({"scan.snapshot-id": str(sid)}).new_read_builder()
        out[f"{name}@{sid}"] = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
print(json.dumps(out))
'''


@pytest.mark.parametrize("db,branch", [("append_table_with_append_pt_branch", "test"),
                                       ("append_table_with_rt_branch", "rt")])
def test_branch_fixtures_read_as_pypaimon_reads_them_at_every_snapshot(tmp_path, db, branch):
    """pypaimon reads each branch, and main, of the tables paimon-cpp wrote. pypaimon 2.1 does not
    implement scan.fallback-branch (both mains set it), so main is compared on main's own
    partitions; the fallback rows are checked against the source's statements in
    tests/unit/test_branches.py."""
    import os
    import shutil
    import stat
    src = os.path.join(os.path.dirname(__file__), "..", "fixtures", "paimon-java", "parquet", f"{db}.db")
    wh = tmp_path / "wh"
    shutil.copytree(src, wh / f"{db}.db")
    for root, dirs, files in os.walk(wh):
        for x in dirs + files:
            os.chmod(os.path.join(root, x), os.stat(os.path.join(root, x)).st_mode | stat.S_IWUSR)
    cat = Catalog(str(wh))
    main, b = cat.get_table(f"{db}.{db}"), cat.get_table(f"{db}.{db}$branch_{branch}")
    spec = {main.name: [s.id for s in main.snapshots()], b.name: [s.id for s in b.snapshots()]}
    theirs = _oracle(FIXTURE_READ, tmp_path, {"warehouse": str(wh), "read": spec})

    def key(r):
        return tuple(str(v) for v in r.values())

    for sid in spec[b.name]:
        assert sorted(b.read(snapshot_id=sid).to_pylist(), key=key) == sorted(theirs[f"{b.name}@{sid}"], key=key)
    part = main.partition_keys[0]
    for sid in spec[main.name]:
        expected = sorted(theirs[f"{main.name}@{sid}"], key=key)
        own = {r[part] for r in expected}
        ours = [r for r in main.read(snapshot_id=sid).to_pylist() if r[part] in own]
        assert sorted(ours, key=key) == expected
        assert len(main.read(snapshot_id=sid)) > len(ours)   # and the fallback added its partitions
