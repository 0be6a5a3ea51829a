"""``main``: a measurement of its own (``bench`` below is ``make bench``'s): an aggregate over 2 of 5
columns of a 5M-row append table in 4 partitions, read through lakeformat's SQL catalog (``spark.sql``), through
``spark.read.format("lakeformat")`` (the jar's provider), through ``lfs.read_table``, and by
``spark.read.parquet`` of the same rows written by Spark (its default codec, and zstd level 1: the
table's) and of the table's own data files, in one local[2] SparkSession; medians of alternating runs.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/spark_sql_catalog.py [rows] [runs]

``bench``/``goals``: the ``sql`` section of ``benchmarks/run.py`` (``--only sql``), see below.
"""
from __future__ import annotations

import glob
import os
import statistics
import sys
import tempfile
import time
from typing import Optional

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


# -- the `sql` section of benchmarks/run.py (--only sql) -----------------------------------------
# lakeformat's SQL catalog against Spark's own Parquet source on the same rows, in one local[2]
# SparkSession: an append table and a compacted primary-key table read in full (into the noop
# sink), an aggregate over 2 of 10 columns (the plan's ReadSchema and the bytes the stages read),
# and INSERT INTO against df.write.parquet.

SQL_READ, SQL_PK_READ, PQ_READ_SQL = "SELECT * FROM lf.db.t (catalog)", "SELECT * FROM lf.db.pk (catalog)", \
    "spark.read.parquet"
SQL_INSERT, PQ_WRITE_SQL = "INSERT INTO lf.db.t", "df.write.parquet"
FMT_READ, FMT_PK_READ = 'format("lakeformat") of db.t', 'format("lakeformat") of db.pk'
FMT_WRITE = 'df.write.format("lakeformat")'
TEN = ["id", "user_id", "item_id", "behavior", "price", "qty", "score", "flag", "note", "dt"]


def add_args(ap) -> None:
    g = ap.add_argument_group("Spark SQL catalog benchmarks (--only sql)")
    g.add_argument("--sql-rows", type=int, default=5_000_000, help="rows of the tables written and read")
    g.add_argument("--sql-runs", type=int, default=3, help="timed runs of each contender (medians)")
    g.add_argument("--sql-driver-memory", default="4g")


def quick(args) -> None:
    args.sql_rows, args.sql_runs = 200_000, 2


def _ten_columns(rows: int, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"id": np.arange(rows, dtype=np.int64), "user_id": rng.integers(0, 1 << 40, rows),
                     "item_id": rng.integers(0, 1 << 20, rows),
                     "behavior": pa.array(rng.choice(["pv", "buy", "cart", "fav"], rows)),
                     "price": rng.random(rows) * 100, "qty": rng.integers(0, 100, rows).astype(np.int32),
                     "score": rng.random(rows), "flag": rng.random(rows) < 0.5,
                     "note": pa.array(rng.choice([f"note-{i}" for i in range(1000)], rows)),
                     "dt": pa.array(rng.choice([f"2024-06-0{d}" for d in range(1, 5)], rows))})


def _bytes_read(spark, run) -> Optional[int]:
    """Bytes the driver's JVM (local[2]: the executors too) read while ``run`` ran, from Linux's
    /proc/<pid>/io ``rchar``. Spark's own input metrics count none of what Parquet reads with
    Hadoop's vectored IO (a few KB for a whole table), so they cannot show it."""
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    path = f"/proc/{pid}/io"
    if not os.path.exists(path):
        return None

    def rchar() -> int:
        with open(path) as f:
            return int(dict(line.split(": ") for line in f.read().splitlines())["rchar"])
    before = rchar()
    run()
    return rchar() - before


def _timed(runs: int, contenders: dict) -> dict:
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for r in range(runs + 1):
        names = list(contenders)[r % len(contenders):] + list(contenders)[:r % len(contenders)]
        for k in names:
            start = time.perf_counter()
            contenders[k]()
            if r:   # the first round warms up
                times[k].append(time.perf_counter() - start)
    return {k: {"median": statistics.median(ts), "runs": ts} for k, ts in times.items()}


