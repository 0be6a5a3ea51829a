"""Native append writes (``lfs.write`` into a bucket-unaware table): Spark's Parquet writer
writes the files, the driver commits them. The rows are those the Python path writes, the
layout and statistics are Paimon's, pypaimon reads them, a re-run with the same identifier adds
nothing, and a failed job leaves no file behind."""
from __future__ import annotations

import datetime as dt
import decimal
import os

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

import lakeformat as lf
import lakeformat.spark as lfs
from lakeformat.format.binary_row import deserialize_row
from lakeformat.io.data_file import StatsCollector, read_columns
from lakeformat.spark.native_write import native_write_refusal, session_confs
from tests.interop.helpers import Oracle, assert_same_rows, check_readers

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64()),
                    ("ts", pa.timestamp("ms")), ("day", pa.date32()), ("amount", pa.decimal128(10, 2)),
                    ("dt", pa.string())])
KEY = ["id"]


def rows(n: int, start: int = 0) -> pa.Table:
    ids = list(range(start, start + n))
    base = dt.datetime(2024, 6, 1, 8)
    return pa.table({
        "id": ids, "name": [None if i % 11 == 0 else f"name-{i:05d}-" + "x" * (i % 30) for i in ids],
        "score": [None if i % 5 == 0 else i * 0.5 for i in ids],
        "ts": [base + dt.timedelta(milliseconds=i * 1001) for i in ids],
        "day": [dt.date(2024, 6, 1) + dt.timedelta(days=i % 3) for i in ids],
        "amount": [decimal.Decimal(i) / 4 for i in ids],
        "dt": ["2024-06-01" if i % 2 else "2024-06-02" for i in ids]}, schema=SCHEMA)


def files_under(path: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(r, f), path) for r, _d, fs in os.walk(path) for f in fs
                  if not f.startswith("."))


def data_files(t) -> list[str]:
    return [f for f in files_under(t.path) if f.endswith(".parquet")]


def test_native_append_write_matches_the_python_path_and_pypaimon_reads_it(spark, catalog, tmp_path):
    wh = catalog.warehouse
    native = catalog.create_table("db.n", SCHEMA, partition_keys=["dt"])
    python = catalog.create_table("db.p", SCHEMA, partition_keys=["dt"])
    assert native_write_refusal(native) is None
    data = rows(3000)
    df = spark.createDataFrame(data.to_pandas()).repartition(3)
    # sub-millisecond input: truncated to the column's milliseconds, as the Python path does
    df = df.withColumn("ts", df.ts + F.expr("INTERVAL 250 MICROSECONDS"))
    lfs.write(df, "db.n", warehouse=wh)
    lfs.write(df, "db.p", warehouse=wh, native=False)
    native, python = catalog.get_table("db.n"), catalog.get_table("db.p")
    assert_same_rows(native.read(), python.read(), KEY, "native vs python path")
    assert_same_rows(native.read(), data, KEY, "native vs input")
    assert_same_rows(lfs.read_table(spark, "db.n", warehouse=wh).toArrow(), data, KEY, "native read of native write")

    # Paimon's layout: data files in <partition>/bucket-0, no staging directory left
    names = data_files(native)
    assert names and all(n.split("/")[0] in ("dt=2024-06-01", "dt=2024-06-02") and n.split("/")[1] == "bucket-0"
                         and n.split("/")[2].startswith("data-") for n in names), names
    assert not [f for f in os.listdir(native.path) if f.startswith("_spark-staging-")]
    # statistics from the footers are the ones lakeformat computes from the rows
    for e in native.live_entries(native.latest_snapshot()):
        path = os.path.join(native.bucket_dir_of(e.partition, e.bucket), e.file.file_name)
        got = read_columns(native.ctx, path, e.file, native.schema.fields)
        expected = StatsCollector(native.schema.fields)
        expected.add(got)
        want = expected.result()
        types = [f.type for f in native.schema.fields]
        assert deserialize_row(e.file.value_stats.min_values, types) == deserialize_row(want.min_values, types)
        assert deserialize_row(e.file.value_stats.max_values, types) == deserialize_row(want.max_values, types)
        assert e.file.value_stats.null_counts == want.null_counts and e.file.row_count == got.num_rows
    # pruning by those statistics
    assert len(native.scan(filter=lf.col("id") < 0).plan()) == 0

    oracle = Oracle(tmp_path / "oracle")
    i = oracle.read(wh, "db.n")
    check_readers(oracle.run(), i, data, KEY, what="native write")


