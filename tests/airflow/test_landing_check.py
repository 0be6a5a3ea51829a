"""A run whose day has no landing data yet starts no Spark job (issue 16): the plan task finds
no landing folder and skips with the reason, so the run ends at once, green, with every task
skipped; the same for a run with no logical date (a manual Trigger with default parameters)."""
from __future__ import annotations

import datetime as dt

import pytest

from .conftest import Airflow, _home

pytestmark = pytest.mark.slow
DAG = "lakeformat_ingest_user_behavior"
SKIPPED = {"plan": "skipped", "ingest.stage": "skipped", "ingest.audit": "skipped", "ingest.publish": "skipped"}


@pytest.fixture
def af(tmp_path, migrated_db, landing) -> Airflow:
    return Airflow(_home(tmp_path, migrated_db), tmp_path / "warehouse", landing)


def test_a_day_without_landing_data_skips_before_spark(af):
    scheduled, manual, backfill = af.run({"dag_id": DAG, "logical_date": "2024-07-01"},
                                         {"dag_id": DAG},   # the UI's Trigger: logical date now
                                         {"dag_id": DAG, "conf": {"start": "2024-07-01", "end": "2024-07-02"}})
    for run in (scheduled, manual, backfill):
        assert run["state"] == "success", run["tasks"]
        assert run["tasks"] == SKIPPED
        assert run["seconds"] < 120
    log = (af.home / "runner.log").read_text()
    assert "2024-07-01 of demo.user_behavior: no landing folder " in log
    assert "2024-07-02 of demo.user_behavior: no landing folder " in log
    today = dt.datetime.now(dt.timezone.utc).date().isoformat()   # a test run across midnight may see yesterday
    yesterday = (dt.date.fromisoformat(today) - dt.timedelta(days=1)).isoformat()
    assert any(f"{d} of demo.user_behavior: no landing folder " in log for d in (today, yesterday))
    assert "spark-submit" not in log.lower() and "SparkContext" not in log
    assert not (af.warehouse / "demo.db").exists()   # nothing created for days that did not land
