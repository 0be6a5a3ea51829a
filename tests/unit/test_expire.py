"""Snapshot expiration: the pure plan (Paimon's rules), the executor (what is deleted, what must
survive), every retention option, tags, consumers, changelog files and the after-commit hook."""
import itertools
import datetime as dt
import logging
import os
import re
from pathlib import Path
from functools import partial

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lakeformat as lf
from lakeformat.errors import LakeformatError, OptionError
from lakeformat.maintenance.expire import (INTENT_PREFIX, ExpirePlan, overlapping_tags, plan_expiration,
                                           previous_tag, released_files)
from lakeformat.format.manifest import ADD, DELETE, DataFileMeta, ManifestEntry
from lakeformat.io.manifests import ManifestFile, ManifestList
from lakeformat.maintenance.tag import TagManager
from tests.conftest import id_rows
from tests.s3server import s3_endpoint  # noqa: F401 (fixture)

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])
PK_SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
ZERO = dt.timedelta(0)


# ---------------------------------------------------------------- plan (pure)

def plan(earliest=1, latest=20, times=None, cutoff=10**15, rmin=1, rmax=10**9, limit=10**9,
         consumer=None, pending=None):
    times = times or {i: i * 1000 for i in range(earliest or 0, (latest or 0) + 1)}
    return plan_expiration(earliest=earliest, latest=latest, time_of=times.get, older_than_millis=cutoff,
                           retain_min=rmin, retain_max=rmax, max_deletes=limit,
                           min_consumer_next=consumer, pending_end=pending)


def test_plan_keeps_the_newest_retain_min():
    assert plan(rmin=5) == ExpirePlan(1, 16)          # 16..20 stay
    assert plan(rmin=20) is None and plan(rmin=25) is None


def test_plan_time_retained_stops_at_the_first_young_snapshot():
    assert plan(cutoff=7000) == ExpirePlan(1, 7)       # snapshot 7 is at 7000: not older than the cutoff
    assert plan(cutoff=7001) == ExpirePlan(1, 8)
    times = {i: i * 1000 for i in range(1, 21)}
    times[4] = 99_000                                  # a clock step back later: Paimon stops at 4 anyway
    assert plan(times=times, cutoff=10_000) == ExpirePlan(1, 4)
    assert plan(cutoff=0) is None


def test_plan_beyond_retain_max_expires_whatever_the_time():
    assert plan(cutoff=0, rmax=5) == ExpirePlan(1, 16)
    assert plan(cutoff=3000, rmax=5) == ExpirePlan(1, 16)   # 1..15 beyond max; the time check starts at 16
    assert plan(cutoff=18_000, rmax=5, rmin=1) == ExpirePlan(1, 18)


def test_plan_never_expires_what_a_consumer_needs():
    assert plan(consumer=9) == ExpirePlan(1, 9)
    assert plan(consumer=1) is None
    assert plan(consumer=50, rmin=3) == ExpirePlan(1, 18)


def test_plan_expire_limit_counts_from_the_earliest():
    assert plan(limit=4) == ExpirePlan(1, 5)
    assert plan(earliest=7, limit=4) == ExpirePlan(7, 11)


def test_plan_finishes_an_interrupted_run():
    assert plan(cutoff=0, pending=12) == ExpirePlan(1, 12)     # its own rules would keep everything
    assert plan(limit=3, pending=12) == ExpirePlan(1, 12)
    assert plan(pending=60) == ExpirePlan(1, 20)                # never past the latest
    assert plan(earliest=None, latest=None) is None


@settings(max_examples=300, deadline=None)
@given(earliest=st.integers(1, 30), count=st.integers(1, 40), rmin=st.integers(1, 50),
       rmax_extra=st.integers(0, 50), limit=st.integers(1, 60), cut=st.integers(0, 80),
       consumer=st.one_of(st.none(), st.integers(1, 80)))
