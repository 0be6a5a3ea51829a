"""Consumers: files, validation, corrupt files, expiration, reset, clear, and reads that resume."""
import datetime as dt
import json
import os
from pathlib import Path
import threading
import time
from functools import partial

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.maintenance import consumer as C
from tests.conftest import id_rows

SCHEMA = pa.schema([("id", pa.int64())])
PK = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])


rows = partial(id_rows, SCHEMA)


def ids(t: pa.Table) -> list:
    return sorted(t.column("id").to_pylist())


@pytest.fixture
def table(catalog):
    t = catalog.create_table("db.t", SCHEMA)
    for i in range(3):                       # snapshot n adds id n-1
        t.write(rows([i]))
    return t


def consumer_file(t, cid):
    return os.path.join(t.path, "consumer", f"consumer-{cid}")


def test_record_get_list_delete(table):
    cm = table.consumers
    assert cm.get("a") is None and cm.list() == {} and cm.min_next_snapshot() is None
    cm.record("a", 3)
    cm.record("b", 2)
    cm.record("a", 4)
    assert json.loads(Path(consumer_file(table, "a")).read_text()) == {"nextSnapshot": 4}
    assert cm.get("a") == 4 and cm.list() == {"a": 4, "b": 2} and cm.min_next_snapshot() == 2
    cm.delete("b")
    assert cm.list() == {"a": 4}
    with pytest.raises(lf.NotFoundError, match="consumer 'b'"):
        cm.delete("b")
    for bad in (0, -1, "3", True, None):
        with pytest.raises(lf.LakeformatError, match="positive integer"):
            cm.record("a", bad)
    assert cm.get("a") == 4


def test_reads_consumer_files_paimon_writes(table):
    os.makedirs(os.path.join(table.path, "consumer"))
    with open(consumer_file(table, "flink-job"), "w") as f:
        f.write('{\n  "nextSnapshot" : 2\n}')
    assert table.consumers.list() == {"flink-job": 2}


@pytest.mark.parametrize("cid", ["", " ", "a/b", "..", ".x", "a\\b", "a\tb", "x" * 201])
def test_bad_consumer_ids(table, cid):
    with pytest.raises(lf.InvalidNameError, match="consumer"):
        table.consumers.record(cid, 1)
    with pytest.raises(lf.InvalidNameError, match="consumer"):
        table.read_incremental(consumer_id=cid)
    assert not os.path.exists(os.path.join(table.path, "consumer"))


def test_corrupt_consumer_file_retries_then_names_the_file(table, monkeypatch):
    monkeypatch.setattr(C, "RETRY_SLEEP_SECONDS", 0.02)
    os.makedirs(os.path.join(table.path, "consumer"))
    path = consumer_file(table, "bad")
    with open(path, "w") as f:
        f.write('{"nextSnap')
    start = time.monotonic()
    with pytest.raises(lf.CorruptFileError, match="consumer-bad") as e:
        table.consumers.get("bad")
    assert time.monotonic() - start >= 0.02 * (1 + 2)     # slept between its 3 reads
    assert e.value.path.endswith("consumer-bad") and "nextSnapshot" in str(e.value)
    with pytest.raises(lf.CorruptFileError):
        table.consumers.min_next_snapshot()   # expiration must not guess what a reader needs
    with open(path, "w") as f:
        f.write('{"nextSnapshot": "2"}')   # wrong type is corrupt too
    with pytest.raises(lf.CorruptFileError):
        table.consumers.get("bad")


def test_half_written_consumer_file_is_read_once_complete(table, monkeypatch):
    monkeypatch.setattr(C, "RETRY_SLEEP_SECONDS", 0.1)
    os.makedirs(os.path.join(table.path, "consumer"))
    path = consumer_file(table, "slow")
    with open(path, "w") as f:
        f.write('{"nextSnapshot"')

    def finish():
        time.sleep(0.03)
        with open(path, "w") as f:
            f.write('{"nextSnapshot": 3}')
    writer = threading.Thread(target=finish)
    writer.start()
    try:
        assert table.consumers.get("slow") == 3
    finally:
        writer.join()


