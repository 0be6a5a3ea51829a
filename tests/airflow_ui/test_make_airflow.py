"""``make airflow`` as a user meets it, in one Airflow started as ``make airflow`` starts it:
the services come up on PostgreSQL with the project's DAGs (no import error); in a real browser
(headless Chromium) a logged-out visit to the Lakehouse page goes to the login, the user
unpauses an ingest DAG, backfills two days from the Trigger dialog and, once the scheduler has
run them, sees the new snapshots on the Lakehouse page; the same through the REST API
(``POST /api/v2/backfills``); a backfill and a Trigger of one day at once load it once; Ctrl-C
stops every process, the database included. Screenshots are kept as test artefacts
(``$LAKEFORMAT_TEST_ARTEFACTS`` or ``test-artefacts/airflow-ui``)."""
from __future__ import annotations

import time

import pytest
from selenium.webdriver.common.by import By

import lakeformat as lf
from lakeformat.pipeline.local.airflow_server import _marked_pids
from lakeformat.pipeline.config import load_config
from lakeformat.pipeline.units import IngestUnit, ingest_identity
from tests.project import CONFIG

from tests.airflow_ui.browser import UI, chromium
from tests.airflow_ui.conftest import ARTEFACTS, stop_server

pytestmark = pytest.mark.slow   # minutes: real services and Spark jobs

UI_DAG, UI_DAYS = "lakeformat_ingest_user_behavior", ["2024-06-03", "2024-06-04"]
REST_DAG = "lakeformat_ingest_item_price"
COLLIDE_DAY = "2024-06-01"   # landed, and loaded by no other test here


@pytest.fixture(scope="module")
def ui(airflow_server, tmp_path_factory):
    driver = chromium(tmp_path_factory.mktemp("chromium-profile"))
    try:
        yield UI(driver, airflow_server.url, ARTEFACTS / "airflow-ui")
    finally:
        driver.quit()


def test_services_serve_the_project_dags_on_postgres(airflow_server):
    dags = {d["dag_id"]: d for d in airflow_server.api("GET", "/dags")["dags"]}
    assert {"lakeformat_ingest_user_behavior", REST_DAG, "lakeformat_compaction", "lakeformat_maintenance"} <= set(dags)
    assert airflow_server.api("GET", "/importErrors")["total_entries"] == 0
    health = airflow_server.api("GET", "/monitor/health")
    assert health["metadatabase"]["status"] == "healthy"
    assert {"scheduler", "dag_processor", "triggerer"} <= {k for k, v in health.items()
                                                           if isinstance(v, dict) and v.get("status") == "healthy"}
    with open(f"/proc/{_marked_pids(airflow_server.state)[0]}/environ", "rb") as f:
        assert b"AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=postgresql+psycopg://" in f.read()


def test_logged_out_lakehouse_page_sends_the_browser_to_the_login(airflow_server, ui):
    ui.d.get(airflow_server.url + "/lakehouse/")
    ui.wait.until(lambda d: "/auth/login" in d.current_url)
    assert "Not authenticated" not in ui.d.page_source
    ui.log_in(airflow_server.user, airflow_server.password, "/lakehouse/")
    assert ui.d.current_url.rstrip("/").endswith("/lakehouse")    # back where the user was going


def test_backfill_two_days_from_the_ui_and_see_the_snapshots(airflow_server, ui):
    ui.open_dag(UI_DAG)
    ui.unpause()
    ui.shot("02-unpaused")
    assert ui.backfill(*UI_DAYS).startswith("2 runs")
    runs = {r["dag_run_id"]: r["logical_date"][:10] for r in airflow_server.runs(UI_DAG) if r["run_type"] == "backfill"}
    assert sorted(runs.values()) == UI_DAYS
    states = airflow_server.wait_runs(UI_DAG, set(runs))
    ui.open_dag(UI_DAG)
    ui.shot("04-runs-done")
    assert set(states.values()) == {"success"}, states

    table = lf.Catalog(str(airflow_server.warehouse)).get_table("demo.user_behavior")
    latest = table.snapshot_manager.latest_id()
    ui.d.get(airflow_server.url + "/lakehouse/")
    card = ui.find('section[data-identifier="demo.user_behavior"]')
    ui.shot("05-lakehouse")
    assert "latest snapshot" in card.text and str(latest) in card.text
    partitions = {r.text for r in card.find_elements(By.CSS_SELECTOR, "tr.bucket td:first-child")}
    assert {f"dt={d}" for d in UI_DAYS} <= partitions
    # the table's own page: the runs' stages, published, each with the audit the DAG recorded
    card.find_element(By.CSS_SELECTOR, "a.open").click()
    ui.wait.until(lambda d: "/lakehouse/table/demo.user_behavior" in d.current_url)
    stages = ui.wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "tr.stage"))
    ui.shot("06-lakehouse-table")
    published = [s for s in stages if s.get_attribute("data-state") == "published"]
    assert len(published) >= len(UI_DAYS), [s.text for s in stages]
    assert {s.get_attribute("data-audit") for s in published} == {"passed"}, [s.text for s in published]
    assert ui.d.find_elements(By.CSS_SELECTOR, "svg.history rect.hbar")


