"""Maintenance that could mislead: orphan cleaning without snapshots, a compaction whose
expiration fails, expirations that keep snapshots without saying why."""
import shutil
from pathlib import Path

import pytest

from tests.conftest import EVENTS, events, run_cli as run


def files(t) -> list:
    return sorted(str(p.relative_to(t.path)) for p in Path(t.path).rglob("*") if p.is_file())


@pytest.mark.parametrize("how", ["missing", "empty"])
def test_remove_orphans_without_any_snapshot_deletes_nothing_and_says_why(catalog, capsys, how):
    t = catalog.create_table("db.t", EVENTS, partition_keys=["dt"])
    for i in range(3):
        t.write(events(5, f"d{i}"))
    shutil.rmtree(Path(t.path) / "snapshot")
    if how == "empty":
        (Path(t.path) / "snapshot").mkdir()
    before = files(t)
    r = t.remove_orphan_files(older_than=__import__("datetime").timedelta(0), allow_deleting_in_flight_files=True)
    assert r.orphans == () and r.deleted == 0 and "no snapshot" in r.skipped
    assert files(t) == before
    code, out, _ = run(capsys, "--warehouse", catalog.warehouse, "remove-orphan-files", "db.t", "--older-than", "0 s",
                  "--allow-deleting-in-flight-files")
    assert code == 0 and "removed no orphan files of db.t: the table has no snapshot" in out
    assert files(t) == before


@pytest.fixture
def write_only(catalog):
    t = catalog.create_table("db.w", EVENTS, options={"write-only": "true", "snapshot.num-retained.min": "1",
                                                      "snapshot.num-retained.max": "1"})
    for i in range(3):
        t.write(events(5, start=i * 10))
    return t


def test_compact_does_not_raise_when_the_expiration_after_it_fails(write_only):
    t = write_only
    t.consumers.record("etl", 1)
    Path(t.consumers.path("etl")).write_text("not json")      # expiration now refuses to guess
    snap = t.compact(full=True)
    assert snap is not None and t.latest_snapshot().commit_kind == "COMPACT"
    r = t.compact_report(full=True)
    assert r.expire_error is not None and "consumer-etl" in r.expire_error
    assert "the snapshot expiration after it failed" in r.summary("db.w")
    assert len(t.snapshots()) == 4 + (r.snapshot is not None)


def test_compact_reports_the_expiration_it_ran_even_with_nothing_to_compact(write_only, capsys, catalog):
    code, out, _ = run(capsys, "--warehouse", catalog.warehouse, "compact", "db.w")
    assert code == 0 and "nothing to compact in db.w" in out and "expired snapshots 1..2" in out
    assert [s.id for s in write_only.snapshots()] == [3]


def test_compact_verb_fails_when_its_expiration_failed(write_only, capsys, catalog):
    write_only.consumers.record("etl", 1)
    Path(write_only.consumers.path("etl")).write_text("[]")
    code, out, _ = run(capsys, "--warehouse", catalog.warehouse, "compact", "db.w", "--full")
    assert code == 1 and "compacted db.w in snapshot 4" in out and "expiration after it failed" in out


def test_expire_says_which_consumer_and_limit_hold_snapshots(catalog, capsys):
    t = catalog.create_table("db.t", EVENTS, options={"snapshot.num-retained.min": "1", "write-only": "true"})
    for i in range(6):
        t.write(events(2, start=i * 10))
    t.consumers.record("etl", 3)
    r = t.expire_snapshots(retain_max=1, max_deletes=1)
    assert list(r.expired) == [1]
    assert any("max_deletes is 1" in h for h in r.held)
    r = t.expire_snapshots(retain_max=1)
    assert list(r.expired) == [2]
    assert any("consumer(s) 'etl' still need snapshot 3" in h for h in r.held), r.held
    code, out, _ = run(capsys, "--warehouse", catalog.warehouse, "expire-snapshots", "db.t", "--retain-max", "1")
    assert code == 0 and "no snapshot of db.t to expire; kept snapshots 3..5: consumer(s) 'etl'" in out
    t.consumers.delete("etl")
    r = t.expire_snapshots(retain_max=1)
    assert list(r.expired) == [3, 4, 5] and r.held == ()
