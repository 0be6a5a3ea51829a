"""``make airflow`` as a user meets it: the services come up on PostgreSQL with the project's
DAGs (no import error) and the printed login; a two-day backfill through the REST API
(``POST /api/v2/backfills``) runs the ingest DAG in the scheduler and leaves one snapshot per day;
Ctrl-C stops every process it started, the database included."""
from __future__ import annotations

import pytest

import lakeformat as lf
from lakeformat.pipeline.airflow_server import _marked_pids

from tests.airflow_ui.conftest import stop_server

pytestmark = pytest.mark.slow   # minutes: real services and Spark jobs

DAG = "lakeformat_ingest_item_price"


def test_services_serve_the_project_dags_on_postgres(airflow_server):
    dags = {d["dag_id"]: d for d in airflow_server.api("GET", "/dags")["dags"]}
    assert {"lakeformat_ingest_user_behavior", DAG, "lakeformat_compaction", "lakeformat_maintenance"} <= set(dags)
    assert airflow_server.api("GET", "/importErrors")["total_entries"] == 0
    health = airflow_server.api("GET", "/monitor/health")
    assert health["metadatabase"]["status"] == "healthy"
    assert {"scheduler", "dag_processor", "triggerer"} <= {k for k, v in health.items()
                                                           if isinstance(v, dict) and v.get("status") == "healthy"}
    with open(f"/proc/{_marked_pids(airflow_server.state)[0]}/environ", "rb") as f:
        assert b"AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=postgresql+psycopg://" in f.read()


def test_rest_backfill_of_two_days_publishes_each_day_once(airflow_server):
    airflow_server.api("PATCH", f"/dags/{DAG}", {"is_paused": False})
    bf = airflow_server.api("POST", "/backfills", {"dag_id": DAG, "from_date": "2024-06-01T00:00:00Z",
                                                   "to_date": "2024-06-02T00:00:00Z", "max_active_runs": 2})
    assert bf["dag_id"] == DAG
    runs = {r["dag_run_id"]: r for r in airflow_server.runs(DAG) if r["run_type"] == "backfill"}
    assert sorted(r["logical_date"][:10] for r in runs.values()) == ["2024-06-01", "2024-06-02"]
    states = airflow_server.wait_runs(DAG, set(runs))
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
