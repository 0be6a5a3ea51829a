"""``make airflow`` as a user meets it, in one Airflow started as ``make airflow`` starts it:
the services come up on PostgreSQL with the project's DAGs (no import error); in a real browser
(headless Chromium) a logged-out visit to the Lakehouse page goes to the login; the user
unpauses an ingest DAG and no run appears for a day without landing data (the DAG's dates are
the landing data's), while a run that does wait for missing data says on screen what it waits
for and until when; beside it, the user backfills two days from the Trigger dialog (no
start/end params in it), sees the new snapshots on the Lakehouse page, and re-runs the range
with "All Runs": no Spark job starts (the task logs), the days are not loaded twice. The same
through the REST API (``POST /api/v2/backfills``); Ctrl-C stops every process, the database
included. Screenshots are kept as test artefacts (``$LAKEFORMAT_TEST_ARTEFACTS`` or
``test-artefacts/airflow-ui``)."""
from __future__ import annotations

import time
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

import lakeformat as lf
from lakeformat.pipeline.local.airflow_server import _marked_pids

from tests.airflow_ui.browser import UI, chromium
from tests.airflow_ui.conftest import ARTEFACTS, LANDING_DAYS, stop_server

pytestmark = pytest.mark.slow   # minutes: real services and Spark jobs

UI_DAG, UI_DAYS = "lakeformat_ingest_user_behavior", ["2024-06-03", "2024-06-04"]
REST_DAG = "lakeformat_ingest_item_price"
WAIT_DAY = "2024-06-02"   # landed, but moved away for a while: a run for it waits


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


def test_unpausing_starts_no_run_and_a_waiting_run_says_why(airflow_server, ui):
    dag = airflow_server.api("GET", f"/dags/{UI_DAG}/details")
    assert dag["start_date"][:10] == LANDING_DAYS[0] and dag["end_date"][:10] == LANDING_DAYS[1]
    assert "start" not in dag["params"] and "end" not in dag["params"]
    ui.open_dag(UI_DAG)
    ui.unpause()
    time.sleep(30)   # several scheduler loops
    ui.open_dag(UI_DAG)
    ui.shot("02-unpaused")
    assert airflow_server.runs(UI_DAG) == []   # the DAG's days are over: nothing scheduled, nothing stuck
    # a run that waits for a day that has not landed (its folder moved away): its landing task is
    # deferred, and what it waits for, how often it looks and until when is on the task's page
    _landing(airflow_server, WAIT_DAY).rename(_landing(airflow_server, WAIT_DAY, hidden=True))
    run = airflow_server.api("POST", f"/dags/{UI_DAG}/dagRuns", {"logical_date": f"{WAIT_DAY}T00:00:00Z",
                                                                  "conf": {"wait_for_landing": True}})["dag_run_id"]
    deadline = time.monotonic() + 300
    while (state := airflow_server.task_states(UI_DAG, run).get(("landing", -1))) != "deferred":
        assert time.monotonic() < deadline and state not in ("failed", "success", "skipped"), \
            (state, airflow_server.task_log(UI_DAG, run, "landing")[-4000:])
        time.sleep(2)
    ui.d.get(f"{airflow_server.url}/dags/{UI_DAG}/runs/{run}/tasks/landing")
    ui.wait.until(lambda d: "waiting up to 10 min" in d.find_element(By.TAG_NAME, "body").text)
    text = ui.d.find_element(By.TAG_NAME, "body").text
    ui.shot("03-waiting-run")
    assert "looking every 5" in text and "then the run is skipped" in text and "UTC" in text
    assert f"{WAIT_DAY} of demo.user_behavior: no landing folder" in text
    _every_active_run_explains_itself(airflow_server)


def _landing(server, day: str, hidden: bool = False) -> Path:
    return server.state.parent / "landing" / "user_behavior" / f"{'.' if hidden else ''}dt={day}"


def _every_active_run_explains_itself(server) -> None:
    """No run waits without saying why: a run whose landing task is deferred (waiting for data)
    has a log that says what it waits for; the others are at work or past their landing check."""
    for r in server.runs(UI_DAG):
        if r["state"] in ("queued", "running"):
            states = server.task_states(UI_DAG, r["dag_run_id"])
            assert states.get(("landing", -1)) not in ("up_for_reschedule", "failed"), (r, states)
            if states.get(("landing", -1)) == "deferred":
                assert "waiting up to" in server.task_log(UI_DAG, r["dag_run_id"], "landing")


