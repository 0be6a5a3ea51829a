"""The pipeline config: the one loader and its checks, and the DAGs' pure decisions (which units
a run ingests, stage ids)."""
import datetime as dt
import re
from pathlib import Path

import pytest
import yaml

from lakeformat.errors import LakeformatError
from lakeformat.pipeline.config import PipelineConfigError, TableSpec, asset_uri, load_config
from lakeformat.pipeline.units import IngestUnit, ingest_identity, ingest_units, stage_id_for
from tests.project import CONFIG

COLUMNS = (("id", "BIGINT"), ("dt", "STRING"))
DAILY = TableSpec("events", "db.events", COLUMNS, "events/dt={ds}", schedule="@daily")
HOURLY = TableSpec("clicks", "db.clicks", COLUMNS, "clicks/dt={ds}/hour={hour}", schedule="@hourly")
LOGICAL = dt.datetime(2024, 6, 2, 13, tzinfo=dt.UTC)
MINIMAL = {"tables": {"t": {"identifier": "a.b", "columns": {"id": "BIGINT", "dt": "STRING"},
                            "landing": {"path": "t/dt={ds}"}}}}


def test_project_config_loads():
    cfg = load_config(str(CONFIG))
    names = [t.name for t in cfg.tables]
    assert names == ["user_behavior", "item_price"]
    ub = cfg.table("user_behavior")
    assert ub.identifier == "demo.user_behavior" and ub.options["write-only"] == "true" and not ub.hourly
    assert [e.name for e in ub.quality][:2] == ["expect_table_row_count_to_be_between",
                                                "expect_column_values_to_not_be_null"]
    assert cfg.table("demo.item_price").name == "item_price"
    with pytest.raises(PipelineConfigError, match="'nope' is not in"):
        cfg.table("nope")


def test_scheduled_run_ingests_its_logical_date_or_hour():
    assert ingest_units(DAILY, LOGICAL) == [IngestUnit("2024-06-02")]
    assert ingest_units(HOURLY, LOGICAL) == [IngestUnit("2024-06-02", 13)]
    assert IngestUnit("2024-06-02", 13).job_args() == ["--date", "2024-06-02", "--hour", "13"]


def test_backfill_range_is_inclusive_and_hourly_tables_get_every_hour():
    assert [u.date for u in ingest_units(DAILY, LOGICAL, "2024-05-30", "2024-06-01")] == [
        "2024-05-30", "2024-05-31", "2024-06-01"]
    assert ingest_units(DAILY, None, "2024-05-30") == [IngestUnit("2024-05-30")]
    hours = ingest_units(HOURLY, LOGICAL, "2024-05-30", "2024-05-31")
    assert len(hours) == 48 and hours[25] == IngestUnit("2024-05-31", 1)


@pytest.mark.parametrize("start, end, fragment", [
    ("2024-06-03", "2024-06-01", "is before 'start'"),
    ("yesterday", None, "'yesterday' is not a date"),
    (None, "2024-06-01", "without 'start'"),
    ("2020-01-01", "2024-01-01", "split it"),
])
def test_bad_backfill_params_are_explained(start, end, fragment):
    with pytest.raises(PipelineConfigError, match=fragment):
        ingest_units(DAILY, LOGICAL, start, end)


def test_stage_ids_are_stable_and_valid_names():
    from lakeformat.format.names import validate_name
    a = stage_id_for(HOURLY, IngestUnit("2024-06-02", 7))
    assert a == stage_id_for(HOURLY, IngestUnit("2024-06-02", 7)) == "ingest-clicks-2024-06-02T07"
    validate_name(a, "stage")
    assert asset_uri(DAILY) == "lakeformat://lakeformat_default/db/events"


@pytest.mark.parametrize("text, fragment", [
    ("tables: {}", "must map table names"),
    ("tables: [", "not valid YAML"),
    ("- a list", "must be a mapping"),
])
def test_unreadable_config_is_explained(tmp_path, text, fragment):
    p = tmp_path / "tables.yaml"
    p.write_text(text)
    with pytest.raises(PipelineConfigError, match=fragment):
        load_config(str(p))
    with pytest.raises(PipelineConfigError, match="does not exist"):
        load_config(str(tmp_path / "missing.yaml"))


