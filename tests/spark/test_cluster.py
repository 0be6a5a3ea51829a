"""The jobs on a real Spark standalone cluster (a master and two one-core workers from
``docker/spark-node.sh``, i.e. PySpark's ``spark-class``), submitted with ``spark-submit --master
spark://... --py-files <make pyfiles>``, the warehouse on the S3 endpoint the tests run: ingest,
distributed compaction and snapshot expiration, then the table read by lakeformat and pypaimon.
Credentials reach the jobs through their environment, never their command line or a log."""
from __future__ import annotations

import pathlib
import subprocess
import uuid

import boto3
import pyarrow.compute as pc
import pytest

import lakeformat as lf
from lakeformat.format.schema import SetOption
from lakeformat.pipeline import landing
from lakeformat.table.settings import CatalogSettings
from tests.interop.helpers import Oracle, assert_same_rows, check_readers
from tests.s3server import BUCKET, s3_endpoint  # noqa: F401 (fixture)
from tests.spark.cluster import ROOT, standalone_cluster

pytestmark = pytest.mark.slow
CONFIG = ROOT / "config" / "tables.yaml"
KEY = ["user_id", "item_id", "ts"]


def make_pyfiles(path: pathlib.Path) -> pathlib.Path:
    """``make pyfiles``, into ``path``."""
    subprocess.run(["make", "-s", "-C", str(ROOT), "pyfiles", f"PYFILES={path}"], check=True, capture_output=True,
                   timeout=120)
    return path


def s3_client(endpoint: str, creds: dict):
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id=creds["s3.access-key"], aws_secret_access_key=creds["s3.secret-key"])


def object_keys(s3, prefix: str) -> list[str]:
    """Every object under ``prefix`` (directory markers, keys ending in '/', left out)."""
    return [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
            for o in page.get("Contents", []) if not o["Key"].endswith("/")]


