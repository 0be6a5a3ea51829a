"""lakeformat's Spark SQL catalog (``spark.sql.catalog.<name>`` = ``lakeformat.spark.SparkCatalog``):
SQL and ``spark.table`` over tables the Python library plans and Spark's own Parquet scan reads,
checked against the library's ``t.read()``: append tables, partitions pruned by Spark, deletion
vectors, time travel; what needs lakeformat's merge is read by the Python data source."""
from __future__ import annotations

import time

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from py4j.protocol import Py4JJavaError
from pyspark.errors import AnalysisException

import lakeformat as lf
import lakeformat.spark as lfs
from lakeformat.pipeline.demo_data import SCHEMA as UB_SCHEMA, user_behavior
from tests.interop.helpers import assert_same_rows
from tests.spark.tables import deletion_vector_table

pytestmark = pytest.mark.slow
DAYS = ["2024-06-01", "2024-06-02", "2024-06-03"]
KEY = ["user_id", "item_id", "ts"]



def plan_text(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def scan_files(df) -> list[str]:
    """The files the query's scan reads, after Spark pruned partitions."""
    listed = df._jdf.queryExecution().executedPlan().collectLeaves().apply(0).scan().partitions()
    return [f.filePath().toString() for i in range(listed.size()) for f in listed.apply(i).files()]


def rows(df) -> pa.Table:
    return df.toArrow()


def test_namespaces_tables_and_describe(spark, catalog, lf_sql):
    catalog.create_database("other")
    catalog.create_table("db.ub", UB_SCHEMA, partition_keys=["dt"])
    catalog.create_table("db.plain", pa.schema([("id", pa.int64())]))
    assert [r[0] for r in spark.sql(f"SHOW NAMESPACES IN {lf_sql}").collect()] == ["db", "other"]
    assert sorted(r.tableName for r in spark.sql(f"SHOW TABLES IN {lf_sql}.db").collect()) == ["plain", "ub"]
    assert spark.sql(f"SHOW TABLES IN {lf_sql}.other").collect() == []
    described = spark.sql(f"DESCRIBE {lf_sql}.db.ub").collect()
    assert [(r.col_name, r.data_type) for r in described[:len(UB_SCHEMA)]] == [
        ("user_id", "bigint"), ("item_id", "bigint"), ("behavior", "string"), ("price", "double"),
        ("ts", "timestamp_ntz"), ("dt", "string")]
    assert "# Partition Information" in [r.col_name for r in described]
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql(f"SELECT * FROM {lf_sql}.db.nope")
    assert spark.table(f"{lf_sql}.db.plain").count() == 0   # no snapshot yet: no rows


def test_append_table_read_by_sql_equals_the_library(spark, catalog, lf_sql):
    t = catalog.create_table("db.ub", UB_SCHEMA)
    t.write(user_behavior(2000, DAYS, seed=1))
    t.write(user_behavior(1000, DAYS, seed=2))
    t = catalog.get_table("db.ub")
    df = spark.sql(f"SELECT * FROM {lf_sql}.db.ub")
    assert "BatchScan" in plan_text(df) and "ParquetScan" in plan_text(df)
    assert_same_rows(rows(df), t.read(), KEY, "sql")
    assert_same_rows(rows(spark.table(f"{lf_sql}.db.ub")), t.read(), KEY, "spark.table")
    agg = spark.sql(f"SELECT behavior, count(*) AS n, sum(price) AS s FROM {lf_sql}.db.ub GROUP BY behavior")
    assert "ReadSchema: struct<behavior:string,price:double>" in plan_text(agg)
    expected = t.read().group_by("behavior").aggregate([("behavior", "count"), ("price", "sum")])
    got = {r.behavior: (r.n, round(r.s, 6)) for r in agg.collect()}
    assert got == {b: (n, round(s, 6)) for b, n, s in zip(expected["behavior"].to_pylist(),
                                                         expected["behavior_count"].to_pylist(),
                                                         expected["price_sum"].to_pylist())}


def test_partition_filter_prunes_partitions_in_spark(spark, catalog, lf_sql):
    t = catalog.create_table("db.ub", UB_SCHEMA, partition_keys=["dt"],
                             options={"bucket": "2", "bucket-key": "user_id"})
    t.write(user_behavior(3000, DAYS, seed=3))
    t = catalog.get_table("db.ub")
    df = spark.sql(f"SELECT user_id, item_id, ts, price FROM {lf_sql}.db.ub "
                   f"WHERE dt = '2024-06-02' AND price > 10")
    text = plan_text(df)
    assert "PartitionFilters: [isnotnull(dt" in text and "(dt#" in text and "= 2024-06-02)]" in text
    assert "ReadSchema: struct<user_id:bigint,item_id:bigint,price:double,ts:timestamp_ntz>" in text
    assert "PushedFilters: [IsNotNull(price), GreaterThan(price,10.0)]" in text
    expected = t.read(columns=["user_id", "item_id", "ts", "price"],
                      filter=(lf.col("dt") == "2024-06-02") & (lf.col("price") > 10.0))
    assert expected.num_rows > 0
    assert_same_rows(rows(df), expected, KEY, "partition filter")
    files = scan_files(df)   # only those of the partition read
    assert files and all("/dt=2024-06-02/" in f for f in files)


def test_deletion_vectors_are_applied(spark, catalog, lf_sql):
    t = deletion_vector_table(catalog)
    expected = t.read()
    assert expected.num_rows == 2998
    df = spark.sql(f"SELECT * FROM {lf_sql}.db.dv")
    assert "ParquetWithDeletionVectorsScan" in plan_text(df)
    assert "DeletionVectors: rows skipped by lakeformat" in plan_text(df)
    assert_same_rows(rows(df), expected, ["id"], "deletion vectors")
    where = spark.sql(f"SELECT v, id FROM {lf_sql}.db.dv WHERE id >= 1000")
    assert "PushedFilters: []" in plan_text(where)   # positions count every row of a file
    assert_same_rows(rows(where), t.read(filter=lf.col("id") >= 1000), ["id"], "deletion vectors, filtered")
    assert spark.sql(f"SELECT count(*) FROM {lf_sql}.db.dv").collect()[0][0] == 2998
    got = spark.sql(f"SELECT v FROM {lf_sql}.db.dv WHERE id = 2").collect()
    assert [r.v for r in got] == ["B"]


def test_deletion_vectors_in_a_partitioned_table_with_a_partition_filter(spark, catalog, lf_sql):
    """Partition values are appended to each row after the vector's position is counted."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string()), pa.field("dt", pa.string(), False)])
    t = catalog.create_table("db.pdv", schema, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true"})
    n = 2000
    t.write(pa.table({"id": list(range(n)) * 2, "v": [f"a{i}" for i in range(2 * n)],
                      "dt": ["x"] * n + ["y"] * n}, schema=schema))
    t.compact(full=True)
    t.write(pa.table({"id": [5, 6, 1999], "v": ["P", "Q", "R"], "dt": ["x", "y", "y"]}, schema=schema))
    t = catalog.get_table("db.pdv")
    assert t.latest_snapshot().index_manifest
    assert_same_rows(spark.table(f"{lf_sql}.db.pdv").toArrow(), t.read(), ["dt", "id"], "partitioned vectors")
    df = spark.sql(f"SELECT id, v FROM {lf_sql}.db.pdv WHERE dt = 'y'")
    assert "ParquetWithDeletionVectorsScan" in plan_text(df)
    assert scan_files(df) and all("/dt=y/" in f for f in scan_files(df))
    assert_same_rows(df.toArrow(), t.read(columns=["id", "v"], filter=lf.col("dt") == "y"), ["id"], "partition y")


def test_time_travel_by_version_tag_and_timestamp(spark, catalog, lf_sql):
    t = catalog.create_table("db.ub", UB_SCHEMA, partition_keys=["dt"])
    t.write(user_behavior(500, DAYS, seed=4))
    first = catalog.get_table("db.ub").latest_snapshot()
    time.sleep(0.01)
    t.write(user_behavior(700, DAYS, seed=5))
    t = catalog.get_table("db.ub")
    t.create_tag("v1", snapshot_id=first.id)
    name = f"{lf_sql}.db.ub"
    assert spark.table(name).count() == 1200
    assert_same_rows(rows(spark.sql(f"SELECT * FROM {name} VERSION AS OF {first.id}")),
                     t.read(snapshot_id=first.id), KEY, "version as of")
    assert spark.sql(f"SELECT * FROM {name} VERSION AS OF 'v1'").count() == 500
    at = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(first.time_millis / 1000 + 0.001))
    when = f"{at}.{(first.time_millis % 1000):03d}"
    assert spark.sql(f"SELECT * FROM {name} TIMESTAMP AS OF '{when}'").count() == 500
    with pytest.raises(Py4JJavaError, match=r"lakeformat \(NotFoundError\): snapshot 9 does not exist"):
        spark.sql(f"SELECT * FROM {name} VERSION AS OF 9").collect()


def test_reads_that_need_a_merge_go_through_the_python_source(spark, catalog, lf_sql):
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
    t = catalog.create_table("db.pk", schema, primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema))
    t.write(pa.table({"id": [2, 3], "v": ["B", "c"]}, schema=schema))
    merged = spark.sql(f"SELECT * FROM {lf_sql}.db.pk")
    assert "ParquetScan" not in plan_text(merged)   # overlapping runs: lakeformat's merge-on-read
    assert_same_rows(merged.toArrow(), catalog.get_table("db.pk").read(), ["id"], "merged primary-key table")
    assert spark.sql(f"SELECT v FROM {lf_sql}.db.pk WHERE id = 2").collect()[0].v == "B"
    assert spark.sql(f"SELECT count(*) FROM {lf_sql}.db.pk VERSION AS OF 1").collect()[0][0] == 2
    catalog.get_table("db.pk").compact(full=True)
    got = spark.sql(f"SELECT * FROM {lf_sql}.db.pk").toArrow()
    assert_same_rows(got, catalog.get_table("db.pk").read(), ["id"], "compacted primary-key table")
    assert pc.sum(got["id"]).as_py() == 6


def test_added_columns_read_as_nulls_renamed_ones_through_the_python_source(spark, catalog, lf_sql):
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = catalog.create_table("db.ev", schema)
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema))
    t.alter(lf.AddColumn("score", pa.float64()))
    catalog.get_table("db.ev").write(pa.table({"id": [3], "v": ["c"], "score": [0.5]}))
    t = catalog.get_table("db.ev")
    assert_same_rows(spark.table(f"{lf_sql}.db.ev").toArrow(), t.read(), ["id"], "added column")
    assert spark.sql(f"SELECT count(*) FROM {lf_sql}.db.ev WHERE score IS NULL").collect()[0][0] == 2
    t.alter(lf.RenameColumn("v", "w"))
    renamed = spark.table(f"{lf_sql}.db.ev")
    assert "ParquetScan" not in plan_text(renamed)   # Spark finds columns by name: lakeformat maps ids
    assert_same_rows(renamed.toArrow(), catalog.get_table("db.ev").read(), ["id"], "renamed column")
    assert sorted(lfs.read_table(spark, "db.ev", warehouse=catalog.warehouse).toArrow()["w"].to_pylist()) == \
        ["a", "b", "c"]


def test_without_the_planner_the_catalog_says_what_to_call(spark, catalog, lf_sql):
    spark._jvm.lakeformat.spark.SparkCatalog.install(None)
    try:
        with pytest.raises(Py4JJavaError, match=r"call lakeformat.spark.register\(spark\)"):
            spark.sql(f"SHOW NAMESPACES IN {lf_sql}").collect()
    finally:
        lfs.register(spark)
    assert [r[0] for r in spark.sql(f"SHOW NAMESPACES IN {lf_sql}").collect()] == ["db"]


def test_create_insert_and_drop_go_through_the_library(spark, catalog, lf_sql):
    spark.sql(f"CREATE TABLE {lf_sql}.db.n (id BIGINT, v STRING, dt STRING) PARTITIONED BY (dt) "
              "TBLPROPERTIES ('file.compression' = 'zstd')")
    t = catalog.get_table("db.n")
    assert list(t.schema.partition_keys) == ["dt"] and t.schema.options["file.compression"] == "zstd"
    assert "owner" not in t.schema.options
    spark.sql(f"INSERT INTO {lf_sql}.db.n VALUES (1, 'a', 'x'), (2, 'b', 'y')")
    spark.createDataFrame([(3, "c", "x")], "id bigint, v string, dt string").writeTo(f"{lf_sql}.db.n").append()
    t = catalog.get_table("db.n")
    assert sorted(t.read()["id"].to_pylist()) == [1, 2, 3] and t.latest_snapshot().id == 2
    assert sorted(r.id for r in spark.sql(f"SELECT id FROM {lf_sql}.db.n WHERE dt = 'x'").collect()) == [1, 3]

    spark.sql(f"CREATE TABLE {lf_sql}.db.k (id BIGINT NOT NULL, v STRING) "
              "TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '1')")
    assert list(catalog.get_table("db.k").schema.primary_keys) == ["id"]
    spark.sql(f"INSERT INTO {lf_sql}.db.k VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"INSERT INTO {lf_sql}.db.k VALUES (2, 'B')")
    assert_same_rows(catalog.get_table("db.k").read(), pa.table({"id": [1, 2], "v": ["a", "B"]}), ["id"], "upsert")
    spark.sql(f"INSERT OVERWRITE {lf_sql}.db.n VALUES (9, 'z', 'x')")   # tests/spark/test_sql_write.py
    assert catalog.get_table("db.n").read()["id"].to_pylist() == [9]
    spark.sql(f"DROP TABLE {lf_sql}.db.n")
    assert not catalog.table_exists("db.n")
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql(f"DROP TABLE {lf_sql}.db.n")
    spark.sql(f"DROP TABLE IF EXISTS {lf_sql}.db.n")
    spark.sql(f"ALTER TABLE {lf_sql}.db.k RENAME TO db.k2")   # tests/spark/test_sql_write.py
    assert catalog.table_exists("db.k2") and not catalog.table_exists("db.k")
    spark.sql(f"CREATE DATABASE {lf_sql}.more")
    spark.sql(f"CREATE TABLE {lf_sql}.more.t (id BIGINT)")
    assert catalog.table_exists("more.t")
    with pytest.raises(AnalysisException, match=r"SCHEMA_NOT_EMPTY|not empty"):
        spark.sql(f"DROP DATABASE {lf_sql}.more")
    spark.sql(f"DROP DATABASE {lf_sql}.more CASCADE")
    assert "more" not in catalog.list_databases()
    with pytest.raises(Exception, match="option"):
        spark.sql(f"CREATE TABLE {lf_sql}.db.bad (id BIGINT) TBLPROPERTIES ('no.such-option' = '1')")
