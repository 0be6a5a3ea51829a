"""``INSERT OVERWRITE`` (static, dynamic, ``writeTo(...).overwrite``/``overwritePartitions``) and
``ALTER TABLE`` in lakeformat's Spark SQL catalog, against a real SparkSession, checked with the
library (``t.read()``, ``t.schema``, the snapshots: one commit per statement) and with pypaimon and
paimon-rust reading the same warehouse; what the library refuses is refused by its named error."""
from __future__ import annotations


import pyarrow as pa
import pytest
from py4j.protocol import Py4JJavaError
from pyspark.sql import functions as F

from lakeformat.format import types as T
from lakeformat.spark.sql import spark_reads_as_current
from tests.interop.helpers import Oracle, assert_same_rows, check_readers
from tests.oracle import run_oracle

pytestmark = pytest.mark.slow
SCHEMA = "id BIGINT, v STRING, dt STRING"



@pytest.fixture
def dynamic(spark):
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    yield
    spark.conf.unset("spark.sql.sources.partitionOverwriteMode")


def table(ids, vs, dts) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(vs, pa.string()), "dt": pa.array(dts, pa.string())})


def kinds(t) -> list[str]:
    return [s.commit_kind for s in t.snapshots()]


def partitioned(spark, catalog, lf_sql, name="t"):
    spark.sql(f"CREATE TABLE {lf_sql}.db.{name} ({SCHEMA}) PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {lf_sql}.db.{name} VALUES (1, 'a', 'x'), (2, 'b', 'y'), (3, 'c', 'z')")
    return catalog.get_table(f"db.{name}")


def test_static_overwrite_of_a_partition_and_of_the_whole_table(spark, catalog, lf_sql, tmp_path):
    partitioned(spark, catalog, lf_sql)
    spark.sql(f"INSERT OVERWRITE {lf_sql}.db.t PARTITION (dt = 'x') SELECT 10, 'p'")
    t = catalog.get_table("db.t")
    expected = table([10, 2, 3], ["p", "b", "c"], ["x", "y", "z"])
    assert_same_rows(t.read(), expected, ["id"], "partition x replaced")
    assert kinds(t) == ["APPEND", "OVERWRITE"]   # one commit per statement
    assert_same_rows(spark.table(f"{lf_sql}.db.t").toArrow(), expected, ["id"], "sql read")
    oracle = Oracle(tmp_path / "oracle")
    i = oracle.read(catalog.warehouse, "db.t")
    check_readers(oracle.run(), i, expected, ["id"], what="static partition overwrite")

    # no PARTITION clause in static mode (Spark's default): the whole table, as Paimon's connector
    spark.sql(f"INSERT OVERWRITE {lf_sql}.db.t VALUES (20, 'q', 'y')")
    t = catalog.get_table("db.t")
    assert_same_rows(t.read(), table([20], ["q"], ["y"]), ["id"], "whole table")
    assert kinds(t) == ["APPEND", "OVERWRITE", "OVERWRITE"]
    # an overwrite with no rows still replaces (here: empties) what it names
    spark.sql(f"INSERT OVERWRITE {lf_sql}.db.t PARTITION (dt = 'y') SELECT id, v FROM {lf_sql}.db.t WHERE id < 0")
    assert catalog.get_table("db.t").read().num_rows == 0
    oracle = Oracle(tmp_path / "oracle2")
    i = oracle.read(catalog.warehouse, "db.t")
    check_readers(oracle.run(), i, table([], [], []), ["id"], what="emptied")


def test_static_overwrite_of_an_int_and_date_partition(spark, catalog, lf_sql):
    spark.sql(f"CREATE TABLE {lf_sql}.db.d (id BIGINT, day DATE, h INT) PARTITIONED BY (day, h)")
    spark.sql(f"INSERT INTO {lf_sql}.db.d VALUES (1, DATE'2024-06-01', 1), (2, DATE'2024-06-01', 2), "
              "(3, DATE'2024-06-02', 1)")
    spark.sql(f"INSERT OVERWRITE {lf_sql}.db.d PARTITION (day = '2024-06-01', h = 1) SELECT 9")
    got = catalog.get_table("db.d").read().sort_by("id")
    assert got["id"].to_pylist() == [2, 3, 9]
    spark.sql(f"INSERT OVERWRITE {lf_sql}.db.d PARTITION (day = '2024-06-01', h) SELECT 8, 2")
    assert sorted(catalog.get_table("db.d").read()["id"].to_pylist()) == [3, 8]   # static: day 2024-06-01