def test_rest_backfill_of_two_days_publishes_each_day_once(airflow_server):
    airflow_server.api("PATCH", f"/dags/{REST_DAG}", {"is_paused": False})
    bf = airflow_server.api("POST", "/backfills", {"dag_id": REST_DAG, "from_date": "2024-06-01T00:00:00Z",
                                                   "to_date": "2024-06-02T00:00:00Z", "max_active_runs": 2})
    assert bf["dag_id"] == REST_DAG
    runs = {r["dag_run_id"]: r for r in airflow_server.runs(REST_DAG) if r["run_type"] == "backfill"}
    assert sorted(r["logical_date"][:10] for r in runs.values()) == ["2024-06-01", "2024-06-02"]
    states = airflow_server.wait_runs(REST_DAG, set(runs))
    assert set(states.values()) == {"success"}, states
    table = lf.Catalog(str(airflow_server.warehouse)).get_table("demo.item_price")
    snaps = table.system_table("snapshots").to_pylist()
    ingests = [s for s in snaps if s["commit_user"] == "lakeformat-ingest-item_price"]
    assert len(ingests) == 2, snaps


def test_a_backfill_and_a_trigger_of_one_day_at_once_load_it_once(airflow_server):
    """Airflow's backfills ignore the DAG's one-active-run limit, so a backfill of a day and a
    Trigger of the same day (params start/end) run at once: one loads the day, the other's plan
    skips it naming the run that holds it (unit_claim), and nothing is red."""
    server, day = airflow_server, COLLIDE_DAY
    server.api("PATCH", f"/dags/{UI_DAG}", {"is_paused": False})
    deadline = time.monotonic() + 120
    while not any(r["run_type"] == "scheduled" for r in server.runs(UI_DAG)):   # unpausing makes one
        assert time.monotonic() < deadline, "unpausing made no scheduled run"
        time.sleep(2)
    server.wait_runs(UI_DAG, {r["dag_run_id"] for r in server.runs(UI_DAG)})   # its wait has ended
    trigger = server.api("POST", f"/dags/{UI_DAG}/dagRuns",
                         {"logical_date": None, "conf": {"start": day, "end": day}})["dag_run_id"]
    server.api("POST", "/backfills", {"dag_id": UI_DAG, "from_date": f"{day}T00:00:00Z", "to_date": f"{day}T00:00:00Z"})
    (backfill,) = [r["dag_run_id"] for r in server.runs(UI_DAG)
                   if r["run_type"] == "backfill" and r["logical_date"][:10] == day]
    states = server.wait_runs(UI_DAG, {trigger, backfill})
    assert states == {trigger: "success", backfill: "success"}, states
    tasks = {run: server.task_states(UI_DAG, run) for run in (trigger, backfill)}
    assert not [t for ts in tasks.values() for t, st in ts.items() if st in ("failed", "upstream_failed")], tasks
    (loaded,) = [run for run, ts in tasks.items() if ts.get(("ingest.publish", day)) == "success"]
    (other,) = {trigger, backfill} - {loaded}
    assert tasks[other][("plan", -1)] == "skipped", tasks[other]
    assert f"run {UI_DAG}/{loaded} is loading it" in server.task_log(UI_DAG, other, "plan")
    table = lf.Catalog(str(server.warehouse)).get_table("demo.user_behavior")
    spec = load_config(str(CONFIG)).table("user_behavior")
    user, identifier = ingest_identity(spec, IngestUnit(day))
    assert [s.commit_identifier for s in table.snapshots() if s.commit_user == user].count(identifier) == 1
    landed = sum(len(f.read_text().splitlines())
                 for f in (server.state.parent / "landing" / "user_behavior" / f"dt={day}").glob("*"))
    assert table.read(filter=lf.col("dt") == day).num_rows == landed > 0


def test_ctrl_c_stops_every_process_and_the_database(airflow_server):
    assert _marked_pids(airflow_server.state), "no service is running"
    stop_server(airflow_server)
    assert airflow_server.proc.returncode == 0, airflow_server.output.read_text()[-3000:]
    assert _marked_pids(airflow_server.state) == []
    assert not (airflow_server.state / "postgres" / "data" / "postmaster.pid").exists()
    assert "stopped" in airflow_server.output.read_text()
