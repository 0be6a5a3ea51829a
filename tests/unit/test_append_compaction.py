"""Append-table compaction: the picker as a pure function, the dedicated compaction of
``Table.compact``, the fixed-bucket writer's own compaction, and pypaimon reading the result."""
import itertools

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lakeformat as lf
from lakeformat.write.append_compact import AppendCompactPolicy, pick, pick_full, pick_windows, sequence_order
from lakeformat.errors import CommitConflictError
from lakeformat.format.manifest import FILE_SOURCE_COMPACT, DataFileMeta
from tests.conftest import EVENTS, events


def meta(size: int, seq: int = 0, name: str = "") -> DataFileMeta:
    return DataFileMeta(name or f"f{seq}-{size}", size, 1, min_sequence_number=seq, max_sequence_number=seq)


def sizes(windows) -> list[list[int]]:
    return [[f.file_size for f in w] for w in windows]


def files_of(*s: int) -> list[DataFileMeta]:
    return [meta(size, seq=i) for i, size in enumerate(s)]


# ---------------------------------------------------------------- picker (pure)

POLICY = AppendCompactPolicy(target_file_size=100, min_file_num=3, max_file_num=6)


def test_too_few_small_files_are_left_alone():
    assert pick_windows(files_of(10, 10), POLICY) == []


def test_a_run_of_small_files_is_one_window():
    assert sizes(pick_windows(files_of(10, 10, 10, 10), POLICY)) == [[10, 10, 10, 10]]


def test_max_file_num_cuts_windows():
    assert sizes(pick_windows(files_of(*[1] * 10), POLICY)) == [[1] * 6, [1] * 4]
    assert sizes(pick_windows(files_of(*[1] * 8), POLICY)) == [[1] * 6]   # 2 left: too few


def test_window_taken_once_it_reaches_the_target_with_min_files():
    assert sizes(pick_windows(files_of(40, 40, 40, 40), POLICY)) == [[40, 40, 40]]


def test_oldest_file_leaves_a_window_that_reaches_the_target_with_too_few_files():
    # 60+60 >= 100 with 2 files: the first 60 is big enough among its neighbours
    assert pick_windows(files_of(60, 60, 60, 60), POLICY) == []
    assert sizes(pick_windows(files_of(90, 20, 20, 20), POLICY)) == [[20, 20, 20]]


def test_full_size_files_break_windows_and_are_never_rewritten():
    picked = pick_windows(files_of(10, 10, 100, 10, 10, 10, 500, 5), POLICY)
    assert sizes(picked) == [[10, 10, 10]]
    assert [f.min_sequence_number for f in picked[0]] == [3, 4, 5]


def test_min_file_num_one_still_needs_two_files():
    policy = AppendCompactPolicy(100, min_file_num=1, max_file_num=6)
    assert pick_windows(files_of(10), policy) == []
    assert sizes(pick_windows(files_of(10, 10), policy)) == [[10, 10]]


def test_full_skips_leading_full_size_files_only():
    assert sizes(pick_full(files_of(100, 200, 10, 300, 10), POLICY)) == [[10, 300, 10]]
    assert pick_full(files_of(100, 10), POLICY) == []
    assert pick_full(files_of(10), POLICY) == []
    assert sizes(pick_full(files_of(10, 10), POLICY)) == [[10, 10]]


def test_pick_orders_by_sequence_number_stably():
    a, b, c = meta(10, 5, "a"), meta(10, 0, "b"), meta(10, 0, "c")
    assert [f.file_name for f in sequence_order([a, b, c])] == ["b", "c", "a"]
    assert [f.file_name for f in pick([a, b, c], POLICY, full=True)[0]] == ["b", "c", "a"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 150), max_size=40), st.integers(1, 6), st.integers(1, 10))
def test_windows_are_disjoint_contiguous_runs_of_small_files(file_sizes, min_num, extra):
    policy = AppendCompactPolicy(100, min_num, min_num + extra)
    files = files_of(*file_sizes)
    windows = pick_windows(files, policy)
    seen = set()
    for w in windows:
        idx = [f.min_sequence_number for f in w]
        assert idx == list(range(idx[0], idx[0] + len(idx)))          # contiguous in sequence order
        assert not seen & set(idx)
        seen |= set(idx)
        assert all(f.file_size < 100 for f in w)
        assert max(2, min_num) <= len(w) <= policy.max_file_num
    # small files left at the end of a run of small files: their longest tail under the target
    # holds fewer than min files (or the end of the run would have taken them)
    tail: list[int] = []
    for i, f in enumerate(files + [meta(100, len(files))]):
        if i in seen:
            tail = []
        elif f.file_size >= 100:
            under = 0
            for n, size in enumerate(reversed(tail), 1):
                under += size
                if under >= 100:
                    break
                assert n < max(2, min_num), (tail, min_num)
            tail = []
        else:
            tail.append(f.file_size)