def test_plan_obeys_every_rule(earliest, count, rmin, rmax_extra, limit, cut, consumer):
    latest = earliest + count - 1
    rmax = rmin + rmax_extra
    times = {i: i * 1000 for i in range(earliest, latest + 1)}
    p = plan(earliest, latest, times, cut * 1000, rmin, rmax, limit, consumer)
    end = p.end if p else earliest
    assert end <= latest - rmin + 1 or end == earliest            # newest retain_min stay
    assert consumer is None or end <= max(consumer, earliest)     # nothing a consumer needs
    assert end - earliest <= limit                                # at most the limit
    for sid in range(earliest, end):                              # each is beyond max or old
        assert sid <= latest - rmax or times[sid] < cut * 1000
    caps = [latest - rmin + 1, earliest + limit] + ([consumer] if consumer else [])
    if end < min(caps):                                            # stopped early: by a young one
        assert times[end] >= cut * 1000 and end > latest - rmax


def test_tags_relevant_to_a_range():
    tags = [2, 5, 9, 30]
    assert overlapping_tags(tags, 6, 20) == [5, 9]         # nearest at or below begin, then inside
    assert overlapping_tags(tags, 5, 9) == [5]
    assert overlapping_tags(tags, 1, 3) == [2]
    assert overlapping_tags([], 1, 3) == []
    assert previous_tag(tags, 9) == 5 and previous_tag(tags, 10) == 9 and previous_tag(tags, 2) is None


def entry(kind, name, level=0, bucket=0):
    return ManifestEntry(kind, b"p", bucket, 1, DataFileMeta(name, 1, 1, level=level))


def test_released_files_skip_files_moved_up_a_level():
    delta = [entry(DELETE, "a"), entry(DELETE, "b", 0), entry(ADD, "b", 3), entry(ADD, "c"),
             entry(DELETE, "d", bucket=1), entry(ADD, "d", bucket=2)]
    assert [(e.file.file_name, e.bucket) for e in released_files(delta)] == [("a", 0), ("d", 1)]


# ---------------------------------------------------------------- helpers over real tables

rows = partial(id_rows, SCHEMA, p="a")


def ids_of(t: pa.Table) -> list:
    return sorted(t.column("id").to_pylist())


def build_append(catalog, n=24, **options):
    """A partitioned append table: appends, an overwrite every 5th commit, small manifests merged
    often so that expiration has data files, manifests and manifest lists to delete."""
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["p"],
                             options={"manifest.merge-min-count": "3", **options})
    for i in range(n):
        if i % 5 == 4:
            t.write(rows([1000 + i], p="a"), overwrite={"p": "a"})
        else:
            t.write(rows([i], p="ab"[i % 2]))
    return t


def build_pk(catalog, n=24, **options):
    """A primary-key table with changelog files, deletes and compactions (DELETE entries and
    files moved up a level)."""
    t = catalog.create_table("db.k", PK_SCHEMA, primary_keys=["id"], options={
        "bucket": "2", "changelog-producer": "input", "num-sorted-run.compaction-trigger": "2",
        "manifest.merge-min-count": "3", **options})
    for i in range(n):
        if i % 6 == 5:
            t.delete(pa.table({"id": [i - 3]}))
        else:
            t.write(pa.table({"id": [i % 9, 100 + i], "v": [f"v{i}", "x"]}, schema=PK_SCHEMA))
    return t


def history(t) -> dict:
    return {s.id: ids_of(t.read(snapshot_id=s.id)) for s in t.snapshots()}


def files_on_disk(t) -> set:
    """Data, changelog and manifest files under the table (metadata JSON and hidden temps aside)."""
    out = set()
    for root, _dirs, files in os.walk(t.path):
        rel = os.path.relpath(root, t.path)
        if rel.split(os.sep)[0] in ("snapshot", "schema", "tag", "consumer"):
            continue
        out |= {os.path.join(root, f) for f in files if not f.startswith(".")}
    return out


