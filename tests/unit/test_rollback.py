"""Rollback to a snapshot or tag: what goes, what must stay, and a kill at every step."""
import os
import shutil
from functools import partial

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.io.fileio import FileIO
from lakeformat.maintenance.references import FileRefs, changelog_refs, snapshot_refs, union
from lakeformat.maintenance.rollback import files_to_delete, plan_rollback
from lakeformat.table.table import Table
from tests.conftest import id_rows
from tests.s3server import BUCKET, CREDS, s3_endpoint  # noqa: F401 (fixture)

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])
PK = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
METADATA_DIRS = {"snapshot", "schema", "tag", "consumer", "changelog"}


rows = partial(id_rows, SCHEMA, dt="a")


def ids(t: pa.Table) -> list:
    return sorted(t.column("id").to_pylist())


def table_files(t) -> set:
    """Every data and manifest file under the table (metadata directories excluded)."""
    out = set()
    for root, dirs, files in os.walk(t.path):
        if root == t.path:
            dirs[:] = [d for d in dirs if d not in METADATA_DIRS]
        out.update(os.path.join(root, f) for f in files if not f.startswith("."))
    return out


def reachable(t) -> set:
    refs = union([snapshot_refs(t.ctx, s) for s in t.snapshots()]
                 + [snapshot_refs(t.ctx, g.snapshot) for g in t.tags.list()])
    return set(refs.paths(t.path))


def expire_snapshot_files(t, upto: int, keep_changelogs: bool = False) -> None:
    """Snapshot expiration as far as these tests need it: the snapshot files go, and the
    manifest lists of snapshots no tag holds (their data files stay: later snapshots use them)."""
    tagged = {g.snapshot.id for g in t.tags.list()}
    for i in range(t.snapshot_manager.earliest_id(), upto + 1):
        s = t.snapshot(i)
        if i not in tagged:
            for name in s.manifest_lists():
                if not (keep_changelogs and name == s.changelog_manifest_list):
                    os.remove(os.path.join(t.path, "manifest", name))
        os.remove(t.snapshot_manager.path(i))
        t.snapshot_manager.forget(i)
    t.snapshot_manager.write_hint("EARLIEST", upto + 1)


def hint(t, name) -> str:
    return open(os.path.join(t.path, "snapshot", name)).read()


@pytest.fixture
def table(catalog):
    """Snapshots: 1 [0] · 2 [0,1] · 3 [0,1,2] · 4 overwrite [10] · 5 [10,11] (partitions a, b)."""
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["dt"])
    t.write(rows([0]))
    t.write(rows([1], dt="b"))
    t.write(rows([2]))
    t.write(rows([10]), overwrite={})
    t.write(rows([11], dt="b"))
    return t


MODEL = {1: [0], 2: [0, 1], 3: [0, 1, 2], 4: [10], 5: [10, 11]}


def test_plan_is_decided_from_ids():
    plan = plan_rollback(5, [3, 4, 5, 6, 7], [2, 6], {"a": 4, "b": 6, "c": 7, "d": 5},
                         {"x": 8, "y": 6, "z": 3})
    assert (plan.snapshots, plan.changelogs, plan.tags, plan.consumers) == ((7, 6), (6,), ("c", "b"), ("x",))
    assert not plan.recreate and plan.earliest == 3
    plan = plan_rollback(2, [4, 5], [], {"t": 2}, {})
    assert plan.recreate and plan.snapshots == (5, 4) and plan.tags == () and plan.earliest == 2


def test_files_to_delete_keeps_what_anything_kept_uses():
    removed = FileRefs(frozenset({"l3", "l4"}), frozenset({"m1", "m2"}), frozenset({"/d/1", "/d/2"}))
    kept = FileRefs(frozenset({"l1"}), frozenset({"m1"}), frozenset({"/d/1"}))
    assert files_to_delete(removed, kept) == FileRefs(frozenset({"l3", "l4"}), frozenset({"m2"}),
                                                      frozenset({"/d/2"}))


def test_rollback_to_a_snapshot(table):
    result = table.rollback_to(3)
    assert result.snapshot.id == 3 and result.deleted_snapshots == (5, 4) and not result.recreated
    assert [s.id for s in table.snapshots()] == [1, 2, 3] and hint(table, "LATEST") == "3"
    assert ids(table.read()) == [0, 1, 2]
    assert table_files(table) == reachable(table)          # newer files gone, every kept one there
    assert result.deleted_files > 0
    table.write(rows([20]))                                 # the table goes on from snapshot 3
    assert table.latest_snapshot().id == 4 and ids(table.read()) == [0, 1, 2, 20]
    assert ids(table.read(snapshot_id=1)) == [0]


def test_rollback_to_latest_changes_nothing(table):
    before = table_files(table)
    assert table.rollback_to(5).deleted_files == 0
    assert table_files(table) == before and ids(table.read()) == [10, 11]