def test_native_write_exactly_once_overwrite_and_failure(spark, catalog):
    wh = catalog.warehouse
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["dt"])
    df = spark.createDataFrame(rows(500).to_pandas())
    job = {"commit-user": "nightly", "commit-identifier": "7"}
    lfs.write(df, "db.t", warehouse=wh, options=job)
    before = data_files(t)
    lfs.write(df, "db.t", warehouse=wh, options=job)   # the re-run: committed already
    t = catalog.get_table("db.t")
    assert t.latest_snapshot().id == 1 and t.read().num_rows == 500 and data_files(t) == before

    # a failing Spark job: nothing committed, no file left (staging included)
    bad = df.withColumn("id", F.when(F.col("id") == 250, F.raise_error("boom")).otherwise(F.col("id")))
    everything = files_under(t.path)
    with pytest.raises(Exception, match="boom"):
        lfs.write(bad, "db.t", warehouse=wh)
    assert files_under(t.path) == everything and catalog.get_table("db.t").latest_snapshot().id == 1

    # overwrite replaces the partitions written
    lfs.write(spark.createDataFrame(rows(10, 1000).filter(pc.equal(rows(10, 1000)["dt"], "2024-06-01")).to_pandas()),
              "db.t", warehouse=wh, mode="overwrite")
    t = catalog.get_table("db.t")
    assert t.read(filter=lf.col("dt") == "2024-06-01").num_rows == 5
    assert t.read(filter=lf.col("dt") == "2024-06-02").num_rows == 250


def test_tables_that_keep_the_python_path(catalog):
    t = catalog.create_table("db.b", SCHEMA, options={"bucket": "2", "bucket-key": "id"})
    assert "buckets" in native_write_refusal(t)
    t = catalog.create_table("db.nested", pa.schema([("id", pa.int64()), ("tags", pa.list_(pa.string()))]))
    assert "tags" in native_write_refusal(t)


def test_column_names_with_backticks_and_spaces(spark, catalog):
    schema = pa.schema([("odd`name", pa.int64()), ("d t", pa.string())])
    catalog.create_table("db.odd", schema, partition_keys=["d t"])
    df = spark.createDataFrame([(1, "x"), (2, "y")], "`odd``name` long, `d t` string")
    lfs.write(df, "db.odd", warehouse=catalog.warehouse)
    assert catalog.get_table("db.odd").read().sort_by("odd`name").to_pylist() == [{"odd`name": 1, "d t": "x"},
                                                                                  {"odd`name": 2, "d t": "y"}]


@pytest.mark.parametrize("zone", ["America/New_York", "Asia/Kolkata"])
def test_wall_clock_timestamps_are_written_as_they_are_in_any_session_time_zone(spark, catalog, zone):
    """TIMESTAMP(3) is a wall-clock time: a session outside UTC neither shifts it (Spark's
    date_trunc would make it an instant there) nor fails on 02:30 of New York's spring-forward
    gap or 01:30 of its fall-back overlap; the sub-millisecond part is cut, before 1970 too and
    in the 1800s, when zones were local mean time with offsets in odd seconds (New York
    -4:56:02, Kolkata +5:53:28); a value already in milliseconds is kept; the file says the
    column is not UTC."""
    schema = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("ms")), ("tz", pa.timestamp("ms", tz="UTC"))])
    t = catalog.create_table("db.wall", schema)
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        df = spark.sql("SELECT 1L id, TIMESTAMP_NTZ'2024-03-10 02:30:00.123456' ts, "
                       "TIMESTAMP'2024-03-10 12:00:00.999999Z' tz UNION ALL "
                       "SELECT 2L, TIMESTAMP_NTZ'1969-12-31 23:59:59.999999', TIMESTAMP'1969-12-31 23:59:59.999999Z' "
                       "UNION ALL SELECT 3L, TIMESTAMP_NTZ'2024-11-03 01:30:00.500999', TIMESTAMP'1850-06-01 "
                       "12:00:00.000001Z' "
                       "UNION ALL SELECT 4L, TIMESTAMP_NTZ'1850-06-01 12:00:00.123999', NULL "
                       "UNION ALL SELECT 5L, TIMESTAMP_NTZ'2024-06-01 00:00:00.007', TIMESTAMP'2024-06-01 "
                       "00:00:00.007Z' "
                       "UNION ALL SELECT 6L, NULL, NULL")
        lfs.write(df, "db.wall", warehouse=catalog.warehouse)
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)
    got = catalog.get_table("db.wall").read().sort_by("id")
    utc = dt.UTC
    assert got["ts"].to_pylist() == [dt.datetime(2024, 3, 10, 2, 30, 0, 123000),
                                     dt.datetime(1969, 12, 31, 23, 59, 59, 999000),
                                     dt.datetime(2024, 11, 3, 1, 30, 0, 500000),
                                     dt.datetime(1850, 6, 1, 12, 0, 0, 123000),
                                     dt.datetime(2024, 6, 1, 0, 0, 0, 7000), None]
    assert got["tz"].to_pylist() == [dt.datetime(2024, 3, 10, 12, 0, 0, 999000, tzinfo=utc),
                                     dt.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=utc),
                                     dt.datetime(1850, 6, 1, 12, 0, 0, tzinfo=utc), None,
                                     dt.datetime(2024, 6, 1, 0, 0, 0, 7000, tzinfo=utc), None]
    stored = pq.ParquetFile(os.path.join(t.path, data_files(t)[0])).schema_arrow
    assert stored.field("ts").type.tz is None and stored.field("tz").type.tz is not None