def test_expire_by_idle_time(table):
    cm = table.consumers
    cm.record("old", 1)
    cm.record("fresh", 2)
    day_ago = time.time() - 86400
    os.utime(consumer_file(table, "old"), (day_ago, day_ago))
    assert cm.expire() == []                              # no consumer.expiration-time: nothing expires
    assert cm.expire(dt.timedelta(days=2)) == []
    assert cm.expire(dt.timedelta(hours=1)) == ["old"]
    assert cm.list() == {"fresh": 2}
    table.alter(lf.SetOption("consumer.expiration-time", "10 min"))
    os.utime(consumer_file(table, "fresh"), (day_ago, day_ago))
    assert table.consumers.expire() == ["fresh"]


def test_reset(table):
    cm = table.consumers
    cm.reset("r", 2)
    assert cm.get("r") == 2
    cm.reset("r", 4)                       # the snapshot after the latest: only new changes
    assert cm.get("r") == 4
    with pytest.raises(lf.NotFoundError, match=r"snapshots 1..3"):
        cm.reset("r", 9)
    assert cm.get("r") == 4


def test_clear_by_patterns(table):
    cm = table.consumers
    for cid in ("job-1", "job-2", "job", "keep-1", "other"):
        cm.record(cid, 1)
    assert cm.clear("job-.*", excluding="job-2") == ["job-1"]
    assert cm.clear("ob") == []                           # whole-id matches only
    assert cm.clear(".*", excluding="keep.*") == ["job", "job-2", "other"]
    assert cm.list() == {"keep-1": 1}
    with pytest.raises(lf.LakeformatError, match="pattern"):
        cm.clear("(")


def test_read_incremental_resumes_from_the_consumer(table):
    assert ids(table.read_incremental(consumer_id="c")) == [0, 1, 2]     # new consumer: from the start
    assert table.consumers.get("c") == 4
    assert ids(table.read_incremental(consumer_id="c")) == []            # nothing new
    assert table.consumers.get("c") == 4
    table.write(rows([3, 4]))
    table.write(rows([5]))
    assert ids(table.read_incremental(end_snapshot=4, consumer_id="c")) == [3, 4]
    assert table.consumers.get("c") == 5
    assert ids(table.read_incremental(consumer_id="c")) == [5]
    assert ids(table.read_incremental(1, 2, consumer_id="d")) == [1]     # explicit range, recorded
    assert table.consumers.get("d") == 3
    assert ids(table.read_incremental(0)) == [0, 1, 2, 3, 4, 5]          # without consumer: as before
    assert table.consumers.list() == {"c": 6, "d": 3}


def test_consumer_id_option(catalog):
    t = catalog.create_table("db.o", SCHEMA, options={"consumer-id": "app"})
    t.write(rows([1]))
    assert ids(t.read_incremental()) == [1]
    t.write(rows([2]))
    assert ids(t.read_incremental()) == [2] and t.consumers.get("app") == 3


def test_changelog_with_consumer(catalog):
    t = catalog.create_table("db.pk", PK, primary_keys=["id"], options={"bucket": "1", "changelog-producer": "input"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=PK))
    got = t.read_incremental(consumer_id="cdc")
    assert sorted(zip(got["id"].to_pylist(), got["_row_kind"].to_pylist())) == [(1, "+I"), (2, "+I")]
    t.delete(pa.table({"id": [2]}))
    got = t.read_incremental(consumer_id="cdc")
    assert list(zip(got["id"].to_pylist(), got["_row_kind"].to_pylist())) == [(2, "-D")]


def test_expired_start_fails_clearly(table):
    table.consumers.record("late", 1)
    os.remove(table.snapshot_manager.path(1))
    table.snapshot_manager.forget(1)
    with pytest.raises(lf.NotFoundError, match=r"consumer 'late' needs snapshot 1 .* before 2 were expired"):
        table.read_incremental(consumer_id="late")
    assert table.consumers.get("late") == 1


