"""Landing data on an object store (issue 16): the generator writes, the DAG's check and the
ingest job's listing read through pyarrow.fs with the warehouse's storage options, against a
real S3 server (moto, ``tests/s3server.py``); one file is parsed with the local reader's rules."""
import gzip
import uuid

import boto3
import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.errors import DataError, LakeformatError, NotFoundError
from lakeformat.pipeline import landing, landing_files, wap
from lakeformat.pipeline.config import load_config
from lakeformat.pipeline.units import IngestUnit
from tests.project import CONFIG
from tests.s3server import BUCKET, CREDS, s3_endpoint  # noqa: F401 (fixture)

SECRET = CREDS["s3.secret-key"]


@pytest.fixture
def store(s3_endpoint, monkeypatch):
    """A fresh landing prefix, the storage options to reach it, and the credentials in the
    environment only (as the compose one-shot and a user on the host have them)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", CREDS["s3.access-key"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.delenv("LAKEFORMAT_CATALOG", raising=False)
    root = f"s3://{BUCKET}/landing-{uuid.uuid4().hex[:8]}"
    return root, {"s3.endpoint": s3_endpoint, **CREDS}


def s3(options):
    return boto3.client("s3", endpoint_url=options["s3.endpoint"], region_name="us-east-1",
                        aws_access_key_id=options["s3.access-key"], aws_secret_access_key=options["s3.secret-key"])


def put(options, uri: str, body: bytes) -> None:
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    s3(options).put_object(Bucket=bucket, Key=key, Body=body)


def test_generator_writes_to_the_bucket_the_same_bytes_as_to_a_folder(store, tmp_path, capsys):
    root, opts = store
    args = ["--start", "2024-06-01", "--rows-per-day", "200", "--config", str(CONFIG)]
    assert landing.main(["--landing", root, "--option", f"s3.endpoint={opts['s3.endpoint']}", *args]) == 0
    assert landing.main(["--landing", str(tmp_path), *args]) == 0
    assert f"under {root}" in capsys.readouterr().out
    cfg = load_config(str(CONFIG))
    for spec in cfg.tables:
        folder = spec.landing_dir(root, "2024-06-01")
        (uri,) = landing_files.list_files(folder, opts)
        local = (tmp_path / spec.landing_dir("", "2024-06-01") / uri.rsplit("/", 1)[1]).read_bytes()
        assert landing_files.landing_io(root, opts).read_bytes(uri) == local and local


def test_the_dag_check_finds_a_day_in_the_bucket_with_the_catalogs_options(store):
    root, opts = store
    spec = load_config(str(CONFIG)).table("user_behavior")
    day, other = IngestUnit("2024-06-01"), IngestUnit("2024-06-02")
    put(opts, spec.landing_dir(root, day.date) + "/part-0.jsonl", b'{"user_id": 1}\n')
    assert wap.landing_missing(spec, day, root, opts) is None
    missing = wap.landing_missing(spec, other, root, opts)
    assert missing and f"no landing folder {spec.landing_dir(root, other.date)}" in missing
    # the DAG's plan: the catalog on the same store lends its options to the check
    cat = lf.Catalog(f"s3://{BUCKET}/wh-{uuid.uuid4().hex[:8]}", **opts)
    units, skipped = wap.plan_units(cat, spec, [day, other], landing_root=root, owner="run",
                                    active=lambda _: False)
    assert [u["label"] for u in units] == [day.date]
    assert len(skipped) == 1 and other.date in skipped[0]


def test_listing_skips_what_spark_skips_and_refuses_subfolders(store):
    root, opts = store
    folder = f"{root}/t/dt=2024-06-01"
    for name in ("part-1.jsonl", "part-0.jsonl.gz", "_SUCCESS", ".part-2.jsonl.tmp"):
        put(opts, f"{folder}/{name}", b"")
    assert landing_files.list_files(folder, opts) == [f"{folder}/part-0.jsonl.gz", f"{folder}/part-1.jsonl"]
    with pytest.raises(NotFoundError, match=f"no landing folder {root}/t/dt=2024-06-02"):
        landing_files.list_files(f"{root}/t/dt=2024-06-02", opts)
    put(opts, f"{folder}/late/part-3.jsonl", b"")
    with pytest.raises(DataError, match=r"holds folder.*late"):
        landing_files.list_files(folder, opts)


SCHEMA = pa.schema([("user_id", pa.int64()), ("behavior", pa.string()), ("price", pa.float64()),
                    ("ts", pa.timestamp("us")), ("day", pa.date32()), ("amount", pa.decimal128(10, 2)),
                    ("ok", pa.bool_()), ("at", pa.timestamp("us", "UTC"))])
ROWS = [{"user_id": 1, "behavior": "pv", "price": 2.0, "ts": "2024-06-01 10:00:00", "day": "2024-06-01",
         "amount": "1.25", "ok": True, "at": "2024-06-01 10:00:00"},
        {"user_id": 2, "behavior": None, "price": None, "ts": None, "day": None, "amount": None, "ok": None,
         "at": None}]


def test_a_file_is_parsed_with_the_tables_types_in_both_formats(store):
    root, opts = store
    json_lines = (b'{"user_id": 1, "behavior": "pv", "price": 2, "ts": "2024-06-01 10:00:00", "day": "2024-06-01", '
                  b'"amount": "1.25", "ok": true, "at": "2024-06-01 10:00:00", "unknown": [1]}\n\n{"user_id": 2}\n')
    put(opts, f"{root}/a.jsonl.gz", gzip.compress(json_lines))
    put(opts, f"{root}/a.csv", b"header,names,are,ignored,by,position,as,spark\n"
                               b"1,pv,2,2024-06-01 10:00:00,2024-06-01,1.25,true,2024-06-01 10:00:00\n"
                               b"2,,,,,,,\n")
    put(opts, f"{root}/empty.jsonl", b"")
    for uri, fmt in ((f"{root}/a.jsonl.gz", "jsonl"), (f"{root}/a.csv", "csv")):
        t = landing_files.read_file(uri, fmt, SCHEMA, opts, time_zone="Europe/Berlin")
        assert t.schema == SCHEMA
        got = t.to_pylist()
        assert [r["user_id"] for r in got] == [1, 2] and got[1] == {**ROWS[1], "user_id": 2}
        assert str(got[0]["amount"]) == "1.25" and str(got[0]["day"]) == "2024-06-01" and got[0]["ok"] is True
        assert got[0]["at"].isoformat() == "2024-06-01T08:00:00+00:00"   # zone-less text in the session's zone
        assert got[0]["ts"].isoformat() == "2024-06-01T10:00:00"
    assert landing_files.read_file(f"{root}/empty.jsonl", "jsonl", SCHEMA, opts).num_rows == 0


@pytest.mark.parametrize("fmt, body", [("jsonl", b'{"user_id": 1}\n{"user_id": "one"}\n'),
                                       ("jsonl", b'{"user_id": 1}{oops\n'),
                                       ("csv", b"h\n1,pv,2\n"),
                                       ("csv", b"h\n1,pv,2,yesterday,,,,\n")])
def test_a_malformed_file_is_an_error_naming_it(store, fmt, body):
    root, opts = store
    uri = f"{root}/bad/part-7.{fmt}"
    put(opts, uri, body)
    with pytest.raises(DataError, match=f"malformed landing file {uri}"):
        landing_files.read_file(uri, fmt, SCHEMA, opts)


def test_credentials_stay_out_of_arguments_and_messages(store, capsys, monkeypatch):
    root, opts = store
    assert landing.main(["--landing", root, "--option", f"s3.secret-key={SECRET}x", "--start", "2024-06-01",
                         "--config", str(CONFIG)]) == 2
    err = capsys.readouterr().err
    assert "credential on the command line" in err and SECRET not in err
    # an unreachable store: the message names the folder, never the secret
    bad = {**opts, "s3.endpoint": "http://127.0.0.1:9", "s3.secret-key": "SECRET-never-shown"}
    with pytest.raises(LakeformatError, match=f"cannot check landing folder {root}/x") as e:
        landing_files.folder_present(f"{root}/x", bad)
    assert "SECRET-never-shown" not in str(e.value)