def download(s3, prefix: str, to: pathlib.Path) -> None:
    for key in object_keys(s3, prefix):
        dest = to / key[len(prefix):].lstrip("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        s3.download_file(BUCKET, key, str(dest))


def test_ingest_compact_expire_on_a_standalone_cluster(tmp_path, s3_endpoint):
    prefix = f"cluster-{uuid.uuid4().hex[:8]}"
    wh = f"s3://{BUCKET}/{prefix}"
    secret = f"cluster-secret-{uuid.uuid4().hex}"    # moto takes any key: one we can look for
    creds = {"s3.access-key": "cluster-key", "s3.secret-key": secret}
    options = {**creds, "s3.endpoint": s3_endpoint, "s3.region": "us-east-1", "s3.path-style-access": "true"}
    land = tmp_path / "landing"
    assert landing.main(["--landing", str(land), "--start", "2024-06-01", "--rows-per-day", "2000",
                         "--table", "user_behavior", "--config", str(CONFIG)]) == 0
    landed = sum(len(f.read_text().splitlines()) for f in land.rglob("*.jsonl"))
    zipped = make_pyfiles(tmp_path / "dist" / "lakeformat.zip")
    # what the DAGs' operator does with the lakeformat connection: the settings in the environment
    env = {**CatalogSettings(wh, options).to_env(), "LAKEFORMAT_CONFIG": str(CONFIG)}
    outputs = []
    with standalone_cluster(tmp_path / "cluster") as cluster:
        def submit(job: str, *args: str) -> str:
            p = cluster.submit(ROOT / "jobs" / f"{job}.py", ["--table", "user_behavior", *args],
                               py_files=zipped, env=env)
            assert secret not in " ".join(p.args), "a credential on spark-submit's command line"
            outputs.append(p.stdout + p.stderr)
            assert p.returncode == 0, f"{job} failed ({p.returncode}):\n{p.stderr[-4000:]}\n{cluster.logs()[-4000:]}"
            return p.stdout

        assert "ingested user_behavior 2024-06-01" in submit("ingest", "--date", "2024-06-01", "--landing", str(land))
        t = lf.Catalog(wh, **options).get_table("demo.user_behavior")
        # the compaction job expires by the table's options: none due there, however slow the machine
        t.alter(SetOption("snapshot.time-retained", "1 h"))
        ingested = t.read()
        extra = ingested.take(list(range(0, ingested.num_rows, 4)))   # rows of every bucket
        for _ in range(2):   # more small files in every bucket: something to compact
            t.write(extra)
        before = {f["path"] for f in t.files()}
        out = submit("compact", "--full")
        assert "compacted demo.user_behavior" in out and "(COMPACT)" in out, out
        # the expiration job, told to keep the last snapshot only
        expired = submit("expire_snapshots", "--retain-max", "1", "--retain-min", "1", "--older-than", "0 s")
        assert "expired snapshots 1..3" in expired, expired
        apps = cluster.state()["completedapps"]
        logs = cluster.logs()
    # compaction: the buckets packed into as many tasks as the cluster runs at once (two one-core
    # workers), so tasks ran on both workers' executors
    compaction = next(a["id"] for a in apps if a["name"] == "lakeformat-compact-user_behavior")
    tasks = {p.parent.name: p.read_text().count("Executor: Running task")
             for p in (tmp_path / "cluster" / "worker" / compaction).glob("*/stderr")}
    # ingest and compaction ran as cluster applications (expiration is metadata work: no Spark
    # session); nothing printed or logged a credential
    assert sorted(a["name"] for a in apps) == ["lakeformat-compact-user_behavior",
                                               "lakeformat-ingest-user_behavior-2024-06-01"], apps
    assert all(a["state"] == "FINISHED" for a in apps), apps
    assert sorted(tasks) == ["0", "1"] and all(tasks.values()) and sum(tasks.values()) >= 2, tasks
    assert secret not in logs and not any(secret in o for o in outputs)

    t = lf.Catalog(wh, **options).get_table("demo.user_behavior")
    assert [s.commit_kind for s in t.snapshots()] == ["COMPACT"]
    rows = t.read()
    assert rows.num_rows == landed + 2 * extra.num_rows and set(rows.column("dt").to_pylist()) == {"2024-06-01"}
    assert all(r["sorted_runs"] <= 1 for r in t.system_table("buckets").to_pylist())
    # expiration deleted the files only the old snapshots had: the bucket folders hold the live files
    s3 = s3_client(s3_endpoint, creds)
    live = {f["path"] for f in t.files()}
    stored = {f"s3://{BUCKET}/{k}" for k in object_keys(s3, prefix) if "/bucket-" in k}
    assert stored == live and before - live, (stored, live, before)
    local = tmp_path / "copy"
    download(s3, prefix, local)
    oracle = Oracle(tmp_path / "oracle")
    i = oracle.read(str(local), "demo.user_behavior")
    check_readers(oracle.run(), i, rows, KEY, what="cluster output")
    assert_same_rows(lf.Catalog(str(local)).get_table("demo.user_behavior").read(), rows, KEY, "local copy")


def test_sql_catalog_on_s3_on_a_standalone_cluster(tmp_path, s3_endpoint):
    """The SQL catalog over an S3 warehouse, driven by a job submitted to the cluster: CREATE
    TABLE, INSERT INTO (rows computed on the executors), SELECT with a filter, CALL create_tag,
    INSERT OVERWRITE of a partition, ALTER TABLE ADD COLUMN, CALL compact, a system table,
    VERSION AS OF a tag, DELETE FROM a primary-key table and CALL expire_snapshots; the tables
    then read by lakeformat and pypaimon. The credentials travel in the job's environment only."""
    import json

    import lakeformat.spark as lfs

    prefix = f"cluster-sql-{uuid.uuid4().hex[:8]}"
    wh = f"s3://{BUCKET}/{prefix}"
    secret = f"cluster-sql-secret-{uuid.uuid4().hex}"
    creds = {"s3.access-key": "cluster-key", "s3.secret-key": secret}
    options = {**creds, "s3.endpoint": s3_endpoint, "s3.region": "us-east-1"}
    zipped = make_pyfiles(tmp_path / "dist" / "lakeformat.zip")
    with standalone_cluster(tmp_path / "cluster") as cluster:
        p = cluster.submit(ROOT / "tests" / "spark" / "sql_cluster_app.py", ["db.sales"], py_files=zipped,
                           env=CatalogSettings(wh, options).to_env(), conf={"spark.jars": lfs.jar_path()},
                           timeout=300)
        assert secret not in " ".join(p.args), "a credential on spark-submit's command line"
        assert p.returncode == 0, f"the SQL job failed ({p.returncode}):\n{p.stderr[-4000:]}\n{cluster.logs()[-4000:]}"
        apps = cluster.state()["completedapps"]
        logs = cluster.logs()
    assert [a["name"] for a in apps] == ["lakeformat-sql-catalog"] and apps[0]["state"] == "FINISHED", apps
    assert secret not in logs and secret not in p.stdout + p.stderr
    answer = json.loads(p.stdout.strip().splitlines()[-1])

    t = lf.Catalog(wh, **options).get_table("db.sales")
    rows = t.read()
    kinds = ["APPEND", "APPEND", "OVERWRITE", "APPEND", "APPEND", "COMPACT"]
    assert [s.commit_kind for s in t.snapshots()] == kinds == answer["kinds"]
    assert t.tags.names() == ["loaded"] and answer["as_of"] == 4001
    late = sum(range(200000, 200010))
    assert rows.num_rows == 4012 and answer["final"] == [4012, sum(range(4000)) + 100001 + 100002 + late, 1]
    assert rows.filter(pc.field("dt") == "2024-06-03").sort_by("id").select(["id", "note"]).to_pylist() == [
        {"id": 100001, "note": None}, {"id": 100002, "note": "new"}]
    expected = t.read(columns=["id"], filter=(lf.col("dt") == "2024-06-01") & (lf.col("k") == "3")
                      & (lf.col("price") > 50.0))
    assert answer["filtered"] == sorted(expected["id"].to_pylist()) and len(answer["filtered"]) > 10
    assert answer["filtered"] == [i for i in range(0, 4000, 2) if i % 7 == 3 and i / 10 > 50]
    assert answer["count"] == 4001 and answer["sum"] == sum(range(4000)) + 100000
    assert answer["tables"] == ["sales"]
    users = lf.Catalog(wh, **options).get_table("db.users")
    kept = users.read()
    assert sorted(kept["id"].to_pylist()) == [i for i in range(100) if i >= 10 and i != 50] and answer["users"] == 89
    assert answer["expired"] == 1 and [s.commit_kind for s in users.snapshots()] == ["APPEND"]   # the delete's
    local = tmp_path / "copy"
    download(s3_client(s3_endpoint, creds), prefix, local)
    oracle = Oracle(tmp_path / "oracle")
    i = oracle.read(str(local), "db.sales")
    j = oracle.read(str(local), "db.users")
    results = oracle.run()
    check_readers(results, i, rows, ["id"], what="SQL on the cluster")
    check_readers(results, j, kept, ["id"], what="DELETE FROM on the cluster")