@pytest.mark.parametrize("mode", ["EXCEPTION", "LEGACY"])
def test_dates_and_instants_before_the_gregorian_switch_are_written_as_they_are(spark, catalog, mode):
    """Paimon counts days and microseconds in the proleptic Gregorian calendar: a date of 1500 and
    an instant of the year 1000 are written as they are, whatever the session's rebase mode. In
    EXCEPTION mode (Spark 3's default) Spark refused them, and in LEGACY mode it shifted them into
    the Julian calendar, ten and six days on, for every reader of the table."""
    schema = pa.schema([("id", pa.int64()), ("d", pa.date32()), ("tz", pa.timestamp("us", tz="UTC"))])
    catalog.create_table("db.old", schema)
    key = "spark.sql.parquet.datetimeRebaseModeInWrite"
    with session_confs(spark, {key: mode}):
        df = spark.sql("SELECT 1L id, DATE'1500-03-01' d, TIMESTAMP'1000-06-01 00:00:00Z' tz "
                       "UNION ALL SELECT 2L, DATE'2024-06-01', TIMESTAMP'2024-06-01 00:00:00Z'")
        lfs.write(df, "db.old", warehouse=catalog.warehouse)
        assert spark.conf.get(key) == mode, "the session's setting is put back"
    got = catalog.get_table("db.old").read().sort_by("id").to_pylist()
    utc = dt.UTC
    assert got == [{"id": 1, "d": dt.date(1500, 3, 1), "tz": dt.datetime(1000, 6, 1, tzinfo=utc)},
                   {"id": 2, "d": dt.date(2024, 6, 1), "tz": dt.datetime(2024, 6, 1, tzinfo=utc)}]


def test_field_ids_are_written_where_the_session_turned_them_off(spark, catalog):
    """lakeformat maps renamed columns by Paimon's field ids: a session that turned Spark's field-id
    writing off still writes them, and a rename after the write reads the old file's values."""
    t = catalog.create_table("db.ids", pa.schema([("id", pa.int64()), ("v", pa.string())]))
    with session_confs(spark, {"spark.sql.parquet.fieldId.write.enabled": "false"}):
        lfs.write(spark.createDataFrame([(1, "a"), (2, "b")], "id long, v string"), "db.ids",
                  warehouse=catalog.warehouse)
    stored = pq.ParquetFile(os.path.join(t.path, data_files(t)[0])).schema_arrow
    assert [f.metadata[b"PARQUET:field_id"] for f in stored] == [str(f.id).encode() for f in t.schema.fields]
    t.alter(lf.RenameColumn("v", "value"))
    assert catalog.get_table("db.ids").read().sort_by("id").to_pylist() == [{"id": 1, "value": "a"},
                                                                            {"id": 2, "value": "b"}]