def test_dynamic_overwrite_replaces_only_the_partitions_written(spark, catalog, lf_sql, dynamic, tmp_path):
    partitioned(spark, catalog, lf_sql)
    spark.sql(f"INSERT OVERWRITE {lf_sql}.db.t VALUES (10, 'p', 'x'), (11, 'q', 'w')")
    t = catalog.get_table("db.t")
    expected = table([10, 11, 2, 3], ["p", "q", "b", "c"], ["x", "w", "y", "z"])
    assert_same_rows(t.read(), expected, ["id"], "dynamic overwrite")
    assert kinds(t) == ["APPEND", "OVERWRITE"]
    df = spark.createDataFrame([(12, "r", "y")], SCHEMA)
    df.writeTo(f"{lf_sql}.db.t").overwritePartitions()   # dynamic, whatever the session's mode
    expected = table([10, 11, 12, 3], ["p", "q", "r", "c"], ["x", "w", "y", "z"])
    t = catalog.get_table("db.t")
    assert_same_rows(t.read(), expected, ["id"], "overwritePartitions")
    assert kinds(t) == ["APPEND", "OVERWRITE", "OVERWRITE"]
    oracle = Oracle(tmp_path / "oracle")
    i = oracle.read(catalog.warehouse, "db.t")
    check_readers(oracle.run(), i, expected, ["id"], what="dynamic overwrite")

    # a table without partitions: the whole table
    spark.sql(f"CREATE TABLE {lf_sql}.db.u (id BIGINT, v STRING)")
    spark.sql(f"INSERT INTO {lf_sql}.db.u VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"INSERT OVERWRITE {lf_sql}.db.u VALUES (3, 'c')")
    assert catalog.get_table("db.u").read()["id"].to_pylist() == [3]


def test_overwrite_of_a_primary_key_table(spark, catalog, lf_sql, tmp_path):
    spark.sql(f"CREATE TABLE {lf_sql}.db.k (id BIGINT NOT NULL, v STRING, dt STRING NOT NULL) PARTITIONED BY (dt) "
              "TBLPROPERTIES ('primary-key' = 'dt,id', 'bucket' = '2')")
    spark.sql(f"INSERT INTO {lf_sql}.db.k VALUES (1, 'a', 'x'), (2, 'b', 'x'), (3, 'c', 'y')")
    spark.sql(f"INSERT OVERWRITE {lf_sql}.db.k PARTITION (dt = 'x') VALUES (2, 'B')")
    t = catalog.get_table("db.k")
    expected = table([2, 3], ["B", "c"], ["x", "y"])
    assert_same_rows(t.read(), expected, ["id"], "primary-key overwrite")
    oracle = Oracle(tmp_path / "oracle")
    i = oracle.read(catalog.warehouse, "db.k")
    check_readers(oracle.run(), i, expected, ["id"], what="primary-key overwrite")


def test_write_to_overwrite_by_partition_equalities_only(spark, catalog, lf_sql):
    partitioned(spark, catalog, lf_sql)
    df = spark.createDataFrame([(10, "p", "y")], SCHEMA)
    df.writeTo(f"{lf_sql}.db.t").overwrite(F.col("dt") == "y")
    assert_same_rows(catalog.get_table("db.t").read(), table([1, 10, 3], ["a", "p", "c"], ["x", "y", "z"]),
                     ["id"], "overwrite(dt = y)")
    before = catalog.get_table("db.t").latest_snapshot().id
    with pytest.raises(Exception, match=r"equalities on partition columns only.*id is not a partition column"):
        df.writeTo(f"{lf_sql}.db.t").overwrite(F.col("id") == 1)
    with pytest.raises(Exception, match="equalities on partition columns only"):
        df.writeTo(f"{lf_sql}.db.t").overwrite(F.col("dt") > "a")
    # rows outside the partition named: the library's DataError, nothing committed
    with pytest.raises(Py4JJavaError, match=r"lakeformat \(DataError\): overwrite of partition \{'dt': 'x'\}"):
        df.writeTo(f"{lf_sql}.db.t").overwrite(F.col("dt") == "x")
    assert catalog.get_table("db.t").latest_snapshot().id == before


def test_alter_add_column_then_insert_reads_old_rows_as_nulls(spark, catalog, lf_sql, tmp_path):
    partitioned(spark, catalog, lf_sql)
    spark.sql(f"ALTER TABLE {lf_sql}.db.t ADD COLUMN score DOUBLE COMMENT 'points'")
    t = catalog.get_table("db.t")
    assert t.schema.names == ["id", "v", "dt", "score"] and t.schema.field("score").description == "points"
    spark.sql(f"INSERT INTO {lf_sql}.db.t VALUES (4, 'd', 'x', 0.5)")
    spark.sql(f"ALTER TABLE {lf_sql}.db.t ADD COLUMNS (n INT, w STRING)")
    spark.sql(f"INSERT INTO {lf_sql}.db.t (id, v, dt, n) VALUES (5, 'e', 'y', 7)")
    t = catalog.get_table("db.t")
    expected = pa.table({"id": pa.array([1, 2, 3, 4, 5], pa.int64()), "v": list("abcde"),
                         "dt": ["x", "y", "z", "x", "y"], "score": [None, None, None, 0.5, None],
                         "n": pa.array([None, None, None, None, 7], pa.int32()),
                         "w": pa.array([None] * 5, pa.string())})
    assert_same_rows(t.read(), expected, ["id"], "library after ADD COLUMN")
    assert_same_rows(spark.table(f"{lf_sql}.db.t").toArrow(), expected, ["id"], "sql after ADD COLUMN")
    oracle = Oracle(tmp_path / "oracle")
    i = oracle.read(catalog.warehouse, "db.t")
    check_readers(oracle.run(), i, expected, ["id"], what="after ADD COLUMN")


def test_alter_rename_drop_and_retype_keep_reads_right(spark, catalog, lf_sql, tmp_path):
    spark.sql(f"CREATE TABLE {lf_sql}.db.e (id BIGINT, v STRING, n INT, dt STRING) PARTITIONED BY (dt)")
    spark.sql(f"INSERT INTO {lf_sql}.db.e VALUES (1, 'a', 10, 'x'), (2, 'b', 20, 'y')")
    spark.sql(f"ALTER TABLE {lf_sql}.db.e RENAME COLUMN v TO label")
    t = catalog.get_table("db.e")
    assert t.schema.names == ["id", "label", "n", "dt"]
    assert not spark_reads_as_current(t.schema_manager.get(0).fields, t.schema.fields)
    expected = pa.table({"id": pa.array([1, 2], pa.int64()), "label": ["a", "b"], "n": pa.array([10, 20], pa.int32()),
                         "dt": ["x", "y"]})
    assert_same_rows(t.read(), expected, ["id"], "library after RENAME")
    # Spark finds columns by name: files of the old name go to lakeformat's reader (by field id),
    # never to Spark's scan, which would read them as nulls
    assert_same_rows(spark.table(f"{lf_sql}.db.e").toArrow(), expected, ["id"], "SQL after RENAME")
    oracle = Oracle(tmp_path / "oracle")
    i = oracle.read(catalog.warehouse, "db.e")
    check_readers(oracle.run(), i, expected, ["id"], what="after RENAME COLUMN")

    spark.sql(f"ALTER TABLE {lf_sql}.db.e ALTER COLUMN n TYPE BIGINT")
    t = catalog.get_table("db.e")
    assert t.schema.field("n").type.root == "BIGINT"
    assert t.read()["n"].type == pa.int64() and sorted(t.read()["n"].to_pylist()) == [10, 20]
    spark.sql(f"ALTER TABLE {lf_sql}.db.e DROP COLUMN label")
    spark.sql(f"ALTER TABLE {lf_sql}.db.e DROP COLUMN IF EXISTS nope")
    t = catalog.get_table("db.e")
    assert t.schema.names == ["id", "n", "dt"]
    assert_same_rows(t.read(), pa.table({"id": pa.array([1, 2], pa.int64()), "n": pa.array([10, 20], pa.int64()),
                                         "dt": ["x", "y"]}), ["id"], "after DROP")
    # rewriting the rows under the current schema makes them Spark's to read again
    spark.sql(f"INSERT OVERWRITE {lf_sql}.db.e SELECT id, n, dt FROM {lf_sql}.db.e VERSION AS OF 1")
    assert_same_rows(spark.table(f"{lf_sql}.db.e").toArrow(), catalog.get_table("db.e").read(), ["id"], "rewritten")


def test_alter_table_options(spark, catalog, lf_sql):
    spark.sql(f"CREATE TABLE {lf_sql}.db.o (id BIGINT) TBLPROPERTIES ('file.compression' = 'zstd')")
    spark.sql(f"ALTER TABLE {lf_sql}.db.o SET TBLPROPERTIES ('snapshot.num-retained.min' = '3', "
              "'file.compression' = 'snappy')")
    opts = catalog.get_table("db.o").schema.options
    assert opts["snapshot.num-retained.min"] == "3" and opts["file.compression"] == "snappy"
    shown = {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES {lf_sql}.db.o").collect()}
    assert shown["snapshot.num-retained.min"] == "3"
    spark.sql(f"ALTER TABLE {lf_sql}.db.o UNSET TBLPROPERTIES ('snapshot.num-retained.min')")
    assert "snapshot.num-retained.min" not in catalog.get_table("db.o").schema.options
    spark.sql(f"INSERT INTO {lf_sql}.db.o VALUES (1)")
    assert catalog.get_table("db.o").read()["id"].to_pylist() == [1]


@pytest.mark.parametrize("statement, error", [
    ("ALTER TABLE {t} DROP COLUMN dt", r"lakeformat \(SchemaError\): cannot drop 'dt': it is a partition"),
    ("ALTER TABLE {t} RENAME COLUMN dt TO day", r"lakeformat \(SchemaError\): cannot rename 'dt'"),
    ("ALTER TABLE {t} ADD COLUMN n INT NOT NULL", r"lakeformat \(SchemaError\): a new column must be nullable"),
    ("ALTER TABLE {t} ALTER COLUMN v TYPE INT", "cannot be cast|CANNOT_UPDATE_FIELD|NOT_SUPPORTED_CHANGE_COLUMN"),
    ("ALTER TABLE {t} SET TBLPROPERTIES ('bucket' = '4')", r"lakeformat \(SchemaError\): cannot change 'bucket'"),
    ("ALTER TABLE {t} SET TBLPROPERTIES ('no.such-option' = '1')", r"lakeformat \(\w*OptionError\)"),
    ("ALTER TABLE {t} SET TBLPROPERTIES ('primary-key' = 'id')",
     r"lakeformat \(UnsupportedOptionError\): ALTER TABLE db.t: 'primary-key' is not a table option"),
    ("ALTER TABLE {t} ADD COLUMN z INT FIRST", "column positions"),
    ("ALTER TABLE {t} ALTER COLUMN v COMMENT 'x'", "UpdateColumnComment"),
    ("ALTER TABLE {t} RENAME TO db.t", r"lakeformat \(AlreadyExistsError\): table db.t exists already"),
    ("ALTER TABLE {t} RENAME TO nodb.u", r"lakeformat \(NotFoundError\): database 'nodb' does not exist"),
])
def test_alter_refusals_name_the_reason_and_change_nothing(spark, catalog, lf_sql, statement, error):
    t = partitioned(spark, catalog, lf_sql)
    with pytest.raises(Exception, match=error):
        spark.sql(statement.format(t=f"{lf_sql}.db.t"))
    after = catalog.get_table("db.t")
    assert after.schema.id == t.schema.id and after.schema.names == t.schema.names
    assert catalog.list_tables("db") == ["t"]


def test_spark_reads_as_current_follows_field_ids():
    old = [T.DataField(0, "id", T.atomic("BIGINT")), T.DataField(1, "v", T.atomic("STRING"))]
    added = old + [T.DataField(2, "w", T.atomic("STRING"))]
    assert spark_reads_as_current(old, added)
    assert not spark_reads_as_current(old, [old[0], T.DataField(1, "w", T.atomic("STRING"))])   # renamed
    assert not spark_reads_as_current(old, [old[0], T.DataField(2, "v", T.atomic("STRING"))])   # dropped, re-added
    assert not spark_reads_as_current(old, [T.DataField(0, "id", T.atomic("INT")), old[1]])    # retyped
    assert spark_reads_as_current(old, [old[0]])   # dropped: Spark does not ask for it


def test_truncate_table(spark, catalog, lf_sql, tmp_path):
    partitioned(spark, catalog, lf_sql)
    spark.sql(f"TRUNCATE TABLE {lf_sql}.db.t")
    t = catalog.get_table("db.t")
    assert t.read().num_rows == 0 and kinds(t) == ["APPEND", "OVERWRITE"]
    assert spark.table(f"{lf_sql}.db.t").count() == 0
    spark.sql(f"INSERT INTO {lf_sql}.db.t VALUES (1, 'a', 'x')")
    oracle = Oracle(tmp_path / "oracle")
    i = oracle.read(catalog.warehouse, "db.t")
    check_readers(oracle.run(), i, table([1], ["a"], ["x"]), ["id"], what="after TRUNCATE")


def test_rename_table(spark, catalog, lf_sql, tmp_path):
    partitioned(spark, catalog, lf_sql)
    spark.sql(f"CREATE DATABASE {lf_sql}.other")
    spark.sql(f"ALTER TABLE {lf_sql}.db.t RENAME TO other.u")   # the new name within the catalog
    assert not catalog.table_exists("db.t") and catalog.list_tables("other") == ["u"]
    expected = table([1, 2, 3], ["a", "b", "c"], ["x", "y", "z"])
    assert_same_rows(catalog.get_table("other.u").read(), expected, ["id"], "renamed")
    spark.sql(f"INSERT INTO {lf_sql}.other.u VALUES (4, 'd', 'x')")
    assert spark.table(f"{lf_sql}.other.u").count() == 4
    oracle = Oracle(tmp_path / "oracle")
    i = oracle.read(catalog.warehouse, "other.u")
    check_readers(oracle.run(), i, catalog.get_table("other.u").read(), ["id"], what="renamed table")
    t = catalog.create_table("db.ice", pa.schema([("id", pa.int64())]),
                             options={"metadata.iceberg.storage": "table-location"})
    with pytest.raises(Exception, match=r"lakeformat \(UnsupportedOptionError\): renaming db.ice"):
        spark.sql(f"ALTER TABLE {lf_sql}.db.ice RENAME TO db.ice2")
    assert catalog.table_exists(t.name)


def test_show_and_drop_partitions(spark, catalog, lf_sql, tmp_path):
    spark.sql(f"CREATE TABLE {lf_sql}.db.p (id BIGINT, day DATE, h INT) PARTITIONED BY (day, h)")
    spark.sql(f"INSERT INTO {lf_sql}.db.p VALUES (1, DATE'2024-06-01', 1), (2, DATE'2024-06-01', 2), "
              "(3, DATE'2024-06-02', 1)")
    shown = [r[0] for r in spark.sql(f"SHOW PARTITIONS {lf_sql}.db.p").collect()]
    assert shown == ["day=2024-06-01/h=1", "day=2024-06-01/h=2", "day=2024-06-02/h=1"]
    assert [r[0] for r in spark.sql(f"SHOW PARTITIONS {lf_sql}.db.p PARTITION (h = 1)").collect()] == \
        ["day=2024-06-01/h=1", "day=2024-06-02/h=1"]
    spark.sql(f"ALTER TABLE {lf_sql}.db.p DROP PARTITION (day = '2024-06-01', h = 2)")
    t = catalog.get_table("db.p")
    assert sorted(t.read()["id"].to_pylist()) == [1, 3] and kinds(t) == ["APPEND", "OVERWRITE"]
    with pytest.raises(Exception, match=r"PARTITIONS_NOT_FOUND|not found"):
        spark.sql(f"ALTER TABLE {lf_sql}.db.p DROP PARTITION (day = '2024-06-01', h = 2)")
    spark.sql(f"ALTER TABLE {lf_sql}.db.p DROP IF EXISTS PARTITION (day = '2024-06-01', h = 2)")
    spark.sql(f"TRUNCATE TABLE {lf_sql}.db.p PARTITION (day = '2024-06-02', h = 1)")
    t = catalog.get_table("db.p")
    assert t.read()["id"].to_pylist() == [1] and len(t.snapshots()) == 3
    assert [r[0] for r in spark.sql(f"SHOW PARTITIONS {lf_sql}.db.p").collect()] == ["day=2024-06-01/h=1"]
    with pytest.raises(Exception, match="ADD PARTITION is not supported"):
        spark.sql(f"ALTER TABLE {lf_sql}.db.p ADD PARTITION (day = '2024-06-09', h = 1)")
    oracle = Oracle(tmp_path / "oracle")
    i = oracle.read(catalog.warehouse, "db.p")
    check_readers(oracle.run(), i, t.read(), ["id"], what="after DROP PARTITION")


PYPAIMON_ALTERS = r'''
import json, sys
from pypaimon import CatalogFactory
from pypaimon.schema.data_types import AtomicType
from pypaimon.schema.schema_change import SchemaChange
cat = CatalogFactory.create({"warehouse": sys.argv[1]})
cat.alter_table("db.t", [SchemaChange.add_column("score", AtomicType("DOUBLE"))])
print(json.dumps({"fields": [f.name for f in cat.get_table("db.t").table_schema.fields]}))
'''


def test_what_pypaimon_overwrites_and_alters_the_catalog_reads_and_writes_on(spark, catalog, lf_sql, tmp_path):
    """The other way round: pypaimon overwrites a partition and adds a column; SQL then reads the
    table as the library does, and INSERT OVERWRITE / INSERT INTO write under pypaimon's schema."""
    partitioned(spark, catalog, lf_sql)
    oracle = Oracle(tmp_path / "oracle")
    oracle.write(catalog.warehouse, "db.t", table([7], ["g"], ["x"]), overwrite={"dt": "x"})
    oracle.run().check_all()
    assert run_oracle(PYPAIMON_ALTERS, catalog.warehouse)["fields"] == ["id", "v", "dt", "score"]
    t = catalog.get_table("db.t")
    assert t.schema.names == ["id", "v", "dt", "score"]
    expected = pa.table({"id": pa.array([7, 2, 3], pa.int64()), "v": ["g", "b", "c"], "dt": ["x", "y", "z"],
                         "score": pa.array([None] * 3, pa.float64())})
    assert_same_rows(t.read(), expected, ["id"], "library after pypaimon")
    assert_same_rows(spark.table(f"{lf_sql}.db.t").toArrow(), expected, ["id"], "sql after pypaimon")
    spark.sql(f"INSERT OVERWRITE {lf_sql}.db.t PARTITION (dt = 'y') VALUES (8, 'h', 1.5)")
    spark.sql(f"INSERT INTO {lf_sql}.db.t VALUES (9, 'i', 'z', 2.5)")
    expected = pa.table({"id": pa.array([7, 8, 3, 9], pa.int64()), "v": ["g", "h", "c", "i"],
                         "dt": ["x", "y", "z", "z"], "score": [None, 1.5, None, 2.5]})
    assert_same_rows(catalog.get_table("db.t").read(), expected, ["id"], "library after SQL")
    i = oracle.read(catalog.warehouse, "db.t")
    check_readers(oracle.run(), i, expected, ["id"], what="pypaimon's schema, SQL's rows")
