"""Partitioned native writes through lakeformat's jar (``PartitionRoutingParquet``): each Spark
task routes its rows to one file per partition itself. Every file holds one partition's rows, the
rows are those the Python path writes, a task that meets more partitions than it may keep open
closes the least recently used file and starts another, and a session without the jar writes the
same rows through Spark's ``partitionBy``."""
from __future__ import annotations

import datetime as dt
import decimal
import logging

import pyarrow as pa
import pytest

import lakeformat.spark as lfs
from lakeformat.errors import LakeformatError
from lakeformat.io.data_file import read_columns
from lakeformat.spark import jar, native_write
from tests.interop.helpers import assert_same_rows

# one partition column of each kind of getter the routing compares with
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("p_int", pa.int32()), ("p_day", pa.date32()),
                    ("p_str", pa.string()), ("p_bool", pa.bool_()), ("p_dec", pa.decimal128(5, 1)),
                    ("p_big", pa.int64()), ("p_ts", pa.timestamp("us", tz="UTC"))])
PARTITION = ["p_int", "p_day", "p_str", "p_bool", "p_dec", "p_big", "p_ts"]
DDL = ("id long, v string, p_int int, p_day date, p_str string, p_bool boolean, p_dec decimal(5,1), p_big long, "
       "p_ts timestamp")
# 01:30 twice in New York: the instants an hour apart the clocks go back over
FALL_BACK = [dt.datetime(2024, 11, 3, 5, 30, tzinfo=dt.UTC), dt.datetime(2024, 11, 3, 6, 30, tzinfo=dt.UTC)]
FALLBACK = "lakeformat's Spark jar is not on this session's classpath"


def new_york(spark):
    return native_write.session_confs(spark, {"spark.sql.session.timeZone": "America/New_York"})


