"""Each maintenance operator runs for real in a DAG (dag.test() in a fresh Airflow with a SQLite
home) against a temporary warehouse; the table is checked afterwards with lakeformat itself."""
from __future__ import annotations

import datetime as dt
import os
import time

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.commit import staging

from tests.airflow_plugin.conftest import run_dag

SCHEMA = pa.schema([("user_id", pa.int64()), ("behavior", pa.string()), ("dt", pa.string())])
OLD_DAY, TODAY = "2020-01-01", dt.date.today().isoformat()

MAINTENANCE_DAG = '''
import datetime as dt
import pendulum
from airflow.sdk import DAG
from lakeformat.pipeline.airflow.operators import (
    LakeformatCleanConsumersOperator, LakeformatCompactOperator, LakeformatExpirePartitionsOperator,
    LakeformatExpireSnapshotsOperator, LakeformatRemoveOrphanFilesOperator)

with DAG("plugin_maintenance", schedule=None, start_date=pendulum.datetime(2024, 1, 1),
         params={"dry_run": False}) as dag:
    compact = LakeformatCompactOperator(task_id="compact", table="demo.events", full=True)
    consumers_dry = LakeformatCleanConsumersOperator(task_id="consumers_dry", table="demo.events", dry_run=True)
    consumers = LakeformatCleanConsumersOperator(task_id="clean_consumers", table="demo.events",
                                                 dry_run="{{ params.dry_run }}")
    expire_dry = LakeformatExpireSnapshotsOperator(task_id="expire_dry", table="demo.events",
                                                   retain_min=1, retain_max=2, dry_run=True)
    expire = LakeformatExpireSnapshotsOperator(task_id="expire", table="demo.events", retain_min=1,
                                               retain_max=2, dry_run="{{ params.dry_run }}")
    partitions_dry = LakeformatExpirePartitionsOperator(task_id="partitions_dry", table="demo.events",
                                                        expiration_time="30 d", dry_run=True)
    partitions = LakeformatExpirePartitionsOperator(task_id="expire_partitions", table="demo.events",
                                                    dry_run="{{ params.dry_run }}")
    orphans_dry = LakeformatRemoveOrphanFilesOperator(task_id="orphans_dry", table="demo.events")
    orphans = LakeformatRemoveOrphanFilesOperator(task_id="orphans", table="demo.events",
                                                  older_than="1 d", dry_run=False)
    (compact >> consumers_dry >> consumers >> expire_dry >> expire >> partitions_dry >> partitions
     >> orphans_dry >> orphans)
'''


def _events(ids, day):
    return pa.table({"user_id": ids, "behavior": ["pv"] * len(ids), "dt": [day] * len(ids)}, schema=SCHEMA)


def _age(path: str, seconds: float) -> None:
    t = time.time() - seconds
    os.utime(path, (t, t))


@pytest.fixture(scope="module")
def maintained(tmp_path_factory, migrated_db):
    """The maintenance DAG run once over a table with small files, an old partition, a stale
    and a fresh consumer, and a stray file; the tests below check its parts."""
    import shutil
    base = tmp_path_factory.mktemp("maintenance")
    home = base / "airflow"
    (home / "dags").mkdir(parents=True)
    shutil.copy(migrated_db, home / "airflow.db")
    wh = str(base / "wh")
    cat = lf.Catalog(wh)
    cat.create_database("demo")
    t = cat.create_table("demo.events", SCHEMA, partition_keys=["dt"], options={
        "bucket": "2", "bucket-key": "user_id", "write-only": "true",
        "partition.expiration-time": "30 d", "partition.timestamp-formatter": "yyyy-MM-dd",
        "consumer.expiration-time": "1 h"})
    for i in range(3):
        t.write(_events([10 * i + k for k in range(4)], OLD_DAY))
        t.write(_events([10 * i + k for k in range(4)], TODAY))
    files_before = len(t.files())
    t.consumers.record("stale", 2)
    t.consumers.record("fresh", 6)
    _age(t.consumers.path("stale"), 2 * 3600)
    stray = os.path.join(t.bucket_dir({"dt": TODAY}.values(), 0), "data-stray-left-by-a-crash.parquet")
    with open(stray, "wb") as f:
        f.write(b"not referenced by any snapshot")
    _age(stray, 2 * 86400)
    out = run_dag(home, wh, MAINTENANCE_DAG, "plugin_maintenance")
    return {"catalog": cat, "result": out["runs"][0], "log": out["log"], "stray": stray,
            "files_before": files_before}


def test_plugin_maintenance_dag_succeeds(maintained):
    r = maintained["result"]
    assert r["state"] == "success", maintained["log"][-4000:]
    assert set(r["tasks"].values()) == {"success"}, r["tasks"]


def test_plugin_compact_operator(maintained):
    x = maintained["result"]["xcom"]["compact"]
    assert x["snapshot_id"] == 7 and x["files_before"] == maintained["files_before"] > 4
    assert x["files_after"] == 4 and x["max_sorted_runs_before"] == 3 and x["max_sorted_runs_after"] == 1
    assert f"Compacted demo.events into snapshot 7: {x['files_before']} files became 4 files" in maintained["log"]