def test_the_config_path_comes_from_the_argument_or_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("LAKEFORMAT_CONFIG", raising=False)
    monkeypatch.chdir(CONFIG.parents[1])   # a config/tables.yaml in the working directory is not read
    with pytest.raises(PipelineConfigError, match="pass --config or set \\$LAKEFORMAT_CONFIG"):
        load_config()
    p = tmp_path / "mine.yaml"
    p.write_text(yaml.safe_dump(MINIMAL))
    monkeypatch.setenv("LAKEFORMAT_CONFIG", str(p))
    assert load_config().path == str(p) and [t.name for t in load_config().tables] == ["t"]


def _with(path: str, value) -> dict:
    """MINIMAL with ``value`` at the dotted ``path`` (None deletes the key)."""
    doc = yaml.safe_load(yaml.safe_dump(MINIMAL))
    *parents, last = path.split(".")
    node = doc
    for k in parents:
        node = node.setdefault(k, {})
    if value is None:
        node.pop(last, None)
    else:
        node[last] = value
    return doc


@pytest.mark.parametrize("dags, paused, start", [
    (None, None, dt.date(2024, 1, 1)),   # today's behaviour: Airflow's own pause setting decides
    ({"paused_at_creation": False, "start_date": dt.date(2024, 6, 1)}, False, dt.date(2024, 6, 1)),
    ({"paused_at_creation": True, "start_date": "2023-12-31"}, True, dt.date(2023, 12, 31)),
])
def test_dag_pause_state_and_start_date(tmp_path, dags, paused, start):
    p = tmp_path / "tables.yaml"
    p.write_text(yaml.safe_dump(_with("pipeline.dags", dags)))
    cfg = load_config(str(p))
    assert (cfg.dags.paused_at_creation, cfg.dags.start_date) == (paused, start)


@pytest.mark.parametrize("landing, timeout, poke", [
    (None, dt.timedelta(hours=6), dt.timedelta(minutes=5)),   # scheduled runs wait a few hours by default
    ({"wait_timeout": "0 s"}, dt.timedelta(0), dt.timedelta(minutes=5)),   # never wait
    ({"wait_timeout": "90 min", "poke_interval": "30 s"}, dt.timedelta(minutes=90), dt.timedelta(seconds=30)),
])
def test_landing_wait_settings(tmp_path, landing, timeout, poke):
    p = tmp_path / "tables.yaml"
    p.write_text(yaml.safe_dump(_with("pipeline.landing", landing)))
    cfg = load_config(str(p))
    assert (cfg.landing_wait.wait_timeout, cfg.landing_wait.poke_interval) == (timeout, poke)