def referenced(t, snaps=None) -> set:
    """Every file the snapshots (default: every snapshot and tag) refer to, computed here from
    the manifests: manifest lists, their manifests, live data files and changelog files."""
    if snaps is None:
        snaps = t.snapshots() + [tag.snapshot for tag in TagManager(t.ctx).list()]
    mdir = Path(t.path, "manifest")
    mlist = ManifestList(t.io, t.path)
    mfile = ManifestFile(t.io, t.path, [f.type for f in t.schema.partition_fields], t.schema.id)
    out = set()
    for s in snaps:
        live = {}
        for kind, name in (("data", s.base_manifest_list), ("data", s.delta_manifest_list),
                           ("changelog", s.changelog_manifest_list)):
            if not name:
                continue
            out.add(str(mdir / name))
            for m in mlist.read(name):
                out.add(str(mdir / m.file_name))
                for e in mfile.read(m.file_name):
                    if kind == "changelog":
                        out.add(os.path.join(t.bucket_dir_of(e.partition, e.bucket), e.file.file_name))
                    elif e.kind == ADD:
                        live[e.identifier] = e
                    else:
                        live.pop(e.identifier, None)
        out |= {os.path.join(t.bucket_dir_of(e.partition, e.bucket), e.file.file_name) for e in live.values()}
    return out


def assert_exactly_referenced(t):
    disk, refs = files_on_disk(t), referenced(t)
    assert not refs - disk, f"referenced files were deleted: {sorted(refs - disk)[:5]}"
    assert not disk - refs, f"files of expired snapshots remain: {sorted(disk - refs)[:5]}"


def assert_retained_read_as_before(t, before: dict):
    for s in t.snapshots():
        assert ids_of(t.read(snapshot_id=s.id)) == before[s.id], f"snapshot {s.id} changed"


# ---------------------------------------------------------------- executor

@pytest.mark.parametrize("build", [build_append, build_pk], ids=["append", "primary-key"])
def test_expired_files_are_gone_and_everything_kept_reads(catalog, build):
    t = build(catalog)
    before = history(t)
    latest = t.latest_snapshot().id
    disk_before = files_on_disk(t)
    r = t.expire_snapshots(retain_min=4, older_than=ZERO, max_deletes=1000)
    assert (r.begin, r.end) == (1, latest - 3) and r.snapshots == latest - 4
    assert [s.id for s in t.snapshots()] == list(range(latest - 3, latest + 1))
    assert r.data_files > 0 and r.manifests > 0 and r.manifest_lists > 0
    if build is build_pk:
        assert r.changelog_files > 0
    assert set(r.paths) - {t.snapshot_manager.path(i) for i in r.expired} == disk_before - files_on_disk(t)
    assert_exactly_referenced(t)
    assert_retained_read_as_before(t, before)
    assert t.snapshot_manager.earliest_id() == latest - 3
    assert Path(t.path, "snapshot", "EARLIEST").read_text() == str(latest - 3)
    assert not [n for n in os.listdir(Path(t.path, "snapshot")) if n.startswith(INTENT_PREFIX)]
    again = t.expire_snapshots(retain_min=4, older_than=ZERO, max_deletes=1000)
    assert again.begin is None and again.summary() == "no snapshot to expire"


def test_changelog_of_kept_snapshots_still_reads(catalog):
    t = build_pk(catalog)
    latest = t.latest_snapshot().id
    expected = t.read_incremental(latest - 3, latest)
    t.expire_snapshots(retain_min=4, older_than=ZERO, max_deletes=1000)
    got = t.read_incremental(latest - 3, latest)
    assert got.sort_by("id").to_pylist() == expected.sort_by("id").to_pylist() and got.num_rows > 0