def test_plugin_clean_consumers_operator(maintained):
    dry = maintained["result"]["xcom"]["consumers_dry"]
    assert dry == {"table": "demo.events", "dry_run": True, "removed": ["stale"], "remaining": ["fresh"]}
    assert "Would remove 1 consumer of demo.events idle for more than 1:00:00: stale" in maintained["log"]
    x = maintained["result"]["xcom"]["clean_consumers"]
    assert x == {"table": "demo.events", "dry_run": False, "removed": ["stale"], "remaining": ["fresh"]}
    t = maintained["catalog"].get_table("demo.events")
    assert t.consumers.list() == {"fresh": 6}
    assert "Removed 1 consumer of demo.events idle for more than 1:00:00: stale" in maintained["log"]


def test_plugin_expire_snapshots_operator(maintained):
    xc = maintained["result"]["xcom"]
    assert xc["expire_dry"]["dry_run"] is True
    assert xc["expire_dry"]["expired_snapshots"] == xc["expire"]["expired_snapshots"] == [1, 2, 3, 4, 5]
    assert xc["expire"]["remaining_snapshots"] == [6, 7] and xc["expire"]["dry_run"] is False
    assert "Would expire 5 snapshots of demo.events (1..5)" in maintained["log"]
    assert "Expired 5 snapshots of demo.events (1..5)" in maintained["log"]


def test_plugin_expire_partitions_operator(maintained):
    dry = maintained["result"]["xcom"]["partitions_dry"]
    assert dry["partitions"] == [{"dt": OLD_DAY}] and dry["snapshot_id"] is None and dry["dry_run"] is True
    x = maintained["result"]["xcom"]["expire_partitions"]
    assert x["partitions"] == [{"dt": OLD_DAY}] and x["snapshot_id"] == 8
    t = maintained["catalog"].get_table("demo.events")
    assert t.snapshot_manager.list_ids() == [6, 7, 8]
    assert t.latest_snapshot().commit_kind == "OVERWRITE"
    assert set(t.read(columns=["dt"]).column("dt").to_pylist()) == {TODAY}
    assert t.read().num_rows == 12
    assert f"Dropped 1 expired partition of demo.events: dt={OLD_DAY}" in maintained["log"]


def test_plugin_remove_orphan_files_operator(maintained):
    xc = maintained["result"]["xcom"]
    name = os.path.basename(maintained["stray"])
    assert xc["orphans_dry"]["dry_run"] is True and xc["orphans_dry"]["sample"] == [name]
    assert xc["orphans_dry"]["orphan_files"] == 1 and xc["orphans_dry"]["deleted_files"] == 0
    assert xc["orphans"]["deleted_files"] == 1
    assert not os.path.exists(maintained["stray"])
    assert "Found 1 orphan file" in maintained["log"] and "Deleted 1 orphan file" in maintained["log"]


STAGING_DAG = '''
import pendulum
from airflow.sdk import DAG
from lakeformat.pipeline.airflow.operators import LakeformatDiscardOperator, LakeformatPublishOperator

with DAG("plugin_staging", schedule=None, start_date=pendulum.datetime(2024, 1, 1)) as dag:
    publish = LakeformatPublishOperator(task_id="publish", table="demo.events", stage_id="good-batch")
    discard = LakeformatDiscardOperator(task_id="discard", table="demo.events", stage_id="bad-batch")
    publish >> discard
'''


def _stage(t, stage_id, rows):
    user = f"ingest-{stage_id}"
    w = t.new_write(commit_user=user)
    with w:
        w.write(rows)
        msgs = w.prepare_commit()
    return staging.stage(t, msgs, stage_id, commit_user=user, identifier=staging.identifier_for("ingest", stage_id))


def test_plugin_publish_and_discard_operators_run_exactly_once(tmp_path, airflow_home):
    wh = str(tmp_path / "wh")
    cat = lf.Catalog(wh)
    cat.create_database("demo")
    t = cat.create_table("demo.events", SCHEMA, partition_keys=["dt"], options={"bucket": "1", "write-only": "true"})
    t.write(_events([1, 2], TODAY))
    _stage(t, "good-batch", _events([3, 4, 5], TODAY))
    bad = _stage(t, "bad-batch", _events([6, 7], TODAY))
    bad_files = [os.path.join(t.bucket_dir_of(m.partition, m.bucket), f.file_name)
                 for m in bad.messages for f in m.new_files]
    assert all(os.path.exists(p) for p in bad_files) and t.read().num_rows == 2

    out = run_dag(airflow_home, wh, STAGING_DAG, "plugin_staging", runs=2)
    first, second = out["runs"]
    assert first["state"] == second["state"] == "success", out["log"][-4000:]
    assert first["xcom"]["publish"] == {"table": "demo.events", "stage_id": "good-batch", "snapshot_id": 2, "rows": 3}
    assert first["xcom"]["discard"] == {"table": "demo.events", "stage_id": "bad-batch", "discarded": True,
                                        "rows": 2, "files": len(bad_files)}
    # the re-run publishes nothing new and finds nothing to discard
    assert second["xcom"]["publish"]["snapshot_id"] == 2
    assert second["xcom"]["discard"]["discarded"] is False
    t = cat.get_table("demo.events")
    assert t.snapshot_manager.list_ids() == [1, 2]
    assert sorted(t.read().column("user_id").to_pylist()) == [1, 2, 3, 4, 5]
    assert not any(os.path.exists(p) for p in bad_files)
    assert "Published stage good-batch of demo.events as snapshot 2 (APPEND, +3 rows" in out["log"]
    assert "Discarded stage bad-batch of demo.events: 2 rows not published" in out["log"]
