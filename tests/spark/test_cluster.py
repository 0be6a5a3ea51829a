"""The jobs on a real Spark standalone cluster (a master and two workers from ``spark-class``),
submitted with ``spark-submit --master spark://... --py-files lakeformat.zip``, the warehouse on
the S3 endpoint the tests run: ingest, distributed compaction and snapshot expiration, then the
table read by lakeformat and by pypaimon."""
from __future__ import annotations

import pathlib
import subprocess
import uuid
import zipfile

import boto3

import lakeformat as lf
from lakeformat.pipeline import landing
from tests.interop.helpers import Oracle, assert_same_rows, check_readers
from tests.s3server import BUCKET, CREDS, s3_endpoint  # noqa: F401 (fixture)
from tests.spark.cluster import ROOT, cluster_env, completed_apps, standalone_cluster

CONFIG = ROOT / "config" / "tables.yaml"


def pyfiles(path: pathlib.Path) -> pathlib.Path:
    """What ``make pyfiles`` builds: the lakeformat package as one archive."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for p in sorted((ROOT / "lakeformat").rglob("*.py")):
            z.write(p, p.relative_to(ROOT).as_posix())
    return path


def download(endpoint: str, prefix: str, to: pathlib.Path) -> None:
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="testing",
                      aws_secret_access_key="testing")
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        for o in page.get("Contents", []):
            dest = to / o["Key"][len(prefix):].lstrip("/")
            dest.parent.mkdir(parents=True, exist_ok=True)
            s3.download_file(BUCKET, o["Key"], str(dest))


def test_ingest_compact_expire_on_a_standalone_cluster(tmp_path, s3_endpoint):  # noqa: F811
    wh = f"s3://{BUCKET}/cluster-{uuid.uuid4().hex[:8]}"
    options = {**CREDS, "s3.endpoint": s3_endpoint, "s3.path-style-access": "true"}
    catalog_args = [a for k, v in options.items() for a in ("--catalog-option", f"{k}={v}")]
    land = str(tmp_path / "landing")
    assert landing.main(["--landing", land, "--start", "2024-06-01", "--rows-per-day", "2000",
                         "--config", str(CONFIG)]) == 0
    zipped = pyfiles(tmp_path / "lakeformat.zip")
    env = dict(cluster_env(tmp_path / "cluster"), LAKEFORMAT_CONFIG=str(CONFIG))
    with standalone_cluster(tmp_path / "cluster") as (master, ui):
        def submit(job: str, *args: str) -> str:
            cmd = [str(ROOT / ".venv" / "bin" / "spark-submit"), "--master", master, "--py-files", str(zipped),
                   "--conf", "spark.ui.enabled=false", "--conf", "spark.executor.memory=512m",
                   "--conf", "spark.sql.shuffle.partitions=2", str(ROOT / "jobs" / f"{job}.py"),
                   "--table", "user_behavior", "--warehouse", wh, *catalog_args, *args]
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900, cwd=ROOT)
            assert p.returncode == 0, f"{job} failed ({p.returncode}):\n{p.stderr[-3000:]}"
            return p.stdout

        assert "ingested user_behavior 2024-06-01" in submit("ingest", "--date", "2024-06-01", "--landing", land)
        t = lf.Catalog(wh, **options).get_table("demo.user_behavior")
        extra = t.read().slice(0, 500)
        for _ in range(2):   # more small files in every bucket: something to compact
            t.write(extra)
        out = submit("compact", "--full")
        assert "compacted demo.user_behavior" in out and "COMPACT" in out
        # the compaction job expires by the table's options (1 minute); this job keeps just the last
        expired = submit("expire_snapshots", "--retain-max", "1", "--retain-min", "1", "--older-than", "0 s")
        assert "expired snapshots" in out + expired
        apps = completed_apps(ui)
    # ingest and compaction ran as cluster applications (expiration is metadata work: no Spark)
    assert sorted(a["name"] for a in apps) == ["lakeformat-compact-user_behavior",
                                               "lakeformat-ingest-user_behavior-2024-06-01"], apps
    assert all(a["state"] == "FINISHED" for a in apps), apps

    t = lf.Catalog(wh, **options).get_table("demo.user_behavior")
    assert [s.commit_kind for s in t.snapshots()] == ["COMPACT"]
    rows = t.read()
    landed = sum(len(f.read_text().splitlines()) for f in pathlib.Path(land).rglob("*") if f.is_file()
                 and "user_behavior" in f.as_posix())
    assert rows.num_rows == landed + 1000 and set(rows.column("dt").to_pylist()) == {"2024-06-01"}
    assert all(r["sorted_runs"] <= 1 for r in t.system_table("buckets").to_pylist())
    local = tmp_path / "copy"
    download(s3_endpoint, wh.split(BUCKET + "/", 1)[1], local)
    oracle = Oracle(tmp_path / "oracle")
    i = oracle.read(str(local), "demo.user_behavior")
    check_readers(oracle.run(), i, rows, ["user_id", "item_id", "ts"], what="cluster output")
    assert_same_rows(lf.Catalog(str(local)).get_table("demo.user_behavior").read(), rows,
                     ["user_id", "item_id", "ts"], "local copy")

