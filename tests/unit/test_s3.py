"""lakeformat on a real S3-compatible server: moto's standalone server on loopback
(``tests/s3server.py``)."""
import dataclasses
import uuid

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.io.fileio import FileIO
from lakeformat.io.snapshots import SnapshotManager
from tests.conftest import EVENTS, events
from tests.s3server import BUCKET, CREDS, s3_endpoint  # noqa: F401 (fixture)


@pytest.fixture
def warehouse(s3_endpoint):
    """A fresh warehouse prefix per test, and the catalog options to reach it."""
    return f"s3://{BUCKET}/wh-{uuid.uuid4().hex[:8]}", {"s3.endpoint": s3_endpoint, **CREDS}


def _sorted(t: pa.Table) -> list[dict]:
    return sorted(t.to_pylist(), key=lambda r: (r["dt"], r["user_id"]))


def test_table_lifecycle_on_s3(warehouse):
    uri, opts = warehouse
    cat = lf.Catalog(uri, **opts)
    assert cat.list_databases() == []
    cat.create_database("db")
    cat.create_database("db", ignore_if_exists=True)
    with pytest.raises(lf.AlreadyExistsError):
        cat.create_database("db")
    assert cat.list_databases() == ["db"]
    assert cat.list_tables("db") == []

    t = cat.create_table("db.events", EVENTS, partition_keys=["dt"],
                         options={"bucket": "2", "bucket-key": "user_id"})
    assert cat.list_tables("db") == ["events"]
    s1 = t.write(events(10, "2024-01-01"))
    s2 = t.write(events(10, "2024-01-02", start=100))
    s3 = t.write(events(5, "2024-01-01", start=200))
    assert (s1.id, s2.id, s3.id) == (1, 2, 3)
    expected = events(10, "2024-01-01").to_pylist() + events(10, "2024-01-02", start=100).to_pylist() \
        + events(5, "2024-01-01", start=200).to_pylist()
    assert _sorted(t.read()) == sorted(expected, key=lambda r: (r["dt"], r["user_id"]))

    # both buckets of a partition hold files, all under the table's S3 prefix
    files = t.files()
    assert {f["bucket"] for f in files} == {0, 1}
    assert sum(f["row_count"] for f in files) == 25
    assert all(f["path"].startswith(uri + "/db.db/events/dt=") for f in files)

    # dynamic overwrite replaces only 2024-01-01
    s4 = t.write(events(3, "2024-01-01", start=500), overwrite=True)
    assert s4.id == 4 and s4.commit_kind == "OVERWRITE"
    after = _sorted(t.read())
    assert after == sorted(events(3, "2024-01-01", start=500).to_pylist()
                           + events(10, "2024-01-02", start=100).to_pylist(),
                           key=lambda r: (r["dt"], r["user_id"]))
    assert t.read(filter=lf.col("dt") == "2024-01-02").num_rows == 10

    # time travel
    assert t.read(snapshot_id=1).num_rows == 10
    assert t.read(snapshot_id=3).num_rows == 25
    assert t.read(as_of=s2.time_millis).num_rows >= 20
    assert [s.id for s in t.snapshots()] == [1, 2, 3, 4]
    assert t.read_incremental(1, 3).num_rows == 15

    # a second table, then drop the first
    cat.create_table("db.other", pa.schema([("x", pa.int64())])).write(pa.table({"x": [1, 2, 3]}))
    assert cat.list_tables("db") == ["events", "other"]
    cat.drop_table("db.events")
    assert cat.list_tables("db") == ["other"]
    assert not cat.table_exists("db.events")
    with pytest.raises(lf.NotFoundError):
        cat.get_table("db.events")
    with pytest.raises(lf.NotFoundError):
        cat.drop_table("db.events")
    cat.drop_table("db.events", ignore_if_not_exists=True)
    assert cat.get_table("db.other").read().column("x").to_pylist() == [1, 2, 3]


