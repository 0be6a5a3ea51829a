"""The jobs through a real ``spark-submit``, as the Airflow DAGs run them: landing files in, a
direct and a staged ingest, a re-run that changes nothing, and every maintenance job."""
from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.json as pjson

import lakeformat as lf
from lakeformat.pipeline import landing
from lakeformat.maintenance.consumer import ConsumerManager
from lakeformat.pipeline.config import load_config
from lakeformat.pipeline.ingest import create_table
from tests.project import CONFIG, ROOT
from tests.project import JOBS as JOB_DIR

SPARK_SUBMIT = Path(sys.executable).parent / "spark-submit"
JOBS = ["ingest", "compact", "expire_snapshots", "expire_partitions", "clean_consumers", "remove_orphans"]


def start(job: str, *args: str, warehouse: str) -> subprocess.Popen:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               LAKEFORMAT_CONFIG=str(CONFIG), LAKEFORMAT_WAREHOUSE=warehouse)
    cmd = [str(SPARK_SUBMIT), "--master", "local[2]", "--conf", "spark.ui.enabled=false",
           "--conf", "spark.sql.shuffle.partitions=2", "--driver-java-options", "-Dlog4j.rootLogger=WARN",
           str(JOB_DIR / f"{job}.py"), *args]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)


def finish(p: subprocess.Popen, timeout: int = 240) -> str:
    out, err = p.communicate(timeout=timeout)
    assert p.returncode == 0, f"{' '.join(p.args[-6:])} failed ({p.returncode}):\n{err[-3000:]}"
    return out


def submit(job: str, *args: str, warehouse: str) -> str:
    return finish(start(job, *args, warehouse=warehouse))


def landing_rows(path: str, fmt: str) -> pa.Table:
    files = sorted(Path(path).glob("*"))
    read = (lambda f: pjson.read_json(f)) if fmt == "jsonl" else (lambda f: pcsv.read_csv(f))
    return pa.concat_tables([read(f) for f in files])


