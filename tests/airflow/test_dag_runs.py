"""The DAGs end to end with dag.test(): the real SparkSubmitOperator running jobs/ingest.py and
jobs/compact.py on local Spark, Great Expectations audits, the plugin's maintenance operators.

Spark start-up dominates, so the module ingests once (a fixture) and the tests look at what
that did from different sides; every DAG run happens in a fresh interpreter (dag_runner.py)."""
from __future__ import annotations

import datetime as dt
import os
import shutil
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.json as pjson
import pytest

import lakeformat as lf
from lakeformat.table import staging
from lakeformat.pipeline.config import asset_uri, load_config
from tests.project import CONFIG as CONFIG_PATH

from .conftest import BAD_DAY, DAYS, Airflow, _home

CONFIG = load_config(str(CONFIG_PATH))
UB, IP = CONFIG.table("user_behavior"), CONFIG.table("item_price")
UNIT = {"landing": "success", **{f"ingest.{t}[0]": "success" for t in ("stage", "audit", "publish")}, "plan": "success"}
# a loaded day: plan finds it published and skips; the ingest group is never expanded (no Spark job)
LOADED = {"landing": "success", "plan": "skipped", **{f"ingest.{t}": "skipped" for t in ("stage", "audit", "publish")}}


def days(dag_id: str) -> list[dict]:
    """What Airflow's backfill of DAYS[0]..DAYS[1] makes: one run per day, that day its logical date."""
    return [{"dag_id": dag_id, "logical_date": d} for d in DAYS[:2]]


def landing_rows(landing: Path, spec, day: str) -> pa.Table:
    folder = landing / spec.landing_path.format(ds=day, hour=0)
    read = pjson.read_json if spec.landing_format == "jsonl" else pcsv.read_csv
    files = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith((".", "_")))
    return pa.concat_tables([read(str(p)) for p in files], promote_options="permissive")


def data_files_on_disk(table: lf.Table) -> set[str]:
    return {f for _, _, fs in os.walk(table.path) for f in fs if f.startswith("data-")}


def live_files(table: lf.Table) -> set[str]:
    return {f["file_name"] for f in table.files()}


@pytest.fixture(scope="module")
def ingested(tmp_path_factory, migrated_db, landing):
    """Backfill DAYS[0]..DAYS[1] of user_behavior and item_price and run user_behavior's bad
    day; re-run the user_behavior backfill (its commits are retained), then expire its first
    snapshot (the DAYS[0] commit) and re-run it a third time (its published marker says the day
    is loaded). Each re-run in its own interpreter, its output kept: no Spark job may start."""
    root = tmp_path_factory.mktemp("ingested")
    af = Airflow(_home(root, migrated_db), root / "warehouse", landing)
    started = time.perf_counter()
    *runs, bad = af.run(*days("lakeformat_ingest_user_behavior"), *days("lakeformat_ingest_item_price"),
                        # a scheduled-style run (the logical date's day) on the bad day
                        {"dag_id": "lakeformat_ingest_user_behavior", "logical_date": BAD_DAY},
                        timeout=1800)   # five spark-submits: minutes on a busy two-core machine
    second = af.run(*days("lakeformat_ingest_user_behavior"))
    second_output = af.output()
    ub = lf.Catalog(str(af.warehouse)).get_table(UB.identifier)
    after_two = {"rows": ub.read().num_rows, "files": data_files_on_disk(ub), "snapshots": ub.snapshots()}
    expired = ub.expire_snapshots(retain_max=1, older_than=dt.timedelta(0))
    third = af.run(*days("lakeformat_ingest_user_behavior"))
    reruns = {"second": (second, second_output), "third": (third, af.output())}
    print(f"ingest runs: {[round(r['seconds'], 1) for r in runs + [bad] + second + third]} s, "
          f"total {time.perf_counter() - started:.1f} s")
    return af, runs, reruns, after_two, expired, bad


def test_backfill_publishes_every_day_and_updates_the_asset(ingested):
    af, runs, *_ = ingested
    for run, spec, day in zip(runs, (UB, UB, IP, IP), DAYS[:2] * 2):
        assert run["state"] == "success", run["tasks"]
        assert run["tasks"] == UNIT
        # the grid labels the mapped tasks with the day, not 0
        assert run["labels"] == {f"ingest.{t}[0]": day for t in ("stage", "audit", "publish")}
        assert [(uri, extra["unit"]) for uri, extra in run["asset_events"]] == [(asset_uri(spec), day)]
    cat = lf.Catalog(str(af.warehouse))
    ub = cat.get_table(UB.identifier)
    for day in DAYS[:2]:
        got = ub.read(filter=lf.col("dt") == day)
        want = landing_rows(af.landing, UB, day)
        assert got.num_rows == want.num_rows > 0
        assert sorted(got.column("user_id").to_pylist()) == sorted(want.column("user_id").to_pylist())
    ip = cat.get_table(IP.identifier)
    keys = set()
    for day in DAYS[:2]:
        keys |= set(landing_rows(af.landing, IP, day).column("item_id").to_pylist())
    assert ip.read().num_rows == len(keys)          # upserts: one row per key
    for t in (ub, ip):
        assert staging.list_staged(t) == []        # nothing left pending


