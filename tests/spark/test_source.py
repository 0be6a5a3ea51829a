"""The lakeformat data source on a real local Spark: what Spark writes, lakeformat and pypaimon
read back row for row; what pypaimon writes, Spark reads; reads prune, time-travel and read
changes; a failed write leaves nothing behind."""
from __future__ import annotations

import datetime as dt
import os

import pyarrow as pa
import pytest

import lakeformat as lf
import lakeformat.spark as lfs
from lakeformat.pipeline.demo_data import SCHEMA as UB_SCHEMA, user_behavior
from tests.interop.helpers import Oracle, assert_same_rows, check_readers

DAYS = ["2024-06-01", "2024-06-02"]
PK_SCHEMA = pa.schema([pa.field("dt", pa.string(), False), pa.field("user_id", pa.int64(), False),
                       ("name", pa.string()), ("score", pa.float64()), ("ts", pa.timestamp("ms"))])
PK_KEYS = ["dt", "user_id"]


def src(spark, wh, table, **options):
    r = spark.read.format("lakeformat").option("warehouse", wh).option("table", table)
    for k, v in options.items():
        r = r.option(k, str(v))
    return r


def data_files(table) -> list[str]:
    out = []
    for root, _dirs, files in os.walk(table.path):
        out += [os.path.join(root, f) for f in files if f.endswith(".parquet")]
    return sorted(out)


def people(ids, dt_value="2024-06-01", tag="v1") -> pa.Table:
    ids = list(ids)
    base = dt.datetime(2024, 6, 1, 8)
    return pa.table({"dt": [dt_value] * len(ids), "user_id": ids, "name": [f"{tag}-{i}" for i in ids],
                     "score": [None if i % 5 == 0 else i * 0.5 for i in ids],
                     "ts": [base + dt.timedelta(minutes=i) for i in ids]}, schema=PK_SCHEMA)


@pytest.fixture
def oracle(tmp_path):
    return Oracle(tmp_path / "oracle")


def test_append_tables_written_by_spark_read_by_lakeformat_pypaimon_and_spark(spark, catalog, oracle):
    wh = catalog.warehouse
    rows1, rows2 = user_behavior(3000, DAYS, seed=1), user_behavior(1000, DAYS, seed=2)
    bucketed = catalog.create_table("db.ub", UB_SCHEMA, partition_keys=["dt"],
                                    options={"bucket": "2", "bucket-key": "user_id"})
    unaware = catalog.create_table("db.ub_free", UB_SCHEMA, partition_keys=["dt"])
    # the pandas path hands Spark zoned timestamps: the table's TIMESTAMP(3) keeps the wall clock
    df1 = spark.createDataFrame(rows1.to_pandas()).repartition(2)
    lfs.write(df1, "db.ub", warehouse=wh)
    df1.write.format("lakeformat").option("warehouse", wh).option("table", "db.ub_free").mode("append").save()
    lfs.write(spark.createDataFrame(rows2.to_pandas()), "db.ub", warehouse=wh)
    both = pa.concat_tables([rows1, rows2])

    assert_same_rows(bucketed.read(), both, ["user_id", "item_id", "ts"], "lakeformat")
    assert_same_rows(unaware.read(), rows1, ["user_id", "item_id", "ts"], "lakeformat (bucket -1)")
    # every (partition, bucket) was written by one task: one file each per commit
    assert len(bucketed.files()) == 2 * 2 * 2
    i, j = oracle.read(wh, "db.ub"), oracle.read(wh, "db.ub_free")
    res = oracle.run()
    check_readers(res, i, both, ["user_id", "item_id", "ts"], what="db.ub")
    check_readers(res, j, rows1, ["user_id", "item_id", "ts"], what="db.ub_free")
    assert_same_rows(src(spark, wh, "db.ub").load().toArrow(), both, ["user_id", "item_id", "ts"], "spark")

    # time travel and incremental reads
    first = bucketed.snapshot(1)
    assert_same_rows(src(spark, wh, "db.ub", **{"snapshot-id": 1}).load().toArrow(), rows1,
                     ["user_id", "item_id", "ts"], "snapshot-id 1")
    assert_same_rows(src(spark, wh, "db.ub", **{"as-of-timestamp": first.time_millis}).load().toArrow(), rows1,
                     ["user_id", "item_id", "ts"], "as-of-timestamp")
    assert_same_rows(src(spark, wh, "db.ub", **{"start-snapshot": 1}).load().toArrow(), rows2,
                     ["user_id", "item_id", "ts"], "changes after snapshot 1")
    assert src(spark, wh, "db.ub", **{"start-snapshot": 1, "end-snapshot": 1}).load().count() == 0
    bucketed.create_tag("first", 1)
    assert src(spark, wh, "db.ub", tag="first").load().count() == rows1.num_rows


