"""Commits and maintenance on S3 with faults as production sees them, injected by a proxy in
front of moto (tests/faultproxy.py): a reply lost after the store applied the request, 500/503
throttling, connections reset before the request arrived.

Invariants: a call that returned success is readable exactly once; a call that raised left
nothing visible, or (CommitOutcomeUnknownError) left everything it wrote in place; the table is
readable after every fault, through a client that never saw one.
"""
from __future__ import annotations

import datetime as dt
import uuid
from collections import Counter

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

import lakeformat as lf
from lakeformat.errors import CommitOutcomeUnknownError, StorageError
from tests.faultproxy import faulty_s3  # noqa: F401 (fixture)
from tests.s3server import BUCKET, CREDS, s3_endpoint  # noqa: F401 (fixture)

SCHEMA = pa.schema([("id", pa.int64()), ("batch", pa.int32()), ("p", pa.string())])
SNAPSHOT_PUT = r"/snapshot/snapshot-\d+$"


def batch(n: int, rows: int = 20) -> pa.Table:
    return pa.table({"id": list(range(n * 1000, n * 1000 + rows)), "batch": [n] * rows,
                     "p": [f"p{n % 2}"] * rows}, schema=SCHEMA)


def open_catalogs(proxy, s3_endpoint, tmp_path, locked: bool):
    """(catalog through the faulty proxy, catalog straight to the store) on a new warehouse."""
    wh = f"s3://{BUCKET}/faults-{uuid.uuid4().hex[:8]}"
    lock = {"lock.enabled": "true", "lock.uri": str(tmp_path / "lock.sqlite")} if locked else {}
    faulty = lf.Catalog(wh, **{"s3.endpoint": proxy.url, **CREDS, **lock})
    faulty.create_database("db")
    return faulty, lf.Catalog(wh, **{"s3.endpoint": s3_endpoint, **CREDS, **lock})