@pytest.mark.parametrize("path, value, fragment", [
    # unknown keys, with a suggestion
    ("tables.t.schedul", "@daily", r"tables.t.schedul: unknown key \(did you mean 'schedule'\?\)"),
    ("pipeline.compaction.on_publsh", True, r"did you mean 'on_publish'"),
    ("warehose", "/wh", r"did you mean 'warehouse'"),
    ("tables.t.landing.fromat", "csv", r"did you mean 'format'"),
    # types and ranges
    ("tables.t.identifier", "nodot", "'database.table'"),
    ("tables.t.columns", None, "tables.t.columns: must be a mapping"),
    ("tables.t.columns.id", "BIGGINT", "tables.t.*BIGGINT"),
    ("tables.t.partition_keys", ["nope"], "nope"),
    ("tables.t.landing.path", "x", "must contain {ds}"),
    ("tables.t.landing.path", "../x/{ds}", "stay under it"),
    ("tables.t.landing.path", "x/{ds}/{day}", "not {day}"),
    ("tables.t.landing.format", "jsonlines", "must be one of jsonl, csv"),
    ("pipeline.maintenance.dry_run", "maybe", "dry_run: must be true or false"),
    ("pipeline.maintenance.orphan_older_than", "-1 d", "not a duration"),
    ("pipeline.maintenance.orphan_older_than", "soon", "not a duration"),
    ("pipeline.maintenance.orphan_older_than", "", "orphan_older_than: must be a duration like '30 min'.*got str ''"),
    ("pipeline.spark_conf", {"spark.x": [1]}, "pipeline.spark_conf.spark.x: must be a string"),
    # table options against the option registry, as create_table checks them
    ("tables.t.options", {"buckets": "2"}, r"unknown table option.*did you mean 'bucket'"),
    ("tables.t.options", {"bucket": "two"}, "option 'bucket'"),
    ("tables.t.options", {"bucket": "2", "bucket-key": "nope"}, "nope"),
    # Great Expectations rules, checked without importing it
    ("tables.t.quality", [{"oops": 1}], "not an expectation"),
    ("tables.t.quality", [{"expect_column_values_to_not_be_nul": {"column": "id"}}],
     r"no such expectation \(did you mean 'expect_column_values_to_not_be_null'\?\)"),
    ("tables.t.quality", [{"expect_column_values_to_be_between": {"column": "id", "min_vale": 0}}],
     r"unknown argument 'min_vale' \(did you mean 'min_value'\?\)"),
    ("tables.t.quality", [{"expect_column_values_to_be_in_set": {"column": "id"}}], "missing argument.*value_set"),
    ("tables.t.quality", [{"expect_column_values_to_not_be_null": {"column": "user"}}], "no column 'user'"),
    # schedules, and the schedule against the landing granularity
    ("tables.t.schedule", "@dayly", r"unknown preset '@dayly' \(did you mean '@daily'\?\)"),
    ("tables.t.schedule", "0 0 * *", "not a cron expression"),
    ("tables.t.schedule", "@hourly", "does not run once a day.*per day"),
    ("tables.t.schedule", "@weekly", "does not run once a day"),
    ("pipeline.compaction.schedule", "every hour", "not a cron expression"),
    # the DAGs' pause state and start date
    ("pipeline.dags.paused_at_creation", "no", "pipeline.dags.paused_at_creation: must be true or false"),
    ("pipeline.dags.start_date", "June 1st", "pipeline.dags.start_date: must be a day like 2024-01-01"),
    ("pipeline.dags.start_date", dt.datetime(2024, 6, 1, 12), "must be a day like 2024-01-01, not a time"),
    ("pipeline.dags.paused_at_creaton", True, r"did you mean 'paused_at_creation'"),
    # waiting for late landing data
    ("pipeline.landing.wait_timout", "1 h",
     r"pipeline.landing.wait_timout: unknown key \(did you mean 'wait_timeout'\?\)"),
    ("pipeline.landing.wait_timeout", "a while", "pipeline.landing.wait_timeout: 'a while' is not a duration"),
    ("pipeline.landing.poke_interval", "0 s", "pipeline.landing.poke_interval: must be more than 0"),
    ("pipeline.landing", "6 h", "pipeline.landing: must be a mapping"),
])
def test_config_mistakes_are_errors_at_load_time(tmp_path, path, value, fragment):
    p = tmp_path / "tables.yaml"
    p.write_text(yaml.safe_dump(_with(path, value)))
    with pytest.raises(PipelineConfigError, match=fragment) as e:
        load_config(str(p))
    assert str(p) in str(e.value)   # every message names the file


def test_a_duration_left_empty_is_an_error_not_unset(tmp_path):
    p = tmp_path / "tables.yaml"
    p.write_text(yaml.safe_dump(_with("pipeline.landing.poke_interval", "")).replace("poke_interval: ''",
                                                                                      "poke_interval:"))
    with pytest.raises(PipelineConfigError, match=r"poke_interval: must be a duration like '30 min'.*got nothing"):
        load_config(str(p))


def test_hourly_landing_needs_an_hourly_schedule(tmp_path):
    p = tmp_path / "tables.yaml"
    doc = _with("tables.t.landing.path", "t/dt={ds}/hour={hour}")
    for schedule, ok in (("@daily", False), ("30 6 * * *", False), ("@hourly", True), ("15 * * * *", True),
                         (None, True)):
        doc["tables"]["t"]["schedule"] = schedule
        p.write_text(yaml.safe_dump(doc))
        if ok:
            assert load_config(str(p)).table("t").schedule == schedule
        else:
            with pytest.raises(PipelineConfigError, match="does not run once an hour"):
                load_config(str(p))