def test_policy_reads_the_table_options(catalog):
    t = catalog.create_table("db.p", EVENTS, options={"compaction.min.file-num": "7",
                                                       "compaction.max.file-num": "9", "target-file-size": "1 mb"})
    assert AppendCompactPolicy.of(t) == AppendCompactPolicy(1 << 20, 7, 9)
    d = catalog.create_table("db.d", EVENTS)
    assert AppendCompactPolicy.of(d) == AppendCompactPolicy(256 << 20, 5, 50)


# ---------------------------------------------------------------- dedicated compaction

def _files(t, dt=None):
    return [f for f in t.files() if dt is None or f["partition"] == {"dt": dt}]


def test_compact_unaware_table_keeps_rows_and_drops_file_count(catalog):
    t = catalog.create_table("db.t", EVENTS, partition_keys=["dt"], options={"target-file-size": "64 kb"})
    for i in range(8):
        t.write(events(1000, "2024-01-01", start=i * 1000))
    t.write(events(5, "2024-01-02", start=10**6))
    before = t.read()
    calls = []
    snap = t.compact(progress=lambda done, total, what: calls.append((done, total, what)))
    assert snap.commit_kind == "COMPACT" and snap.id == 10
    assert snap.total_record_count == 8005 and snap.delta_record_count == 0
    assert t.read().equals(before)                                       # rows and their order
    files = _files(t, "2024-01-01")
    assert len(files) < 8 and sum(f["row_count"] for f in files) == 8000
    assert len(_files(t, "2024-01-02")) == 1                             # one file: nothing to do
    assert calls == [(0, 1, "buckets compacted"), (1, 1, "buckets compacted (last: {'dt': '2024-01-01'} bucket 0)")]
    entries = t.live_entries(snap)
    assert {e.file.file_source for e in entries if t.partition_values(e.partition) == ("2024-01-01",)} == \
        {FILE_SOURCE_COMPACT}
    assert t.compact() is None                                           # nothing left to pick
    assert t.latest_snapshot().id == 10


def test_compacted_files_roll_at_the_target_size(catalog):
    t = catalog.create_table("db.t", EVENTS, options={"target-file-size": "16 kb"})
    for i in range(20):
        t.write(events(500, "x", start=i * 500))
    before = t.read()
    t.compact()   # windows of 5 files of ~4 kb reach the target: 4 files of about 15 kb
    assert len(_files(t)) == 4 and t.read().equals(before)
    t.compact(full=True)   # one window: the output rolls at the target size
    files = sorted(t.live_entries(t.latest_snapshot()), key=lambda e: e.file.min_sequence_number)
    assert len(files) >= 2
    assert all(e.file.file_size >= 16 * 1024 for e in files[:-1])
    seqs = [(e.file.min_sequence_number, e.file.max_sequence_number) for e in files]
    assert seqs[0][0] == 0 and all(a[1] + 1 == b[0] for a, b in itertools.pairwise(seqs))
    assert t.read().equals(before)


def test_fixed_bucket_order_survives_compaction_between_writes(catalog):
    t = catalog.create_table("db.t", EVENTS, partition_keys=["dt"],
                             options={"bucket": "2", "bucket-key": "user_id", "write-only": "true"})
    expected = []
    for round_ in range(3):
        for i in range(6):
            batch = events(50, "2024-01-01", start=(round_ * 6 + i) * 50)
            t.write(batch)
            expected.append(batch)
        assert len(_files(t)) > 2
        t.compact()
        assert len(_files(t)) == 2                                       # one file per bucket
        written = pa.concat_tables(expected).column("user_id").to_pylist()
        splits = t.scan().plan()
        assert len(splits) == 2
        for s in splits:   # per bucket, rows come back in the order they were written
            rows = t.read_splits([s]).column("user_id").to_pylist()
            mine = set(rows)
            assert rows == [x for x in written if x in mine]
        assert sorted(t.read().column("user_id").to_pylist()) == sorted(written)


def test_compact_chosen_partitions_only(catalog):
    t = catalog.create_table("db.t", EVENTS, partition_keys=["dt"])
    for i in range(5):
        t.write(pa.concat_tables([events(3, "a", start=i * 10), events(3, "b", start=100 + i * 10)]))
    t.compact(partitions=[{"dt": "a"}])
    assert len(_files(t, "a")) == 1 and len(_files(t, "b")) == 5
    with pytest.raises(lf.LakeformatError, match="nope"):
        t.compact(partitions=[{"nope": "a"}])


