"""The committer: manifest merging, exactly-once, conflicts, retries, bad messages."""
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakeformat as lf
from lakeformat.format.binary_row import serialize_row
from lakeformat.format.manifest import ADD, DELETE, DataFileMeta, ManifestEntry, ManifestFileMeta, SimpleStats
from lakeformat.io.manifests import ManifestList
from lakeformat.commit.manifest_merge import fold, plan_merge
from lakeformat.format.commit_message import CommitMessage
from tests.conftest import EVENTS, events

KB = 1024


def meta(name, size, deleted=0):
    return ManifestFileMeta(name, size, 1, deleted, SimpleStats(), 0)


# ------------------------------------------------------------------ pure merge planning

def test_few_small_manifests_are_left_alone():
    plan = plan_merge([meta(f"m{i}", KB) for i in range(5)], 8 * KB * KB, 30, 16 * KB * KB)
    assert plan.changes_nothing


def test_many_small_manifests_merge_into_one():
    metas = [meta(f"m{i}", KB) for i in range(30)]
    plan = plan_merge(metas, 8 * KB * KB, 30, 16 * KB * KB)
    assert [len(s) for s in plan.segments] == [30] and not plan.full


def test_small_manifests_reaching_target_size_merge_and_order_is_kept():
    metas = [meta("a", 3 * KB), meta("b", 3 * KB), meta("c", 3 * KB), meta("big", 20 * KB), meta("d", KB)]
    plan = plan_merge(metas, 8 * KB, 30, 10**9)
    assert [[m.file_name for m in s] for s in plan.segments] == [["a", "b", "c"], ["big"], ["d"]]


def test_deletes_past_threshold_trigger_full_compaction():
    metas = [meta("a", 6 * KB, deleted=3), meta("b", 6 * KB, deleted=1), meta("c", KB)]
    plan = plan_merge(metas, 8 * KB * KB, 30, 10 * KB)
    assert plan.full and [len(s) for s in plan.segments] == [3]


def entry(kind, name):
    return ManifestEntry(kind, b"", 0, -1, DataFileMeta(name, 1, 1))


def test_fold_cancels_pairs_and_keeps_unmatched_deletes_only_when_asked():
    es = [entry(ADD, "a"), entry(ADD, "b"), entry(DELETE, "a"), entry(DELETE, "z")]
    assert [(e.kind, e.file.file_name) for e in fold(es, True)] == [(ADD, "b"), (DELETE, "z")]
    assert [(e.kind, e.file.file_name) for e in fold(es, False)] == [(ADD, "b")]


# ------------------------------------------------------------------ commit cost and merging

def test_manifest_list_stays_short_and_rows_stay_right(catalog):
    t = catalog.create_table("db.t", EVENTS, partition_keys=["dt"], options={"manifest.merge-min-count": "10"})
    for i in range(60):
        t.write(events(2, f"d{i % 3}", start=i * 2))
        if i == 30:
            t.write(events(1, "d1", start=1000), overwrite={"dt": "d1"})
    s = t.latest_snapshot()
    mlist = ManifestList(t.io, t.path)
    assert len(mlist.read(s.base_manifest_list)) < 12
    expected = 60 * 2 - sum(2 for i in range(31) if i % 3 == 1) + 1
    assert t.read().num_rows == expected == s.total_record_count


# ------------------------------------------------------------------ exactly-once

def test_recommitting_an_identifier_is_a_no_op(catalog):
    t = catalog.create_table("db.t", EVENTS)
    w = t.new_write("job")
    w.write(events(5))
    msgs = w.prepare_commit()
    s1 = t.new_commit("job").commit(msgs, identifier=5)
    # the caller crashed before learning the result; a new process retries the same identifier
    again = lf.Catalog(str(Path(t.path).parents[1])).get_table("db.t")
    s2 = again.new_commit("job").commit(msgs, identifier=5)
    assert s2.id == s1.id and len(t.snapshots()) == 1 and t.read().num_rows == 5
    assert again.new_commit("job").filter_committed([4, 5, 6]) == [4, 6]
    assert again.new_commit("other-user").filter_committed([5]) == [5]


def test_rerunning_a_whole_write_with_the_same_identifier_adds_nothing(catalog):
    t = catalog.create_table("db.t", EVENTS)
    for _ in range(2):
        w = t.new_write("daily")
        w.write(events(7))
        msgs = w.prepare_commit()
        c = t.new_commit("daily")
        if not c.filter_committed([20240101]):
            c.abort(msgs)
            continue
        c.commit(msgs, identifier=20240101)
    assert t.read().num_rows == 7 and len(list(Path(t.path).rglob("*.parquet"))) == 1


# ------------------------------------------------------------------ conflicts

def rewrite_message(t, msg):
    """A compaction of ``msg``'s files: same rows rewritten into a new file."""
    w = t.new_write()
    w.write(t.read_splits(t.scan().plan()))
    new = w.prepare_commit()[0]
    return CommitMessage(msg.partition, msg.bucket, msg.total_buckets,
                         compact_before=msg.new_files, compact_after=new.new_files)


