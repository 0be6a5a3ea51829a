"""Costs that must not grow with a table's history, checked by counting the filesystem calls a
commit makes (each is at least one request on an object store), never by timing."""
import gc
import os
import uuid

import pyarrow as pa
import pytest

import lakeformat as lf
from tests.iocount import counting
from tests.s3server import BUCKET, CREDS, s3_endpoint  # noqa: F401 (fixture)

SCHEMA = pa.schema([("id", pa.int64())])
KEEP_ALL = {"snapshot.num-retained.min": "100000", "snapshot.time-retained": "1 d"}
EXPIRE_EVERY_COMMIT = {"snapshot.num-retained.min": "5", "snapshot.time-retained": "1 ms"}


def commit_calls(t, commits: int, at: set[int]) -> dict[int, tuple[dict, list]]:
    """Commit ``commits`` one-row appends; the calls (by kind) and the directories listed by
    the ``commit()`` call of each commit number in ``at``."""
    handler = counting(t.io)
    out = {}
    for i in range(1, commits + 1):
        w = t.new_write("writer")
        w.write(pa.table({"id": [i]}))
        messages = w.prepare_commit()
        handler.calls.clear()
        handler.listed.clear()
        t.new_commit("writer").commit(messages)
        if i in at:
            out[i] = (dict(handler.calls), list(handler.listed))
    return out


@pytest.mark.parametrize("options", [KEEP_ALL, EXPIRE_EVERY_COMMIT], ids=["nothing-due", "expiring"])
def test_a_commit_never_lists_snapshots_and_costs_the_same_late_as_early(catalog, options):
    """The latest snapshot and the expiration check come from the LATEST/EARLIEST hints: the
    calls of commit 12 and commit 90 are the same, and snapshot/ is never listed once hints
    exist. Commits 12 and 90 are both between manifest merges."""
    t = catalog.create_table("db.t", SCHEMA, options=options)
    calls = commit_calls(t, 90, {2, 12, 90})
    for i, (_, listed) in calls.items():
        assert not [d for d in listed if d.endswith("/snapshot")], f"commit {i} listed {listed}"
    assert calls[12] == calls[90]
    if options is EXPIRE_EVERY_COMMIT:
        assert [s.id for s in t.snapshots()] == list(range(86, 91))   # expiration did run


def test_expiration_after_a_commit_still_finishes_when_the_hints_are_gone(catalog):
    """Hints are only hints: without EARLIEST the check falls back to the listing, once."""
    t = catalog.create_table("db.t", SCHEMA, options=EXPIRE_EVERY_COMMIT)
    commit_calls(t, 8, set())
    os.remove(os.path.join(t.path, "snapshot", "EARLIEST"))
    commit_calls(t, 2, set())
    assert [s.id for s in t.snapshots()] == list(range(6, 11))


def test_requests_per_commit_on_s3_are_constant(s3_endpoint):
    cat = lf.Catalog(f"s3://{BUCKET}/wh-{uuid.uuid4().hex[:8]}", **{"s3.endpoint": s3_endpoint, **CREDS})
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, options=EXPIRE_EVERY_COMMIT)
    calls = commit_calls(t, 20, {8, 20})
    assert calls[8] == calls[20]
    assert not [d for d in calls[20][1] if d.endswith("/snapshot")]
    assert sum(calls[20][0].values()) <= 30


def test_no_garbage_collection_runs_while_planning(catalog, monkeypatch):
    """Planning allocates many long-lived objects; the cyclic collector is paused meanwhile (it
    made planning superlinear) and left as it was afterwards."""
    from lakeformat.read.scan import FileScan
    t = catalog.create_table("db.p", pa.schema([("id", pa.int64()), ("dt", pa.string())]), partition_keys=["dt"])
    for d in range(5):
        t.write(pa.table({"id": list(range(200)), "dt": [f"2024-01-0{d + 1}"] * 200}))
    inside = []
    splits_of = FileScan.splits

    def splits(self, snapshot, entries):
        inside.append(gc.isenabled())   # after every manifest was decoded, before the splits
        return splits_of(self, snapshot, entries)
    monkeypatch.setattr(FileScan, "splits", splits)
    before = gc.isenabled()
    assert len(t.scan().plan()) == 5
    assert inside == [False] and gc.isenabled() == before