def test_full_compacts_what_the_picker_leaves(catalog):
    t = catalog.create_table("db.t", EVENTS)
    t.write(events(3, "x"))
    t.write(events(3, "x", start=3))
    assert t.compact() is None                                           # 2 < compaction.min.file-num
    snap = t.compact(full=True)
    assert snap.commit_kind == "COMPACT" and len(_files(t)) == 1
    assert t.read().column("user_id").to_pylist() == list(range(6))
    assert t.compact(full=True) is None


def test_compaction_reads_older_schemas(catalog):
    t = catalog.create_table("db.t", EVENTS)
    for i in range(3):
        t.write(events(2, "x", start=i * 2))
    t.alter(lf.AddColumn("extra", pa.int32()))
    t.write(events(2, "x", start=6).append_column("extra", pa.array([7, 8], pa.int32())))
    t.compact(full=True)
    entries = t.live_entries(t.latest_snapshot())
    assert len(entries) == 1 and entries[0].file.schema_id == 1
    got = t.read()
    assert got.column("user_id").to_pylist() == list(range(8))
    assert got.column("extra").to_pylist() == [None] * 6 + [7, 8]


def test_empty_table_compacts_to_nothing(catalog):
    assert catalog.create_table("db.t", EVENTS).compact() is None


# ---------------------------------------------------------------- the fixed-bucket writer

def test_fixed_bucket_writer_compacts_unless_write_only(catalog):
    opts = {"bucket": "1", "bucket-key": "user_id", "compaction.min.file-num": "3"}
    t = catalog.create_table("db.t", EVENTS, options=opts)
    for i in range(7):
        t.write(events(10, "x", start=i * 10))
    kinds = [s.commit_kind for s in t.snapshots()]
    assert kinds == ["APPEND"] * 3 + ["COMPACT"] + ["APPEND"] * 2 + ["COMPACT"] + ["APPEND"] * 2 + ["COMPACT"]
    assert len(_files(t)) == 1
    assert t.read().column("user_id").to_pylist() == list(range(70))
    # the APPEND snapshot still carries the file its COMPACT twin replaced: incremental reads see it
    assert t.read_incremental(2, 4).column("user_id").to_pylist() == list(range(20, 30))
    w = catalog.create_table("db.w", EVENTS, options={**opts, "write-only": "true"})
    for i in range(7):
        w.write(events(10, "x", start=i * 10))
    assert {s.commit_kind for s in w.snapshots()} == {"APPEND"} and len(_files(w)) == 7


def test_writer_continues_the_bucket_sequence(catalog):
    t = catalog.create_table("db.t", EVENTS, options={"bucket": "1", "bucket-key": "user_id", "write-only": "true"})
    t.write(events(10, "x"))
    t.write(events(5, "x", start=10))
    ranges = sorted((e.file.min_sequence_number, e.file.max_sequence_number)
                    for e in t.live_entries(t.latest_snapshot()))
    assert ranges == [(0, 9), (10, 14)]


def test_writer_compaction_losing_to_a_dedicated_compaction_keeps_its_data(catalog):
    """The writer's APPEND lands, its COMPACT conflicts: the commit reports the APPEND (raising
    would tell the caller its rows were not committed, and a retry would write them twice), keeps
    the conflict on ``skipped_compaction`` and deletes only the compaction's own output."""
    t = catalog.create_table("db.t", EVENTS, options={"bucket": "1", "bucket-key": "user_id",
                                                        "compaction.min.file-num": "3"})
    t.write(events(1, "x", start=0))
    t.write(events(1, "x", start=1))
    w = t.new_write("writer")
    w.write(events(1, "x", start=2))                   # restores the two files, will compact all three
    catalog.get_table("db.t").compact(full=True)       # a dedicated compaction wins the race
    messages = w.prepare_commit()
    assert len(messages[0].compact_before) == 3
    commit = t.new_commit("writer")
    made = commit.commit(messages, identifier=1)
    assert made.commit_kind == "APPEND" and made.id == 4
    assert isinstance(commit.skipped_compaction, CommitConflictError)
    fresh = catalog.get_table("db.t")
    assert [s.commit_kind for s in fresh.snapshots()] == ["APPEND", "APPEND", "COMPACT", "APPEND"]
    assert fresh.read().column("user_id").to_pylist() == [0, 1, 2]
    bucket = t.bucket_dir_of(messages[0].partition, 0)
    assert not any(t.io.exists(f"{bucket}/{f.file_name}") for f in messages[0].compact_after)
    assert fresh.new_commit("writer").commit(messages, identifier=1).id == 4   # a re-run: nothing twice
    assert fresh.read().num_rows == 3


