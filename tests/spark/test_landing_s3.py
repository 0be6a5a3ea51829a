"""Landing data in object storage (issue 16) on a real SparkSession: a day landed in an S3
bucket (moto) is read by the executors with pyarrow and gives exactly the rows Spark's own
reader gives for the same files in a local folder, for JSON lines and CSV; the ingest job loads
it; a malformed file fails the job, naming it."""
from __future__ import annotations

import json
import uuid

import boto3
import pytest

import lakeformat as lf
from lakeformat.pipeline import ingest, landing
from lakeformat.pipeline.units import IngestUnit
from lakeformat.pipeline.jobs import parser, resolve
from lakeformat.pipeline.wap import create_table
from tests.project import CONFIG
from tests.s3server import BUCKET, CREDS, s3_endpoint  # noqa: F401 (fixture)

DAY = "2024-06-01"


@pytest.fixture
def landed(s3_endpoint, tmp_path, monkeypatch):
    """The same day landed in a local folder and in the bucket; the job's environment holds
    the storage options (as the DAG's operator passes them)."""
    opts = {"s3.endpoint": s3_endpoint, **CREDS}
    monkeypatch.setenv("LAKEFORMAT_CATALOG", json.dumps({"options": opts}))
    root = f"s3://{BUCKET}/landing-{uuid.uuid4().hex[:8]}"
    for where in (root, str(tmp_path / "landing")):
        assert landing.main(["--landing", where, "--start", DAY, "--rows-per-day", "3000", "--bad-day", DAY,
                             "--config", str(CONFIG)]) == 0
    return str(tmp_path / "landing"), root, opts


def job_table(wh: str, name: str):
    return resolve(parser("ingest.py", "").parse_args(["--table", name, "--warehouse", wh, "--config", str(CONFIG)]))


def rows(df) -> list:
    return sorted(map(tuple, df.collect()), key=repr)


@pytest.mark.parametrize("name", ["user_behavior", "item_price"])   # JSON lines, CSV
def test_a_day_in_the_bucket_reads_as_spark_reads_it_from_a_folder(spark, landed, tmp_path, name):
    local, remote, opts = landed
    jt = job_table(str(tmp_path / "wh"), name)
    table = create_table(jt.catalog(), jt.definition)
    unit = IngestUnit(DAY)
    native = ingest.read_landing(spark, jt.definition, unit, local, table, opts)
    from_s3 = ingest.read_landing(spark, jt.definition, unit, remote, table, opts)
    assert from_s3.schema == native.schema
    expected = rows(native)
    assert len(expected) > 100 and rows(from_s3) == expected


def test_the_ingest_job_loads_a_day_from_the_bucket(spark, landed, tmp_path):
    _local, remote, _opts = landed
    jt = job_table(str(tmp_path / "wh"), "user_behavior")
    assert jt.catalog_options["s3.endpoint"]   # from the environment, as in a DAG's job
    assert "snapshot 1 (APPEND, +3,000 rows)" in ingest.ingest(lambda: spark, jt, DAY, None, remote, None)
    t = lf.Catalog(str(tmp_path / "wh")).get_table("demo.user_behavior")
    assert set(t.read(columns=["dt"]).column("dt").to_pylist()) == {DAY}
    with pytest.raises(lf.NotFoundError, match=f"no landing folder {remote}/user_behavior/dt=2024-06-09"):
        ingest.ingest(lambda: spark, jt, "2024-06-09", None, remote, None)


def test_a_malformed_file_in_the_bucket_fails_the_job_naming_it(spark, landed, tmp_path):
    _local, remote, opts = landed
    bad = f"{remote}/user_behavior/dt=2024-06-02/part-0.jsonl"
    boto3.client("s3", endpoint_url=opts["s3.endpoint"], region_name="us-east-1",
                 aws_access_key_id=opts["s3.access-key"], aws_secret_access_key=opts["s3.secret-key"]).put_object(
        Bucket=BUCKET, Key=bad.removeprefix(f"s3://{BUCKET}/"), Body=b'{"user_id": 1, "price": "cheap"}\n')
    jt = job_table(str(tmp_path / "wh"), "user_behavior")
    with pytest.raises(Exception, match=f"malformed landing file {bad}"):
        ingest.ingest(lambda: spark, jt, "2024-06-02", None, remote, None)
    t = lf.Catalog(str(tmp_path / "wh")).get_table("demo.user_behavior")
    assert t.latest_snapshot() is None