def test_backfill_two_days_from_the_ui_beside_a_waiting_run_and_see_the_snapshots(airflow_server, ui):
    (waiting,) = [r["dag_run_id"] for r in airflow_server.runs(UI_DAG) if r["state"] == "running"]
    ui.open_dag(UI_DAG)
    assert ui.backfill(*UI_DAYS).startswith("2 runs")
    dialog = ui.d.page_source
    assert "Backfill from this day" not in dialog   # one range only: Airflow's own
    runs = {r["dag_run_id"]: r["logical_date"][:10] for r in airflow_server.runs(UI_DAG) if r["run_type"] == "backfill"}
    assert sorted(runs.values()) == UI_DAYS
    # the waiting run does not hold the backfill up: its runs start while it still waits
    deadline = time.monotonic() + 600
    while not any(r["state"] in ("running", "success") for r in airflow_server.runs(UI_DAG) if r["dag_run_id"] in runs):
        assert time.monotonic() < deadline, airflow_server.runs(UI_DAG)
        time.sleep(2)
    assert {r["dag_run_id"]: r["state"] for r in airflow_server.runs(UI_DAG)}[waiting] == "running"
    assert airflow_server.task_states(UI_DAG, waiting)[("landing", -1)] == "deferred"
    _every_active_run_explains_itself(airflow_server)
    # the late day lands: the waiting run sees it (it looks every 5 s) and loads it
    _landing(airflow_server, WAIT_DAY, hidden=True).rename(_landing(airflow_server, WAIT_DAY))
    states = airflow_server.wait_runs(UI_DAG, set(runs) | {waiting})
    ui.open_dag(UI_DAG)
    ui.shot("04-runs-done")
    assert set(states.values()) == {"success"}, states
    assert all("Submitting " in airflow_server.task_log(UI_DAG, r, "ingest.stage") for r in runs)
    assert "the wait is over" in airflow_server.task_log(UI_DAG, waiting, "landing")

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
    assert all(s.find_elements(By.CSS_SELECTOR, "td.num")[0].text for s in published)   # their rows
    assert ui.d.find_elements(By.CSS_SELECTOR, "svg.history rect.hbar")


def test_rerun_with_all_runs_starts_no_spark_job(airflow_server, ui):
    table = lf.Catalog(str(airflow_server.warehouse)).get_table("demo.user_behavior")
    before = [s.id for s in table.snapshots()]
    # Airflow runs one backfill of a DAG at a time, and marks one completed a scheduler loop
    # after its last run ends: the dialog's backfill would be refused until then
    for earlier in airflow_server.backfills(UI_DAG):
        airflow_server.wait_backfill(UI_DAG, earlier["id"])
    ui.open_dag(UI_DAG)
    assert ui.backfill(*UI_DAYS, reprocess="completed", shot="07-rerun-all-runs").startswith("2 runs")
    backfill = max(b["id"] for b in airflow_server.backfills(UI_DAG))
    airflow_server.wait_backfill(UI_DAG, backfill)
    runs = {r["dag_run_id"]: r for r in airflow_server.runs(UI_DAG)
            if r["run_type"] == "backfill" and r["logical_date"][:10] in UI_DAYS}
    assert len(runs) == 2 and {r["state"] for r in runs.values()} == {"success"}, runs
    ui.open_dag(UI_DAG)
    ui.shot("08-rerun-done")
    for run_id in runs:
        tasks = airflow_server.task_states(UI_DAG, run_id)
        assert tasks[("landing", -1)] == "success" and tasks[("plan", -1)] == "skipped", tasks
        assert {st for (t, _), st in tasks.items() if t.startswith("ingest.")} == {"skipped"}, tasks
        rerun = airflow_server.task_log(UI_DAG, run_id, attempt=2)   # every task's log of the re-run
        assert "already published as snapshot" in airflow_server.task_log(UI_DAG, run_id, "plan", attempt=2)
        assert "Submitting " not in rerun and "spark-submit" not in rerun.lower()
    assert [s.id for s in table.snapshots()] == before   # nothing loaded twice


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


def test_ctrl_c_stops_every_process_and_the_database(airflow_server):
    assert _marked_pids(airflow_server.state), "no service is running"
    stop_server(airflow_server)
    assert airflow_server.proc.returncode == 0, airflow_server.output.read_text()[-3000:]
    assert _marked_pids(airflow_server.state) == []
    assert not (airflow_server.state / "postgres" / "data" / "postmaster.pid").exists()
    assert "stopped" in airflow_server.output.read_text()