def test_table_write_reports_the_append_when_its_compaction_conflicts(catalog, monkeypatch):
    """Table.write's own small-file compaction losing to a concurrent compaction: the call
    returns the APPEND snapshot, whose rows are in the table once."""
    t = catalog.create_table("db.t", EVENTS, options={"bucket": "1", "bucket-key": "user_id",
                                                        "compaction.min.file-num": "3"})
    t.write(events(1, "x", start=0))
    t.write(events(1, "x", start=1))
    other = catalog.get_table("db.t")
    real = type(t).new_commit

    def racing_commit(self, user=None):   # the dedicated compaction lands between write and commit
        if self is t:
            other.compact(full=True)
        return real(self, user)
    monkeypatch.setattr(type(t), "new_commit", racing_commit)
    made = t.write(events(1, "x", start=2))
    monkeypatch.undo()
    assert made.commit_kind == "APPEND"
    assert sorted(catalog.get_table("db.t").read().column("user_id").to_pylist()) == [0, 1, 2]


# ---------------------------------------------------------------- pypaimon reads the result

@pytest.mark.slow   # seconds, not milliseconds: make test runs it, make check does not
def test_oracles_read_compacted_tables(catalog, tmp_path):
    from tests.interop.helpers import Oracle, check_readers
    wh = str(tmp_path / "wh")
    unaware = catalog.create_table("db.u", EVENTS, partition_keys=["dt"], options={"target-file-size": "32 kb"})
    fixed = catalog.create_table("db.f", EVENTS, partition_keys=["dt"],
                                 options={"bucket": "2", "bucket-key": "user_id", "compaction.min.file-num": "3"})
    for i in range(6):
        for t in (unaware, fixed):
            t.write(pa.concat_tables([events(700, "2024-01-01", start=i * 700),
                                      events(3, "2024-01-02", start=10**6 + i * 3)]))
    unaware.compact()
    fixed.compact(full=True)
    assert len(_files(unaware, "2024-01-01")) < 6 and len(_files(fixed)) == 4
    oracle = Oracle(tmp_path / "oracle")
    reads = {name: oracle.read(wh, f"db.{name}") for name in ("u", "f")}
    res = oracle.run()
    for name, t in (("u", unaware), ("f", fixed)):
        expected = t.read()
        assert expected.num_rows == 6 * 703
        check_readers(res, reads[name], expected, "user_id", what=f"db.{name} after compaction")


# ---------------------------------------------------------------- Table.compact for both kinds

def test_primary_key_compaction_reports_progress_per_bucket(catalog):
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string()), pa.field("dt", pa.string(), False)])
    t = catalog.create_table("db.pk", schema, partition_keys=["dt"], primary_keys=["id", "dt"],
                             options={"bucket": "2", "write-only": "true"})
    for i in range(3):
        t.write(pa.table({"id": [1, 2, 3, 4], "v": [str(i)] * 4, "dt": ["a", "a", "b", "b"]}, schema=schema))
    calls = []
    snap = t.compact(full=True, partitions=[{"dt": "a"}], progress=lambda *a: calls.append(a))
    assert snap.commit_kind == "COMPACT"
    buckets = {(r["partition"], r["bucket"]): r["sorted_runs"] for r in t.system_table("buckets").to_pylist()}
    assert all(runs == 1 for (p, _), runs in buckets.items() if p == "dt=a")
    assert all(runs == 3 for (p, _), runs in buckets.items() if p == "dt=b")
    assert calls[0] == (0, len(calls) - 1, "buckets compacted") and calls[-1][:2] == (len(calls) - 1, len(calls) - 1)
    assert all("{'dt': 'a'} bucket" in c[2] for c in calls[1:])
    assert sorted(t.read().column("v").to_pylist()) == ["2"] * 4


def test_dedicated_compaction_expires_for_write_only_writers(catalog):
    opts = {"write-only": "true", "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2"}
    t = catalog.create_table("db.t", EVENTS, options=opts)
    for i in range(6):
        t.write(events(3, "x", start=i * 3))
    assert len(t.snapshots()) == 6                                       # writers never expire
    t.compact()
    assert [s.id for s in t.snapshots()] == [6, 7]
    assert t.read().column("user_id").to_pylist() == list(range(18))
    n = catalog.create_table("db.n", EVENTS, options={**opts, "write-only": "false"})
    for i in range(6):
        n.write(events(3, "x", start=i * 3))
    assert len(n.snapshots()) == 2                                       # writers expire themselves
