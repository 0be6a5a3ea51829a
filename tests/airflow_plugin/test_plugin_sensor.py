"""The snapshot sensor waits for a commit made by another process: deferred (the trigger runs
in line under dag.test()) and in poke mode."""
from __future__ import annotations

import datetime as dt

import pyarrow as pa

import lakeformat as lf

from tests.airflow_plugin.conftest import run_dag

SENSOR_DAG = '''
import subprocess
import sys
import pendulum
from airflow.sdk import DAG, task
from lakeformat.pipeline.airflow.hooks import LakeformatHook
from lakeformat.pipeline.airflow.sensors import LakeformatSnapshotSensor

WRITER = """
import sys, time, pyarrow as pa, lakeformat as lf
time.sleep(float(sys.argv[2]))
t = lf.Catalog(sys.argv[1]).get_table("demo.events")
t.write(pa.table({"user_id": [int(time.time())], "dt": ["2024-06-01"]}))
"""

with DAG("plugin_sensor", schedule=None, start_date=pendulum.datetime(2024, 1, 1)) as dag:
    @task
    def start_writer(delay: float) -> int:
        """Starts a process that commits after ``delay`` seconds; returns the latest snapshot now."""
        cat = LakeformatHook().get_catalog()
        latest = cat.get_table("demo.events").snapshot_manager.latest_id()
        subprocess.Popen([sys.executable, "-c", WRITER, cat.warehouse, str(delay)])
        return latest

    w1 = start_writer.override(task_id="start_writer_1")(3.0)
    deferred = LakeformatSnapshotSensor(
        task_id="wait_deferred", table="demo.events", poke_interval=0.5, timeout=120,
        after_snapshot_id="{{ ti.xcom_pull(task_ids='start_writer_1') }}")
    w2 = start_writer.override(task_id="start_writer_2")(3.0)
    poking = LakeformatSnapshotSensor(
        task_id="wait_poke", table="demo.events", poke_interval=0.5, timeout=120, deferrable=False,
        after_snapshot_id="{{ ti.xcom_pull(task_ids='start_writer_2') }}")
    w1 >> deferred >> w2 >> poking
'''


def test_plugin_snapshot_sensor_waits_for_a_commit_of_another_process(tmp_path, airflow_home):
    wh = str(tmp_path / "wh")
    cat = lf.Catalog(wh)
    cat.create_database("demo")
    t = cat.create_table("demo.events", pa.schema([("user_id", pa.int64()), ("dt", pa.string())]),
                         partition_keys=["dt"], options={"bucket": "1", "write-only": "true"})
    t.write(pa.table({"user_id": [1], "dt": ["2024-06-01"]}))
    t.write(pa.table({"user_id": [2], "dt": ["2024-06-01"]}))

    out = run_dag(airflow_home, wh, SENSOR_DAG, "plugin_sensor")
    r = out["runs"][0]
    assert r["state"] == "success", out["log"][-5000:]
    x = r["xcom"]
    assert x["start_writer_1"] == 2 and x["start_writer_2"] == 3
    assert x["wait_deferred"] == {"table": "demo.events", "snapshot_id": 3, "commit_kind": "APPEND",
                                  "total_record_count": 3, "new_snapshots": 1}
    assert x["wait_poke"]["snapshot_id"] == 4 and x["wait_poke"]["total_record_count"] == 4
    log = out["log"]
    # both found nothing at first, then the commit: the deferred one through the trigger
    assert "demo.events has no snapshot after 2 yet" in log and "demo.events has no snapshot after 3 yet" in log
    assert "running trigger in line" in log
    assert "demo.events has snapshot 3 (APPEND, 3 records) after 2" in log
    assert cat.get_table("demo.events").snapshot_manager.latest_id() == 4


def test_plugin_trigger_serializes_to_its_own_class_path():
    from lakeformat.pipeline.airflow.triggers import LakeformatSnapshotTrigger
    trig = LakeformatSnapshotTrigger(table="user_behavior", after_snapshot_id=7, kinds=["APPEND"], poll_interval=5)
    path, kwargs = trig.serialize()
    assert path == "lakeformat.pipeline.airflow.triggers.LakeformatSnapshotTrigger"
    again = LakeformatSnapshotTrigger(**kwargs)
    assert again.serialize() == (path, kwargs) and kwargs["after_snapshot_id"] == 7


def test_plugin_newer_snapshot_skips_other_kinds(tmp_path):
    from lakeformat.pipeline.airflow.triggers import newer_snapshot
    cat = lf.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64())]), options={"bucket": "1", "write-only": "true"})
    assert newer_snapshot(t, 0) is None
    for i in range(3):
        t.write(pa.table({"id": [i]}))
    t.compact(full=True)
    assert newer_snapshot(t, 4) is None
    assert newer_snapshot(t, 1)["snapshot_id"] == 4 and newer_snapshot(t, 1)["commit_kind"] == "COMPACT"
    found = newer_snapshot(t, 1, kinds=["APPEND"])
    assert found["snapshot_id"] == 3 and found["new_snapshots"] == 3
    assert newer_snapshot(t, 3, kinds=["APPEND"]) is None


def test_plugin_landing_trigger_restarts_from_its_kwargs_and_reports_what_is_missing(tmp_path, monkeypatch):
    """What the triggerer stores (kwargs: names, paths, times, the connection's id; JSON) is enough
    to start the trigger again after a restart, and its deadline stays the same; the event names
    the missing days."""
    import asyncio
    import json

    from lakeformat.pipeline.airflow.triggers import LakeformatLandingTrigger
    from tests.project import CONFIG
    from tests.airflow_plugin.conftest import connection_json
    monkeypatch.setenv("AIRFLOW_CONN_LAKEFORMAT_DEFAULT", connection_json(str(tmp_path / "wh")))
    (tmp_path / "user_behavior" / "dt=2024-06-01").mkdir(parents=True)
    passed = (dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)).isoformat()
    trig = LakeformatLandingTrigger(table="user_behavior", config=str(CONFIG), landing=str(tmp_path),
                                    units=[["2024-06-01", None], ["2024-06-02", None]], deadline=passed,
                                    poke_interval=60)
    path, kwargs = trig.serialize()
    assert path == "lakeformat.pipeline.airflow.triggers.LakeformatLandingTrigger"
    again = LakeformatLandingTrigger(**json.loads(json.dumps(kwargs)))   # as the triggerer keeps them
    assert again.serialize() == (path, kwargs)

    def first_event(t):
        return asyncio.run(anext(t.run())).payload
    event = first_event(again)   # past its deadline: one look, then the event
    assert event["status"] == "done" and event["units"] == 2
    assert [m.split(":")[0] for m in event["missing"]] == ["2024-06-02 of demo.user_behavior"]
    (tmp_path / "user_behavior" / "dt=2024-06-02").mkdir()
    later = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)).isoformat()
    assert first_event(LakeformatLandingTrigger(**{**kwargs, "deadline": later}))["missing"] == []   # no wait
    bad = first_event(LakeformatLandingTrigger(**{**kwargs, "table": "nope"}))
    assert bad["status"] == "error" and "nope" in bad["message"]
