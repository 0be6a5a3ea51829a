"""Write-audit-publish steps around the ingest job (lakeformat.wap), without Airflow or Spark."""
import os

import pyarrow as pa
import pytest

from lakeformat.table import staging
from lakeformat.pipeline.quality import parse_expectations
from lakeformat.pipeline.wap import audit_stage, clear_leftover
from tests.conftest import events

RULES = parse_expectations([{"expect_column_values_to_be_between": {"column": "price", "min_value": 0}},
                            {"expect_column_values_to_be_in_set": {"column": "behavior",
                                                                   "value_set": ["pv", "buy", "cart"]}}])
USER, IDENT = "lakeformat-ingest-events", staging.identifier_for("ingest", "events", "2024-01-01")


@pytest.fixture
def table(catalog):
    return catalog.create_table("db.events", events(0).schema, partition_keys=["dt"],
                                options={"bucket": "2", "bucket-key": "user_id", "write-only": "true"})


def stage(table, data, stage_id="s1"):
    w = table.new_write(commit_user=USER)
    w.write(data)
    return staging.stage(table, w.prepare_commit(), stage_id, commit_user=USER, identifier=IDENT)


def files_on_disk(table):
    return {f for _, _, fs in os.walk(table.path) for f in fs if f.startswith("data-")}


def test_passing_audit_keeps_the_stage(table):
    stage(table, events(50))
    outcome = audit_stage(table, "s1", RULES, "db.events 2024-01-01")
    assert outcome.report.success and outcome.discarded_files is None
    assert outcome.as_dict()["summary"] == "db.events 2024-01-01: all 2 expectations passed on 50 rows"
    assert [s.stage_id for s in staging.list_staged(table)] == ["s1"]


def test_failed_audit_discards_every_staged_file(table):
    bad = events(40)
    bad = bad.set_column(2, "price", pa.array([(-1.0 if i % 10 == 0 else 1.0) for i in range(40)]))
    stage(table, bad)
    assert files_on_disk(table)
    outcome = audit_stage(table, "s1", RULES, "db.events 2024-01-01")
    d = outcome.as_dict()
    assert not d["success"] and d["discarded_files"] == 2
    assert d["failed"] == [{"expectation": "expect_column_values_to_be_between(column='price', min_value=0)",
                            "unexpected": 4, "of": 40, "samples": [-1.0] * 4, "error": None}]
    assert staging.list_staged(table) == [] and files_on_disk(table) == set()
    assert table.latest_snapshot() is None


def test_clear_leftover_discards_an_unpublished_stage(table):
    assert clear_leftover(table, "s1") is None
    stage(table, events(10))
    assert "discarded stage s1" in clear_leftover(table, "s1")
    assert staging.list_staged(table) == [] and files_on_disk(table) == set()
    stage(table, events(10))                                   # the id is free again


def test_clear_leftover_finishes_a_stage_committed_before_a_crash(table):
    """The commit happened but the stage file stayed (a crash inside publish): finishing the
    publish must not commit the rows a second time, nor delete the committed files."""
    staged = stage(table, events(10))
    table.new_commit(USER).commit(list(staged.messages), IDENT)    # what publish did before it crashed
    assert "finished its publish" in clear_leftover(table, "s1")
    assert staging.list_staged(table) == []
    assert table.read().num_rows == 10 and len(table.snapshots()) == 1
    assert files_on_disk(table) == {f["file_name"] for f in table.files()}


def test_stage_history_keeps_each_audit_after_publish_and_discard(table):
    """The audit is recorded beside the stage: a published stage keeps its (green) audit, a
    discarded one its failing expectations, though its stage file and data files are gone."""
    from lakeformat.commit.stage_log import stage_history
    assert stage_history(table.ctx) == []
    stage(table, events(30), "day-1")
    audit_stage(table, "day-1", RULES, "db.events day-1")
    snap = staging.publish(table, "day-1")
    bad = events(20).set_column(2, "price", pa.array([-5.0] * 20))
    stage(table, bad, "day-2")
    audit_stage(table, "day-2", RULES, "db.events day-2")
    stage(table, events(5), "day-3")                           # staged, not audited yet
    by_id = {r.stage_id: r for r in stage_history(table.ctx)}
    assert [r.stage_id for r in stage_history(table.ctx)] == ["day-3", "day-2", "day-1"]   # newest first
    assert by_id["day-1"].state == "published" and by_id["day-1"].snapshot_id == snap.id
    assert by_id["day-1"].audit_passed is True and by_id["day-1"].audit["rows"] == 30
    d2 = by_id["day-2"]
    assert d2.state == "discarded" and d2.audit_passed is False and d2.audit["discarded_files"] >= 1
    assert [f["expectation"] for f in d2.audit["failed"]] == [
        "expect_column_values_to_be_between(column='price', min_value=0)"]
    assert d2.audit["failed"][0]["unexpected"] == 20
    d3 = by_id["day-3"]
    assert d3.state == "pending" and d3.rows == 5 and d3.files >= 1 and d3.audit is None
    assert [s.stage_id for s in staging.list_staged(table)] == ["day-3"]   # audit records are not stages
    # every stage has its row count: the pending stage's, the published marker's, the audit's
    assert [(r.stage_id, r.rows) for r in stage_history(table)] == [("day-3", 5), ("day-2", 20), ("day-1", 30)]
    stage(table, events(7), "day-4")
    staging.publish(table, "day-4")                            # published without an audit
    assert {r.stage_id: r.rows for r in stage_history(table)}["day-4"] == 7
