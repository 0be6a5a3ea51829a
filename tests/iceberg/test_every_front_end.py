"""Each maintenance operation through every front end (the library, the CLI in a subprocess, the
jobs through a real ``spark-submit``, the Airflow operators run by ``dag.test()``) on a table that
publishes Iceberg metadata; afterwards PyIceberg (``StaticTable`` on the newest metadata) and
DuckDB's ``iceberg_scan`` read every snapshot the metadata lists, the rows lakeformat reads there.

The front ends share one door (``Table.maintenance``), so the Iceberg metadata follows whichever
ran: an expiration run by a job once left Iceberg readers listing snapshots whose files were gone.
"""
from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.table import StaticTable

import lakeformat as lf
from tests.airflow_plugin.conftest import migrated_db, run_dag  # noqa: F401 - the fixture
from tests.conftest import EVENTS, events
from tests.iceberg.readers import duckdb_rows, lakeformat_rows, metadata_path, pyiceberg_rows

OLD_DAY, TODAY = "2020-01-01", dt.date.today().isoformat()
OPTIONS = {"metadata.iceberg.storage": "table-location", "bucket": "1", "bucket-key": "user_id",
           "partition.timestamp-formatter": "yyyy-MM-dd", "snapshot.num-retained.min": "10",
           "snapshot.num-retained.max": "100", "snapshot.time-retained": "7 d"}
SCRIPT = Path(sys.executable).with_name("lakeformat")
SPARK_SUBMIT = Path(sys.executable).with_name("spark-submit")
ROOT = Path(__file__).resolve().parents[2]


def make_table(wh: str, name: str) -> str:
    """Six overwrites of two days, then two appends (so a bucket has files to compact), and a
    stray file old enough for orphan removal: eight snapshots, all published to Iceberg."""
    cat = lf.Catalog(wh)
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table(name, EVENTS, partition_keys=["dt"], options=OPTIONS)
    for i in range(6):
        t.write(pa.concat_tables([events(4, OLD_DAY, start=i * 10), events(4, TODAY, start=i * 10)]), overwrite=True)
    for i in range(2):
        t.write(events(3, TODAY, start=100 + i * 10))
    stray = Path(t.bucket_dir([TODAY], 0)) / "data-left-by-a-crash-0.parquet"
    stray.write_bytes(b"PAR1 not really")
    old = time.time() - 3 * 86400
    os.utime(stray, (old, old))
    assert [s.snapshot_id for s in StaticTable.from_metadata(metadata_path(t)).snapshots()] == list(range(1, 9))
    return str(stray)


def every_snapshot_readable(wh: str, name: str) -> list[int]:
    """PyIceberg and DuckDB read every snapshot the newest metadata lists, as lakeformat does;
    the metadata lists exactly Paimon's snapshots and tags. Returns the listed snapshot ids."""
    t = lf.Catalog(wh).get_table(name)   # a fresh catalog: nothing remembered from the operation
    meta = StaticTable.from_metadata(metadata_path(t)).metadata
    listed = [s.snapshot_id for s in meta.snapshots]
    assert listed == t.snapshot_manager.list_ids(), "Iceberg lists other snapshots than Paimon has"
    assert meta.current_snapshot_id == t.latest_snapshot().id
    for sid in listed:
        expected = lakeformat_rows(t, sid)
        assert pyiceberg_rows(t, sid) == expected, f"PyIceberg reads snapshot {sid} differently"
        assert duckdb_rows(t, sid) == expected, f"DuckDB reads snapshot {sid} differently"
    tags = {name: ref.snapshot_id for name, ref in meta.refs.items() if ref.snapshot_ref_type == "tag"}
    assert tags == {tag.name: tag.snapshot.id for tag in t.tags.list() if tag.snapshot.id in listed}
    return listed


def check(op: str, wh: str, stray: str) -> None:
    """What ``op`` must have done (to the table ``db.<op>``), and every listed snapshot readable."""
    listed = every_snapshot_readable(wh, f"db.{op}")
    t = lf.Catalog(wh).get_table(f"db.{op}")
    if op == "expire_snapshots":
        assert listed == [8]
    elif op == "expire_partitions":
        assert listed == list(range(1, 10)) and t.latest_snapshot().commit_kind == "OVERWRITE"
        assert set(t.read(columns=["dt"]).column("dt").to_pylist()) == {TODAY}
    elif op == "rollback":
        assert listed == [1, 2, 3]
    elif op == "tags":
        assert t.tags.names() == []
    elif op == "compact":
        assert listed == list(range(1, 10)) and t.latest_snapshot().commit_kind == "COMPACT"
    elif op == "remove_orphans":
        assert listed == list(range(1, 9)) and not os.path.exists(stray)
    else:
        raise AssertionError(op)


def tag_published(wh: str) -> None:
    """Between the tag's creation and its deletion: Iceberg shows it as a tag ref."""
    every_snapshot_readable(wh, "db.tags")
    meta = StaticTable.from_metadata(metadata_path(lf.Catalog(wh).get_table("db.tags"))).metadata
    assert meta.refs["v3"].snapshot_id == 3 and meta.refs["v3"].snapshot_ref_type == "tag"


OPERATIONS = ["expire_snapshots", "expire_partitions", "rollback", "tags", "compact", "remove_orphans"]


