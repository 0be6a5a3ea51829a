"""The ingest job's logic on the test session (no spark-submit): idempotent per day, also after
its commit has been expired and whether the job or the DAG loaded it, bad landing data refused
with nothing left behind."""
from __future__ import annotations

import os
import tempfile
from collections import Counter

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import lakeformat as lf
from lakeformat.pipeline import landing
from lakeformat.pipeline import ingest, wap
from lakeformat.pipeline.config import load_config
from lakeformat.pipeline.units import IngestUnit
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
    assert "already ingested (snapshot 1, expired since)" in run("2024-06-01")   # from the stage's marker
    assert t.read(columns=["dt"]).num_rows == 1500


def test_bad_landing_data_fails_clearly_and_leaves_nothing(spark, tmp_path):
    wh, land = str(tmp_path / "wh"), tmp_path / "landing"
    folder = land / "user_behavior" / "dt=2024-06-01"
    folder.mkdir(parents=True)
    (folder / "part-0.jsonl").write_text('{"user_id": 1, "item_id": 2, "behavior": "pv", "price": 1.0, '
                                         '"ts": "2024-06-01 10:00:00"}\n{"item_id": 3, "behavior": "pv"}\n')
    jt = job_table(wh)
    with pytest.raises(Exception, match=r"user_id.*NOT NULL"):
        ingest.ingest(lambda: spark, jt, "2024-06-01", None, str(land), None)
    t = lf.Catalog(wh).get_table("demo.user_behavior")   # created from the config, but empty
    assert t.latest_snapshot() is None and parquet_files(t.path) == set()
    (folder / "part-0.jsonl").write_text('{"user_id": 1, "item_id": 2, "behavior": "pv", "price": "cheap"}\n')
    with pytest.raises(Exception, match=r"(?i)malformed"):
        ingest.ingest(lambda: spark, jt, "2024-06-01", None, str(land), None)
    with pytest.raises(lf.NotFoundError, match="no landing folder"):
        ingest.ingest(lambda: spark, jt, "2024-06-05", None, str(land), None)
    assert t.latest_snapshot() is None and parquet_files(t.path) == set()


DAYS = ("2024-06-01", "2024-06-02")
STEPS = st.lists(st.one_of(st.tuples(st.sampled_from(["job", "dag"]), st.sampled_from(DAYS)),
                           st.just(("expire", None))), min_size=1, max_size=5)


@pytest.fixture(scope="module")
def two_days(tmp_path_factory) -> str:
    land = str(tmp_path_factory.mktemp("landing"))
    landing.main(["--landing", land, "--start", DAYS[0], "--end", DAYS[-1], "--rows-per-day", "60",
                  "--config", str(CONFIG), "--table", "user_behavior"])
    return land


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS)
@example(steps=[("job", DAYS[0]), ("job", DAYS[1]), ("expire", None), ("dag", DAYS[0]), ("dag", DAYS[1]),
                ("expire", None), ("job", DAYS[0])])   # the README's job, expiration, then the DAG (issue 14 #5)
def test_any_mix_of_job_and_dag_runs_with_expiration_loads_each_day_once(spark, two_days, tmp_path, steps):
    """jobs/ingest.py and the ingest DAG's tasks (plan, stage, audit, publish), re-run in any
    order with snapshot expiration between: each loaded day holds exactly its landing rows."""
    wh = tempfile.mkdtemp(dir=tmp_path)
    jt = job_table(wh)
    spec = load_config(str(CONFIG)).table("user_behavior")
    cat = lf.Catalog(wh)

    def dag_run(day: str) -> None:   # what the DAG's tasks do, in order, minus Airflow
        units, skipped = wap.plan_units(cat, spec, [IngestUnit(day)], landing_root=two_days, owner="run",
                                        active=lambda _: False)
        assert all("already published as snapshot" in why for why in skipped), skipped   # a loaded day
        for u in units:
            ingest.ingest(lambda: spark, jt, day, None, two_days, u["stage_id"])
            table = cat.get_table(spec.identifier)
            try:
                wap.audit_unit(table, spec, u["stage_id"], u["label"], u["commit"], "run")
                wap.publish_unit(table, spec, u["stage_id"], u["label"], "run")
            except wap.UnitSkipped:
                pass

    loaded = set()
    for what, day in steps:
        if what == "job":
            ingest.ingest(lambda: spark, jt, day, None, two_days, None)
        elif what == "dag":
            dag_run(day)
        elif cat.table_exists(spec.identifier):
            cat.get_table(spec.identifier).expire_snapshots(retain_min=1, retain_max=1)
        loaded |= {day} if day else set()
        if cat.table_exists(spec.identifier):
            got = Counter(cat.get_table(spec.identifier).read(columns=["dt"]).column("dt").to_pylist())
            assert got == {d: 60 for d in loaded}, (steps, got)