def test_fresh_catalog_reads_the_same_table(warehouse):
    uri, opts = warehouse
    cat = lf.Catalog(uri, **opts)
    cat.create_database("db")
    t = cat.create_table("db.t", EVENTS, partition_keys=["dt"], options={"bucket": "2", "bucket-key": "user_id"})
    t.write(events(7, "2024-01-01"))
    t.write(events(4, "2024-01-03", start=50))
    t.alter(lf.AddColumn("note", pa.string()))

    fresh = lf.Catalog(uri + "/", **opts)          # new FileIO, new S3 clients, nothing cached
    assert fresh.io is not cat.io
    assert fresh.list_databases() == ["db"] and fresh.list_tables("db") == ["t"]
    t2 = fresh.get_table("db.t")
    assert t2.schema.id == 1 and t2.schema.names[-1] == "note"
    assert t2.latest_snapshot().id == 2
    got = t2.read()
    assert got.num_rows == 11 and got.column("note").null_count == 11
    assert _sorted(got.drop_columns(["note"])) == _sorted(t.read(columns=EVENTS.names))
    # and the fresh catalog can commit on top of what the first one wrote
    t2.write(pa.table({"user_id": [999], "behavior": ["pv"], "price": [1.0], "dt": ["2024-01-03"],
                       "note": ["hi"]}))
    assert cat.get_table("db.t").read().num_rows == 12


def test_try_create_is_a_conditional_put(warehouse):
    uri, opts = warehouse
    io = FileIO.for_uri(uri, opts)
    path = uri + "/some/dir/snapshot-1"
    assert not io.exists(path)
    assert io.try_create(path, b"first") is True
    assert io.try_create(path, b"second") is False
    assert io.read_bytes(path) == b"first"
    # a second FileIO (another process, in effect) also loses
    other = FileIO.for_uri(uri, opts)
    assert other.try_create(path, b"third") is False
    assert other.read_bytes(path) == b"first"
    assert other.try_create(uri + "/some/dir/snapshot-2", b"x") is True


def test_snapshot_manager_never_overwrites(warehouse):
    uri, opts = warehouse
    cat = lf.Catalog(uri, **opts)
    cat.create_database("db")
    t = cat.create_table("db.t", EVENTS)
    snap = t.write(events(3))
    sm = SnapshotManager(cat.io, t.path)
    before = cat.io.read_bytes(sm.path(snap.id))
    assert sm.try_create(dataclasses.replace(snap, commit_user="intruder", uuid=str(uuid.uuid4()))) is False
    assert cat.io.read_bytes(sm.path(snap.id)) == before
    assert sm.get(snap.id).commit_user == snap.commit_user


def test_commit_losing_the_race_moves_to_the_next_id(warehouse):
    uri, opts = warehouse
    cat = lf.Catalog(uri, **opts)
    cat.create_database("db")
    t = cat.create_table("db.t", EVENTS, options={"commit.min-retry-wait": "1 ms",
                                                  "commit.max-retry-wait": "5 ms"})
    t.write(events(3))
    t.write(events(2, start=10))
    latest = t.latest_snapshot()

    # Just before the committer's first try_create, another writer takes the same id with a
    # valid snapshot (a copy of the latest, so the table state it describes is consistent).
    sm = t.snapshot_manager
    original = sm.try_create
    planted = {}

    def racing_try_create(snapshot):
        if not planted:
            rival = dataclasses.replace(latest, id=snapshot.id, commit_user="rival", uuid=str(uuid.uuid4()))
            assert SnapshotManager(cat.io, t.path).try_create(rival)
            planted["snapshot"] = rival
            planted["bytes"] = cat.io.read_bytes(sm.path(rival.id))
        return original(snapshot)

    sm.try_create = racing_try_create
    commit = t.new_commit(commit_user="me")
    w = t.new_write("me")
    w.write(events(4, start=100))
    made = commit.commit(w.prepare_commit(), identifier=1)

    rival = planted["snapshot"]
    assert rival.id == latest.id + 1
    assert made.id == rival.id + 1 and made.commit_user == "me"
    assert commit.retries == 1
    # the rival's snapshot file is untouched
    assert cat.io.read_bytes(sm.path(rival.id)) == planted["bytes"]
    fresh = lf.Catalog(uri, **opts).get_table("db.t")
    assert fresh.snapshot(rival.id).commit_user == "rival"
    assert [s.id for s in fresh.snapshots()] == [1, 2, 3, 4]
    assert fresh.read().num_rows == 3 + 2 + 4
    assert fresh.read(snapshot_id=rival.id).num_rows == 5
    # exactly-once: committing identifier 1 again finds snapshot 4 and makes nothing
    again = fresh.new_commit(commit_user="me").commit([], identifier=1)
    assert again.id == made.id and [s.id for s in fresh.snapshots()] == [1, 2, 3, 4]