def batches_in(table) -> Counter:
    """How many times each batch's rows are in the table (a batch is in whole or not at all)."""
    data = table.read()
    per_row = Counter(zip(data.column("batch").to_pylist(), data.column("id").to_pylist()))
    assert set(per_row.values()) <= {1}, "a row is in the table twice"
    counts = Counter(data.column("batch").to_pylist())
    return Counter({b: c // 20 for b, c in counts.items()})


def files_of(clean) -> set[str]:
    t = clean.get_table("db.t")
    return {i.path for i in t.io.fs.get_file_info(pafs.FileSelector(t.path.removeprefix("s3://"), recursive=True))}


def assert_whole(clean) -> None:
    """Every file the latest snapshot names exists (the table is readable, not just its snapshot)."""
    t = clean.get_table("db.t")
    missing = [f["path"] for f in t.files() if not t.io.exists(f["path"])]
    assert not missing, f"the latest snapshot names missing files: {missing[:3]}"


@pytest.mark.parametrize("locked", [False, True], ids=["conditional-put", "catalog-lock"])
@pytest.mark.parametrize("kind", ["write", "two-phase", "overwrite", "compact"])
def test_a_lost_reply_to_the_snapshot_write_commits_exactly_once(faulty_s3, s3_endpoint, tmp_path, kind, locked):
    """Every reply to the request that creates the next snapshot is lost although the store
    applied it: the commit reads snapshot-N back, finds its own bytes and reports success."""
    faulty, clean = open_catalogs(faulty_s3, s3_endpoint, tmp_path, locked)
    options = {"bucket": "1", "bucket-key": "id", "compaction.min.file-num": "10"} if kind == "compact" else {}
    t = faulty.create_table("db.t", SCHEMA, partition_keys=["p"], options=options)
    for n in range(1, 4):
        t.write(batch(n))
    # the conditional PUT; under the lock, pyarrow's multipart upload: the POST that completes
    # it (after the POST that starts it) is applied, and every reply to it is lost
    faulty_s3.add("POST" if locked else "PUT", SNAPSHOT_PUT, "drop_reply", times=None, skip=1 if locked else 0)
    if kind == "write":
        made, expected = t.write(batch(4)), {1: 1, 2: 1, 3: 1, 4: 1}
    elif kind == "two-phase":
        w = t.new_write("job")
        w.write(batch(4))
        messages = w.prepare_commit()
        made, expected = t.new_commit("job").commit(messages, identifier=42), {1: 1, 2: 1, 3: 1, 4: 1}
        faulty_s3.clear()
        assert t.new_commit("job").commit(messages, identifier=42).id == made.id   # the retry is a no-op
    elif kind == "overwrite":
        made, expected = t.write(batch(5), overwrite={"p": "p1"}), {2: 1, 5: 1}
    else:
        made, expected = t.compact(full=True), {1: 1, 2: 1, 3: 1}
    faulty_s3.clear()
    assert any(f.action == "drop_reply" and f.status == 200 for f in faulty_s3.fired)
    assert made is not None and made.id == 4
    fresh = clean.get_table("db.t")
    assert fresh.latest_snapshot().id == 4 and fresh.latest_snapshot().commit_user == made.commit_user
    assert batches_in(fresh) == Counter(expected)
    assert_whole(clean)
    assert t.write(batch(9)).id == 5   # and the table takes the next commit


def test_an_unanswered_publish_that_went_through_is_outcome_unknown_and_loses_nothing(faulty_s3, s3_endpoint,
                                                                                       tmp_path):
    """The PUT went through but no reply came, and snapshot-N cannot be read back: the commit
    says the outcome is unknown and deletes nothing, so the snapshot it did publish is whole."""
    faulty, clean = open_catalogs(faulty_s3, s3_endpoint, tmp_path, False)
    t = faulty.create_table("db.t", SCHEMA, partition_keys=["p"])
    t.write(batch(1))
    faulty_s3.add("PUT", r"/snapshot/snapshot-2$", "drop_reply", times=None)
    faulty_s3.add("GET", r"/snapshot/snapshot-2$", "status", status=503, times=None)
    with pytest.raises(CommitOutcomeUnknownError, match=r"may or may not have happened.*Nothing was deleted") as e:
        t.write(batch(2))
    assert e.value.snapshot_id == 2
    faulty_s3.clear()
    fresh = clean.get_table("db.t")
    assert fresh.latest_snapshot().commit_user == e.value.commit_user   # it had happened
    assert batches_in(fresh) == Counter({1: 1, 2: 1})
    assert_whole(clean)


def test_an_unanswered_publish_that_never_arrived_is_outcome_unknown_and_keeps_its_files(faulty_s3, s3_endpoint,
                                                                                          tmp_path):
    """No PUT reached the store and reads fail: still unknown to the writer, so its files stay
    (orphans for a later removal) and the table is as before."""
    faulty, clean = open_catalogs(faulty_s3, s3_endpoint, tmp_path, False)
    t = faulty.create_table("db.t", SCHEMA, partition_keys=["p"])
    t.write(batch(1))
    before = files_of(clean)
    faulty_s3.add("PUT", r"/snapshot/snapshot-2$", "reset", times=None)
    faulty_s3.add("GET", r"/snapshot/snapshot-2$", "status", status=503, times=None)
    with pytest.raises(CommitOutcomeUnknownError):
        t.write(batch(2))
    faulty_s3.clear()
    fresh = clean.get_table("db.t")
    assert fresh.latest_snapshot().id == 1 and batches_in(fresh) == Counter({1: 1})
    after = files_of(clean)
    assert before < after and any("/manifest/manifest-list-" in p for p in after - before)   # nothing deleted
    assert t.write(batch(3)).id == 2


def test_every_write_that_returned_is_there_once_under_random_faults(faulty_s3, s3_endpoint, tmp_path):
    """Throttling, resets and lost replies at random on every request: a write that returned
    is in the table once; one that raised a StorageError or a CommitError is not there at all;
    an unknown outcome is there at most once; a two-phase commit retried with its identifier
    until it returns is there exactly once."""
    faulty, clean = open_catalogs(faulty_s3, s3_endpoint, tmp_path, False)
    t = faulty.create_table("db.t", SCHEMA, partition_keys=["p"], options={"bucket": "2", "bucket-key": "id"})
    faulty_s3.add("*", ".", "status", status=503, probability=0.04, times=None, seed=1)
    faulty_s3.add("*", ".", "drop_reply", probability=0.03, times=None, seed=2)
    faulty_s3.add("*", ".", "reset", probability=0.03, times=None, seed=3)
    returned, failed, unknown = set(), set(), set()
    for n in range(1, 25):
        try:
            if n % 3:
                t.write(batch(n))
            else:   # the job's way: retried with the same identifier until it returns
                w = t.new_write("job")
                w.write(batch(n))
                messages = w.prepare_commit()
                for _ in range(10):
                    try:
                        t.new_commit("job").commit(messages, identifier=n)
                        break
                    except (StorageError, lf.CommitError):
                        continue
                else:
                    raise AssertionError(f"batch {n} never committed in 10 tries")
            returned.add(n)
        except CommitOutcomeUnknownError:
            unknown.add(n)
        except (StorageError, lf.CommitError):
            failed.add(n)
    faulty_s3.clear()
    assert len(faulty_s3.fired) > 10, "too few faults fired to mean anything"
    found = batches_in(clean.get_table("db.t"))
    assert {b for b in returned if found[b] != 1} == set(), "a write that returned is missing or doubled"
    assert {b for b in failed if found[b]} == set(), "a write that raised left rows behind"
    assert all(found[b] <= 1 for b in unknown)
    assert returned, "no write got through"
    assert_whole(clean)


def test_maintenance_under_random_faults_leaves_the_table_readable(faulty_s3, s3_endpoint, tmp_path):
    """Compaction, snapshot expiration, tags, consumers, rollback and orphan removal with
    faults on every request: whatever each returned or raised, the table reads its rows."""
    faulty, clean = open_catalogs(faulty_s3, s3_endpoint, tmp_path, False)
    t = faulty.create_table("db.t", SCHEMA, partition_keys=["p"], options={"bucket": "1", "bucket-key": "id"})
    for n in range(1, 7):
        t.write(batch(n))
    expected = Counter({n: 1 for n in range(1, 7)})
    steps = [("compact", lambda: t.compact(full=True)),
             ("tag", lambda: t.create_tag("before-expiry", 3)),
             ("expire", lambda: t.expire_snapshots(retain_min=2, retain_max=2)),
             ("consumer", lambda: t.consumers.reset("reader", 7)),
             ("orphans",
              lambda: t.remove_orphan_files(older_than=dt.timedelta(0), allow_deleting_in_flight_files=True)),
             ("rollback", lambda: t.rollback_to(t.latest_snapshot().id))]
    for seed, (name, step) in enumerate(steps):
        faulty_s3.add("*", ".", "status", status=503, probability=0.05, times=None, seed=seed)
        faulty_s3.add("*", ".", "drop_reply", probability=0.05, times=None, seed=100 + seed)
        try:
            step()
        except (StorageError, lf.LakeformatError):
            pass
        faulty_s3.clear()
        assert batches_in(clean.get_table("db.t")) == expected, f"after {name}"
        assert_whole(clean)
    assert len(faulty_s3.fired) > 5


def test_a_commit_on_s3_names_a_file_removed_from_one_of_many_buckets(s3_endpoint):
    """The existence check asks the store about many bucket directories at once: a file gone from
    any one of them stops the commit, named, with nothing published."""
    cat = lf.Catalog(f"s3://{BUCKET}/check-{uuid.uuid4().hex[:8]}", **{"s3.endpoint": s3_endpoint, **CREDS})
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "8"})
    w = t.new_write()
    w.write(pa.table({"id": list(range(400)), "batch": [0] * 400, "p": ["x"] * 400}, schema=SCHEMA))
    messages = w.prepare_commit()
    assert len({m.bucket for m in messages}) == 8
    victim = messages[5]
    path = f"{t.path}/bucket-{victim.bucket}/{victim.new_files[0].file_name}"
    assert t.io.exists(path)
    t.io.delete(path)
    with pytest.raises(lf.CommitError, match=f"{victim.new_files[0].file_name} does not exist.*Nothing was committed"):
        t.new_commit().commit(messages)
    assert t.snapshots() == []
