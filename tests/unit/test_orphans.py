"""Orphan file removal: only unreachable files older than the threshold go; everything a
snapshot, tag or staged commit reaches survives; unreadable metadata stops the run."""
from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path

import pytest

import lakeformat as lf
from lakeformat.table import staging
from lakeformat.io.manifests import ManifestFile
from lakeformat.commit.commit import data_entries
from tests.conftest import events
from tests.s3server import s3_endpoint  # noqa: F401 (fixture)

DAY = dt.timedelta(days=1)


def age(path: Path, days: float = 2) -> None:
    old = time.time() - days * 86400
    os.utime(path, (old, old))


def all_files(t) -> set[str]:
    root = Path(t.path)
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def age_all(t, days: float = 2) -> None:
    for p in Path(t.path).rglob("*"):
        if p.is_file():
            age(p, days)


def crashed_write(t, data) -> set[str]:
    """Files a writer wrote and never committed (it died after prepare_commit)."""
    before = all_files(t)
    w = t.new_write()
    w.write(data)
    w.prepare_commit()
    return all_files(t) - before


def by_id(tab):
    return sorted(tab.to_pylist(), key=lambda r: r["user_id"])


@pytest.fixture
def table(catalog):
    return catalog.create_table("db.t", events(0).schema, partition_keys=["dt"],
                                options={"bucket": "2", "bucket-key": "user_id"})


def test_old_leftovers_go_fresh_ones_stay(table):
    table.write(events(10, "2024-01-01"))
    old = crashed_write(table, events(5, "2024-01-01", start=100))
    for f in old:
        age(Path(table.path) / f)
    fresh = crashed_write(table, events(5, "2024-01-01", start=200))
    before = all_files(table)
    progress = []
    result = table.remove_orphan_files(progress=lambda *a: progress.append(a))
    assert sorted(Path(p).name for p in result.orphans) == sorted(Path(f).name for f in old)
    assert result.deleted == len(old) and result.deleted_bytes == result.orphan_bytes > 0
    assert result.too_young == len(fresh)
    assert all_files(table) == before - old
    assert progress[-1] == (len(old), len(old), "orphan files deleted")
    assert table.read().num_rows == 10


def test_dry_run_deletes_nothing(table):
    table.write(events(3, "2024-01-01"))
    left = crashed_write(table, events(3, "2024-01-02", start=10))
    age_all(table)
    before = all_files(table)
    result = table.remove_orphan_files(dry_run=True)
    assert sorted(Path(p).name for p in result.orphans) == sorted(Path(f).name for f in left)
    assert result.deleted == 0 and result.deleted_bytes == 0 and result.orphan_bytes > 0 and result.dry_run
    assert result.dirs_removed == 0
    assert all_files(table) == before


def test_everything_snapshots_tags_and_stages_reach_survives(table):
    table.write(events(4, "2024-01-01"))                     # snapshot 1
    table.create_tag("first", 1)
    table.write(events(4, "2024-01-02", start=10))           # snapshot 2
    table.write(events(2, "2024-01-01", start=50), overwrite=True)   # 3: day 1's files no longer live
    table.write(events(3, "2024-01-03", start=60))           # 4
    table.expire_snapshots(retain_min=2, retain_max=2, older_than=dt.timedelta(0))   # 1 and 2 go; the tag keeps 1
    assert [s.id for s in table.snapshots()] == [3, 4]
    w = table.new_write("stager")
    w.write(events(5, "2024-01-04", start=80))
    staging.stage(table, w.prepare_commit(), "audit-me", commit_user="stager", identifier=staging.identifier_for("x"))
    expected = {sid: by_id(table.read(snapshot_id=sid)) for sid in (3, 4)}
    tagged = by_id(table.read(tag="first"))
    staged_rows = by_id(staging.read_staged(table, "audit-me"))
    # leftovers of every kind: a crashed writer's files (one in a partition nothing else uses),
    # a manifest of a failed commit, a temp file of a crashed metadata write
    left = crashed_write(table, events(3, "2024-01-09", start=900))
    left |= crashed_write(table, events(3, "2024-01-03", start=950))
    mfile = ManifestFile(table.io, table.path, [f.type for f in table.schema.partition_fields], table.schema.id)
    w2 = table.new_write()
    w2.write(events(1, "2024-01-03", start=990))
    msgs = w2.prepare_commit()
    left |= {f for f in all_files(table) if Path(f).name in {f.file_name for m in msgs for f in m.new_files}}
    left |= {f"manifest/{m.file_name}" for m in mfile.write(data_entries(msgs))}
    Path(table.path, "snapshot", ".snapshot-5.0123abcd.tmp").write_bytes(b"{half")
    left.add("snapshot/.snapshot-5.0123abcd.tmp")
    age_all(table)   # everything is old now: only reachability protects a file
    before = all_files(table)

    result = table.remove_orphan_files()
    assert sorted(result.orphans) == sorted(str(Path(table.path) / f) for f in left)
    assert all_files(table) == before - left
    assert not Path(table.path, "dt=2024-01-09").exists()   # emptied partition directory removed
    assert result.dirs_removed == 3   # two bucket directories and their partition directory
    for sid, rows in expected.items():
        assert by_id(table.read(snapshot_id=sid)) == rows
    assert by_id(table.read(tag="first")) == tagged
    assert by_id(staging.read_staged(table, "audit-me")) == staged_rows
    staging.publish(table, "audit-me")
    assert table.read().num_rows == len(expected[4]) + 5
    # a second run finds nothing
    assert table.remove_orphan_files().orphans == ()


