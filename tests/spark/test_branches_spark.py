"""Branches through Spark: ``db.t$branch_b`` is read and written by the data source and the
native paths, main untouched; a table with scan.fallback-branch is refused by name."""
import pyarrow as pa
import pytest

import lakeformat.spark as lfs
from lakeformat.errors import UnsupportedOptionError

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])


@pytest.mark.slow
def test_spark_reads_and_writes_a_branch(spark, catalog):
    wh = catalog.warehouse
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["dt"])
    t.write(pa.table({"id": pa.array([1, 2], pa.int64()), "dt": ["a", "a"]}))
    t.branches.create("b")
    df = spark.createDataFrame([(3, "b")], "id long, dt string")
    (df.write.format("lakeformat").option("warehouse", wh).option("table", "db.t$branch_b")
       .mode("append").save())
    lfs.write(spark.createDataFrame([(4, "b")], "id long, dt string"), "db.t$branch_b", warehouse=wh)
    assert sorted(r["id"] for r in catalog.get_table("db.t$branch_b").read().to_pylist()) == [1, 2, 3, 4]
    assert sorted(r["id"] for r in t.read().to_pylist()) == [1, 2]
    src = spark.read.format("lakeformat").option("warehouse", wh).option("table", "db.t$branch_b").load()
    assert sorted(r.id for r in src.collect()) == [1, 2, 3, 4]
    native = lfs.read_table(spark, "db.t$branch_b", warehouse=wh)
    assert sorted(r.id for r in native.collect()) == [1, 2, 3, 4]

    t.alter(__import__("lakeformat").SetOption("scan.fallback-branch", "b"))
    with pytest.raises(UnsupportedOptionError, match="fallback"):
        lfs.read_table(spark, "db.t", warehouse=wh).collect()
