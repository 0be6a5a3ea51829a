"""End-to-end behaviour of append tables through the public API."""
import datetime as dt
import time

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat import col
from tests.conftest import EVENTS, events


def rows(t: pa.Table, key="user_id"):
    return sorted(t.to_pylist(), key=lambda r: r[key])


@pytest.mark.parametrize("options", [{}, {"bucket": "3", "bucket-key": "user_id"}])
def test_write_read_partitioned(catalog, options):
    t = catalog.create_table("db.t", EVENTS, partition_keys=["dt"], options=options)
    s1 = t.write(events(100, "2024-01-01"))
    s2 = t.write(events(50, "2024-01-02", start=100))
    assert (s1.id, s2.id) == (1, 2) and s2.total_record_count == 150
    assert rows(t.read()) == rows(pa.concat_tables([events(100), events(50, "2024-01-02", 100)]))
    assert t.read(filter=col("dt") == "2024-01-02").num_rows == 50
    assert t.read(columns=["price"]).column_names == ["price"]
    buckets = {f["bucket"] for f in t.files()}
    assert buckets == ({0} if not options else {0, 1, 2})


def test_time_travel_and_incremental(catalog):
    t = catalog.create_table("db.t", EVENTS, partition_keys=["dt"])
    t.write(events(10))
    time.sleep(0.01)
    after_first = dt.datetime.now()
    time.sleep(0.01)
    t.write(events(5, start=10))
    t.write(events(7, start=15))
    assert t.read(snapshot_id=1).num_rows == 10
    assert t.read(as_of=after_first).num_rows == 10
    assert t.read_incremental(1, 3).num_rows == 12
    assert t.read_incremental(2).num_rows == 7


def test_overwrite_dynamic_static_and_whole_table(catalog):
    t = catalog.create_table("db.t", EVENTS, partition_keys=["dt"])
    t.write(events(10, "a"))
    t.write(events(10, "b", start=10))
    s = t.write(events(3, "a", start=100), overwrite=True)
    assert s.commit_kind == "OVERWRITE"
    got = t.read()
    assert got.filter(pa.compute.equal(got["dt"], "a")).num_rows == 3
    assert got.num_rows == 13
    t.write(events(1, "b", start=200), overwrite={"dt": "b"})   # static: b replaced, a untouched
    assert t.read(filter=col("dt") == "b").num_rows == 1
    assert t.read().num_rows == 4
    t.write(events(2, "c", start=300), overwrite={})
    assert t.read().num_rows == 2


def test_pruning_by_stats_and_partition(catalog):
    t = catalog.create_table("db.t", EVENTS, partition_keys=["dt"])
    for i in range(5):
        t.write(events(100, f"d{i}", start=i * 100))
    assert len(t.scan().plan()) == 5
    assert len(t.scan(filter=col("dt") == "d3").plan()) == 1
    splits = t.scan(filter=col("user_id") >= 450).plan()
    assert [s.partition for s in splits] == [("d4",)]
    assert t.read(filter=col("user_id") >= 450).num_rows == 50


def test_two_phase_write_and_commit(catalog):
    t = catalog.create_table("db.t", EVENTS, partition_keys=["dt"], options={"bucket": "2"})
    w1, w2 = t.new_write("job"), t.new_write("job")
    w1.write(events(10, "a"))
    w2.write(events(10, "b", start=10))
    msgs = w1.prepare_commit() + w2.prepare_commit()
    snap = t.new_commit("job").commit(msgs, identifier=7)
    assert snap.commit_identifier == 7 and snap.commit_user == "job"
    assert t.read().num_rows == 20


def test_empty_commit_is_ignored(catalog):
    t = catalog.create_table("db.t", EVENTS)
    assert t.new_commit().commit([]) is None
    assert t.snapshots() == []


def test_schema_evolution_reads_old_files(catalog):
    t = catalog.create_table("db.t", EVENTS, partition_keys=["dt"])
    t.write(events(3))
    t.alter(lf.AddColumn("qty", pa.int32()), lf.RenameColumn("behavior", "action"),
            lf.UpdateColumnType("qty", pa.int64()))
    t.alter(lf.DropColumn("price"))
    new = pa.table({"user_id": [9], "action": ["x"], "dt": ["2024-01-01"], "qty": [4]})
    t.write(new)
    got = rows(t.read())
    assert got[0] == {"user_id": 0, "action": "pv", "dt": "2024-01-01", "qty": None}
    assert got[-1] == {"user_id": 9, "action": "x", "dt": "2024-01-01", "qty": 4}
    assert t.read(filter=col("qty") == 4).num_rows == 1


def test_rolling_files_at_target_size(catalog):
    t = catalog.create_table("db.t", EVENTS, options={"target-file-size": "64 kb"})
    t.write(events(200_000))
    sizes = [f["file_size"] for f in t.files()]
    assert len(sizes) >= 4
    assert max(sizes) < 3 * 64 * 1024
    assert t.read().num_rows == 200_000


def test_hints_are_only_hints(catalog, tmp_path):
    t = catalog.create_table("db.t", EVENTS)
    for i in range(3):
        t.write(events(1, start=i))
    hint = tmp_path / "wh" / "db.db" / "t" / "snapshot" / "LATEST"
    hint.write_text("1")                  # stale
    assert lf.Catalog(str(tmp_path / "wh")).get_table("db.t").latest_snapshot().id == 3
    hint.write_text("garbage")
    assert lf.Catalog(str(tmp_path / "wh")).get_table("db.t").latest_snapshot().id == 3
    hint.unlink()
    (hint.parent / "EARLIEST").unlink()
    t2 = lf.Catalog(str(tmp_path / "wh")).get_table("db.t")
    assert t2.latest_snapshot().id == 3 and t2.snapshot_manager.earliest_id() == 1