def test_filters_and_columns_are_pushed_into_the_scan(spark, catalog):
    wh = catalog.warehouse
    t = catalog.create_table("db.ub", UB_SCHEMA, partition_keys=["dt"],
                             options={"bucket": "2", "bucket-key": "user_id"})
    rows = user_behavior(4000, DAYS, seed=3)
    t.write(rows.filter(pa.compute.equal(rows.column("dt"), DAYS[0])))
    t.write(rows.filter(pa.compute.equal(rows.column("dt"), DAYS[1])))
    everything = src(spark, wh, "db.ub").load()
    q = everything.filter(f"dt = '{DAYS[1]}' AND user_id < 30000 AND behavior IN ('buy', 'cart')")
    plan = q._jdf.queryExecution().executedPlan().toString()
    # with the jar: Spark's Parquet scan, the partition pruned, the rest pushed into row groups
    assert "ParquetScan" in plan and "PartitionFilters: [isnotnull(dt" in plan, plan
    assert "PushedFilters: [IsNotNull(user_id), LessThan(user_id,30000), In(behavior, [buy,cart])]" in plan, plan
    # the Python data source (the name's meaning without the jar) takes the filters it answers exactly
    python = spark.read.format(lfs.source.PYTHON_NAME).option("warehouse", wh).option("table", "db.ub").load()
    q_py = python.filter(f"dt = '{DAYS[1]}' AND user_id < 30000 AND behavior IN ('buy', 'cart')")
    plan = q_py._jdf.queryExecution().executedPlan().toString()
    assert "Filter" not in plan.replace("RuntimeFilters", ""), plan   # exact: Spark does not filter again
    expected = t.read(filter=(lf.col("dt") == DAYS[1]) & (lf.col("user_id") < 30000)
                      & lf.col("behavior").isin(["buy", "cart"]))
    assert expected.num_rows > 0
    assert_same_rows(q.toArrow(), expected, ["user_id", "item_id", "ts"], "filtered")
    assert_same_rows(q_py.toArrow(), expected, ["user_id", "item_id", "ts"], "filtered by the Python source")
    # NOT, NULL-safe and string filters: pushed where exact, left to Spark otherwise
    n = everything.filter("NOT (user_id <=> 5) AND behavior LIKE 'p%' AND price > 10.5").count()
    assert n == sum(1 for r in rows.to_pylist() if r["user_id"] != 5 and r["behavior"].startswith("p")
                    and r["price"] > 10.5)
    # columns: from a schema given to the reader, or the 'columns' option
    narrow = spark.read.format("lakeformat").schema("user_id BIGINT, dt STRING") \
        .option("warehouse", wh).option("table", "db.ub").load()
    assert narrow.columns == ["user_id", "dt"] and narrow.count() == rows.num_rows
    cols = src(spark, wh, "db.ub", columns="dt,price").load()
    assert cols.columns == ["dt", "price"]
    assert abs(cols.agg({"price": "sum"}).first()[0] - pa.compute.sum(rows.column("price")).as_py()) < 1e-6


def test_primary_key_tables_through_spark(spark, catalog, oracle):
    wh = catalog.warehouse
    t = catalog.create_table("db.people", PK_SCHEMA, partition_keys=["dt"], primary_keys=PK_KEYS,
                             options={"bucket": "2", "changelog-producer": "input"})
    first = pa.concat_tables([people(range(0, 300)), people(range(0, 100), "2024-06-02")])
    update = pa.concat_tables([people(range(200, 400), tag="v2"), people(range(50, 60), "2024-06-02", "v2")])
    lfs.write(spark.createDataFrame(first).repartition(3), "db.people", warehouse=wh)
    lfs.write(spark.createDataFrame(update).repartition(3), "db.people", warehouse=wh)
    latest = {(r["dt"], r["user_id"]): r for r in first.to_pylist() + update.to_pylist()}
    expected = pa.Table.from_pylist(list(latest.values()), schema=PK_SCHEMA)
    assert_same_rows(t.read(), expected, PK_KEYS, "lakeformat")
    assert_same_rows(src(spark, wh, "db.people").load().toArrow(), expected, PK_KEYS, "spark")
    i = oracle.read(wh, "db.people")
    check_readers(oracle.run(), i, expected, PK_KEYS, what="oracles")
    # the changelog of the second write, with row kinds
    changes = src(spark, wh, "db.people", **{"start-snapshot": 1, "read.changelog": "true"}).load().toArrow()
    assert changes.num_rows == update.num_rows and set(changes.column("_row_kind").to_pylist()) == {"+I"}
    # through the Python data source, a plain DataFrame write spreads a bucket over several tasks: each
    # writes a level-0 run with its own sequence numbers, above the table's, and the runs commit together
    # (format("lakeformat") with the jar is lfs.write, which shuffles by bucket first: test_format_native)
    plain = people(range(250, 450), tag="v3")
    spark.createDataFrame(plain).repartition(4) \
        .write.format(lfs.source.PYTHON_NAME).option("warehouse", wh).option("table", "db.people").mode("append").save()
    latest.update({(r["dt"], r["user_id"]): r for r in plain.to_pylist()})
    expected = pa.Table.from_pylist(list(latest.values()), schema=PK_SCHEMA)
    t = catalog.get_table("db.people")
    assert_same_rows(t.read(), expected, PK_KEYS, "after a plain DataFrame write")
    added = [e.file for e in t.delta_entries(t.latest_snapshot())]
    assert t.latest_snapshot().id == 3 and len(added) > 2 and all(f.level == 0 for f in added)
    i = oracle.read(wh, "db.people")
    check_readers(oracle.run(), i, expected, PK_KEYS, what="oracles after a plain write")
    # a write to the Python data source that says every bucket is in one task but is not shuffled:
    # refused, nothing left behind
    before = data_files(t)
    with pytest.raises(Exception, match="more than one Spark task"):
        spark.createDataFrame(people(range(1000, 1400), tag="v4")).repartition(4) \
            .write.format(lfs.source.PYTHON_NAME).option("warehouse", wh).option("table", "db.people") \
            .option("buckets-by-task", "true").mode("append").save()
    assert data_files(t) == before and t.latest_snapshot().id == 3