def test_tags_and_consumers_protect_their_snapshots(catalog):
    t = build_append(catalog, n=30)
    before = history(t)
    t.create_tag("early", 3)
    t.create_tag("mid", 12)
    t.consumers.record("reader", 20)
    r = t.expire_snapshots(retain_min=1, older_than=ZERO, max_deletes=1000)
    assert (r.begin, r.end) == (1, 20)                          # the consumer's next snapshot stays
    assert ids_of(t.read(tag="early")) == before[3] and ids_of(t.read(tag="mid")) == before[12]
    assert_exactly_referenced(t)
    assert_retained_read_as_before(t, before)
    latest = t.latest_snapshot().id
    t.consumers.reset("reader", latest + 1)                     # caught up: no longer holds anything
    r = t.expire_snapshots(retain_min=1, older_than=ZERO, max_deletes=1000)
    assert (r.begin, r.end) == (20, latest)
    assert ids_of(t.read(tag="early")) == before[3] and ids_of(t.read(tag="mid")) == before[12]
    assert ids_of(t.read()) == before[latest]
    assert_exactly_referenced(t)


def test_a_tag_inside_the_range_keeps_its_files_until_deleted(catalog):
    t = build_pk(catalog, n=30)
    before = history(t)
    t.create_tag("v1", 10)
    t.expire_snapshots(retain_min=2, older_than=ZERO, max_deletes=1000)
    assert ids_of(t.read(tag="v1")) == before[10]
    assert_exactly_referenced(t)
    t.delete_tag("v1")                                          # its own files go with it
    assert_exactly_referenced(t)


def test_limit_spreads_the_work_over_runs(catalog):
    t = build_append(catalog, n=20, **{"snapshot.expire.limit": "3"})
    before = history(t)
    ends = []
    while (r := t.expire_snapshots(retain_min=2, older_than=ZERO)).begin is not None:
        assert r.snapshots <= 3
        ends.append(r.end)
        assert_exactly_referenced(t)
        assert_retained_read_as_before(t, before)
    assert t.latest_snapshot().id == 20 and ends == [4, 7, 10, 13, 16, 19]
    assert len(t.snapshots()) == 2


def test_a_backlog_is_cleared_in_bounded_steps_with_progress(catalog):
    """expire_backlog repeats runs of ``step`` snapshots until nothing is due; progress counts
    snapshots against the backlog; the result adds the runs up."""
    t = build_append(catalog, n=20, **{"snapshot.expire.limit": "3", "write-only": "true"})
    before = history(t)
    calls = []
    r = t.expire_backlog(retain_min=2, older_than=ZERO, progress=lambda d, n, what: calls.append((d, n)))
    assert (r.begin, r.end, r.snapshots) == (1, 19, 18)
    assert [d for d, _ in calls] == [3, 6, 9, 12, 15, 18] and {n for _, n in calls} == {18}   # steps of 3
    assert [s.id for s in t.snapshots()] == [19, 20]
    assert_exactly_referenced(t)
    assert_retained_read_as_before(t, before)
    assert r.data_files and len(set(r.paths)) == len(r.paths) and not any(os.path.exists(p) for p in r.paths)


def test_a_backlog_run_stops_at_max_deletes_and_a_dry_run_plans_it_whole(catalog):
    t = build_append(catalog, n=20, **{"write-only": "true"})
    dry = t.expire_backlog(retain_min=2, older_than=ZERO, step=4, dry_run=True)
    assert (dry.begin, dry.end) == (1, 19) and len(t.snapshots()) == 20
    r = t.expire_backlog(retain_min=2, older_than=ZERO, step=4, max_deletes=10)
    assert (r.begin, r.end) == (1, 11) and t.snapshots()[0].id == 11
    assert t.expire_backlog(retain_min=2, older_than=ZERO, step=4).expired == range(11, 19)
    assert t.expire_backlog(retain_min=2, older_than=ZERO).begin is None
    with pytest.raises(LakeformatError, match="step must be a positive integer"):
        t.expire_backlog(step=0)