def test_unreadable_metadata_refuses_to_delete_anything(table):
    table.write(events(3, "2024-01-01"))
    table.write(events(3, "2024-01-02", start=10))
    crashed_write(table, events(3, "2024-01-03", start=20))
    age_all(table)
    before = all_files(table)
    snap = table.snapshot(1)
    manifest_list = Path(table.path, "manifest", snap.delta_manifest_list)
    good = manifest_list.read_bytes()
    manifest_list.write_bytes(b"garbage")
    with pytest.raises(lf.LakeformatError, match=r"refusing to remove orphan files.*"
                       + snap.delta_manifest_list + r".*snapshot 1.*Nothing was deleted"):
        table.remove_orphan_files()
    assert all_files(table) == before
    manifest_list.write_bytes(good)
    Path(table.path, "tag").mkdir(exist_ok=True)
    Path(table.path, "tag", "tag-broken").write_text("{")
    with pytest.raises(lf.LakeformatError, match="tag-broken cannot be read"):
        table.remove_orphan_files()
    os.remove(Path(table.path, "tag", "tag-broken"))
    Path(table.path, "staged").mkdir(exist_ok=True)
    Path(table.path, "staged", "s1.json").write_text("nope")
    with pytest.raises(lf.LakeformatError, match="staged commit cannot be read"):
        table.remove_orphan_files()
    assert all_files(table) == before | {"staged/s1.json"}


def test_threshold_is_modification_time(table):
    table.write(events(3, "2024-01-01"))
    left = crashed_write(table, events(3, "2024-01-01", start=10))
    for f in left:
        age(Path(table.path) / f, days=0.5)
    assert table.remove_orphan_files().orphans == ()                       # 12 h < 1 day
    assert len(table.remove_orphan_files(older_than=dt.timedelta(hours=6),
                                         allow_deleting_in_flight_files=True).orphans) == len(left)
    with pytest.raises(lf.LakeformatError, match="older_than"):
        table.remove_orphan_files(older_than=-DAY)


def test_unpartitioned_and_primary_key_tables(catalog):
    import pyarrow as pa
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
    t = catalog.create_table("db.pk", schema, primary_keys=["id"],
                             options={"bucket": "1", "changelog-producer": "input"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema))
    t.write(pa.table({"id": [2, 3], "v": ["B", "c"]}, schema=schema))
    t.compact(full=True)
    changelog = t.read_incremental(0)
    rows = t.read().to_pylist()
    before = all_files(t)
    w = t.new_write()
    w.write(pa.table({"id": [9], "v": ["z"]}, schema=schema))
    w.prepare_commit()   # data and changelog files of a writer that never committed
    left = all_files(t) - before
    assert len(left) == 2
    age_all(t)
    result = t.remove_orphan_files()
    assert {Path(p).name for p in result.orphans} == {Path(f).name for f in left}
    assert t.read().to_pylist() == rows
    assert t.read_incremental(0).to_pylist() == changelog.to_pylist()   # changelog files survive


