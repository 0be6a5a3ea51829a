"""Failure semantics: the Paimon snapshot is the source of truth. A publish that never ran, failed
or was killed is repaired by the next commit or by ``iceberg-sync``; readers never see half a
version; a rollback rebuilds the Iceberg history; orphan removal deletes what a killed publish
left and nothing a version needs."""
import datetime as dt
import json
import os
import random
import signal
import time

import pytest

import lakeformat as lf
from lakeformat.cli.main import main as cli
from lakeformat.commit.commit import FileStoreCommit
from lakeformat.maintenance.iceberg import iceberg_files
from tests.conftest import EVENTS, events
from tests.iceberg.readers import assert_same_everywhere, duckdb_rows, lakeformat_rows, pyiceberg_rows

ON = {"metadata.iceberg.storage": "table-location"}


def test_a_commit_without_the_publish_is_caught_up_by_the_next(catalog):
    t = catalog.create_table("db.t", EVENTS, partition_keys=["dt"], options=ON)
    t.write(events(2))
    w = t.new_write("u")
    w.write(events(2, "2024-01-02", start=10))
    FileStoreCommit(t.ctx, "u").commit(w.prepare_commit())   # the bare committer: no post-commit steps
    assert iceberg_files(t.ctx).current_version() == 1
    assert pyiceberg_rows(t) == lakeformat_rows(t, 1)
    t.write(events(1, start=20))
    assert iceberg_files(t.ctx).current_version() == 3
    assert_same_everywhere(t)   # snapshot 2 is published too


def test_iceberg_sync_verb_repairs_a_missing_publish(catalog, capsys):
    t = catalog.create_table("db.t", EVENTS, options=ON)
    t.write(events(2))
    files = iceberg_files(t.ctx)
    for name in os.listdir(files.dir):   # the Iceberg metadata is gone altogether
        os.remove(os.path.join(files.dir, name))
    wh = os.path.dirname(os.path.dirname(t.path))
    assert cli(["--warehouse", wh, "iceberg-sync", "db.t", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["version"] == 1 and out["published"] == [1] and out["rebuilt"]
    assert pyiceberg_rows(t) == lakeformat_rows(t) == duckdb_rows(t)
    assert cli(["--warehouse", wh, "iceberg-sync", "db.t"]) == 0
    assert "up to date" in capsys.readouterr().out


def test_rollback_rebuilds_the_iceberg_history(catalog):
    t = catalog.create_table("db.t", EVENTS, options=ON)
    for i in range(4):
        t.write(events(2, start=10 * i))
    t.rollback_to(2)
    assert iceberg_files(t.ctx).current_version() == 2
    assert_same_everywhere(t)
    t.write(events(1, start=99))   # snapshot 3 again, a different one
    assert_same_everywhere(t)
    assert {r["user_id"] for r in pyiceberg_rows(t)} == {0, 1, 10, 11, 99}


def test_expire_snapshots_expires_the_iceberg_snapshots(catalog):
    t = catalog.create_table("db.t", EVENTS, options={**ON, "write-only": "true"})   # writers do not expire
    for i in range(5):
        t.write(events(1, start=i))
    r = t.expire_snapshots(retain_min=2, retain_max=2)
    assert list(r.expired) == [1, 2, 3]
    assert [s.id for s in t.snapshots()] == [4, 5]
    assert_same_everywhere(t)


def worker(warehouse: str, ack_path: str, start: int) -> None:
    t = lf.Catalog(warehouse).get_table("db.t")
    i = start
    while True:
        w = t.new_write("crash")
        w.write(events(1, ["2024-01-01", "2024-01-02"][i % 2], start=i))
        t.new_commit("crash").commit(w.prepare_commit(), identifier=i)
        with open(ack_path, "a") as f:
            f.write(f"{i}\n")
        i += 1


@pytest.mark.slow   # 25 processes killed mid-publish: about two minutes
def test_killed_publishes_never_show_half_a_version_and_are_repaired(catalog, tmp_path):
    t = catalog.create_table("db.t", EVENTS, partition_keys=["dt"],
                             options={**ON, "metadata.iceberg.compaction.min.file-num": "3",
                                      "metadata.iceberg.compaction.max.file-num": "5"})
    wh = os.path.dirname(os.path.dirname(t.path))
    ack = tmp_path / "acks"
    rng = random.Random(11)
    for _ in range(15):
        start = max([int(x) for x in ack.read_text().split()] if ack.exists() else [0]) + 1
        pid = os.fork()
        if pid == 0:
            try:
                worker(wh, str(ack), start)
            finally:
                os._exit(1)
        time.sleep(rng.uniform(0.02, 0.25))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        fresh = lf.Catalog(wh).get_table("db.t")
        files = iceberg_files(fresh.ctx)
        version = files.current_version()
        if version is not None:   # whatever version readers find is whole and is Paimon's snapshot
            assert version <= fresh.latest_snapshot().id
            assert pyiceberg_rows(fresh, version) == lakeformat_rows(fresh, version)
    fresh = lf.Catalog(wh).get_table("db.t")
    fresh.iceberg_sync()
    assert iceberg_files(fresh.ctx).current_version() == fresh.latest_snapshot().id
    assert_same_everywhere(fresh)
    # what killed publishes left behind is removed; nothing a version needs is
    before = set(os.listdir(iceberg_files(fresh.ctx).dir))
    fresh.remove_orphan_files(older_than=dt.timedelta(0), allow_deleting_in_flight_files=True)
    after = set(os.listdir(iceberg_files(fresh.ctx).dir))
    assert after <= before
    assert_same_everywhere(fresh)
    fresh.write(events(1, start=1000))
    assert pyiceberg_rows(fresh) == lakeformat_rows(fresh)


def test_orphan_removal_keeps_what_versions_reach(catalog):
    t = catalog.create_table("db.t", EVENTS, options=ON)
    t.write(events(2))
    t.write(events(2, start=5))
    files = iceberg_files(t.ctx)
    stray = os.path.join(files.dir, "0000-m0.avro")
    with open(stray, "wb") as f:
        f.write(b"left by a killed publish")
    r = t.remove_orphan_files(older_than=dt.timedelta(0), allow_deleting_in_flight_files=True)
    assert stray in r.orphans
    assert not os.path.exists(stray)
    assert all(not p.startswith(files.dir) for p in r.orphans if p != stray)
    assert pyiceberg_rows(t) == lakeformat_rows(t)


def test_version_hint_is_overwritten_in_place_while_it_grows(tmp_path):
    from lakeformat.io.fileio import FileIO
    from lakeformat.io.iceberg import HINT, IcebergFiles
    files = IcebergFiles(FileIO.for_uri(str(tmp_path)), str(tmp_path))
    files.write_hint(9)
    inode = os.stat(tmp_path / HINT).st_ino
    files.write_hint(10)                                # longer: the same file, its bytes replaced
    assert os.stat(tmp_path / HINT).st_ino == inode and files.read_hint() == 10
    files.write_hint(11)
    assert os.stat(tmp_path / HINT).st_ino == inode and files.read_hint() == 11
    files.write_hint(3)                                 # a rebuild's shorter number: a new file
    assert (tmp_path / HINT).read_bytes() == b"3"