def test_stream_resumes_exactly_once_across_restarts(catalog, table):
    seen = []
    for sid, batch in table.stream(consumer_id="s", start_snapshot=1, max_batches=2, poll_interval=0.01):
        seen.append((sid, ids(batch)))
    assert seen == [(1, [0]), (2, [1])] and table.consumers.get("s") == 3

    # restart: a new Table object, as a new process would have
    again = catalog.get_table("db.t")
    stream = again.stream(consumer_id="s", poll_interval=0.01, idle_timeout=0.2)
    sid, batch = next(stream)
    assert (sid, ids(batch)) == (3, [2])
    assert again.consumers.get("s") == 3            # handed out, not yet consumed
    # the reader dies while handling snapshot 3: the batch is not recorded, so it comes again
    del stream
    again = catalog.get_table("db.t")
    stream = again.stream(consumer_id="s", poll_interval=0.01, idle_timeout=0.2)
    sid, batch = next(stream)
    assert (sid, ids(batch)) == (3, [2])
    again.write(rows([10]))
    sid, batch = next(stream)                       # asking for more records snapshot 3 as consumed
    assert (sid, ids(batch)) == (4, [10]) and again.consumers.get("s") == 4
    stream.ack()
    assert again.consumers.get("s") == 5
    assert list(stream) == []                       # idle: stops after idle_timeout


def test_stream_starts_with_a_full_read_and_follows_new_snapshots(catalog, table):
    got = []
    stream = table.stream(consumer_id="f", poll_interval=0.02, max_batches=3)

    def write_later():
        time.sleep(0.2)
        table.write(rows([7]))
        table.write(rows([8]))
    writer = threading.Thread(target=write_later)
    writer.start()
    try:
        for sid, batch in stream:
            got.append((sid, ids(batch)))
    finally:
        writer.join()
    assert got == [(3, [0, 1, 2]), (4, [7]), (5, [8])]
    assert table.consumers.get("f") == 6


def test_stream_passes_over_snapshots_without_changes(catalog):
    t = catalog.create_table("db.pk2", PK, primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1], "v": ["a"]}, schema=PK))
    t.compact(full=True)                              # snapshot 2: COMPACT, no new rows
    t.write(pa.table({"id": [2], "v": ["b"]}, schema=PK))
    assert [s.commit_kind for s in t.snapshots()] == ["APPEND", "COMPACT", "APPEND"]
    got = [(sid, b["id"].to_pylist()) for sid, b in t.stream("p", start_snapshot=1, idle_timeout=0.1,
                                                              poll_interval=0.01)]
    assert got == [(1, [1]), (3, [2])] and t.consumers.get("p") == 4


def test_stream_changelog_full_read_has_row_kinds(catalog):
    t = catalog.create_table("db.cl", PK, primary_keys=["id"], options={"bucket": "1", "changelog-producer": "input"})
    t.write(pa.table({"id": [1], "v": ["a"]}, schema=PK))
    stream = t.stream(poll_interval=0.01, idle_timeout=0.1)
    sid, first = next(stream)
    assert sid == 1 and first["_row_kind"].to_pylist() == ["+I"]
    t.write(pa.table({"id": [1], "v": ["b"]}, schema=PK))
    sid, change = next(stream)
    assert sid == 2 and change.column_names == first.column_names


def test_dry_runs(table):
    cm = table.consumers
    cm.record("a", 1)
    cm.record("b", 2)
    old = time.time() - 7200
    os.utime(consumer_file(table, "a"), (old, old))
    assert cm.clear("a|b", dry_run=True) == ["a", "b"]
    assert cm.expire(dt.timedelta(hours=1), dry_run=True) == ["a"]
    assert cm.list() == {"a": 1, "b": 2}