def test_deleting_a_file_that_was_overwritten_meanwhile_conflicts(catalog):
    t = catalog.create_table("db.t", EVENTS, partition_keys=["dt"])
    w = t.new_write("w")
    w.write(events(10, "a"))
    first = w.prepare_commit()
    t.new_commit("w").commit(first)
    compaction = rewrite_message(t, first[0])          # planned on snapshot 1
    t.write(events(3, "a", start=50), overwrite=True)  # snapshot 2 removes the file meanwhile
    before = t.read()
    with pytest.raises(lf.errors.CommitConflictError) as err:
        t.new_commit("compactor").commit([compaction])
    e = err.value
    assert e.snapshot_id == 2 and e.files == (first[0].new_files[0].file_name,)
    assert e.partition == ("a",) and e.bucket == 0 and "snapshot 2" in str(e)
    assert len(t.snapshots()) == 2 and t.read().equals(before)
    t.new_commit("compactor").abort([compaction])
    assert not Path(t.bucket_dir(["a"], 0), compaction.compact_after[0].file_name).exists()


def test_appends_never_conflict(catalog):
    t = catalog.create_table("db.t", EVENTS, partition_keys=["dt"])
    writers = [t.new_write(f"w{i}") for i in range(3)]
    msgs = []
    for i, w in enumerate(writers):
        w.write(events(4, "a", start=i * 4))
        msgs.append(w.prepare_commit())
    for i, m in enumerate(msgs):
        t.new_commit(f"w{i}").commit(m, identifier=1)
    assert t.read().num_rows == 12


def test_overlapping_level_files_from_concurrent_compactions_conflict(catalog):
    schema = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.string())])
    t = catalog.create_table("db.pk", schema, primary_keys=["k"], options={"bucket": "1"})
    bucket_dir = Path(t.bucket_dir([], 0))
    bucket_dir.mkdir(parents=True)

    def level1(name, lo, hi):
        pq.write_table(pa.table({"k": [lo, hi], "v": ["x", "y"]}), bucket_dir / name)
        key = lambda v: serialize_row([v], [t.schema.field("k").type])  # noqa: E731
        return DataFileMeta(name, 1, 2, key(lo), key(hi), level=1)

    part = serialize_row([], [])
    t.new_commit("c1").commit([CommitMessage(part, 0, 1, compact_after=(level1("a.parquet", 0, 10),))])
    with pytest.raises(lf.errors.CommitConflictError, match="overlapping") as err:
        t.new_commit("c2").commit([CommitMessage(part, 0, 1, compact_after=(level1("b.parquet", 5, 20),))])
    assert err.value.files == ("a.parquet",) and len(t.snapshots()) == 1
    t.new_commit("c3").commit([CommitMessage(part, 0, 1, compact_after=(level1("c.parquet", 11, 20),))])
    assert len(t.snapshots()) == 2


# ------------------------------------------------------------------ retries

def test_losing_the_race_retries_on_the_new_latest_and_cleans_up(catalog, monkeypatch):
    t = catalog.create_table("db.t", EVENTS)
    t.write(events(1))
    other = lf.Catalog(str(Path(t.path).parents[1])).get_table("db.t")
    sm = t.snapshot_manager
    real = sm.try_create
    raced = []

    def racing_create(snapshot):
        if not raced:
            raced.append(other.write(events(1, start=100)))   # another committer takes the id first
        return real(snapshot)
    monkeypatch.setattr(sm, "try_create", racing_create)
    w = t.new_write("me")
    w.write(events(2, start=10))
    c = t.new_commit("me")
    s = c.commit(w.prepare_commit(), identifier=1)
    assert c.retries == 1 and raced[0].id == 2 and s.id == 3
    assert sorted(t.read().column("user_id").to_pylist()) == [0, 10, 11, 100]
    lists = [p for p in Path(t.path, "manifest").iterdir() if p.name.startswith("manifest-list")]
    assert len(lists) == 2 * 3   # the lost attempt's lists were deleted


def test_max_retries_gives_up_cleanly(catalog, monkeypatch):
    t = catalog.create_table("db.t", EVENTS, options={"commit.max-retries": "2", "commit.min-retry-wait": "1 ms",
                                                       "commit.max-retry-wait": "2 ms"})
    monkeypatch.setattr(t.snapshot_manager, "try_create", lambda s: False)
    w = t.new_write()
    w.write(events(2))
    with pytest.raises(lf.CommitError, match="3 times"):
        t.new_commit().commit(w.prepare_commit())
    assert list(Path(t.path, "manifest").iterdir()) == []


# ------------------------------------------------------------------ bad messages

def test_messages_with_foreign_partitions_or_buckets_are_refused(catalog):
    t = catalog.create_table("db.t", EVENTS, partition_keys=["dt"], options={"bucket": "2"})
    w = t.new_write()
    w.write(events(4))
    msg = w.prepare_commit()[0]
    bad_part = CommitMessage(serialize_row([], []), msg.bucket, 2, msg.new_files)
    with pytest.raises(lf.CommitError, match="partition"):
        t.new_commit().commit([bad_part])
    bad_bucket = CommitMessage(msg.partition, 7, 2, msg.new_files)
    with pytest.raises(lf.CommitError, match="bucket 7"):
        t.new_commit().commit([bad_bucket])
    other = catalog.create_table("db.other", EVENTS, partition_keys=["dt"], options={"bucket": "2"})
    with pytest.raises(lf.CommitError, match="does not exist"):
        other.new_commit().commit([msg])
    assert t.snapshots() == [] and other.snapshots() == []
