"""The ingest job's logic on the test session (no spark-submit): idempotent per day, a
replacement instead of duplicates once its commit has been expired, bad landing data refused
with nothing left behind."""
from __future__ import annotations

import os

import pytest

import lakeformat as lf
from lakeformat.pipeline import landing
from lakeformat.pipeline import ingest
from lakeformat.pipeline.jobs import parser, resolve

from tests.project import CONFIG


def job_table(wh: str, name: str = "user_behavior"):
    return resolve(parser("ingest.py", "").parse_args(["--table", name, "--warehouse", wh, "--config", str(CONFIG)]))


def parquet_files(path: str) -> set:
    return {f for _r, _d, files in os.walk(path) for f in files if f.endswith(".parquet")}


def test_ingest_is_idempotent_also_after_expiration(spark, tmp_path):
    wh, land = str(tmp_path / "wh"), str(tmp_path / "landing")
    landing.main(["--landing", land, "--start", "2024-06-01", "--end", "2024-06-03", "--rows-per-day", "500",
                  "--config", str(CONFIG), "--table", "user_behavior"])
    jt = job_table(wh)
    run = lambda day: ingest.ingest(lambda: spark, jt, day, None, land, None)  # noqa: E731
    assert "snapshot 1 (APPEND, +500 rows)" in run("2024-06-01")
    assert "already ingested (snapshot 1)" in run("2024-06-01")
    t = lf.Catalog(wh).get_table("demo.user_behavior")
    run("2024-06-02")
    run("2024-06-03")
    t.expire_snapshots(retain_min=1, retain_max=1)       # the day's own commit is gone from history
    assert t.snapshot_manager.earliest_id() == 3
    assert "already ingested (stage ingest-user_behavior-2024-06-01 was published" in run("2024-06-01")
    assert t.read(columns=["dt"]).num_rows == 1500


def test_bad_landing_data_fails_clearly_and_leaves_nothing(spark, tmp_path):
    wh, land = str(tmp_path / "wh"), tmp_path / "landing"
    folder = land / "user_behavior" / "dt=2024-06-01"
    folder.mkdir(parents=True)
    (folder / "part-0.jsonl").write_text('{"user_id": 1, "item_id": 2, "behavior": "pv", "price": 1.0, '
                                         '"ts": "2024-06-01 10:00:00"}\n{"item_id": 3, "behavior": "pv"}\n')
    jt = job_table(wh)
    with pytest.raises(Exception, match="user_id.*NOT NULL"):
        ingest.ingest(lambda: spark, jt, "2024-06-01", None, str(land), None)
    t = lf.Catalog(wh).get_table("demo.user_behavior")   # created from the config, but empty
    assert t.latest_snapshot() is None and parquet_files(t.path) == set()
    (folder / "part-0.jsonl").write_text('{"user_id": 1, "item_id": 2, "behavior": "pv", "price": "cheap"}\n')
    with pytest.raises(Exception, match="(?i)malformed"):
        ingest.ingest(lambda: spark, jt, "2024-06-01", None, str(land), None)
    with pytest.raises(lf.NotFoundError, match="no landing folder"):
        ingest.ingest(lambda: spark, jt, "2024-06-05", None, str(land), None)
    assert t.latest_snapshot() is None and parquet_files(t.path) == set()
