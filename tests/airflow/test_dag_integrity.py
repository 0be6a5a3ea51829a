"""DAG integrity: every DAG file imports as Airflow 3's DAG processor imports it, without errors
or cycles, and parsing does no table IO (it must not depend on the warehouse being reachable)."""
from __future__ import annotations

import yaml

import lakeformat.spark as lfs

from lakeformat.pipeline.config import load_config
from tests.project import CONFIG

UNREACHABLE = "s3://no-such-bucket-lakeformat/wh"   # no endpoint, no credentials: any IO would fail


def test_every_dag_imports_without_errors_or_cycles(airflow_parse):
    report = airflow_parse.parse()
    assert report["import_errors"] == {}
    assert report["cycles"] == {}
    names = [t.name for t in load_config(str(CONFIG)).tables]
    expected = {f"lakeformat_ingest_{n}" for n in names} | {"lakeformat_compaction", "lakeformat_maintenance"}
    assert set(report["dags"]) == expected
    for n in names:
        ingest = report["dags"][f"lakeformat_ingest_{n}"]
        assert ingest["catchup"] is False and ingest["max_active_runs"] == 1
        assert ingest["params"] == ["wait_for_landing"]
        assert ingest["tasks"] == ["ingest.audit", "ingest.publish", "ingest.stage", "landing", "plan"]
        assert ingest["schedule"] == "CronDataIntervalTimetable"
        assert ingest["jars"] == {"ingest.stage": lfs.jar_path()}   # the native write's JVM half goes along
        table = load_config(str(CONFIG)).table(n)
        assert ingest["outlets"] == {"ingest.publish": [
            f"lakeformat://lakeformat_default/{table.database}/{table.table}"]}
    compaction = report["dags"]["lakeformat_compaction"]
    assert compaction["schedule"] == "AssetOrTimeSchedule"
    assert len(compaction["asset_triggers"]) == len(names)
    assert {f"{n}.compact" for n in names} <= set(compaction["tasks"])
    assert set(compaction["jars"].values()) == {lfs.jar_path()}
    maintenance = report["dags"]["lakeformat_maintenance"]
    assert maintenance["params"] == ["dry_run", "orphan_older_than"]
    for n in names:
        assert {f"{n}.clean_consumers", f"{n}.expire_snapshots", f"{n}.remove_orphan_files"} <= \
            set(maintenance["tasks"])
    assert "user_behavior.expire_partitions" in maintenance["tasks"]     # partitioned (its own options decide)
    assert "item_price.expire_partitions" not in maintenance["tasks"]    # not partitioned


def test_parsing_does_no_table_io(airflow_parse):
    """With the warehouse on an unreachable object store, parsing still succeeds and creates no
    catalog or file-system object at all (a spy records every one)."""
    airflow_parse.warehouse = UNREACHABLE
    report = airflow_parse.parse()
    assert report["import_errors"] == {}
    assert len(report["dags"]) == len(load_config(str(CONFIG)).tables) + 2
    assert report["table_io"] == []


def test_a_new_table_is_a_config_change(airflow_parse, tmp_path):
    """Adding a table to the config adds its ingest DAG and its compaction and maintenance groups."""
    with open(load_config(str(CONFIG)).path) as f:
        doc = yaml.safe_load(f)
    clicks = dict(doc["tables"]["user_behavior"], identifier="demo.clicks", schedule="@hourly",
                  landing={"format": "jsonl", "path": "clicks/dt={ds}/hour={hour}"})
    doc["tables"]["clicks"] = clicks
    cfg = tmp_path / "tables.yaml"
    cfg.write_text(yaml.safe_dump(doc))
    report = airflow_parse.parse(config=str(cfg))
    assert report["import_errors"] == {}
    assert "lakeformat_ingest_clicks" in report["dags"]
    assert "clicks.compact" in report["dags"]["lakeformat_compaction"]["tasks"]
    assert "clicks.remove_orphan_files" in report["dags"]["lakeformat_maintenance"]["tasks"]
    assert len(report["dags"]["lakeformat_compaction"]["asset_triggers"]) == len(load_config(str(CONFIG)).tables) + 1


def test_pause_state_and_start_date_come_from_the_config(airflow_parse, tmp_path):
    default = airflow_parse.parse()["dags"]
    assert {d["paused_at_creation"] for d in default.values()} == {None}   # Airflow's own setting decides
    assert {d["start_date"] for d in default.values()} == {"2024-01-01T00:00:00+00:00"}
    with open(load_config(str(CONFIG)).path) as f:
        doc = yaml.safe_load(f)
    doc.setdefault("pipeline", {})["dags"] = {"paused_at_creation": False, "start_date": "2024-06-01"}
    cfg = tmp_path / "tables.yaml"
    cfg.write_text(yaml.safe_dump(doc))
    report = airflow_parse.parse(config=str(cfg))
    assert report["import_errors"] == {}
    assert {d["paused_at_creation"] for d in report["dags"].values()} == {False}
    assert {d["start_date"] for d in report["dags"].values()} == {"2024-06-01T00:00:00+00:00"}


def test_the_landing_days_are_the_ingest_dags_dates(airflow_parse):
    """``make airflow`` sets $LAKEFORMAT_LANDING_DAYS from its demo data: the ingest DAGs run
    from its first day to the end of its last (unpausing schedules nothing past it); the other
    DAGs keep the config's dates. A malformed value is an import error naming the variable."""
    dags = airflow_parse.parse(env={"LAKEFORMAT_LANDING_DAYS": "2024-06-01..2024-06-04"})["dags"]
    for dag_id, d in dags.items():
        if dag_id.startswith("lakeformat_ingest_"):
            assert (d["start_date"], d["end_date"]) == ("2024-06-01T00:00:00+00:00", "2024-06-04T23:59:59+00:00")
        else:
            assert (d["start_date"], d["end_date"]) == ("2024-01-01T00:00:00+00:00", None)
    for bad in ("2024-06-01", "2024-06-04..2024-06-01", "June..July"):
        errors = airflow_parse.parse(env={"LAKEFORMAT_LANDING_DAYS": bad})["import_errors"]
        assert len(errors) == 1 and "$LAKEFORMAT_LANDING_DAYS must read FIRST..LAST" in next(iter(errors.values()))
