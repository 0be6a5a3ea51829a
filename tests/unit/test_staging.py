"""Write-audit-publish: stage, read the staged rows, publish exactly once, discard."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.table import staging
from lakeformat.commit.commit import FileStoreCommit
from lakeformat.format.manifest import DataFileMeta, SimpleStats
from lakeformat.format.commit_message import CommitMessage
from tests.conftest import EVENTS, events

ROOT = Path(__file__).resolve().parents[2]
USER = "lakeformat-ingest-t"


@pytest.fixture
def table(catalog):
    return catalog.create_table("db.t", EVENTS, partition_keys=["dt"], options={"bucket": "2", "bucket-key": "user_id"})


def write_messages(t, data):
    w = t.new_write(USER)
    w.write(data)
    return w.prepare_commit()


def stage_rows(t, data, stage_id, *parts):
    return staging.stage(t, write_messages(t, data), stage_id, commit_user=USER,
                    identifier=staging.identifier_for("ingest", "t", *(parts or (stage_id,))))


def files_in(t) -> set[str]:
    root = Path(t.path)
    return {str(p.relative_to(root)) for p in root.rglob("*.parquet")}


def by_id(tab: pa.Table) -> list[dict]:
    return sorted(tab.to_pylist(), key=lambda r: r["user_id"])


def test_stage_audit_publish_makes_rows_visible_once(table):
    data = pa.concat_tables([events(5, "2024-06-01"), events(3, "2024-06-02", start=5)])
    staged = stage_rows(table, data, "ingest-2024-06-01")
    assert staged.row_count == 8 and staged.commit_user == USER
    assert table.latest_snapshot() is None and table.read().num_rows == 0   # nothing visible yet
    assert [s.stage_id for s in staging.list_staged(table)] == ["ingest-2024-06-01"]
    assert by_id(staging.read_staged(table, "ingest-2024-06-01")) == by_id(data)
    assert staging.read_staged(table, "ingest-2024-06-01", columns=["user_id"]).column_names == ["user_id"]
    snap = staging.publish(table, "ingest-2024-06-01")
    assert snap.commit_user == USER and snap.commit_identifier == staged.identifier
    assert by_id(table.read()) == by_id(data)
    assert staging.list_staged(table) == []
    # a retried publish: the same snapshot, no second commit
    again = staging.publish(table, "ingest-2024-06-01")
    assert again.id == snap.id and table.latest_snapshot().id == snap.id
    assert table.read().num_rows == 8
    with pytest.raises(lf.LakeformatError, match="already published as snapshot"):
        staging.discard(table, "ingest-2024-06-01")
    assert table.read().num_rows == 8


def test_rerun_with_same_identifier_never_duplicates_even_with_hash_identifiers(table):
    # identifiers are hashes: a later unit of work may carry a smaller identifier than an earlier
    ids = {d: staging.identifier_for("ingest", "t", d) for d in ("2024-06-01", "2024-06-02", "2024-06-03")}
    order = sorted(ids, key=ids.get, reverse=True)   # publish the largest identifier first
    for d in order:
        stage_rows(table, events(2, d), f"ingest-{d}", d)
        staging.publish(table, f"ingest-{d}")
    first = order[0]
    before = table.read().num_rows
    files_before = files_in(table)
    # the DAG re-runs the first day: new files, same stage id and identifier
    stage_rows(table, events(2, first), f"ingest-{first}", first)
    assert files_in(table) - files_before   # the re-run wrote new files
    snap = staging.publish(table, f"ingest-{first}")
    assert snap.commit_identifier == ids[first]
    assert table.read().num_rows == before   # no duplicate rows
    assert files_in(table) == files_before   # the re-written files were deleted
    assert staging.list_staged(table) == []


def test_crash_after_commit_before_stage_removal_publishes_once_and_keeps_files(table):
    staged = stage_rows(table, events(4, "2024-06-01"), "s1")
    # the commit of a publish that died before removing the stage file
    snap = FileStoreCommit(table.ctx, USER).commit(list(staged.messages), staged.identifier)
    again = staging.publish(table, "s1")
    assert again.id == snap.id and table.latest_snapshot().id == snap.id
    assert table.read().num_rows == 4   # the committed files are still there
    assert staging.list_staged(table) == []


def test_discard_deletes_files_and_stage(table):
    before = files_in(table)
    stage_rows(table, events(6, "2024-06-01"), "bad-day")
    written = files_in(table) - before
    assert written
    assert staging.discard(table, "bad-day") == len(written)
    assert files_in(table) == before
    assert staging.list_staged(table) == [] and table.read().num_rows == 0 and table.latest_snapshot() is None
    with pytest.raises(lf.NotFoundError, match="no staged commit 'bad-day'"):
        staging.publish(table, "bad-day")


def test_discard_count_and_refusal_after_publish(table):
    staged = stage_rows(table, events(6, "2024-06-01"), "s2")
    n_files = len(staged.file_names())
    assert staging.discard(table, "s2") == n_files
    staged = stage_rows(table, events(6, "2024-06-01"), "s3")
    FileStoreCommit(table.ctx, USER).commit(list(staged.messages), staged.identifier)   # published, stage left
    with pytest.raises(lf.LakeformatError, match="already published"):
        staging.discard(table, "s3")
    assert table.read().num_rows == 6   # nothing was deleted


def test_publish_of_a_stage_whose_files_were_removed_commits_nothing(table):
    staged = stage_rows(table, events(3, "2024-06-01"), "s1")
    m = staged.messages[0]
    os.remove(os.path.join(table.bucket_dir_of(m.partition, m.bucket), m.new_files[0].file_name))
    with pytest.raises(lf.CommitError, match=r"cannot be published: its data file .* is missing"):
        staging.publish(table, "s1")
    assert table.latest_snapshot() is None
    assert [s.stage_id for s in staging.list_staged(table)] == ["s1"]   # kept, for the user to discard


def test_stage_ids_are_validated_and_unique(table):
    msgs = write_messages(table, events(1))
    for bad in ["", "../x", "a/b", ".hidden", "x\n", "a b", "a\\b"]:
        with pytest.raises(lf.InvalidNameError):
            staging.stage(table, msgs, bad, commit_user=USER, identifier=1)
        with pytest.raises(lf.InvalidNameError):
            staging.publish(table, bad)
    staging.stage(table, msgs, "once", commit_user=USER, identifier=1)
    with pytest.raises(lf.AlreadyExistsError, match="exists already"):
        staging.stage(table, msgs, "once", commit_user=USER, identifier=2)
    with pytest.raises(lf.LakeformatError, match="identifier"):
        staging.stage(table, msgs, "other", commit_user=USER, identifier=-1)
    with pytest.raises(lf.LakeformatError, match="commit_user"):
        staging.stage(table, msgs, "other", commit_user="", identifier=1)


def test_corrupt_stage_file_is_a_clear_error(table):
    stage_rows(table, events(1), "s1")
    path = Path(table.path) / "staged" / "s1.json"
    path.write_text("{not json")
    with pytest.raises(lf.CorruptFileError, match=r"s1\.json: cannot read staged commit"):
        staging.load_staged(table, "s1")


def test_primary_key_stage_reads_written_rows_with_row_kinds(catalog):
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
    t = catalog.create_table("db.pk", schema, primary_keys=["id"], options={"bucket": "2"})
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=schema))
    w = t.new_write(USER)
    w.write(pa.table({"id": [2, 4], "v": ["B", "d"]}, schema=schema))
    w.write(pa.table({"id": [3], "v": [None]}, schema=schema), row_kind=3)   # a delete
    staging.stage(t, w.prepare_commit(), "pk1", commit_user=USER, identifier=7)
    staged = staging.read_staged(t, "pk1")
    assert staged.column_names == ["id", "v", "_row_kind"]
    assert sorted(staged.to_pylist(), key=lambda r: r["id"]) == [
        {"id": 2, "v": "B", "_row_kind": "+I"}, {"id": 3, "v": None, "_row_kind": "-D"},
        {"id": 4, "v": "d", "_row_kind": "+I"}]
    staging.publish(t, "pk1")
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "v": "a"}, {"id": 2, "v": "B"}, {"id": 4, "v": "d"}]


def test_crash_between_stage_and_publish_leaves_nothing_visible(table):
    code = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(ROOT)!r})
        import lakeformat as lf
        from tests.conftest import events
        t = lf.Catalog({str(Path(table.path).parents[1])!r}).get_table("db.t")
        w = t.new_write("job")
        w.write(events(5, "2024-06-01"))
        staging.stage(t, w.prepare_commit(), "crashy", commit_user="job", identifier=staging.identifier_for("crashy"))
        os._exit(1)   # killed between stage and publish
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    t = lf.Catalog(str(Path(table.path).parents[1])).get_table("db.t")
    assert t.latest_snapshot() is None and t.read().num_rows == 0
    assert [s.stage_id for s in staging.list_staged(t)] == ["crashy"]
    # orphan cleaning keeps a stage's files however old they are
    result = t.remove_orphan_files(older_than=__import__("datetime").timedelta(0), allow_deleting_in_flight_files=True)
    assert result.orphans == ()
    assert staging.publish(t, "crashy").delta_record_count == 5
    assert t.read().num_rows == 5


def test_commit_message_json_round_trips_every_field():
    f = DataFileMeta("data-x-0.parquet", 123, 7, b"\x00\x01", b"\xff", SimpleStats(b"a", b"b", (0, None, 3)),
                     SimpleStats(b"c", b"d", None), 5, 11, 2, 3, ("idx-1",), 1717171717000, 2, b"\x09",
                     1, ("a", "b"), "s3://x/y.parquet", 42, ("a",))
    defaults = DataFileMeta("n", 1, 1)
    import dataclasses
    assert all(getattr(f, x.name) != getattr(defaults, x.name) for x in dataclasses.fields(DataFileMeta)
               if x.name not in ("file_name", "file_size", "row_count"))
    m = CommitMessage(b"\x00\x00\x00\x01", 3, 4, (f,), (f,), (f,), (f,), (f,), (f,))
    assert staging.message_from_json(staging.message_to_json(m)) == m
    import json
    assert staging.message_from_json(json.loads(json.dumps(staging.message_to_json(m)))) == m


def test_identifier_for_is_stable_positive_and_unambiguous():
    a = staging.identifier_for("ingest", "user_behavior", "2024-06-01")
    assert a == staging.identifier_for("ingest", "user_behavior", "2024-06-01")
    assert 0 < a < 2**63 - 1
    assert staging.identifier_for("ab") != staging.identifier_for("a", "b") != staging.identifier_for("a\x1fb")
    assert staging.identifier_for("x", 7) == staging.identifier_for("x", "7")
    # the same value in a fresh interpreter (no per-process hash seed)
    out = subprocess.run([sys.executable, "-c", "from lakeformat.table import staging; print(staging.identifier_for("
                          "'ingest', 'user_behavior', '2024-06-01'))"], capture_output=True, text=True,
                         cwd=ROOT, timeout=60)
    assert int(out.stdout) == a
    with pytest.raises(TypeError):
        staging.identifier_for("x", 1.5)
    with pytest.raises(ValueError):
        staging.identifier_for()


def test_direct_commits_with_hash_identifiers_are_exactly_once(table):
    """The committer's own check must not assume a user's identifiers grow: identifier_for's
    do not, and a re-run of an earlier day would otherwise be committed twice."""
    ids = {d: staging.identifier_for("ingest", "t", d) for d in ("2024-06-01", "2024-06-02")}
    big, small = sorted(ids, key=ids.get, reverse=True)

    def commit(d):
        return table.new_commit(USER).commit(write_messages(table, events(2, d)), ids[d])
    first = commit(big)
    commit(small)
    assert commit(big).id == first.id   # the re-run finds the first commit
    assert table.read().num_rows == 4
