"""The pipeline config and the DAGs' pure decisions (which units a run ingests, stage ids)."""
import datetime as dt

import pytest

from lakeformat.pipeline.config import (IngestUnit, PipelineConfigError, TableSpec, asset_uri, ingest_units,
                                        load_config, stage_id_for)

DAILY = TableSpec("events", "db.events", "@daily", "jsonl", "events/dt={ds}")
HOURLY = TableSpec("clicks", "db.clicks", "@hourly", "jsonl", "clicks/dt={ds}/hour={hour}")
LOGICAL = dt.datetime(2024, 6, 2, 13, tzinfo=dt.timezone.utc)


def test_project_config_loads():
    cfg = load_config()
    names = [t.name for t in cfg.tables]
    assert names == ["user_behavior", "item_price"]
    ub = cfg.table("user_behavior")
    assert ub.identifier == "demo.user_behavior" and ub.write_only and not ub.hourly
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
    ("tables: {}", "'tables' must map"),
    ("tables: {t: {identifier: nodot, landing: {path: 'x/{ds}'}}}", "'database.table'"),
    ("tables: {t: {identifier: a.b, landing: {path: 'x'}}}", "must contain {ds}"),
    ("tables: {t: {identifier: a.b, landing: {path: 'x/{ds}'}, quality: [{oops: 1}]}}", "not an expectation"),
    ("tables: {t: {identifier: a.b, landing: {path: 'x/{ds}'}}}\npipeline: {maintenance: {dry_run: maybe}}",
     "bad 'pipeline' setting"),
    ("tables: [", "not valid YAML"),
])
def test_bad_config_names_the_entry(tmp_path, text, fragment):
    p = tmp_path / "tables.yaml"
    p.write_text(text)
    with pytest.raises(PipelineConfigError, match=fragment):
        load_config(str(p))
    with pytest.raises(PipelineConfigError, match="does not exist"):
        load_config(str(tmp_path / "missing.yaml"))


def test_ingest_identity_is_the_ingest_jobs():
    """The DAG recognises a unit the job already committed by the job's own (user, identifier)."""
    from lakeformat.pipeline.config import ingest_identity
    from lakeformat.pipeline.ingest import plan
    from lakeformat.pipeline.tables import load
    for spec, unit in ((load_config().table("user_behavior"), IngestUnit("2024-06-01")),
                       (HOURLY, IngestUnit("2024-06-01", 7))):
        definition = load().get("user_behavior")
        if spec is HOURLY:
            from dataclasses import replace
            definition = replace(definition, name="clicks", landing_path=HOURLY.landing_path)
        p = plan(definition, "/landing", unit.date, unit.hour)
        assert ingest_identity(spec, unit) == (p.commit_user, p.identifier)


def test_spark_jobs_get_catalog_options_as_arguments_and_secrets_in_the_environment(tmp_path, monkeypatch):
    from lakeformat.pipeline.config import submit_settings
    args, env = submit_settings("s3://lake/wh", {"s3.endpoint": "http://minio:9000", "s3.access-key": "AK",
                                                 "s3.secret-key": "SK", "s3.path-style-access": "true"})
    assert args == ["--warehouse", "s3://lake/wh", "--catalog-option=s3.endpoint=http://minio:9000",
                    "--catalog-option=s3.path-style-access=true"]
    assert env == {"AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK"}
    assert not any("SK" in a or "AK" in a for a in args)
    monkeypatch.chdir(tmp_path)
    assert submit_settings("warehouse", {}) == (["--warehouse", str(tmp_path / "warehouse")], {})
    assert submit_settings("file:///data/wh", {})[0] == ["--warehouse", "/data/wh"]
