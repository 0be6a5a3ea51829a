"""Tables from Spark: the DataFrame writer creates a missing table from the DataFrame's schema
with primary keys, partitions and options; a later write with the same options goes in, one with
another layout is refused; ``lfs.create_table`` maps Spark's types as Paimon's connector does."""
from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

import lakeformat as lf
import lakeformat.spark as lfs
from tests.interop.helpers import assert_same_rows


def people(spark, ids, tag):
    return spark.createDataFrame([(f"2024-06-0{1 + i % 2}", i, f"{tag}{i}") for i in ids],
                                 "dt STRING, id BIGINT, name STRING")


def test_writer_creates_a_missing_primary_key_table_then_upserts(spark, tmp_path):
    wh = str(tmp_path / "wh")

    def write(df, **extra):
        w = df.write.format("lakeformat").option("warehouse", wh).option("table", "fresh.people") \
            .option("primary-key", "dt,id").option("partition", "dt").option("bucket", "2")
        for k, v in extra.items():
            w = w.option(k, v)
        w.mode("append").save()

    write(people(spark, range(10), "a"))
    t = lf.Catalog(wh).get_table("fresh.people")
    assert list(t.schema.primary_keys) == ["dt", "id"] and list(t.partition_keys) == ["dt"]
    assert t.options["bucket"] == "2"
    assert [f.type.nullable for f in t.schema.fields] == [False, False, True]
    write(people(spark, range(5, 15), "b"))   # the same options on an existing table: an upsert
    expected = pa.table({"dt": [f"2024-06-0{1 + i % 2}" for i in range(15)], "id": list(range(15)),
                         "name": [("a" if i < 5 else "b") + str(i) for i in range(15)]})
    assert_same_rows(lf.Catalog(wh).get_table("fresh.people").read(), expected, ["id"], "after upsert")
    with pytest.raises(Exception, match=r"another layout.*bucket 3"):
        write(people(spark, range(3), "c"), bucket="3")
    assert len(lf.Catalog(wh).get_table("fresh.people").snapshots()) == 2


def test_create_table_from_a_dataframe_schema_and_append_through_the_native_writer(spark, tmp_path):
    wh = str(tmp_path / "wh")
    df = spark.createDataFrame([(1, dt.datetime(2024, 6, 1, 8), dt.datetime(2024, 6, 1, 9), "2024-06-01")],
                               "id BIGINT, at TIMESTAMP, local TIMESTAMP_NTZ, dt STRING")
    t = lfs.create_table("made.events", df.schema, warehouse=wh, partition_keys=["dt"])
    assert [str(f.type) for f in t.schema.fields] == ["BIGINT", "TIMESTAMP(6) WITH LOCAL TIME ZONE",
                                                      "TIMESTAMP(6)", "STRING"]
    lfs.write(df, "made.events", warehouse=wh)
    assert lf.Catalog(wh).get_table("made.events").read().num_rows == 1
    lfs.write(df, "made.other", warehouse=wh, options={"partition": "dt"})   # created by the helper's write
    assert list(lf.Catalog(wh).get_table("made.other").partition_keys) == ["dt"]
    with pytest.raises(Exception, match="create a table"):
        (df.write.format("lakeformat").option("path", str(tmp_path / "x")).option("primary-key", "id")
         .mode("append").save())
