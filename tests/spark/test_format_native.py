"""``format("lakeformat")`` in a session with lakeformat's jar: the jar's provider reads with
Spark's own Parquet scan where the SQL catalog does (the plan shows pruned columns, pushed and
partition filters), hands what needs lakeformat's merge to the Python data source, and writes
through ``lfs.write``; every read checked against the library's ``t.read()``."""
from __future__ import annotations

import pyarrow as pa
import pytest

import lakeformat as lf
import lakeformat.spark as lfs
from lakeformat.pipeline.demo_data import SCHEMA as UB_SCHEMA, user_behavior
from lakeformat.spark.format_native import python_only
from lakeformat.spark.options import parse
from tests.interop.helpers import Oracle, assert_same_rows, check_readers
from tests.spark.tables import deletion_vector_table

pytestmark = pytest.mark.slow
DAYS = ["2024-06-01", "2024-06-02", "2024-06-03"]
KEY = ["user_id", "item_id", "ts"]
PK = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string()), ("n", pa.int64())])


def load(spark, wh, table, **options):
    r = spark.read.format("lakeformat").option("warehouse", wh).option("table", table)
    for k, v in options.items():
        r = r.option(k, str(v))
    return r.load()


def plan_text(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def native(df) -> bool:
    text = plan_text(df)
    return "ParquetScan" in text or "ParquetWithDeletionVectorsScan" in text


def test_the_name_is_the_jars_provider_and_the_python_source_has_its_own(spark):
    manager = spark._jsparkSession.sessionState().dataSourceManager()
    assert not manager.dataSourceExists("lakeformat")      # Spark refuses a name two sources have
    assert manager.dataSourceExists(lfs.source.PYTHON_NAME)
    lookup = spark._jvm.org.apache.spark.sql.execution.datasources.DataSource.lookupDataSource
    assert lookup("lakeformat", spark._jsparkSession.sessionState().conf()).getName() == \
        "lakeformat.spark.LakeformatSource"


def test_a_session_without_the_jar_is_told_once(spark, monkeypatch, caplog):
    """Where the provider's class is not loadable, the name stays the Python source's, said once."""
    monkeypatch.setattr(lfs.source, "NATIVE_SOURCE", "lakeformat.spark.NoSuchSource")
    monkeypatch.setattr(lfs.source, "_SAID", set())
    with caplog.at_level("INFO", logger="lakeformat.spark.source"):
        assert not lfs.source._has_jar(spark) and not lfs.source._has_jar(spark)
    said = [r.getMessage() for r in caplog.records if "no lakeformat jar" in r.getMessage()]
    assert len(said) == 1 and "Python data source" in said[0]
    monkeypatch.undo()
    assert lfs.source._has_jar(spark)


def test_partitioned_append_table_reads_natively(spark, catalog):
    wh = catalog.warehouse
    t = catalog.create_table("db.ub", UB_SCHEMA, partition_keys=["dt"])
    t.write(user_behavior(3000, DAYS, seed=1))
    t.write(user_behavior(1000, DAYS, seed=2))
    t = catalog.get_table("db.ub")
    df = load(spark, wh, "db.ub")
    assert native(df), plan_text(df)
    assert_same_rows(df.toArrow(), t.read(), KEY, "format(lakeformat)")
    q = df.filter("dt = '2024-06-02' AND price > 10").select("user_id", "price")
    text = plan_text(q)
    assert "ReadSchema: struct<user_id:bigint,price:double>" in text, text
    assert "PushedFilters: [IsNotNull(price), GreaterThan(price,10.0)]" in text, text
    assert "PartitionFilters: [isnotnull(dt" in text and "= 2024-06-02)]" in text, text
    expected = t.read(columns=["user_id", "price"], filter=(lf.col("dt") == "2024-06-02") & (lf.col("price") > 10.0))
    assert expected.num_rows > 0
    got = q.toArrow()
    assert sorted(zip(got["user_id"].to_pylist(), got["price"].to_pylist())) == \
        sorted(zip(expected["user_id"].to_pylist(), expected["price"].to_pylist()))
    # time travel: the snapshot's files, natively
    first = load(spark, wh, "db.ub", **{"snapshot-id": 1})
    assert native(first) and first.count() == 3000


def test_deletion_vectors_read_natively(spark, catalog):
    t = deletion_vector_table(catalog)
    df = load(spark, catalog.warehouse, "db.dv")
    assert "ParquetWithDeletionVectorsScan" in plan_text(df)
    assert_same_rows(df.toArrow(), t.read(), ["id"], "deletion vectors")
    assert df.filter("id = 2").collect()[0].v == "B"


def test_primary_key_table_needing_a_merge_reads_through_the_python_source(spark, catalog):
    wh = catalog.warehouse
    t = catalog.create_table("db.pk", PK, primary_keys=["id"], options={"bucket": "2"})
    t.write(pa.table({"id": list(range(100)), "v": ["a"] * 100, "n": list(range(100))}, schema=PK))
    t.write(pa.table({"id": list(range(50, 150)), "v": ["b"] * 100, "n": list(range(100))}, schema=PK))
    t.delete(pa.table({"id": pa.array([3, 120], pa.int64())}))
    t = catalog.get_table("db.pk")
    df = load(spark, wh, "db.pk")
    assert not native(df), plan_text(df)       # overlapping runs and delete rows: the merge
    assert_same_rows(df.toArrow(), t.read(), ["id"], "merged")
    assert df.count() == 148 and df.filter("v = 'b'").count() == 99
    # the older snapshot has one run per bucket: native
    old = load(spark, wh, "db.pk", **{"snapshot-id": 1})
    assert native(old)
    assert_same_rows(old.toArrow(), t.read(snapshot_id=1), ["id"], "snapshot 1")
    t.compact(full=True)
    t = catalog.get_table("db.pk")
    compacted = load(spark, wh, "db.pk")
    assert native(compacted), plan_text(compacted)
    assert_same_rows(compacted.toArrow(), t.read(), ["id"], "compacted")


def test_renamed_columns_and_other_reads_go_to_the_python_source(spark, catalog):
    wh = catalog.warehouse
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = catalog.create_table("db.ev", schema)
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema))
    t.alter(lf.RenameColumn("v", "w"))
    t = catalog.get_table("db.ev")
    t.write(pa.table({"id": [3], "w": ["c"]}))
    t = catalog.get_table("db.ev")
    df = load(spark, wh, "db.ev")
    assert not native(df)
    assert_same_rows(df.toArrow(), t.read(), ["id"], "renamed")
    # options only the Python source reads
    assert python_only(parse({"warehouse": wh, "table": "db.ev", "start-snapshot": "1"}))
    assert python_only(parse({"path": t.path}))
    assert python_only(parse({"warehouse": wh, "table": "db.ev"})) is None
    changes = load(spark, wh, "db.ev", **{"start-snapshot": 1})
    assert changes.toArrow()["id"].to_pylist() == [3]
    narrow = spark.read.format("lakeformat").schema("id BIGINT").option("warehouse", wh) \
        .option("table", "db.ev").load()
    assert narrow.columns == ["id"] and sorted(r.id for r in narrow.collect()) == [1, 2, 3]