def rows(n: int) -> pa.Table:
    """Rows whose partitions interleave row by row, with a null and an empty string in the
    string column (Spark's partitionBy puts both into one directory), and two instants that read
    alike in New York (Spark's partitionBy names an instant by the session's time zone)."""
    ids = list(range(n))
    return pa.table({
        "id": ids, "v": [f"v{i}" for i in ids],
        "p_int": [None if i % 13 == 0 else i % 3 for i in ids],
        "p_day": [dt.date(2024, 1, 1) + dt.timedelta(days=i % 2) for i in ids],
        "p_str": [None if i % 17 == 0 else ("é/x", "k=v", "")[i % 3] for i in ids],
        "p_bool": [i % 4 == 0 for i in ids],
        "p_dec": [decimal.Decimal(i % 2) / 2 for i in ids],
        "p_big": [(i % 2) << 40 for i in ids],
        "p_ts": [FALL_BACK[(i // 12) % 2] for i in ids]}, schema=SCHEMA)


def assert_one_partition_per_file(t) -> int:
    """Each live data file holds only rows of the partition its manifest entry names; returns how
    many partitions the files hold."""
    keys = t.schema.partition_keys
    fields = [t.schema.field(k) for k in keys]
    seen = set()
    for e in t.live_entries(t.latest_snapshot()):
        got = read_columns(t.ctx, f"{t.bucket_dir_of(e.partition, e.bucket)}/{e.file.file_name}", e.file, fields)
        values = {tuple(r[k] for k in keys) for r in got.to_pylist()}
        assert values == {tuple(t.partition_values(e.partition))}, (e.file.file_name, values)
        seen |= values
    return len(seen)


def test_partitioned_write_routes_each_row_to_its_partitions_file(spark, catalog, caplog):
    wh = catalog.warehouse
    catalog.create_table("db.r", SCHEMA, partition_keys=PARTITION)
    catalog.create_table("db.p", SCHEMA, partition_keys=PARTITION)
    data = rows(3000)
    df = spark.createDataFrame(data.to_pylist(), DDL).repartition(3)
    assert jar.loadable(spark, jar.PARTITION_ROUTING)
    with caplog.at_level(logging.INFO, logger="lakeformat"), new_york(spark):
        lfs.write(df, "db.r", warehouse=wh)
    assert FALLBACK not in caplog.text
    lfs.write(df, "db.p", warehouse=wh, native=False)
    routed, python = catalog.get_table("db.r"), catalog.get_table("db.p")
    assert_same_rows(routed.read(), python.read(), ["id"], "routed vs python path")
    assert_same_rows(routed.read(), data, ["id"], "routed vs input")
    partitions = assert_one_partition_per_file(routed)
    assert partitions == len({tuple(r[k] for k in PARTITION) for r in data.to_pylist()}) > 20
    # 3 tasks, each at most one file per partition
    assert len(routed.live_entries(routed.latest_snapshot())) <= 3 * partitions


def test_a_task_keeps_at_most_the_open_files_it_may_and_starts_a_new_file_after_closing_one(spark, catalog,
                                                                                           monkeypatch):
    """One task, rows in runs of 5 alternating between two partitions, one open file allowed: the
    routing closes a partition's file when the other partition's run starts, so each run is a
    file (Spark's partitionBy would have sorted the task's rows into one file per partition)."""
    monkeypatch.setattr(native_write, "CONCURRENT_FILES", 1)
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string())])
    catalog.create_table("db.t", schema, partition_keys=["dt"])
    data = [(i, "a" if (i // 5) % 2 == 0 else "b") for i in range(40)]
    lfs.write(spark.createDataFrame(data, "id long, dt string").coalesce(1), "db.t", warehouse=catalog.warehouse)
    t = catalog.get_table("db.t")
    assert sorted((r["id"], r["dt"]) for r in t.read().to_pylist()) == data
    entries = t.live_entries(t.latest_snapshot())
    assert len(entries) == 8 and all(e.file.row_count == 5 for e in entries)


def test_many_partitions_with_few_open_files(spark, catalog, monkeypatch):
    monkeypatch.setattr(native_write, "CONCURRENT_FILES", 2)
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string())])
    catalog.create_table("db.t", schema, partition_keys=["dt"])
    data = [(i, f"d{i % 7}") for i in range(700)]
    lfs.write(spark.createDataFrame(data, "id long, dt string").repartition(2), "db.t", warehouse=catalog.warehouse)
    t = catalog.get_table("db.t")
    assert sorted((r["id"], r["dt"]) for r in t.read().to_pylist()) == data
    assert assert_one_partition_per_file(t) == 7


def test_without_the_jar_the_same_rows_go_through_sparks_partitionBy(spark, catalog, monkeypatch, caplog):
    wh = catalog.warehouse
    catalog.create_table("db.f", SCHEMA, partition_keys=PARTITION)
    data = rows(500)
    df = spark.createDataFrame(data.to_pylist(), DDL).repartition(2)
    monkeypatch.setattr(jar, "PARTITION_ROUTING", "lakeformat.spark.NoSuchFormat")
    with caplog.at_level(logging.INFO, logger="lakeformat"), new_york(spark):
        lfs.write(df, "db.f", warehouse=wh)
    assert FALLBACK in caplog.text and "db.f" in caplog.text
    t = catalog.get_table("db.f")
    assert_same_rows(t.read(), data, ["id"], "partitionBy vs input")
    assert assert_one_partition_per_file(t) > 20


def test_jar_path_names_the_missing_jar(monkeypatch, tmp_path):
    assert lfs.jar_path().endswith("lakeformat-spark.jar")
    monkeypatch.setattr(jar, "JAR", tmp_path / "lakeformat-spark.jar")
    with pytest.raises(LakeformatError, match="make jar"):
        lfs.jar_path()


def test_every_getter_of_the_routing_keeps_its_partitions_apart(spark, catalog):
    """The partition kinds the first test leaves out: tinyint, smallint, float, double (0.0 and
    -0.0 written, by their bits, to files of their own partition) and binary (NULL and empty
    apart), rows interleaved."""
    schema = pa.schema([("id", pa.int64()), ("p_tiny", pa.int8()), ("p_small", pa.int16()),
                        ("p_f", pa.float32()), ("p_d", pa.float64()), ("p_bin", pa.binary())])
    keys = ["p_tiny", "p_small", "p_f", "p_d", "p_bin"]
    catalog.create_table("db.k", schema, partition_keys=keys)
    data = pa.table({"id": list(range(600)), "p_tiny": [i % 2 - 1 for i in range(600)],
                     "p_small": [(i % 3) * 1000 for i in range(600)],
                     "p_f": [(0.0, -0.0, 1.5)[i % 3] for i in range(600)],
                     "p_d": [None if i % 7 == 0 else (i % 2) * 2.25 for i in range(600)],
                     "p_bin": [(None, b"", b"a/x")[i % 5 % 3] for i in range(600)]}, schema=schema)
    df = spark.createDataFrame(data.to_pylist(), "id long, p_tiny tinyint, p_small smallint, p_f float, p_d double, "
                               "p_bin binary").repartition(2)
    lfs.write(df, "db.k", warehouse=catalog.warehouse)
    t = catalog.get_table("db.k")
    assert_same_rows(t.read(), data, ["id"], "routed vs input")
    partitions = assert_one_partition_per_file(t)
    assert partitions == len({tuple(r[k] for k in keys) for r in data.to_pylist()})
    # 2 tasks, each a file per partition: a comparison that never matched would open a file per switch
    assert len(t.live_entries(t.latest_snapshot())) <= 2 * (partitions + 3)   # + the -0.0 files