def test_spark_reads_tables_pypaimon_wrote(spark, catalog, oracle):
    wh = catalog.warehouse
    events = user_behavior(500, DAYS, seed=5)
    oracle.create(wh, "db.theirs", UB_SCHEMA, ["dt"], {"bucket": "2", "bucket-key": "user_id"})
    oracle.write(wh, "db.theirs", events)
    oracle.create(wh, "db.theirs_pk", PK_SCHEMA, ["dt"], {"bucket": "2"}, primary_keys=PK_KEYS)
    oracle.write(wh, "db.theirs_pk", people(range(0, 50)))
    oracle.write(wh, "db.theirs_pk", people(range(25, 75), tag="v2"))
    oracle.run().check_all()
    assert_same_rows(src(spark, wh, "db.theirs").load().toArrow(), events, ["user_id", "item_id", "ts"], "append")
    expected = pa.concat_tables([people(range(0, 25)), people(range(25, 75), tag="v2")])
    got = src(spark, wh, "db.theirs_pk").load()
    assert_same_rows(got.toArrow(), expected, PK_KEYS, "primary key")
    assert got.filter("user_id >= 70").count() == 5


def test_failed_task_leaves_no_rows_and_no_files(spark, catalog):
    wh = catalog.warehouse
    t = catalog.create_table("db.ub", UB_SCHEMA, partition_keys=["dt"],
                             options={"bucket": "2", "bucket-key": "user_id"})
    df = spark.createDataFrame(user_behavior(2000, DAYS, seed=7)).repartition(2)

    table_dir = t.path

    def explode_in_partition_one(batches):
        import glob
        import time

        from pyspark import TaskContext
        yield from batches
        if TaskContext.get().partitionId() == 1:
            # fail only once the other task has written its files (they must go too), and
            # after a grace period for its result to reach the driver, however loaded the box
            deadline = time.monotonic() + 60
            while not glob.glob(f"{table_dir}/*/bucket-*/*.parquet") and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(2.0)
            raise RuntimeError("boom: task failed mid-write")

    failing = df.mapInArrow(explode_in_partition_one, df.schema)
    with pytest.raises(Exception, match="boom"):
        failing.write.format("lakeformat").option("warehouse", wh).option("table", "db.ub").mode("append").save()
    assert t.latest_snapshot() is None
    assert data_files(t) == []
    assert src(spark, wh, "db.ub").load().count() == 0


def test_overwrite_dynamic_static_and_bad_input(spark, catalog):
    wh = catalog.warehouse
    t = catalog.create_table("db.ub", UB_SCHEMA, partition_keys=["dt"])
    rows = user_behavior(1000, DAYS, seed=8)
    t.write(rows)
    day2 = user_behavior(10, [DAYS[1]], seed=9)
    w = spark.createDataFrame(day2).write.format("lakeformat").option("warehouse", wh).option("table", "db.ub")
    w.mode("overwrite").save()   # dynamic: only the partition in the data is replaced
    counts = dict(zip(*t.read(columns=["dt"]).group_by("dt").aggregate([("dt", "count")]).to_pydict().values()))
    assert counts == {DAYS[0]: sum(1 for d in rows.column("dt").to_pylist() if d == DAYS[0]), DAYS[1]: 10}
    lfs.write(spark.createDataFrame(user_behavior(3, [DAYS[0]], seed=10)), "db.ub", warehouse=wh,
              mode="overwrite", overwrite_partition={"dt": DAYS[0]})
    assert t.read(filter=lf.col("dt") == DAYS[0]).num_rows == 3 and t.latest_snapshot().commit_kind == "OVERWRITE"

    snapshots, files = len(t.snapshots()), data_files(t)
    with pytest.raises(Exception, match="snapshot_id"):
        src(spark, wh, "db.ub", snapshot_id=1).load().count()
    with pytest.raises(Exception, match=r"db.nope"):
        src(spark, wh, "db.nope").load()
    with pytest.raises(lf.DataError, match=r"missing columns \['price'\]"):
        lfs.write(spark.createDataFrame(day2.drop_columns(["price"])), "db.ub", warehouse=wh)
    with pytest.raises(lf.LakeformatError, match="not partition keys"):
        lfs.write(spark.createDataFrame(day2), "db.ub", warehouse=wh, mode="overwrite",
                  overwrite_partition={"day": "x"})
    assert len(t.snapshots()) == snapshots and data_files(t) == files
