"""pypaimon (and pypaimon-rust) read lakeformat tables after rollbacks and read lakeformat's tags;
lakeformat reads a tag pypaimon created."""
import datetime as dt
import json
import os

import pyarrow as pa

from tests.oracle import run_oracle

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])
PK = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])

SCRIPT = r'''
import json, sys
import pyarrow as pa
from pypaimon import CatalogFactory

spec = json.load(open(sys.argv[1]))
cat = CatalogFactory.create({"warehouse": spec["warehouse"]})


def rows(t):
    rb = t.new_read_builder()
    tab = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return sorted(tab.to_pylist(), key=lambda r: r["id"])


def rust_rows(name):
    from pypaimon_rust.datafusion import PaimonCatalog
    t = PaimonCatalog({"warehouse": spec["warehouse"]}).get_table(name)
    rb = t.new_read_builder()
    batches = rb.new_read().read(rb.new_scan().plan().splits())
    return sorted(pa.Table.from_batches(batches).to_pylist(), key=lambda r: r["id"]) if batches else []


out = {}
for name, tags in spec["tables"].items():
    t = cat.get_table(name)
    res = {"latest": rows(t), "rust": rust_rows(name),
           "latest_id": t.snapshot_manager().get_latest_snapshot().id,
           "tag_names": sorted(t.tag_manager().list_tags()), "tags": {}}
    for tag in tags:
        res["tags"][tag] = rows(t.copy({"scan.tag-name": tag}))
        tm = t.tag_manager().get(tag)
        res["tags"][tag + ".retained"] = None if tm.tag_time_retained is None else tm.tag_time_retained.total_seconds()
    out[name] = res
cat.get_table(spec["tag_by_pypaimon"]).create_tag("py-tag", snapshot_id=1, time_retained="1 d")
print(json.dumps(out))
'''


def by_id(t: pa.Table) -> list:
    return sorted(t.to_pylist(), key=lambda r: r["id"])


def append_rows(ids, d):
    return pa.table({"id": list(ids), "dt": [d] * len(ids)}, schema=SCHEMA)


def pk_rows(ids, v):
    return pa.table({"id": list(ids), "v": [f"{v}{i}" for i in ids]}, schema=PK)


def test_pypaimon_reads_after_rollback_and_reads_tags(catalog, tmp_path):
    expected = {}
    # an append table: rollback to a snapshot, tags before, at and after it
    t = catalog.create_table("db.events", SCHEMA, partition_keys=["dt"])
    for i, d in enumerate(["a", "b", "a", "a", "b"]):
        t.write(append_rows([i, i + 10], d), overwrite={"dt": "a"} if i == 3 else False)
    t.create_tag("two", 2)
    t.create_tag("four", 4, time_retained=dt.timedelta(days=1))
    t.create_tag("five", 5)
    t.rollback_to(4)
    t.write(append_rows([99], "b"))                       # life goes on after the rollback: snapshot 5
    expected["db.events"] = {"two": t.read(tag="two"), "four": t.read(tag="four")}

    # a primary-key table with compactions after the tagged snapshot
    p = catalog.create_table("db.users", PK, primary_keys=["id"], options={"bucket": "2"})
    p.write(pk_rows(range(6), "a"))
    p.write(pk_rows(range(3, 9), "b"))
    p.create_tag("v1")
    p.compact(full=True)
    p.write(pk_rows(range(0, 9, 2), "c"))
    p.compact(full=True)
    p.rollback_to("v1")
    expected["db.users"] = {"v1": p.read(tag="v1")}

    # rollback to a tag whose snapshot was expired: the snapshot is written back from the tag
    e = catalog.create_table("db.expired", SCHEMA)
    for i in range(4):
        e.write(append_rows([i], "x"), overwrite=(i == 2))
    e.create_tag("old", 2)
    for i in (1, 2):
        os.remove(e.snapshot_manager.path(i))
        e.snapshot_manager.forget(i)
    e.snapshot_manager.write_hint("EARLIEST", 3)
    assert e.rollback_to("old").recreated
    expected["db.expired"] = {"old": e.read(tag="old")}

    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"warehouse": catalog.warehouse, "tag_by_pypaimon": "db.events",
                                "tables": {k: list(v) for k, v in expected.items()}}))
    got = run_oracle(SCRIPT, str(spec), timeout=240)

    for name, tags in expected.items():
        mine = catalog.get_table(name)
        latest = by_id(mine.read())
        assert got[name]["latest"] == latest, f"pypaimon reads {name} after the rollback"
        assert got[name]["rust"] == latest, f"pypaimon-rust reads {name} after the rollback"
        assert got[name]["latest_id"] == mine.latest_snapshot().id
        assert got[name]["tag_names"] == [n for n in mine.tags.names() if n != "py-tag"]
        for tag, rows in tags.items():
            assert got[name]["tags"][tag] == by_id(rows), f"pypaimon reads tag {tag} of {name}"
    assert got["db.events"]["tag_names"] == ["four", "two"]          # "five" went with the rollback
    assert got["db.events"]["tags"]["four.retained"] == 86400.0
    assert [r["id"] for r in got["db.events"]["latest"]] == [1, 3, 11, 13, 99]
    assert [r["id"] for r in got["db.expired"]["latest"]] == [0, 1]

    # and the tag pypaimon wrote reads here, retention included
    events = catalog.get_table("db.events")
    tag = events.tags.get("py-tag")
    assert tag.snapshot.id == 1 and tag.time_retained == dt.timedelta(days=1) and tag.create_time is not None
    assert by_id(events.read(tag="py-tag")) == [{"id": 0, "dt": "a"}, {"id": 10, "dt": "a"}]
