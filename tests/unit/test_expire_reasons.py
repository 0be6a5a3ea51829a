"""Expiration says which limit removed or kept which snapshots: the pure wording over made-up
commit times, then real tables through the CLI (the time retained from the table's option,
the counts from flags)."""
import datetime as dt
import json
import time

import pytest

import lakeformat as lf
from lakeformat.maintenance.expire_reasons import expire_reasons, limits
from tests.conftest import EVENTS, events, run_cli as run

HOUR = dt.timedelta(hours=1)


def lim(retain_min, retain_max, cutoff, **kw):
    return limits(retain_min, retain_max, cutoff, given_min=kw.get("given_min", False),
                  given_max=kw.get("given_max", True), older_than=kw.get("older_than"), time_retained=HOUR)


def test_each_range_names_the_limit_that_decided():
    times = {i: i * 1000 for i in range(1, 11)}     # snapshot i committed at i s; cutoff 6.5 s
    gone, kept = expire_reasons(earliest=1, end=7, latest=10, time_of=times.get, lim=lim(2, 7, 6500))
    assert gone == ("snapshots 1..3: more than 7 newer snapshot(s) (retain_max 7)",
                    "snapshots 4..6: older than 1 h (snapshot.time-retained)")
    assert kept == ("snapshots 7..8: younger than 1 h (snapshot.time-retained)",
                    "snapshots 9..10: the newest 2 are always kept (snapshot.num-retained.min 2)")


def test_nothing_expired_and_a_cutoff_time():
    times = {i: i * 1000 for i in range(3, 6)}
    cutoff = dt.datetime(2024, 6, 1, 12, 0, 0)
    gone, kept = expire_reasons(earliest=3, end=None, latest=5, time_of=times.get,
                                lim=lim(1, 100, 0, older_than=cutoff, given_min=True))
    assert gone == ()
    assert kept == ("snapshots 3..4: committed at or after 2024-06-01 12:00:00 (older_than)",
                    "snapshot 5: the newest 1 are always kept (retain_min 1)")
    assert expire_reasons(earliest=None, end=None, latest=None, time_of=times.get, lim=lim(1, 2, 0)) == ((), ())


@pytest.fixture
def wh(tmp_path):
    """db.t of six snapshots (write-only: only the verb expires them); the newest one is always
    kept, snapshots live ``time-retained``."""
    def make(time_retained: str) -> str:
        path = str(tmp_path / "wh")
        cat = lf.Catalog(path)
        cat.create_database("db")
        t = cat.create_table("db.t", EVENTS, partition_keys=["dt"],
                             options={"snapshot.num-retained.min": "1", "snapshot.time-retained": time_retained,
                                      "write-only": "true"})   # no expiration at commit
        for i in range(6):
            t.write(events(10, "2024-06-01", start=i * 100))
        return path
    return make


def test_retain_max_then_the_time_retained_expired_the_rest(wh, capsys):
    """The issue's case: --retain-max 3 leaves one snapshot; the output says that
    snapshot.time-retained removed the two the count limit allowed."""
    path = wh("1 ms")
    time.sleep(0.01)
    code, out, err = run(capsys, "--warehouse", path, "expire-snapshots", "db.t", "--retain-max", "3")
    assert code == 0, err
    assert [s.id for s in lf.Catalog(path).get_table("db.t").snapshots()] == [6]
    lines = [line.strip() for line in out.splitlines()]
    assert "expired snapshots 1..3: more than 3 newer snapshot(s) (retain_max 3)" in lines
    assert "expired snapshots 4..5: older than 1 ms (snapshot.time-retained)" in lines
    assert "kept snapshot 6: the newest 1 are always kept (snapshot.num-retained.min 1)" in lines


def test_young_snapshots_kept_by_the_time_retained(wh, capsys):
    path = wh("1 h")
    code, out, err = run(capsys, "--warehouse", path, "--json", "expire-snapshots", "db.t", "--retain-max", "3")
    assert code == 0, err
    r = json.loads(out)
    assert r["expired_snapshots"] == [1, 2, 3]
    assert r["expired_because"] == ["snapshots 1..3: more than 3 newer snapshot(s) (retain_max 3)"]
    assert r["kept"] == ["snapshots 4..5: younger than 1 h (snapshot.time-retained)",
                         "snapshot 6: the newest 1 are always kept (snapshot.num-retained.min 1)"]
    # a dry run of what is left says the same about what it keeps
    code, out, _ = run(capsys, "--warehouse", path, "expire-snapshots", "db.t", "--dry-run")
    assert code == 0 and "kept snapshots 4..5: younger than 1 h (snapshot.time-retained)" in out
