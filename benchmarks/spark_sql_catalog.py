"""A measurement, not part of ``make bench``: an aggregate over 2 of 5 columns of a 5M-row append
table in 4 partitions, read through lakeformat's SQL catalog (``spark.sql``), through
``spark.read.format("lakeformat")`` (the jar's provider), through ``lfs.read_table``, and by
``spark.read.parquet`` of the same rows written by Spark (its default codec, and zstd level 1: the
table's) and of the table's own data files, in one local[2] SparkSession; medians of alternating runs.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/spark_sql_catalog.py [rows] [runs]
"""
from __future__ import annotations

import glob
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

import lakeformat as lf
import lakeformat.spark as lfs
from lakeformat.spark.sql import catalog_confs

QUERY = "SELECT dt, sum(price) AS s, count(item_id) AS n FROM {} GROUP BY dt"


def loaded(spark, wh: str, source: str = "lakeformat") -> str:
    """``spark.read.format(source)`` of the table, loaded afresh, as a view the query names."""
    spark.read.format(source).option("warehouse", wh).option("table", "db.t").load() \
        .createOrReplaceTempView("fmt")
    return "fmt"


def main(rows: int, runs: int) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    tmp = tempfile.mkdtemp(prefix="lf-sql-bench-")
    wh = os.path.join(tmp, "wh")
    cat = lf.Catalog(wh)
    cat.create_database("db")
    rng = np.random.default_rng(7)
    data = pa.table({"user_id": rng.integers(0, 1 << 40, rows), "item_id": rng.integers(0, 1 << 20, rows),
                     "behavior": pa.array(rng.choice(["pv", "buy", "cart", "fav"], rows)),
                     "price": rng.random(rows) * 100,
                     "dt": pa.array(rng.choice([f"2024-06-0{d}" for d in range(1, 5)], rows))})
    cat.create_table("db.t", data.schema, partition_keys=["dt"]).write(data)
    b = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.driver.memory", "2g").config("spark.jars", lfs.jar_path()))
    for k, v in catalog_confs("lf", wh).items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    lfs.register(spark)
    snappy, zstd = os.path.join(tmp, "snappy"), os.path.join(tmp, "zstd")
    spark.table("lf.db.t").write.partitionBy("dt").parquet(snappy)
    (spark.table("lf.db.t").write.partitionBy("dt").option("compression", "zstd")
     .option("parquet.compression.codec.zstd.level", "1").parquet(zstd))
    spark.read.parquet(snappy).createOrReplaceTempView("snappy")
    spark.read.parquet(zstd).createOrReplaceTempView("zstd")
    # the table's own data files (Paimon's files hold the partition column too), read by Spark's V1 scan
    own = ["file://" + f for f in glob.glob(os.path.join(wh, "db.db", "t", "dt=*", "bucket-*", "*.parquet"))]
    spark.read.parquet(*own).createOrReplaceTempView("own")
    readers = {
        "spark.sql over lf.db.t (catalog)": lambda: spark.sql(QUERY.format("lf.db.t")),
        'spark.read.format("lakeformat")': lambda: spark.sql(QUERY.format(loaded(spark, wh))),
        'format("lakeformat_python") (the Python source)':
            lambda: spark.sql(QUERY.format(loaded(spark, wh, "lakeformat_python"))),
        "lfs.read_table": lambda: lfs.read_table(spark, "db.t", warehouse=wh).groupBy("dt").agg(
            {"price": "sum", "item_id": "count"}),
        "spark.read.parquet (Spark's default codec)": lambda: spark.sql(QUERY.format("snappy")),
        "spark.read.parquet (zstd level 1, the table's codec)": lambda: spark.sql(QUERY.format("zstd")),
        "spark.read.parquet of the table's own data files": lambda: spark.sql(QUERY.format("own")),
    }
    times: dict[str, list[float]] = {k: [] for k in readers}
    for r in range(runs + 1):
        names = list(readers)[r % len(readers):] + list(readers)[:r % len(readers)]
        for k in names:
            start = time.perf_counter()
            readers[k]().collect()
            if r:   # the first round warms up
                times[k].append(time.perf_counter() - start)
    own_base = statistics.median(times["spark.read.parquet of the table's own data files"])
    base = statistics.median(times["spark.read.parquet (Spark's default codec)"])
    zbase = statistics.median(times["spark.read.parquet (zstd level 1, the table's codec)"])
    for k, ts in times.items():
        m = statistics.median(ts)
        print(f"{k:55s} {m:6.3f} s  {m / base:5.2f}x default  {m / zbase:5.2f}x zstd  {m / own_base:5.2f}x own files")
    spark.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5_000_000, int(sys.argv[2]) if len(sys.argv) > 2 else 5)