def bench(tmp, args) -> dict:
    """The ``sql`` section's figures (see the comment above)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession
    rows = args.sql_rows
    wh = os.path.join(str(tmp), "sql-wh")
    cat = lf.Catalog(wh)
    cat.create_database("db")
    data = _ten_columns(rows)
    b = (SparkSession.builder.master("local[2]").appName("lakeformat-bench-sql").config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "4").config("spark.driver.memory", args.sql_driver_memory)
         .config("spark.log.level", "ERROR").config("spark.jars", lfs.jar_path()))
    for k, v in catalog_confs("lf", wh).items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    lfs.register(spark)
    try:
        src = spark.createDataFrame(data).repartition(4).cache()
        src.count()
        src.createOrReplaceTempView("src")
        cols = ", ".join(f"{c} {t}" for c, t in zip(TEN, ["BIGINT", "BIGINT", "BIGINT", "STRING", "DOUBLE", "INT",
                                                          "DOUBLE", "BOOLEAN", "STRING", "STRING"]))
        n = iter(range(1_000_000))
        pq_dir = os.path.join(str(tmp), "sql-parquet")

        for i in range(2 * (args.sql_runs + 1)):   # created beforehand: the write alone is timed
            spark.sql(f"CREATE TABLE lf.db.w{i} ({cols}) PARTITIONED BY (dt)")

        def insert() -> None:
            spark.sql(f"INSERT INTO lf.db.w{next(n)} SELECT * FROM src")

        def write_format() -> None:
            src.write.format("lakeformat").option("warehouse", wh).option("table", f"db.w{next(n)}") \
                .mode("append").save()

        def write_parquet() -> None:
            src.write.mode("overwrite").partitionBy("dt").parquet(pq_dir)
        write = _timed(args.sql_runs, {SQL_INSERT: insert, FMT_WRITE: write_format, PQ_WRITE_SQL: write_parquet})

        # the append table read: written by INSERT INTO (one commit); the parquet of the same rows
        spark.sql(f"CREATE TABLE lf.db.t ({cols}) PARTITIONED BY (dt)")
        spark.sql("INSERT INTO lf.db.t SELECT * FROM src")
        write_parquet()

        def noop(df) -> None:
            df.write.format("noop").mode("overwrite").save()
        def fmt(table: str):
            return spark.read.format("lakeformat").option("warehouse", wh).option("table", table).load()
        read = _timed(args.sql_runs, {SQL_READ: lambda: noop(spark.sql("SELECT * FROM lf.db.t")),
                                      FMT_READ: lambda: noop(fmt("db.t")),
                                      PQ_READ_SQL: lambda: noop(spark.read.parquet(pq_dir))})

        # a compacted primary-key table: the library writes it in four commits and compacts it fully
        pk = cat.create_table("db.pk", data.schema, primary_keys=["id"], options={"bucket": "4"})
        step = -(-rows // 4)
        for i in range(0, rows, step):
            pk.write(data.slice(i, step))
        pk.maintenance.compact(full=True)
        pk_read = _timed(args.sql_runs, {SQL_PK_READ: lambda: noop(spark.sql("SELECT * FROM lf.db.pk")),
                                         FMT_PK_READ: lambda: noop(fmt("db.pk")),
                                         PQ_READ_SQL: lambda: noop(spark.read.parquet(pq_dir))})

        # an aggregate over 2 of the 10 columns: what the scan reads
        agg = "SELECT sum(price) AS s, count(item_id) AS n FROM {}"
        spark.read.parquet(pq_dir).createOrReplaceTempView("pq")
        plan = spark.sql(agg.format("lf.db.t"))._jdf.queryExecution().executedPlan().toString()
        read_schema = plan.split("ReadSchema: ", 1)[1].split()[0] if "ReadSchema: " in plan else ""
        full = _bytes_read(spark, lambda: noop(spark.sql("SELECT * FROM lf.db.t")))
        two = _bytes_read(spark, lambda: spark.sql(agg.format("lf.db.t")).collect())
        pq_two = _bytes_read(spark, lambda: spark.sql(agg.format("pq")).collect())
        table_bytes = sum(f["file_size"] for f in cat.get_table("db.t").files())
        return {"rows": rows, "runs": args.sql_runs, "spark": spark.version, "write": write, "read": read,
                "pk_read": pk_read, "aggregate": {"read_schema": read_schema, "bytes_full": full, "bytes_two": two,
                                                  "bytes_two_parquet": pq_two, "table_bytes": table_bytes}}
    finally:
        spark.stop()


def _x(a: float, b: float) -> Optional[float]:
    return a / b if a and b else None


def print_results(p: dict) -> None:
    print(f"sql. lakeformat's SQL catalog vs Spark's Parquet source, {p['rows']:,} rows x 10 columns, "
          f"local[2], Spark {p['spark']}, medians of {p['runs']} runs")
    for title, part, base in (("write", p["write"], PQ_WRITE_SQL), ("append read (noop sink)", p["read"], PQ_READ_SQL),
                              ("compacted primary-key read (noop sink)", p["pk_read"], PQ_READ_SQL)):
        for name, v in part.items():
            x = _x(v["median"], part[base]["median"])
            print(f"  {title:40s} {name:34s} {v['median']:7.3f} s  {x:5.2f}x  runs "
                  + " ".join(f"{t:.2f}" for t in v["runs"]))
    a = {k: (v or 0) if k.startswith("bytes") else v for k, v in p["aggregate"].items()}
    print(f"  aggregate over 2 of 10 columns: ReadSchema {a['read_schema']}; read {a['bytes_two'] / 1e6:.1f} MB of "
          f"{a['bytes_full'] / 1e6:.1f} MB a full scan reads (table files {a['table_bytes'] / 1e6:.1f} MB); "
          f"spark.read.parquet's same aggregate read {a['bytes_two_parquet'] / 1e6:.1f} MB")


def goals(p: Optional[dict], add) -> None:
    if not p:
        return
    pk = "compacted primary-key table"
    for name, part, key, goal in (("SELECT from the catalog (append table)", "read", SQL_READ, 1.2),
                                  ('spark.read.format("lakeformat") (append table)', "read", FMT_READ, 1.2),
                                  (f"SELECT from the catalog ({pk})", "pk_read", SQL_PK_READ, 1.5),
                                  (f'spark.read.format("lakeformat") ({pk})', "pk_read", FMT_PK_READ, 1.5)):
        x = _x(p[part][key]["median"], p[part][PQ_READ_SQL]["median"]) if key in p[part] else None
        add(f"sql: {name} vs spark.read.parquet", x, None if x is None else x <= goal, f"≤ {goal:.2f}×")
    for name, key in (("INSERT INTO", SQL_INSERT), ('df.write.format("lakeformat")', FMT_WRITE)):
        x = _x(p["write"][key]["median"], p["write"][PQ_WRITE_SQL]["median"]) if key in p["write"] else None
        add(f"sql: {name} vs df.write.parquet", x, None if x is None else x <= 1.3, "≤ 1.30×")
    a = p["aggregate"]
    share = _x(a["bytes_two"] or 0, a["bytes_full"] or 0)
    ok = a["read_schema"] == "struct<item_id:bigint,price:double>" and share is not None and share < 0.5
    add("sql: an aggregate over 2 of 10 columns reads only those (ReadSchema; bytes read / a full scan's)", share,
        ok, "2 columns, < 0.50×",
        display=f"{a['read_schema']}; {share:.2f}×" if share is not None else a["read_schema"])


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5_000_000, int(sys.argv[2]) if len(sys.argv) > 2 else 5)