def test_write_format_is_lfs_write(spark, catalog, tmp_path):
    wh = catalog.warehouse
    rows = user_behavior(2000, DAYS[:2], seed=7)
    df = spark.createDataFrame(rows).repartition(3)
    df.write.format("lakeformat").option("warehouse", wh).option("table", "db.w").option("partition", "dt") \
        .mode("append").save()
    lfs.write(df, "db.twin", warehouse=wh, options={"partition": "dt"})
    t, twin = catalog.get_table("db.w"), catalog.get_table("db.twin")
    assert list(t.schema.partition_keys) == ["dt"] and t.latest_snapshot().id == 1
    assert_same_rows(t.read(), rows, KEY, "appended")
    assert len(t.scan().plan()) == len(twin.scan().plan())   # the same files per partition as lfs.write writes
    more = user_behavior(500, DAYS[1:], seed=8)
    spark.createDataFrame(more).write.format("lakeformat").option("warehouse", wh).option("table", "db.w") \
        .mode("overwrite").save()
    t = catalog.get_table("db.w")
    assert t.latest_snapshot().id == 2 and t.latest_snapshot().commit_kind == "OVERWRITE"
    day1 = rows.filter(pa.compute.equal(rows.column("dt"), DAYS[0]))
    expected = pa.concat_tables([day1, more.select(rows.column_names)])
    assert_same_rows(t.read(), expected, KEY, "overwritten")
    oracle = Oracle(tmp_path / "oracle")
    i = oracle.read(wh, "db.w")
    check_readers(oracle.run(), i, expected, KEY, what="pypaimon reads the overwritten table")
    # a primary-key table: shuffled by bucket as lfs.write does, one commit
    catalog.create_table("db.pkw", PK, primary_keys=["id"], options={"bucket": "2"})
    spark.createDataFrame(pa.table({"id": list(range(300)), "v": ["x"] * 300, "n": list(range(300))},
                                   schema=PK)).repartition(4) \
        .write.format("lakeformat").option("warehouse", wh).option("table", "db.pkw").mode("append").save()
    pkw = catalog.get_table("db.pkw")
    assert pkw.latest_snapshot().id == 1 and pkw.read().num_rows == 300
    assert len([f for s in pkw.scan().plan() for f in s.files]) == 2   # one file per bucket
    with pytest.raises(Exception, match="overwrite-partition"):
        spark.createDataFrame(more).write.format("lakeformat").option("warehouse", wh).option("table", "db.w") \
            .option("overwrite-partition", "dt=2024-06-02").mode("append").save()