def test_dry_run_deletes_nothing_and_names_what_a_run_deletes(catalog):
    t = build_append(catalog)
    disk = files_on_disk(t)
    snaps = len(t.snapshots())
    dry = t.expire_snapshots(retain_min=3, older_than=ZERO, max_deletes=1000, dry_run=True)
    assert dry.dry_run and dry.summary().startswith("would expire snapshots 1..")
    assert files_on_disk(t) == disk and len(t.snapshots()) == snaps
    real = t.expire_snapshots(retain_min=3, older_than=ZERO, max_deletes=1000)
    assert set(real.paths) == set(dry.paths) and (real.begin, real.end) == (dry.begin, dry.end)
    assert not any(os.path.exists(p) for p in real.paths)


def test_progress_reports_every_step_up_to_the_total(catalog):
    t = build_pk(catalog)
    calls = []
    r = t.expire_snapshots(retain_min=2, older_than=ZERO, max_deletes=1000,
                           progress=lambda done, total, what: calls.append((done, total, what)))
    dones = [c[0] for c in calls]
    assert dones == sorted(dones) and calls[-1][:2] == (len(r.paths), len(r.paths))
    assert [w for w in dict.fromkeys(c[2] for c in calls)] == \
        ["data files", "changelog files", "manifests", "manifest lists", "snapshots"]


def test_log_says_what_was_deleted(catalog, caplog):
    t = build_append(catalog)
    with caplog.at_level(logging.INFO, logger="lakeformat.maintenance.expire"):
        r = t.expire_snapshots(retain_min=5, older_than=ZERO, max_deletes=1000)
    assert (f"expired snapshots 1..{r.end - 1} of db.t: deleted {r.data_files} data files, 0 changelog "
            f"files, {r.manifests} manifests, {r.manifest_lists} manifest lists") in caplog.text


def test_an_interrupted_run_is_finished_by_the_next_whatever_its_settings(catalog):
    t = build_append(catalog, n=20)
    before = history(t)
    # what a run that was killed right after recording its plan leaves behind
    Path(t.path, "snapshot", f"{INTENT_PREFIX}9").write_text("1")
    r = t.expire_snapshots()                       # defaults: 1 h retained, nothing is that old
    assert (r.begin, r.end) == (1, 9)
    assert_exactly_referenced(t)
    assert_retained_read_as_before(t, before)
    assert not Path(t.path, "snapshot", f"{INTENT_PREFIX}9").exists()
    assert t.expire_snapshots().begin is None