def test_backfill_rerun_twice_starts_no_spark_job_and_leaves_no_duplicates(ingested):
    af, _, reruns, after_two, expired, _ = ingested
    expected = sum(landing_rows(af.landing, UB, d).num_rows for d in DAYS[:2])
    assert after_two["rows"] == expected
    assert [s.commit_kind for s in after_two["snapshots"]] == ["APPEND", "APPEND"]
    # re-run 1: both commits are retained; re-run 2, after the first day's commit expired: its
    # stage's published marker still says the day is loaded (wap.loaded, the rule jobs/ingest.py
    # follows too). Either way plan leaves each day out, naming its snapshot, before any Spark job.
    assert list(expired.expired) == [1] and expired.data_files == 0   # that day's files stay live
    for name, (runs, output) in reruns.items():
        for run, (snapshot, day) in zip(runs, ((1, DAYS[0]), (2, DAYS[1]))):
            assert run["state"] == "success", (name, run["tasks"])
            assert run["tasks"] == LOADED, name
            assert run["asset_events"] == []
            gone = ", expired since" if name == "third" and snapshot == 1 else ""
            assert f"{day} of {UB.identifier} is already published as snapshot {snapshot}{gone}" in output
        assert "Submitting " not in output and "spark-submit" not in output.lower()
    ub = lf.Catalog(str(af.warehouse)).get_table(UB.identifier)
    assert [s.id for s in ub.snapshots()] == [2]
    assert ub.read().num_rows == expected
    assert staging.list_staged(ub) == []


def test_failed_audit_discards_the_stage_and_fails_the_run(ingested):
    af, *_, run = ingested
    assert run["state"] == "failed"
    assert run["tasks"] == {"landing": "success", "plan": "success", "ingest.stage[0]": "success",
                            "ingest.audit[0]": "failed", "ingest.publish[0]": "upstream_failed"}
    assert run["asset_events"] == []
    audit = run["xcom"]["ingest.audit[0]:audit"]
    assert audit["success"] is False and audit["discarded_files"] > 0
    assert audit["summary"].startswith(f"{UB.identifier} {BAD_DAY}: ")
    assert "expectations failed" in audit["summary"] and "rows unexpected" in audit["summary"]
    assert all(f["samples"] for f in audit["failed"] if f["unexpected"])
    log = (af.home / "runner.log").read_text()
    assert f"Stage ingest-user_behavior-{BAD_DAY} was discarded" in log   # the task's failure message
    ub = lf.Catalog(str(af.warehouse)).get_table(UB.identifier)
    assert ub.read(filter=lf.col("dt") == BAD_DAY).num_rows == 0       # nothing published
    assert not list(Path(ub.path).glob(f"dt={BAD_DAY}/bucket-*/data-*"))  # and no file left behind
    assert staging.list_staged(ub) == []


def _runs_per_bucket(table: lf.Table) -> int:
    return max(table.system_table("buckets").column("sorted_runs").to_pylist() or [0])


def test_compaction_then_maintenance(ingested):
    af = ingested[0]
    cat = lf.Catalog(str(af.warehouse))
    ub, ip = cat.get_table(UB.identifier), cat.get_table(IP.identifier)
    runs_before = _runs_per_bucket(ip)
    assert runs_before >= 2                            # two days of upserts: two runs per bucket
    # what maintenance must clean: a stray file no snapshot references (a crashed writer's) and
    # a consumer that stopped reading 30 days ago (consumer.expiration-time is 7 d)
    bucket_dir = next(Path(ub.path).glob("dt=*/bucket-*"))
    stray = bucket_dir / "data-00000000-0000-0000-0000-000000000000-0.parquet"
    shutil.copy(next(bucket_dir.glob("data-*.parquet")), stray)
    ub.consumers.record("old-reader", 1)
    month_ago = time.time() - 30 * 86400
    os.utime(stray, (month_ago, month_ago))
    consumer_file = Path(ub.path) / "consumer" / "consumer-old-reader"
    os.utime(consumer_file, (month_ago, month_ago))

    compaction, dry = af.run({"dag_id": "lakeformat_compaction", "conf": {"full": True}},
                             {"dag_id": "lakeformat_maintenance", "conf": {"dry_run": True}})
    assert compaction["state"] == "success", compaction["tasks"]
    ip = cat.get_table(IP.identifier)
    assert ip.latest_snapshot().commit_kind == "COMPACT"
    assert _runs_per_bucket(ip) == 1
    assert ip.read().num_rows == len(set(ip.read().column("item_id").to_pylist()))
    assert dry["state"] == "success", dry["tasks"]
    assert stray.exists() and consumer_file.exists()   # a dry run changes nothing

    # a month passes: the re-run's rewrite left files no snapshot names, now old enough for the
    # default orphan age (a day; younger ones may belong to a commit in flight)
    for f in Path(ub.path).rglob("*"):
        if f.is_file() and not f.name.startswith(("snapshot-", "LATEST", "EARLIEST", "schema-")):
            os.utime(f, (month_ago, month_ago))
    (real,) = af.run({"dag_id": "lakeformat_maintenance", "conf": {"dry_run": False}})
    assert real["state"] == "success", real["tasks"]
    assert not stray.exists()
    assert not consumer_file.exists()
    ub = cat.get_table(UB.identifier)
    assert data_files_on_disk(ub) == live_files(ub)   # the stray file and the re-run's rewrite
    assert ub.read().num_rows == sum(landing_rows(af.landing, UB, d).num_rows for d in DAYS[:2])
    orphans = real["xcom"]["user_behavior.remove_orphan_files:return_value"]
    assert orphans["dry_run"] is False and orphans["orphan_files"] >= 1
