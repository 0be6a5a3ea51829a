"""The Lakehouse page's table view without Airflow: the pure decisions (history totals, the
compaction trigger, cells, the SVG chart) and the rendered page of real tables, hostile names
and values escaped, staged commits with their audits."""
import datetime as dt
import re

import pyarrow as pa
import pytest
from fastapi.testclient import TestClient

import lakeformat as lf
from lakeformat.table import staging
from lakeformat.format import options as O
from lakeformat.pipeline.airflow.history_chart import history_svg
from lakeformat.pipeline.airflow.page import create_app, standalone_app
from lakeformat.pipeline.airflow.table_view import (
    SnapshotDelta,
    cell_text,
    clamp_limit,
    compaction_trigger,
    history_points,
    table_detail,
)
from lakeformat.pipeline.quality import parse_expectations
from lakeformat.pipeline.wap import audit_stage
from tests.conftest import events
from tests.project import minimal_config

HOSTILE = '<img src=x onerror=alert(1)>"&\''


def test_history_points_are_running_totals_of_the_deltas():
    deltas = [SnapshotDelta(3, "APPEND", 0, 10, 2, 0, 200, 0), SnapshotDelta(4, "COMPACT", 0, 10, 1, 3, 250, 300),
              SnapshotDelta(5, "OVERWRITE", 0, 4, 1, 1, 40, 250)]
    pts = history_points(1, 100, deltas)   # one file of 100 bytes live before snapshot 3
    assert [(p.id, p.kind, p.rows, p.files, p.bytes) for p in pts] == [
        (3, "APPEND", 10, 3, 300), (4, "COMPACT", 10, 1, 250), (5, "OVERWRITE", 4, 1, 40)]


def test_compaction_trigger_by_table_kind():
    opts = O.Options({"num-sorted-run.compaction-trigger": "3"})
    assert compaction_trigger(["id"], opts) == ("num-sorted-run.compaction-trigger", 3)
    assert compaction_trigger([], opts) == ("compaction.min.file-num", 5)
    assert compaction_trigger([], O.Options({"compaction.min.file-num": "2"})) == ("compaction.min.file-num", 2)


def test_cells_and_limits():
    assert cell_text(None) == "∅" and cell_text(b"\x01\xff") == "01ff" and cell_text(True) == "true"
    assert cell_text(float("nan")) == "NaN" and cell_text(dt.datetime(2024, 1, 2, 3, 4)) == "2024-01-02 03:04:00"
    assert cell_text(dt.datetime(2024, 1, 2, 3, 4, 5, 130000)) == "2024-01-02 03:04:05.130"
    assert cell_text(dt.datetime(2024, 1, 2, 3, 4, 5, 123456)) == "2024-01-02 03:04:05.123456"
    assert len(cell_text("x" * 1000)) == 200 and cell_text("x" * 1000).endswith("…")
    assert clamp_limit(None) == 50 and clamp_limit(0) == 50 and clamp_limit(7) == 7 and clamp_limit(10**6) == 500


def test_history_svg_draws_one_bar_per_snapshot_and_panel_and_escapes_kinds():
    deltas = [SnapshotDelta(1, "APPEND", 0, 5, 1, 0, 2048, 0), SnapshotDelta(2, HOSTILE, 0, 9, 1, 0, 4096, 0)]
    svg = history_svg(history_points(0, 0, deltas))
    bars = re.findall(r'<rect class="hbar" data-panel="(\w+)" data-snapshot="(\d+)"', svg)
    assert sorted(bars) == sorted((p, s) for p in ("rows", "files", "bytes") for s in ("1", "2"))
    assert "<img" not in svg and "&lt;img src=x" in svg
    assert ">6.0 KiB</text>" in svg                     # the size axis in human units
    assert history_svg([]) == '<p class="muted">no snapshots yet</p>'


RULES = parse_expectations([{"expect_column_values_to_be_between": {"column": "price", "min_value": 0}}])
USER = "lakeformat-ingest-events"


def _stage(t, data, sid):
    w = t.new_write(commit_user=USER)
    w.write(data)
    return staging.stage(t, w.prepare_commit(), sid, commit_user=USER, identifier=staging.identifier_for("x", sid))


@pytest.fixture
def lake(tmp_path):
    cat = lf.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.events", events(0).schema, partition_keys=["dt"], options={"bucket": "1"})
    for day in ("2024-01-01", "2024-01-02"):
        _stage(t, events(20, day, start=100 if day.endswith("2") else 0), day)
        audit_stage(t, day, RULES, f"db.events {day}")
        staging.publish(t, day)
    bad = events(10, "2024-01-03").set_column(2, "price", pa.array([-1.0] * 10))
    _stage(t, bad, "2024-01-03")
    audit_stage(t, "2024-01-03", RULES, "db.events 2024-01-03")
    t.write(events(5, "2024-01-01", start=200))
    t.compact(full=True)                                # two files of 2024-01-01 into one
    pk = cat.create_table("db.prices", pa.schema([pa.field("id", pa.int64(), False), ("p", pa.float64())]),
                          primary_keys=["id"], options={"bucket": "1", "write-only": "true",
                                                        "num-sorted-run.compaction-trigger": "2"})
    for i in range(3):
        pk.write(pa.table({"id": pa.array([i], pa.int64()), "p": [float(i)]}))
    odd = cat.create_table("db.odd", pa.schema([(HOSTILE, pa.string())]))
    odd.write(pa.table({HOSTILE: [HOSTILE, "<script>alert(2)</script>"]}))
    return cat