def test_rollback_with_tags_present(table):
    for name, sid in (("one", 1), ("three", 3), ("four", 4), ("five", 5), ("five-b", 5)):
        table.create_tag(name, sid)
    result = table.rollback_to("three")
    assert result.deleted_tags == ("five", "five-b", "four")
    assert table.tags.names() == ["one", "three"] and table.latest_snapshot().id == 3
    assert ids(table.read(tag="one")) == [0] and ids(table.read(tag="three")) == [0, 1, 2]
    assert table_files(table) == reachable(table)


def test_rollback_keeps_files_a_newer_compaction_reused(catalog):
    """A full compaction re-adds files it only moves to another level: those ADD entries of a
    removed snapshot name files the kept snapshot still reads."""
    t = catalog.create_table("db.pk", PK, primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=PK))
    t.compact(full=True)                                     # snapshot 2: file moves to the top level
    t.write(pa.table({"id": [2, 3], "v": ["B", "c"]}, schema=PK))
    t.compact(full=True)
    t.rollback_to(2)
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]
    assert table_files(t) == reachable(t)


def test_rollback_to_a_tag_whose_snapshot_expired(table):
    table.create_tag("two", 2)
    table.create_tag("three", 3)            # expired too, and newer than the target: goes
    expire_snapshot_files(table, 3)
    assert [s.id for s in table.snapshots()] == [4, 5]
    result = table.rollback_to("two")
    assert result.recreated and result.deleted_snapshots == (5, 4) and result.deleted_tags == ("three",)
    assert [s.id for s in table.snapshots()] == [2]
    assert hint(table, "EARLIEST") == "2" and hint(table, "LATEST") == "2"
    assert table.snapshot_manager.earliest_id() == 2 and ids(table.read()) == [0, 1]
    assert table_files(table) == reachable(table)
    table.write(rows([5]))
    assert table.latest_snapshot().id == 3 and ids(table.read()) == [0, 1, 5]


def test_rollback_resets_consumers_past_the_new_end(table):
    table.consumers.record("ahead", 6)
    table.consumers.record("behind", 2)
    assert table.rollback_to(3).reset_consumers == ("ahead",)
    assert table.consumers.list() == {"ahead": 4, "behind": 2}
    table.write(rows([30]))
    assert ids(table.read_incremental(consumer_id="ahead")) == [30]


@pytest.mark.parametrize("target, error, match", [
    (9, lf.NotFoundError, r"snapshot 9: .*\(snapshots 1..5\)"),
    ("9", lf.NotFoundError, "snapshot 9"),
    ("nope", lf.NotFoundError, "tag 'nope'"),
    ("../x", lf.InvalidNameError, "tag"),
    (True, lf.LakeformatError, "snapshot id or a tag name"),
    (None, lf.LakeformatError, "snapshot id or a tag name"),
])
def test_bad_targets_change_nothing(table, target, error, match):
    before = table_files(table)
    with pytest.raises(error, match=match):
        table.rollback_to(target)
    assert [s.id for s in table.snapshots()] == [1, 2, 3, 4, 5] and table_files(table) == before


def test_rollback_to_an_expired_snapshot_id_needs_a_tag(table):
    expire_snapshot_files(table, 2)
    with pytest.raises(lf.NotFoundError, match="roll back to a tag"):
        table.rollback_to(1)


class KilledAt(Exception):
    pass


class DyingIO(FileIO):
    """The real local FileIO, except that the process "dies" before its n-th change."""

    def __init__(self, base: FileIO, die_at: int):
        super().__init__(base.fs, base.scheme, base.options)
        self.die_at, self.changes = die_at, 0

    def _change(self):
        self.changes += 1
        if self.changes == self.die_at:
            raise KilledAt()

    def delete(self, path):
        self._change()
        super().delete(path)

    def write_bytes(self, path, data):
        self._change()
        super().write_bytes(path, data)

    def try_create(self, path, data):
        self._change()
        return super().try_create(path, data)


@pytest.mark.parametrize("expired", [False, True])
def test_a_kill_at_any_step_leaves_a_readable_table_and_a_rerun_finishes(catalog, table, tmp_path, expired):
    table.create_tag("two", 2)
    table.create_tag("four", 4)
    table.consumers.record("c", 6)
    if expired:
        expire_snapshot_files(table, 2)
    pristine = tmp_path / "pristine"
    shutil.copytree(table.path, pristine)
    die_at = 1
    while True:
        shutil.rmtree(table.path)
        shutil.copytree(pristine, table.path)
        io = DyingIO(table.io, die_at)
        try:
            Table(io, table.path, table.name).rollback_to("two")
            break                                       # no kill left to try: all steps covered
        except KilledAt:
            pass
        after = catalog.get_table("db.t")
        latest = after.latest_snapshot()
        assert ids(after.read()) == MODEL[latest.id], f"killed at change {die_at}"
        after.rollback_to("two")                        # the rerun finishes the job
        assert [s.id for s in after.snapshots()] == ([2] if expired else [1, 2])
        assert ids(after.read()) == [0, 1] and after.tags.names() == ["two"]
        assert reachable(after) <= table_files(after), f"killed at change {die_at}: a kept file is gone"
        die_at += 1
    # snapshots, hints, tags, consumer and files: every step had its kill
    assert io.changes >= 10 and die_at == io.changes + 1, (io.changes, die_at)