def test_every_job_answers_help():
    for job in JOBS:   # argparse only: plain Python is enough here, spark-submit is tested below
        out = subprocess.run([sys.executable, str(JOB_DIR / f"{job}.py"), "--help"], capture_output=True,
                             text=True, timeout=60, cwd=ROOT)
        assert out.returncode == 0 and "--table" in out.stdout and "--warehouse" in out.stdout, out.stderr
    bad = subprocess.run([sys.executable, str(JOB_DIR / "compact.py"), "--table", "no_such_table",
                          "--config", str(CONFIG)], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert bad.returncode == 2 and "table 'no_such_table' is not in" in bad.stderr and "Traceback" not in bad.stderr


def test_ingest_direct_staged_published_and_rerun(tmp_path):
    wh, land = str(tmp_path / "wh"), str(tmp_path / "landing")
    assert landing.main(["--landing", land, "--start", "2024-06-01", "--rows-per-day", "3000",
                         "--config", str(CONFIG)]) == 0
    direct = start("ingest", "--table", "user_behavior", "--date", "2024-06-01", "--landing", land, warehouse=wh)
    staged = start("ingest", "--table", "item_price", "--date", "2024-06-01", "--landing", land,
                   "--stage", "ingest-item_price-2024-06-01", warehouse=wh)
    assert "ingested user_behavior 2024-06-01: snapshot 1 (APPEND" in finish(direct)
    assert "staged" in finish(staged)

    cfg = load_config(str(CONFIG))
    cat = lf.Catalog(wh)
    ub, prices = cat.get_table("demo.user_behavior"), cat.get_table("demo.item_price")
    assert prices.latest_snapshot() is None            # staged: nothing visible yet
    events = landing_rows(cfg.table("user_behavior").landing_dir(land, "2024-06-01"), "jsonl")
    got = ub.read()
    assert got.num_rows == events.num_rows and set(got.column("dt").to_pylist()) == {"2024-06-01"}
    assert pc.sum(got.column("user_id")).as_py() == pc.sum(events.column("user_id")).as_py()
    late = pc.sum(pc.less(got.column("ts"), pa.scalar(dt.datetime(2024, 6, 1), pa.timestamp("ms")))).as_py()
    assert late > 0                                   # late events stay in the day they arrived

    rerun = start("ingest", "--table", "user_behavior", "--date", "2024-06-01", "--landing", land, warehouse=wh)
    publish = start("ingest", "--table", "item_price", "--date", "2024-06-01",
                    "--publish", "ingest-item_price-2024-06-01", warehouse=wh)
    assert "already ingested" in finish(rerun)
    assert "published stage ingest-item_price-2024-06-01" in finish(publish)
    assert len(ub.snapshots()) == 1
    updates = landing_rows(cfg.table("item_price").landing_dir(land, "2024-06-01"), "csv")
    newest = {}
    for r in updates.to_pylist():   # deduplicate on item_id, the newest updated_at wins
        if r["item_id"] not in newest or r["updated_at"] >= newest[r["item_id"]]["updated_at"]:
            newest[r["item_id"]] = r
    read = {r["item_id"]: r for r in prices.read().to_pylist()}
    assert read.keys() == newest.keys()
    assert all(read[k]["price"] == v["price"] for k, v in newest.items())


def test_maintenance_jobs(tmp_path):
    wh = str(tmp_path / "wh")
    cfg = load_config(str(CONFIG))
    t = create_table(lf.Catalog(wh), cfg.table("user_behavior"))
    # the demo keeps snapshots 1 min: on a loaded machine the compaction job's own expiration would
    # leave nothing for expire_snapshots to do; a day keeps that step's outcome independent of timing
    t.alter(lf.SetOption("snapshot.time-retained", "1 d"))
    t = lf.Catalog(wh).get_table(t.name)
    schema = t.arrow_schema()
    old_day = "2001-01-01"   # partition.expiration-time is 3650 d
    for i, day in enumerate(["2024-06-01"] * 4 + [old_day]):
        t.write(pa.table({"user_id": [7], "item_id": [i], "behavior": ["pv"], "price": [1.0],
                          "ts": [dt.datetime(2024, 6, 1)], "dt": [day]}, schema=schema))
    consumers = ConsumerManager(t.ctx)
    consumers.record("stale-reader", 1)
    stale = time.time() - 10 * 86400
    os.utime(consumers.path("stale-reader"), (stale, stale))
    orphan = Path(t.files()[0]["path"]).parent / "data-left-by-a-crash-0.parquet"
    orphan.write_bytes(b"PAR1 not really")
    os.utime(orphan, (stale, stale))

    compact = start("compact", "--table", "user_behavior", warehouse=wh)
    clean = start("clean_consumers", "--table", "user_behavior", "--older-than", "1 d", warehouse=wh)
    assert "compacted demo.user_behavior" in finish(compact)
    assert "removed 1 idle consumer(s) ['stale-reader']" in finish(clean)
    # a partition drop commits while orphans are looked for: the files it writes are too young
    drop = start("expire_partitions", "--table", "user_behavior", warehouse=wh)
    orphans = start("remove_orphans", "--table", "demo.user_behavior", "--older-than", "1 d", warehouse=wh)
    assert "dropped 1 partition(s): dt=2001-01-01" in finish(drop)
    assert "deleted 1 orphan file(s)" in finish(orphans) and not orphan.exists()
    assert t.read().num_rows == 4 and {f["partition"]["dt"] for f in t.files()} == {"2024-06-01"}
    assert "expired snapshots" in submit("expire_snapshots", "--table", "user_behavior", "--retain-max", "2",
                                         "--retain-min", "2", "--older-than", "0 s", warehouse=wh)
    assert len(t.snapshots()) == 2 and t.read().num_rows == 4