# -- the library -------------------------------------------------------------------------------
@pytest.mark.parametrize("op", OPERATIONS)
def test_library(tmp_path, op):
    wh = str(tmp_path / "wh")
    stray = make_table(wh, f"db.{op}")
    m = lf.Catalog(wh).get_table(f"db.{op}").maintenance
    if op == "expire_snapshots":
        m.expire_snapshots(retain_min=1, retain_max=1, older_than=dt.timedelta(0))
    elif op == "expire_partitions":
        assert m.expire_partitions(expiration_time="30 d") == [{"dt": OLD_DAY}]
    elif op == "rollback":
        m.rollback_to(3)
    elif op == "tags":
        m.create_tag("v3", 3)
        tag_published(wh)
        m.delete_tag("v3")
    elif op == "compact":
        assert m.compact(full=True).snapshot.id == 9
    elif op == "remove_orphans":
        assert m.remove_orphan_files(older_than=dt.timedelta(days=1)).orphans
    check(op, wh, stray)


# -- the CLI, as a user runs it ----------------------------------------------------------------
CLI = {"expire_snapshots": [["expire-snapshots", "db.expire_snapshots", "--retain-min", "1", "--retain-max", "1",
                             "--older-than", "0 s"]],
       "expire_partitions": [["expire-partitions", "db.expire_partitions", "--expiration-time", "30 d"]],
       "rollback": [["rollback", "db.rollback", "--to", "3"]],
       "tags": [["create-tag", "db.tags", "v3", "--snapshot", "3"], ["delete-tag", "db.tags", "v3"]],
       "compact": [["compact", "db.compact", "--full"]],
       "remove_orphans": [["remove-orphan-files", "db.remove_orphans", "--older-than", "1 d"]]}


def cli(wh: str, argv: list[str]) -> None:
    done = subprocess.run([str(SCRIPT), *argv], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "LAKEFORMAT_WAREHOUSE": wh})
    assert done.returncode == 0, f"lakeformat {' '.join(argv)}: {done.stderr[-3000:]}"


@pytest.mark.parametrize("op", OPERATIONS)
def test_cli(tmp_path, op):
    wh = str(tmp_path / "wh")
    stray = make_table(wh, f"db.{op}")
    for i, argv in enumerate(CLI[op]):
        if i:
            tag_published(wh)
        cli(wh, argv)
    check(op, wh, stray)


# -- the jobs, through spark-submit -------------------------------------------------------------
JOBS = {"expire_snapshots": ["--retain-min", "1", "--retain-max", "1", "--older-than", "0 s"],
        "expire_partitions": ["--expiration-time", "30 d"],
        "compact": ["--full"],
        "remove_orphans": ["--older-than", "1 d"]}


@pytest.mark.slow
def test_spark_jobs(tmp_path):
    """The four maintenance jobs, each on a table of its own, submitted at once."""
    wh = str(tmp_path / "wh")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKEFORMAT_")}
    env.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    running = {}
    for op, args in JOBS.items():
        stray = make_table(wh, f"db.{op}")
        cmd = [str(SPARK_SUBMIT), "--master", "local[1]", "--conf", "spark.ui.enabled=false",
               "--driver-java-options", "-Dlog4j.rootLogger=WARN", str(ROOT / "jobs" / f"{op}.py"),
               "--table", f"db.{op}", "--warehouse", wh, *args]
        running[op] = (stray, subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                                   text=True, cwd=ROOT))
    for op, (stray, p) in running.items():
        _out, err = p.communicate(timeout=420)
        assert p.returncode == 0, f"jobs/{op}.py failed ({p.returncode}):\n{err[-3000:]}"
        check(op, wh, stray)


# -- the Airflow operators, run for real ------------------------------------------------------------
AIRFLOW_DAG = '''
import datetime as dt
import pendulum
from airflow.sdk import DAG
from lakeformat.pipeline.airflow.operators import (
    LakeformatCompactOperator, LakeformatExpirePartitionsOperator, LakeformatExpireSnapshotsOperator,
    LakeformatRemoveOrphanFilesOperator)

with DAG("every_front_end", schedule=None, start_date=pendulum.datetime(2024, 1, 1)) as dag:
    LakeformatExpireSnapshotsOperator(task_id="expire_snapshots", table="db.expire_snapshots",
                                      retain_min=1, retain_max=1, older_than="0 s")
    LakeformatExpirePartitionsOperator(task_id="expire_partitions", table="db.expire_partitions",
                                       expiration_time="30 d")
    LakeformatCompactOperator(task_id="compact", table="db.compact", full=True)
    LakeformatRemoveOrphanFilesOperator(task_id="remove_orphans", table="db.remove_orphans",
                                        older_than="1 d", dry_run=False)
'''


@pytest.mark.slow
def test_airflow_operators(tmp_path, migrated_db):
    """The four maintenance operators, each on a table of its own, in one DAG run."""
    home = tmp_path / "airflow"
    (home / "dags").mkdir(parents=True)
    shutil.copy(migrated_db, home / "airflow.db")
    wh = str(tmp_path / "wh")
    strays = {op: make_table(wh, f"db.{op}") for op in JOBS}
    out = run_dag(home, wh, AIRFLOW_DAG, "every_front_end", timeout=420)
    r = out["runs"][0]
    assert r["state"] == "success" and set(r["tasks"].values()) == {"success"}, out["log"][-4000:]
    for op, stray in strays.items():
        check(op, wh, stray)
