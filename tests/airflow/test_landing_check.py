"""A run checks its landing data before any Spark work (issue 16). Manual runs (the UI's
Trigger, a day re-run by hand, a backfill) look once: a day with no landing folder is skipped at
once with the reason, the run green. A run that waits (scheduled runs; here manual runs with the
``wait_for_landing`` param, as ``dag.test()`` makes manual runs) defers to the trigger (run in
line by ``dag.test()``): data that lands meanwhile is ingested; at the timeout the run is
skipped with the reason, no Spark job started."""
from __future__ import annotations

import datetime as dt
import threading
import time

import pytest

import lakeformat as lf
from lakeformat.pipeline import landing as landing_gen
from tests.project import CONFIG, config_waiting

from .conftest import Airflow, _home

pytestmark = pytest.mark.slow
DAG = "lakeformat_ingest_user_behavior"
SKIPPED = {"landing": "skipped", "plan": "skipped", "ingest.stage": "skipped", "ingest.audit": "skipped",
           "ingest.publish": "skipped"}
LATE_DAY, NEVER_DAY = "2024-06-05", "2024-07-01"
WAITING = "waiting up to "


@pytest.fixture
def af(tmp_path, migrated_db, landing) -> Airflow:
    return Airflow(_home(tmp_path, migrated_db), tmp_path / "warehouse", landing)


def test_a_day_without_landing_data_skips_before_spark(af):
    scheduled, manual, backfill = af.run({"dag_id": DAG, "logical_date": NEVER_DAY},
                                         {"dag_id": DAG},   # the UI's Trigger: logical date now
                                         {"dag_id": DAG, "logical_date": "2024-07-02"})
    for run in (scheduled, manual, backfill):
        assert run["state"] == "success", run["tasks"]
        assert run["tasks"] == SKIPPED
    log = (af.home / "runner.log").read_text()
    assert "no landing data for this run without waiting: manual runs and backfills do not wait" in log
    assert WAITING not in log
    assert f"{NEVER_DAY} of demo.user_behavior: no landing folder " in log
    assert "2024-07-02 of demo.user_behavior: no landing folder " in log
    today = dt.datetime.now(dt.UTC).date().isoformat()   # a test run across midnight may see yesterday
    yesterday = (dt.date.fromisoformat(today) - dt.timedelta(days=1)).isoformat()
    assert any(f"{d} of demo.user_behavior: no landing folder " in log for d in (today, yesterday))
    assert "spark-submit" not in log.lower() and "SparkContext" not in log
    assert not (af.warehouse / "demo.db").exists()   # nothing created for days that did not land


def _land_once_waiting(af: Airflow, day: str, written: list) -> None:
    """Writes ``day``'s landing files as soon as the second run has logged that it waits."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if af.output().count(WAITING) == 2:
            landing_gen.main(["--landing", str(af.landing), "--start", day, "--rows-per-day", "300",
                              "--config", str(CONFIG), "--table", "user_behavior"])
            written.append(day)
            return
        time.sleep(0.2)


def test_a_waiting_run_ingests_data_that_lands_meanwhile_and_a_timeout_skips(tmp_path, migrated_db):
    config = config_waiting(tmp_path / "tables.yaml", "30 s", "1 s")
    (tmp_path / "landing").mkdir()
    af = Airflow(_home(tmp_path, migrated_db), tmp_path / "warehouse", tmp_path / "landing", config)
    written: list = []
    writer = threading.Thread(target=_land_once_waiting, args=(af, LATE_DAY, written), daemon=True)
    writer.start()
    wait = {"wait_for_landing": True}
    timed_out, late = af.run({"dag_id": DAG, "logical_date": NEVER_DAY, "conf": wait},
                             {"dag_id": DAG, "logical_date": LATE_DAY, "conf": wait}, timeout=1200)
    writer.join(5)
    log = (af.home / "runner.log").read_text()
    # nothing landed within the 30 s: skipped with the reason, green, no Spark job for that run
    assert timed_out["state"] == "success" and timed_out["tasks"] == SKIPPED, timed_out["tasks"]
    assert ("no landing data for this run after waiting 30 s (pipeline.landing.wait_timeout): "
            f"{NEVER_DAY} of demo.user_behavior: no landing folder ") in log
    assert log.index("after waiting 30 s") < log.index("Submitting ")   # Spark only for the late day
    # the late day landed while its run waited (the writer saw it wait): ingested, exactly its rows
    assert written == [LATE_DAY]
    assert late["state"] == "success", late["tasks"]
    assert late["tasks"] == {"landing": "success", "plan": "success", **{
        f"ingest.{t}[0]": "success" for t in ("stage", "audit", "publish")}}
    assert "landing data of demo.user_behavior is there: the wait is over" in log
    rows = lf.Catalog(str(af.warehouse)).get_table("demo.user_behavior").read()
    landed = sum(len(f.read_text().splitlines()) for f in (af.landing / "user_behavior").rglob("*.jsonl"))
    assert rows.num_rows == landed > 0 and set(rows.column("dt").to_pylist()) == {LATE_DAY}