def test_dry_run_reports_and_changes_nothing(table):
    table.create_tag("five", 5)
    before = table_files(table)
    plan = table.rollback_to(3, dry_run=True)
    assert plan.dry_run and plan.deleted_snapshots == (5, 4) and plan.deleted_tags == ("five",)
    assert table_files(table) == before and table.latest_snapshot().id == 5 and table.tags.names() == ["five"]
    done = table.rollback_to(3)
    assert set(done.paths) == set(plan.paths) == before - table_files(table)


def test_partition_directories_only_newer_snapshots_made_are_removed(table):
    table.write(rows([40], dt="c"))
    part = os.path.join(table.path, "dt=c")
    assert os.path.isdir(part)
    calls = []
    table.rollback_to(5, progress=lambda done, total, what: calls.append((done, total, what)))
    assert not os.path.exists(part) and os.path.isdir(os.path.join(table.path, "dt=a"))
    assert calls and calls[-1][0] == calls[-1][1] and calls[-1][2] == "files"


def test_a_commit_during_the_rollback_stops_it_before_any_file_goes(catalog, table):
    class CommitsMeanwhile(FileIO):
        """A writer commits right after the rollback has written the EARLIEST hint."""

        def write_bytes(self, path, data):
            super().write_bytes(path, data)
            if path.endswith("/EARLIEST"):
                catalog.get_table("db.t").write(rows([77]))

    io = CommitsMeanwhile(table.io.fs, table.io.scheme, table.io.options)
    with pytest.raises(lf.LakeformatError, match=r"committed during the rollback .* no files were deleted"):
        Table(io, table.path, table.name).rollback_to(2)
    after = catalog.get_table("db.t")
    assert after.latest_snapshot().id == 3 and ids(after.read()) == [0, 1, 77]
    assert reachable(after) <= table_files(after)


def test_rollback_and_tags_on_s3(s3_endpoint):
    import uuid
    cat = lf.Catalog(f"s3://{BUCKET}/wh-{uuid.uuid4().hex[:8]}", **{"s3.endpoint": s3_endpoint, **CREDS})
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, partition_keys=["dt"])
    for i, d in enumerate("abc"):
        t.write(rows([i], dt=d))
    t.create_tag("one", 1)
    t.create_tag("three", 3)
    t.consumers.record("c", 4)
    assert t.consumers.list() == {"c": 4}
    result = t.rollback_to("one")
    assert result.deleted_tags == ("three",) and result.deleted_files > 0
    assert ids(t.read()) == [0] and [s.id for s in t.snapshots()] == [1] and t.consumers.get("c") == 2
    assert t.tags.names() == ["one"]
    assert all(t.io.exists(p) for p in snapshot_refs(t.ctx, t.latest_snapshot()).paths(t.path))
    assert not any(t.io.exists(p) for p in result.paths)


def test_rollback_deletes_long_lived_changelogs_past_the_target(catalog):
    t = catalog.create_table("db.cl", PK, primary_keys=["id"], options={"bucket": "1", "changelog-producer": "input"})
    for i in range(4):
        t.write(pa.table({"id": [i], "v": [f"v{i}"]}, schema=PK))
    t.create_tag("one", 1)
    os.makedirs(os.path.join(t.path, "changelog"))
    for i in (1, 2):     # changelog retention outlives snapshots 1 and 2, which expire
        with open(os.path.join(t.path, "changelog", f"changelog-{i}"), "w") as f:
            f.write(t.snapshot(i).to_json())
    log2 = set(changelog_refs(t.ctx, t.snapshot(2)).paths(t.path))
    expire_snapshot_files(t, 2, keep_changelogs=True)
    tagged = set(snapshot_refs(t.ctx, t.tags.get("one").snapshot).paths(t.path))
    gone = (set(snapshot_refs(t.ctx, t.snapshot(3)).paths(t.path)) | log2) - tagged
    result = t.rollback_to("one")
    assert sorted(os.listdir(os.path.join(t.path, "changelog"))) == ["changelog-1"]
    assert [s.id for s in t.snapshots()] == [1] and t.read().to_pylist() == [{"id": 0, "v": "v0"}]
    assert gone <= set(result.paths) and not any(os.path.exists(p) for p in result.paths)
    assert reachable(t) <= table_files(t)