def test_table_detail_of_a_wap_table(lake):
    d = table_detail(lake, "events", "db.events")
    assert [(p.id, p.kind, p.rows) for p in d.history] == [(1, "APPEND", 20), (2, "APPEND", 40), (3, "APPEND", 45),
                                                           (4, "COMPACT", 45)]
    assert [p.files for p in d.history] == [1, 2, 3, 2]
    t = lake.get_table("db.events")
    assert d.history[-1].bytes == sum(f["file_size_in_bytes"] for f in t.system_table("files").to_pylist())
    assert [p.partition for p in d.partitions] == ["dt=2024-01-01", "dt=2024-01-02"]
    assert (d.trigger_option, d.trigger) == ("compaction.min.file-num", 5)
    stages = {r.stage_id: r for r in d.stages}
    assert stages["2024-01-01"].state == "published" and stages["2024-01-01"].audit_passed
    bad = stages["2024-01-03"]
    assert bad.state == "discarded" and bad.audit_passed is False
    assert bad.audit["failed"][0]["unexpected"] == 10 and bad.audit["failed"][0]["of"] == 10
    assert [c.role for c in d.columns] == ["", "", "", "partition key"]


def test_buckets_against_the_compaction_trigger(lake):
    d = table_detail(lake, "db.prices", "db.prices")
    assert (d.trigger_option, d.trigger) == ("num-sorted-run.compaction-trigger", 2)
    assert [b.sorted_runs for b in d.buckets] == [3] and d.buckets_at_trigger == 1
    assert [(c.name, c.nullable, c.role) for c in d.columns] == [("id", False, "primary key"), ("p", True, "")]


@pytest.fixture
def client(lake, tmp_path):
    return TestClient(create_app(lambda: lake, str(tmp_path / "no-config.yaml"), airflow_auth=False))


def test_table_page_shows_stages_audits_buckets_and_a_filtered_preview(client):
    html = client.get("/table/db.events", params={"filter": "user_id >= 105 and user_id < 108"}).text
    assert re.findall(r'<tr class="stage" data-stage="([^"]+)" data-state="(\w+)" data-audit="(\w+)"', html) == [
        ("2024-01-03", "discarded", "failed"), ("2024-01-02", "published", "passed"),
        ("2024-01-01", "published", "passed")]
    assert "expect_column_values_to_be_between(column=&#x27;price&#x27;, min_value=0)</li>" not in html
    assert re.search(r"expect_column_values_to_be_between\(column=&#x27;price&#x27;, min_value=0\): 10 of 10 rows "
                     r"unexpected, e\.g\. -1\.0", html)
    rows = re.findall(r"<tr><td>(\d+)</td><td>\w+</td><td>[\d.]+</td><td>([\d-]+)</td></tr>", html)
    assert rows == [("105", "2024-01-02"), ("106", "2024-01-02"), ("107", "2024-01-02")]
    assert 'data-panel="bytes" data-snapshot="4" data-kind="COMPACT"' in html
    assert html.count('<tr class="partition">') == 2 and "KiB</td>" in html


def test_a_bad_filter_is_named_on_the_page(client):
    r = client.get("/table/db.events", params={"filter": "price >> 1"})
    assert r.status_code == 200
    (err,) = re.findall(r'<p class="error filter-error">([^<]*)</p>', r.text)
    assert "bad filter &#x27;price &gt;&gt; 1&#x27;" in err and "character 8" in err


def test_hostile_names_and_values_are_escaped(client, lake):
    index = client.get("/").text
    assert "<img src=x" not in index
    html = client.get("/table/db.odd").text
    assert "<img src=x" not in html and "<script>alert(2)" not in html
    assert html.count("&lt;img src=x onerror=alert(1)&gt;&quot;&amp;&#x27;") >= 2    # column name and value
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in html


def test_unknown_and_not_created_tables(tmp_path, lake):
    config = tmp_path / "tables.yaml"
    config.write_text(minimal_config("db.later"))   # a valid config: the page loads it as the jobs do
    c = TestClient(create_app(lambda: lake, str(config), airflow_auth=False))
    r = c.get("/table/nope")
    assert r.status_code == 404 and "no table &#x27;nope&#x27;" in r.text
    r = c.get("/table/later")
    assert r.status_code == 404 and "configured but not created yet" in r.text
    index = c.get("/").text
    assert 'href="table/db.events"' in index and 'href="table/db.later"' not in index   # nothing to open yet


def test_standalone_serves_the_page_at_the_airflow_path(lake, tmp_path):
    c = TestClient(standalone_app(lake.warehouse, config=str(tmp_path / "no-config.yaml")))
    home = c.get("/", follow_redirects=False)
    assert home.status_code == 307 and home.headers["location"] == "/lakehouse/"
    assert c.get("/lakehouse", follow_redirects=False).headers["location"] == "/lakehouse/"
    assert 'data-identifier="db.events"' in c.get("/lakehouse/").text
    assert [t["identifier"] for t in c.get("/lakehouse/api/tables").json()] == ["db.events", "db.odd", "db.prices"]
    assert c.get("/lakehouse/table/db.prices").status_code == 200


def test_table_detail_as_json(client):
    d = client.get("/api/tables/db.events/detail", params={"filter": "user_id = 105"}).json()
    assert [p["kind"] for p in d["history"]] == ["APPEND", "APPEND", "APPEND", "COMPACT"]
    assert d["preview"]["rows"] == [["105", "pv", "157.5", "2024-01-02"]] and d["preview"]["error"] is None
    stages = {s["stage_id"]: s for s in d["stages"]}
    assert stages["2024-01-03"]["audit"]["failed"][0]["unexpected"] == 10 and stages["2024-01-03"]["audit_time"]
    assert client.get("/api/tables/nope/detail").status_code == 404