def test_on_s3_orphans_go_reachable_and_staged_files_stay(s3_endpoint):
    import uuid
    from tests.s3server import BUCKET, CREDS
    cat = lf.Catalog(f"s3://{BUCKET}/wh-{uuid.uuid4().hex[:8]}", **{"s3.endpoint": s3_endpoint, **CREDS})
    cat.create_database("db")
    t = cat.create_table("db.t", events(0).schema, partition_keys=["dt"],
                         options={"bucket": "2", "bucket-key": "user_id"})
    t.write(events(6, "2024-01-01"))
    t.write(events(6, "2024-01-02", start=10))
    assert t.expire_partitions(expiration_time="1 d", now=dt.datetime(2024, 1, 2, 12)) == [{"dt": "2024-01-01"}]
    w = t.new_write()
    w.write(events(4, "2024-01-02", start=100))
    crashed = {f.file_name for m in w.prepare_commit() for f in m.new_files}
    s = t.new_write("stager")
    s.write(events(4, "2024-01-03", start=200))
    staging.stage(t, s.prepare_commit(), "s1", commit_user="stager", identifier=7)
    rows = by_id(t.read())
    assert t.remove_orphan_files().orphans == ()   # object times are now: a day has not passed
    result = t.remove_orphan_files(older_than=dt.timedelta(0), allow_deleting_in_flight_files=True)
    assert {p.rsplit("/", 1)[-1] for p in result.orphans} == crashed and result.deleted == len(crashed)
    assert by_id(t.read()) == rows
    assert by_id(t.read(snapshot_id=2))[0]["dt"] == "2024-01-01"   # the expired partition, by time travel
    staging.publish(t, "s1")
    assert len(t.read().to_pylist()) == len(rows) + 4


def test_a_stage_made_while_the_run_reads_protects_its_files(table):
    table.write(events(3, "2024-01-01"))
    w = table.new_write("late")
    w.write(events(3, "2024-01-02", start=10))
    msgs = w.prepare_commit()
    age_all(table)   # the staged files are old: only the stage that appears mid-run protects them
    made = []

    def progress(done, total, what):   # runs after stages were listed, before anything is deleted
        if not made:
            made.append(staging.stage(table, msgs, "late", commit_user="late", identifier=1))
    result = table.remove_orphan_files(progress=progress)
    assert made and result.orphans == ()
    staging.publish(table, "late")
    assert table.read().num_rows == 6


def test_old_empty_bucket_directories_go_fresh_ones_stay(table):
    table.write(events(3, "2024-01-01"))
    old_dir = Path(table.path, "dt=2023-12-31", "bucket-0")
    new_dir = Path(table.path, "dt=2024-01-02", "bucket-1")
    old_dir.mkdir(parents=True)
    new_dir.mkdir(parents=True)
    age(old_dir)
    assert table.remove_orphan_files(dry_run=True).dirs_removed == 0 and old_dir.exists()
    result = table.remove_orphan_files()
    assert result.dirs_removed == 2   # the bucket directory and its partition directory
    assert not old_dir.parent.exists() and new_dir.exists()
    assert table.read().num_rows == 3


def test_a_tag_whose_manifests_are_gone_stops_the_run(table):
    table.write(events(3, "2024-01-01"))
    table.create_tag("first", 1)
    table.write(events(3, "2024-01-01", start=10), overwrite=True)
    table.expire_snapshots(retain_min=1, retain_max=1, older_than=dt.timedelta(0))   # only the tag holds 1
    crashed_write(table, events(1, "2024-01-02"))
    age_all(table)
    os.remove(Path(table.path, "manifest", table.tags.get("first").snapshot.base_manifest_list))
    before = all_files(table)
    with pytest.raises(lf.LakeformatError, match=r"named by tag file tag-first \(snapshot 1\)"):
        table.remove_orphan_files()
    assert all_files(table) == before


def test_files_a_crashed_spark_driver_left_go_when_old(table):
    table.write(events(10, "2024-01-01"))
    old_dir = Path(table.path) / "_spark-staging-crashed" / "__lakeformat_p0=2024-01-01"
    young_dir = Path(table.path) / "_spark-compact-running"
    old_dir.mkdir(parents=True)
    young_dir.mkdir()
    (old_dir / "part-00000.parquet").write_bytes(b"PAR1")
    (young_dir / "3-0").write_bytes(b"result")
    for p in (old_dir / "part-00000.parquet", old_dir, old_dir.parent):
        age(p)
    result = table.remove_orphan_files()
    assert [Path(p).name for p in result.orphans] == ["part-00000.parquet"] and result.too_young == 1
    assert not old_dir.parent.exists() and (young_dir / "3-0").exists()
    assert table.read().num_rows == 10