def test_ingest_identity_and_stage_id_are_per_unit():
    """The job and the DAG recognise a loaded unit by the same (user, identifier) and stage id."""
    day = ingest_identity(DAILY, IngestUnit("2024-06-01"))
    assert day == ingest_identity(DAILY, IngestUnit("2024-06-01"))
    assert day[0] == "lakeformat-ingest-events"
    assert len({day[1], ingest_identity(DAILY, IngestUnit("2024-06-02"))[1],
                ingest_identity(HOURLY, IngestUnit("2024-06-01", 7))[1]}) == 3


def test_jobs_take_credentials_from_the_environment_and_refuse_them_as_arguments(monkeypatch, caplog):
    import json
    import logging

    from lakeformat.pipeline.jobs import parser, resolve, run
    ap = parser("job", "")
    monkeypatch.delenv("LAKEFORMAT_CONFIG", raising=False)
    monkeypatch.delenv("LAKEFORMAT_WAREHOUSE", raising=False)
    monkeypatch.setenv("LAKEFORMAT_CATALOG", json.dumps({"options": {"s3.secret-key": "SECRETKEY1",
                                                                     "lock.uri": "postgresql://u:PGPASSWORD1@db/x"}}))
    jt = resolve(ap.parse_args(["--table", "db.t", "--warehouse", "/wh", "--catalog-option", "s3.region=eu"]))
    assert jt.catalog_options == {"s3.secret-key": "SECRETKEY1", "lock.uri": "postgresql://u:PGPASSWORD1@db/x",
                                  "s3.region": "eu"}
    for bad in ("s3.secret-key=SECRETKEY2", "lock.uri=postgresql://u:PGPASSWORD2@db/x"):
        with pytest.raises(LakeformatError, match="credential on the command line") as e:
            resolve(ap.parse_args(["--table", "db.t", "--warehouse", "/wh", "--catalog-option", bad]))
        assert "SECRETKEY2" not in str(e.value) and "PGPASSWORD2" not in str(e.value)
    monkeypatch.setenv("LAKEFORMAT_CATALOG", "[1]")
    with pytest.raises(LakeformatError, match="must be a JSON object"):
        resolve(ap.parse_args(["--table", "db.t", "--warehouse", "/wh"]))

    def leaky(argv):   # a job that logs what it was given: the credential is masked
        logging.getLogger("lakeformat.jobs").info("options: %s", jt.catalog_options)
        return 0
    for h in list(logging.getLogger().handlers):   # run() adds its masking filter to them
        monkeypatch.setattr(h, "filters", list(h.filters))
    with caplog.at_level(logging.INFO), pytest.raises(SystemExit):
        run(leaky, [])
    assert "options: {'s3.secret-key': '***'" in caplog.text
    assert "SECRETKEY1" not in caplog.text and "PGPASSWORD1" not in caplog.text


def test_the_docs_add_a_table_example_is_a_valid_entry(tmp_path):
    """docs/pipeline.md 'The config': its YAML, added under ``tables:`` of the shipped config,
    loads, and makes an hourly table whose hour comes from the landing path."""
    root = Path(__file__).resolve().parents[2]
    section = (root / "docs" / "pipeline.md").read_text().split("## The config", 1)[1].split("\n## ", 1)[0]
    snippet = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
    shipped = (root / "config" / "tables.yaml").read_text()
    cfg = tmp_path / "tables.yaml"
    cfg.write_text(shipped.replace("tables:\n", "tables:\n" + snippet, 1))
    clicks = next(t for t in load_config(str(cfg)).tables if t.name == "clicks")
    assert clicks.identifier == "demo.clicks" and clicks.hourly and clicks.schedule == "@hourly"
    assert clicks.path_columns("2024-06-01", 7) == {"dt": "2024-06-01", "hour": "07"}