def test_missing_files_of_a_half_done_run_are_fine(catalog):
    t = build_append(catalog)
    dry = t.expire_snapshots(retain_min=3, older_than=ZERO, max_deletes=1000, dry_run=True)
    for p in dry.paths[: len(dry.paths) // 2]:     # data files and some manifests already deleted
        if "/snapshot/" not in p:
            os.remove(p)
    r = t.expire_snapshots(retain_min=3, older_than=ZERO, max_deletes=1000)
    assert (r.begin, r.end) == (dry.begin, dry.end)
    assert_exactly_referenced(t)


# ---------------------------------------------------------------- options

def test_num_retained_min_option(catalog):
    t = build_append(catalog, n=12, **{"snapshot.num-retained.min": "3", "snapshot.time-retained": "1 ms",
                                       "write-only": "true"})
    assert len(t.snapshots()) == 12
    t.expire_snapshots()
    assert len(t.snapshots()) == 3


def test_num_retained_max_option(catalog):
    # snapshots are seconds old and the default time retained is 1 h: only the max expires them
    t = build_append(catalog, n=12, **{"snapshot.num-retained.max": "5", "snapshot.num-retained.min": "2",
                                       "snapshot.expire.limit": "100", "write-only": "true"})
    assert t.expire_snapshots(retain_max=20).begin is None     # an argument beats the option
    t.expire_snapshots()
    assert len(t.snapshots()) == 5


def test_time_retained_option(catalog):
    t = build_append(catalog, n=10, **{"snapshot.time-retained": "1 h", "snapshot.num-retained.min": "1",
                                       "snapshot.expire.limit": "100", "write-only": "true"})
    snaps = t.snapshots()
    k = next(s for a, s in itertools.pairwise(snaps) if s.id >= 5 and a.time_millis < s.time_millis)
    # an hour after snapshot k was committed: everything older than k has been kept an hour
    now = dt.datetime.fromtimestamp((k.time_millis + 3_600_000) / 1000)
    r = t.expire_snapshots(now=now)
    assert r.end == k.id and t.snapshots()[0].id == k.id
    r = t.expire_snapshots(older_than=dt.datetime.fromtimestamp((snaps[-1].time_millis + 1) / 1000))
    assert [s.id for s in t.snapshots()] == [snaps[-1].id]     # a cutoff as a datetime


def test_expire_limit_option(catalog):
    t = build_append(catalog, n=10, **{"snapshot.expire.limit": "4", "snapshot.num-retained.min": "1",
                                       "snapshot.time-retained": "1 ms", "write-only": "true"})
    first = t.snapshots()[0].id
    r = t.expire_snapshots()
    assert (r.begin, r.end) == (first, first + 4)


def test_writers_expire_after_each_commit_unless_write_only(catalog):
    opts = {"snapshot.num-retained.min": "2", "snapshot.time-retained": "1 ms"}
    t = catalog.create_table("db.auto", SCHEMA, options=opts)
    w = catalog.create_table("db.wo", SCHEMA, options={**opts, "write-only": "true"})
    for i in range(6):
        t.write(rows([i]))
        w.write(rows([i]))
        assert len(t.snapshots()) == min(i + 1, 2)
    assert len(w.snapshots()) == 6
    assert ids_of(t.read()) == ids_of(w.read()) == list(range(6))
    assert_exactly_referenced(t)


def test_a_failed_expiration_after_commit_is_logged_not_raised(catalog, caplog):
    t = catalog.create_table("db.t", SCHEMA, options={"snapshot.num-retained.min": "1",
                                                     "snapshot.time-retained": "1 ms"})
    t.write(rows([1]))
    os.makedirs(Path(t.path, "consumer"), exist_ok=True)
    Path(t.path, "consumer", "consumer-broken").write_text('{"nextSnap')   # a reader died mid-write
    with caplog.at_level(logging.WARNING, logger="lakeformat.maintenance.expire"):
        s = t.write(rows([2]))
    assert s is not None and s.id == 2 and ids_of(t.read()) == [1, 2]
    assert "after a commit failed (the commit itself succeeded" in caplog.text
    assert "consumer-broken" in caplog.text
    assert len(t.snapshots()) == 2                       # nothing expired without knowing the consumers


def test_changelog_retention_longer_than_snapshots_is_rejected(catalog):
    for opts in ({"changelog.num-retained.min": "20"}, {"changelog.time-retained": "2 h"},
                 {"snapshot.num-retained.max": "50", "changelog.num-retained.max": "60"}):
        with pytest.raises(OptionError, match="keeps changelogs longer than") as e:
            catalog.create_table("db.c", PK_SCHEMA, primary_keys=["id"], options=opts)
        assert "changelog/ files are not supported" in str(e.value)
    t = catalog.create_table("db.c", PK_SCHEMA, primary_keys=["id"], options={
        "changelog.num-retained.min": "5", "changelog.time-retained": "30 min", "bucket": "1"})
    with pytest.raises(OptionError, match=r"changelog.num-retained.min"):
        t.alter(lf.SetOption("changelog.num-retained.min", "11"))


def test_bad_arguments_name_the_argument(catalog):
    t = build_append(catalog, n=3)
    with pytest.raises(LakeformatError, match="retain_min must be a positive integer"):
        t.expire_snapshots(retain_min=0)
    with pytest.raises(LakeformatError, match=r"retain_min \(5\) is larger than retain_max \(2\)"):
        t.expire_snapshots(retain_min=5, retain_max=2)
    with pytest.raises(LakeformatError, match="max_deletes"):
        t.expire_snapshots(max_deletes=-1)
    with pytest.raises(LakeformatError, match="older_than must be a timedelta"):
        t.expire_snapshots(older_than="1 h")
    assert len(t.snapshots()) == 3


def test_empty_table_has_nothing_to_expire(catalog):
    t = catalog.create_table("db.e", SCHEMA)
    assert t.expire_snapshots(retain_min=1, older_than=ZERO).begin is None


# ---------------------------------------------------------------- object store

def test_expiration_on_s3(s3_endpoint):
    """On an object store the deletes go out in parallel; the result must be the same."""
    import uuid

    import pyarrow.fs as pafs
    from tests.s3server import BUCKET, CREDS

    cat = lf.Catalog(f"s3://{BUCKET}/wh-{uuid.uuid4().hex[:8]}", **{"s3.endpoint": s3_endpoint, **CREDS})
    cat.create_database("db")
    t = build_append(cat, n=12)
    before = history(t)
    t.create_tag("v3", 3)
    r = t.expire_snapshots(retain_min=2, older_than=ZERO, max_deletes=1000)
    assert (r.begin, r.end) == (1, 11) and r.data_files > 0 and r.manifest_lists >= 16   # parallel deletes

    def key(p: str) -> str:   # referenced() joins manifest paths with pathlib: 's3:/bucket/...'
        return re.sub(r"^s3:/+", "", p)
    prefix = key(t.path)
    on_store = {i.path for i in t.io.fs.get_file_info(pafs.FileSelector(prefix, recursive=True))
                if i.type == pafs.FileType.File and not any(f"/{d}/" in i.path[len(prefix):] + "/"
                                                            for d in ("snapshot", "schema", "tag"))}
    assert on_store == {key(p) for p in referenced(t)}
    assert_retained_read_as_before(t, before)
    assert ids_of(t.read(tag="v3")) == before[3]


@pytest.mark.parametrize("options", [{"bucket": "2", "bucket-key": "id"},
                                     {"bucket": "2", "deletion-vectors.enabled": "true"}],
                         ids=["append", "primary-key with deletion vectors"])
def test_a_writer_reading_a_snapshot_that_expiration_removes_reads_the_newest(catalog, monkeypatch, options):
    """The race writers ran into beside a fast expiration (tests/integration/test_maintenance_races):
    a writer reads the latest snapshot's manifests to continue its buckets; another process commits
    and expires that snapshot in between. The writer reads the newest instead of failing."""
    import lakeformat.write.table_write as tw
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
    keys = ["id"] if "deletion-vectors.enabled" in options else []
    t = catalog.create_table("db.t", schema, primary_keys=keys, options=options)
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema))
    other = catalog.get_table("db.t")
    real, raced = tw.live_entries, []

    def racing_live_entries(ctx, snapshot, *args, **kwargs):
        if not raced:   # another writer and an expiration get in between, for real
            raced.append(snapshot.id)
            other.write(pa.table({"id": [3], "v": ["c"]}, schema=schema))
            other.write(pa.table({"id": [4], "v": ["d"]}, schema=schema))
            assert snapshot.id in other.expire_snapshots(retain_min=1, retain_max=1, older_than=dt.timedelta(0)).expired
        return real(ctx, snapshot, *args, **kwargs)

    monkeypatch.setattr(tw, "live_entries", racing_live_entries)
    t.write(pa.table({"id": [5], "v": ["e"]}, schema=schema))
    assert raced and sorted(t.read().column("id").to_pylist()) == [1, 2, 3, 4, 5]