# ---------------------------------------------------------------- writes in flight

def test_an_age_limit_under_a_day_is_refused_without_the_override(table, capsys, catalog):
    """older_than=0 would delete the files of every write in flight: refused, nothing deleted,
    unless the caller names the risk. A dry run only lists, so it needs no override."""
    table.write(events(10, "2024-01-01"))
    leftover = crashed_write(table, events(5, "2024-01-01", start=100))
    before = all_files(table)
    with pytest.raises(lf.LakeformatError, match="allow_deleting_in_flight_files"):
        table.remove_orphan_files(older_than=dt.timedelta(0))
    with pytest.raises(lf.LakeformatError, match="in flight"):
        table.remove_orphan_files(older_than=dt.timedelta(hours=23))
    assert all_files(table) == before
    assert len(table.remove_orphan_files(older_than=dt.timedelta(0), dry_run=True).orphans) == len(leftover)
    from tests.conftest import run_cli
    code, _, err = run_cli(capsys, "--warehouse", catalog.warehouse, "remove-orphan-files", "db.t", "--older-than",
                           "1 h")
    assert code != 0 and "--allow-deleting-in-flight-files" in err
    assert all_files(table) == before
    result = table.remove_orphan_files(older_than=dt.timedelta(0), allow_deleting_in_flight_files=True)
    assert {Path(p).name for p in result.orphans} == {Path(f).name for f in leftover}
    assert by_id(table.read()) == by_id(events(10, "2024-01-01"))


def test_a_commit_whose_files_were_removed_fails_and_publishes_no_hole(table):
    """The writer's files go while it prepares its commit: the commit checks them just before
    publishing and fails, naming a missing file; the table stays at its last snapshot."""
    table.write(events(10, "2024-01-01"))
    w = table.new_write("writer")
    w.write(events(5, "2024-01-01", start=100))
    messages = w.prepare_commit()
    table.remove_orphan_files(older_than=dt.timedelta(0), allow_deleting_in_flight_files=True)
    before = all_files(table)
    commit = table.new_commit("writer")
    with pytest.raises(lf.CommitError, match=r"does not exist.*Nothing was committed"):
        commit.commit(messages, identifier=1)
    assert [s.id for s in table.snapshots()] == [1]
    assert by_id(table.read()) == by_id(events(10, "2024-01-01"))
    assert all_files(table) == before   # the manifests the failed attempt wrote are gone again


def test_files_committed_while_orphan_removal_waits_are_moved_back(table, monkeypatch):
    """A commit that checked its files just before orphan removal moved them aside and published
    during the grace: the files it names come back; only true leftovers are deleted."""
    from lakeformat.commit.commit import FileStoreCommit
    from lakeformat.maintenance import orphans

    table.write(events(10, "2024-01-01"))
    leftover = crashed_write(table, events(3, "2024-01-02", start=200))
    w = table.new_write("writer")
    w.write(events(5, "2024-01-01", start=100))
    messages = w.prepare_commit()
    committed = []

    def commit_during_grace(seconds):
        with monkeypatch.context() as m:   # it checked its files just before they were moved
            m.setattr(FileStoreCommit, "_check_files_exist", lambda *a: None)
            committed.append(table.new_commit("writer").commit(messages, identifier=1))
    monkeypatch.setattr(orphans.time, "sleep", commit_during_grace)
    result = table.remove_orphan_files(older_than=dt.timedelta(0), allow_deleting_in_flight_files=True)
    assert committed and committed[0].id == 2
    assert {Path(p).name for p in result.orphans} == {Path(f).name for f in leftover}
    assert by_id(table.read()) == by_id(pa_concat(events(10, "2024-01-01"), events(5, "2024-01-01", start=100)))
    assert not [f for f in all_files(table) if f.endswith(".orphan.tmp")]


def pa_concat(*tables):
    import pyarrow as pa
    return pa.concat_tables(tables)
