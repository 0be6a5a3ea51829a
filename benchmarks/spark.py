"""Spark benchmarks (``run.py --only spark``): the lakeformat data source against Spark's own
Parquet source, in one SparkSession on ``local[2]``.

  1. append write of the same cached DataFrame (``--spark-rows``, default 10,000,000
     ``user_behavior`` rows over 2 days) into a table partitioned by dt (bucket-unaware, so no
     shuffle) and into an unpartitioned one vs ``df.write.parquet`` (goal ≤ 1.3×), and, like for
     like, Spark's own zstd write partitioned by dt, without dt in the files (sorted by
     partition, Spark's default) and with it (as Paimon's data files keep it, one open file per
     partition as lakeformat has Spark write them);
     plus, once, ``lakeformat.spark.write`` into a 4-bucket table (shuffled by partition and bucket);
  2. full read back of those outputs into Spark's ``noop`` sink (every row and column
     materialised, nothing collected) vs ``spark.read.parquet`` (goal ≤ 1.2×);
  3. primary-key upsert of the same rows (key dt, user_id, item_id; 4 buckets) through
     ``lakeformat.spark.write`` beside the library alone (``Table.write`` of the same rows as
     one Arrow table in this process);
  4., 5. the compacted primary-key read and distributed compaction (``spark_native.py``).

Writes and reads have three contenders each: the native paths (``lakeformat.spark.write`` with
Spark's Parquet writer, ``lakeformat.spark.read_table`` with Spark's Parquet reader), the Python
data source (``format("lakeformat")``) kept as the comparison row, and raw Spark Parquet.

Write and read runs alternate the contenders' order, on fresh outputs, after a warm-up that
starts the Python workers both paths use and sends a tenth of the rows through every write;
tables show the median and every run. To say where the time goes, the executor-side Python
work of a write (``write_task`` on one task's rows) is timed on its own, and so is a write of a
tiny DataFrame (the fixed cost of a job: planning and committing in Python processes the driver
starts).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Optional
from collections.abc import Callable

import pyarrow as pa
import pyarrow.parquet as pq
from rich.table import Table as RichTable

import spark_native
from common import DAYS, console, describe_files, fmt_s, fmt_x, lf, median, profiled, ratio
from lakeformat.pipeline.demo_data import SCHEMA, user_behavior

LF_WRITE = "lakeformat: df.write.format('lakeformat') (Python data source)"
LF_NATIVE_WRITE = "lakeformat.spark.write (native Parquet writer)"
LF_FLAT_WRITE = "lakeformat.spark.write, unpartitioned table (df.write.parquet's layout)"
LF_NATIVE_READ = "lakeformat.spark.read_table (native Parquet reader)"
LF_BUCKETED = "lakeformat.spark.write, 4 buckets (shuffle)"
PQ_WRITE = "spark: df.write.parquet"
PQ_WRITE_LAYOUT = "spark: df.write.partitionBy('dt').parquet, zstd (the table's layout and codec)"
PQ_WRITE_FILES = ("spark: partitionBy a copy of dt, dt kept in the files, zstd, one open file per partition "
                  "(the table's files, written as lakeformat has Spark write them)")
LF_READ = "lakeformat: spark.read.format('lakeformat') (Python data source)"
PQ_READ = "spark: spark.read.parquet"
PK_SPARK = "lakeformat.spark.write (Spark, local[2])"
PK_LIB = "Table.write (library only, this process)"
PK_KEYS = ["dt", "user_id", "item_id"]
CHUNK = 1_000_000
DT_COPY = "dt_partition"


def add_args(ap: argparse.ArgumentParser) -> None:
    g = ap.add_argument_group("Spark benchmarks (--only spark)")
    g.add_argument("--spark-rows", type=int, default=10_000_000, help="rows of the DataFrame written and read")
    g.add_argument("--spark-runs", type=int, default=3, help="timed runs of the append write and the read")
    g.add_argument("--spark-driver-memory", default="6g")
    g.add_argument("--spark-no-pk", action="store_true", help="skip the primary-key upsert and read")
    g.add_argument("--spark-no-compaction", action="store_true", help="skip the compaction benchmark")
    g.add_argument("--spark-only-read", choices=["pk", "dv", "compaction"],
                   help="only the read of the compacted (pk) or deletion-vector (dv) primary-key table, "
                        "from a table the library writes (benchmark 4 or 4b alone), or only the compaction (5)")
    g.add_argument("--spark-compact-rows", type=int, default=10_000_000,
                   help="rows of the table compacted (at most --spark-rows)")


def quick(args) -> None:
    args.spark_rows, args.spark_runs, args.spark_compact_rows = 300_000, 1, 300_000


def _rotated(names: list, r: int) -> list:
    """Contenders in an order that rotates every run: nobody always runs first."""
    return names[r % len(names):] + names[:r % len(names)]


def _session(memory: str):
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import lakeformat.spark as lfs
    spark = (SparkSession.builder.master("local[2]").appName("lakeformat-bench")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
             .config("spark.driver.memory", memory).config("spark.log.level", "ERROR")
             .config("spark.jars", lfs.jar_path()).getOrCreate())
    lfs.register(spark)
    return spark


def _timed(fn: Callable) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _make_input(d: Path, rows: int) -> list[Path]:
    d.mkdir(parents=True)
    paths, done, seed = [], 0, 0
    while done < rows:
        n = min(CHUNK, rows - done)
        p = d / f"part-{seed:03d}.parquet"
        pq.write_table(user_behavior(n, DAYS, seed=seed), p)
        paths.append(p)
        done, seed = done + n, seed + 1
    return paths


def _table(wh: Path, name: str, **kw):
    cat = lf.Catalog(str(wh))
    cat.create_database("db", ignore_if_exists=True)
    return cat.create_table(name, kw.pop("schema", SCHEMA), **kw)


def _lf_reader(spark, wh: Path, name: str):
    return spark.read.format("lakeformat").option("warehouse", str(wh)).option("table", name).load()


def _write_breakdown(tmp: Path, df_rows: pa.Table, profile: bool, profiles: dict) -> dict:
    """The executor-side Python work of one task, timed in this process: Spark hands a task its
    rows as 10,000-row Arrow batches with microsecond, zoned timestamps."""
    from lakeformat.spark.options import parse
    from lakeformat.spark.sink import write_task
    wh = tmp / "wh-breakdown"
    _table(wh, "db.t", partition_keys=["dt"])
    rows = df_rows.set_column(df_rows.schema.get_field_index("ts"), "ts",
                              df_rows.column("ts").cast(pa.timestamp("us", tz="UTC")))
    batches = rows.to_batches(max_chunksize=10_000)
    opts = parse({"warehouse": str(wh), "table": "db.t"})
    write_task(opts, 0, "warm-up", False, iter(batches[:5]))
    secs = _timed(lambda: profiled(profile, "spark: write_task (one task's rows, in-process)",
                                   lambda: write_task(opts, 0, "bench", False, iter(batches)), profiles,
                                   sorts=("cumulative", "tottime"), threads=True))
    shutil.rmtree(wh, ignore_errors=True)
    return {"rows": rows.num_rows, "seconds": secs}


def _floors(spark, df, files: list[str], runs: int) -> dict:
    """What the Python Data Source path costs before lakeformat does anything: every row sent to
    a Python worker and nothing back (``mapInArrow`` into the noop sink), and a minimal Python
    data source that reads the same Parquet files with pyarrow and hands them to Spark."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    def drop(batches):
        for b in batches:
            yield b.slice(0, 0)

    schema = df.schema

    class FloorReader(DataSourceReader):   # defined here: pickled by value for the workers
        def partitions(self):
            return [InputPartition(tuple(files[i::2])) for i in range(2)]

        def read(self, partition):
            import pyarrow as pa
            import pyarrow.parquet as pq
            from pyspark.sql.pandas.types import to_arrow_schema
            target = to_arrow_schema(schema, timezone="UTC")
            for path in partition.value:
                for b in pq.ParquetFile(path).iter_batches(65536, columns=target.names):
                    yield pa.RecordBatch.from_arrays([c.cast(f.type) for c, f in zip(b.columns, target)], schema=target)

    class FloorSource(DataSource):
        @classmethod
        def name(cls):
            return "lakeformat_bench_floor"

        def schema(self):
            return schema

        def reader(self, schema):
            return FloorReader()

    spark.dataSource.register(FloorSource)
    out = {"to_python": [], "from_python": []}
    for _ in range(runs):
        out["to_python"].append(_timed(
            lambda: df.mapInArrow(drop, schema).write.format("noop").mode("overwrite").save()))
        out["from_python"].append(_timed(lambda: spark.read.format("lakeformat_bench_floor").load()
                                         .write.format("noop").mode("overwrite").save()))
    return {k: median(v) for k, v in out.items()} | {"runs": out}


def _zstd(writer):
    return writer.mode("overwrite").option("compression", "zstd").option("parquet.compression.codec.zstd.level", "1")


def _with_dt_copy(df):
    """``df`` plus a copy of dt to partition by, so that dt stays in the files, as Paimon's data
    files keep their partition columns (Spark's partitionBy takes the column out of them)."""
    from pyspark.sql import functions as F
    return df.withColumn(DT_COPY, F.col("dt"))


def _table_files(df, path: Path) -> None:
    """``df`` written by Spark as the table's files, with the session settings lakeformat's
    native write uses (a task keeps one open file per partition instead of sorting its rows)."""
    from lakeformat.spark.native_write import CONCURRENT_WRITERS, session_confs
    with session_confs(df.sparkSession, CONCURRENT_WRITERS):
        _zstd(_with_dt_copy(df).write).partitionBy(DT_COPY).parquet(str(path))


def _warm_writes(spark, sample, d: Path) -> None:
    import lakeformat.spark as lfs
    _table(d / "native", "db.t", partition_keys=["dt"])
    _table(d / "flat", "db.t")
    lfs.write(sample, "db.t", warehouse=str(d / "flat"))
    _table(d / "source", "db.t", partition_keys=["dt"])
    lfs.write(sample, "db.t", warehouse=str(d / "native"))
    (sample.write.format("lakeformat").option("warehouse", str(d / "source")).option("table", "db.t")
     .mode("append").save())
    sample.write.mode("overwrite").parquet(str(d / "pq"))
    _zstd(sample.write).partitionBy("dt").parquet(str(d / "pq-dt"))
    _table_files(sample, d / "pq-files")
    shutil.rmtree(d, ignore_errors=True)


def bench(tmp: Path, args, profiles: dict) -> dict:
    import lakeformat.spark as lfs
    n, runs = args.spark_rows, args.spark_runs
    out: dict = {"rows": n, "runs": runs, "days": DAYS}
    console.print(f"[bold]spark[/] {n:,} user_behavior rows, local[2], {runs} run(s)")
    inputs = _make_input(tmp / "spark-input", n)
    spark = _session(args.spark_driver_memory)
    try:
        out["spark"] = spark.version
        if args.spark_only_read == "compaction":
            rows = pa.concat_tables(pq.read_table(p) for p in inputs).slice(0, args.spark_compact_rows)
            out["compaction"] = spark_native.compaction(spark, tmp, rows, runs)
            return out
        if args.spark_only_read:
            from primary_key import PK_SCHEMA
            whp = tmp / "wh-pk-lib"
            t = _table(whp, "db.pk", schema=PK_SCHEMA, partition_keys=["dt"], primary_keys=PK_KEYS,
                       options={"bucket": "4"})
            t.write(pa.concat_tables(pq.read_table(p) for p in inputs).cast(PK_SCHEMA))
            read = spark_native.dv_read if args.spark_only_read == "dv" else spark_native.pk_read
            out[f"{args.spark_only_read}_read"] = read(spark, tmp, whp, "db.pk", runs)
            return out
        df = spark.read.parquet(str(tmp / "spark-input")).cache()
        assert df.count() == n
        out["input_partitions"] = df.rdd.getNumPartitions()
        # warm-up: both paths start their Python/JVM machinery once before any timer
        tiny = df.limit(1000)
        warm = _table(tmp / "wh-warm", "db.t", partition_keys=["dt"])
        out["tiny_write_seconds"] = [_timed(lambda: tiny.write.format("lakeformat")
                                            .option("warehouse", str(tmp / "wh-warm"))
                                            .option("table", "db.t").mode("append").save()) for _ in range(2)]
        _lf_reader(spark, tmp / "wh-warm", "db.t").write.format("noop").mode("overwrite").save()
        tiny.write.mode("overwrite").parquet(str(tmp / "pq-warm"))
        del warm

        lfs.write(tiny, "db.t", warehouse=str(tmp / "wh-warm"))
        lfs.read_table(spark, "db.t", warehouse=str(tmp / "wh-warm")).write.format("noop").mode("overwrite").save()
        # and a tenth of the rows through every timed write, in the timed plans' shape (same
        # partitions): after a thousand rows the per-row paths are not yet compiled, and the path
        # that ran first in run 1 (the native write) paid for the JIT in its first timed run
        _warm_writes(spark, df.sample(fraction=0.1, seed=0), tmp / "warm-writes")
        writes: dict = {LF_NATIVE_WRITE: {"runs": []}, LF_WRITE: {"runs": []}, PQ_WRITE: {"runs": []},
                        PQ_WRITE_LAYOUT: {"runs": []}, PQ_WRITE_FILES: {"runs": []}, LF_FLAT_WRITE: {"runs": []}}
        reads: dict = {LF_NATIVE_READ: {"runs": []}, LF_READ: {"runs": []}, PQ_READ: {"runs": []}}
        for r in range(runs):
            wh, whn, raw, rawp = tmp / f"wh-{r}", tmp / f"wh-native-{r}", tmp / f"pq-{r}", tmp / f"pq-dt-{r}"
            rawf, whf = tmp / f"pq-files-{r}", tmp / f"wh-flat-{r}"
            _table(wh, "db.t", partition_keys=["dt"])
            _table(whn, "db.t", partition_keys=["dt"])
            _table(whf, "db.t")
            jobs = {LF_NATIVE_WRITE: lambda: lfs.write(df, "db.t", warehouse=str(whn)),
                    LF_WRITE: lambda: df.write.format("lakeformat").option("warehouse", str(wh))
                    .option("table", "db.t").mode("append").save(),
                    PQ_WRITE: lambda: df.write.mode("overwrite").parquet(str(raw)),
                    PQ_WRITE_LAYOUT: lambda: _zstd(df.write).partitionBy("dt").parquet(str(rawp)),
                    PQ_WRITE_FILES: lambda: _table_files(df, rawf),
                    LF_FLAT_WRITE: lambda: lfs.write(df, "db.t", warehouse=str(whf))}
            for name in _rotated(list(jobs), r):
                writes[name]["runs"].append(_timed(jobs[name]))
            readers = {LF_NATIVE_READ: lambda: lfs.read_table(spark, "db.t", warehouse=str(wh)),
                       LF_READ: lambda: _lf_reader(spark, wh, "db.t"), PQ_READ: lambda: spark.read.parquet(str(raw))}
            for name in _rotated(list(readers), r):
                reads[name]["runs"].append(
                    _timed(lambda: readers[name]().write.format("noop").mode("overwrite").save()))
            if r == runs - 1:
                writes[LF_NATIVE_WRITE].update(describe_files(whn))
                assert lfs.read_table(spark, "db.t", warehouse=str(whn)).count() == n
                writes[LF_WRITE].update(describe_files(wh))
                writes[PQ_WRITE].update(describe_files(raw))
                writes[PQ_WRITE_LAYOUT].update(describe_files(rawp))
                writes[PQ_WRITE_FILES].update(describe_files(rawf))
                writes[LF_FLAT_WRITE].update(describe_files(whf))
                assert lfs.read_table(spark, "db.t", warehouse=str(whf)).count() == n
                assert _lf_reader(spark, wh, "db.t").count() == n and spark.read.parquet(str(raw)).count() == n
                out["floors"] = _floors(spark, df, [str(f) for f in sorted(wh.rglob("*.parquet"))], runs)
            else:
                shutil.rmtree(wh, ignore_errors=True)
                shutil.rmtree(raw, ignore_errors=True)
            shutil.rmtree(whn, ignore_errors=True)
            shutil.rmtree(rawp, ignore_errors=True)
            shutil.rmtree(rawf, ignore_errors=True)
            shutil.rmtree(whf, ignore_errors=True)
            console.print(f"  run {r + 1}: write native {writes[LF_NATIVE_WRITE]['runs'][-1]:.1f}s, data source "
                          f"{writes[LF_WRITE]['runs'][-1]:.1f}s, parquet {writes[PQ_WRITE]['runs'][-1]:.1f}s; "
                          f"read native {reads[LF_NATIVE_READ]['runs'][-1]:.1f}s, "
                          f"data source {reads[LF_READ]['runs'][-1]:.1f}s, parquet {reads[PQ_READ]['runs'][-1]:.1f}s")
        whb = tmp / "wh-bucketed"
        _table(whb, "db.t", partition_keys=["dt"], options={"bucket": "4", "bucket-key": "user_id"})
        writes[LF_BUCKETED] = {"runs": [_timed(lambda: lfs.write(df, "db.t", warehouse=str(whb)))],
                               **describe_files(whb)}
        for d in (writes, reads):
            for v in d.values():
                v["median"] = median(v["runs"])
        out["write"], out["read"] = writes, reads
        shutil.rmtree(whb, ignore_errors=True)

        one_task = pq.read_table(inputs[0]) if n >= CHUNK else pa.concat_tables(pq.read_table(p) for p in inputs)
        out["breakdown"] = _write_breakdown(tmp, one_task.slice(0, n // 2), args.profile, profiles)
        del one_task

        if not args.spark_no_pk:
            console.print("  primary-key upsert")
            from primary_key import PK_SCHEMA
            whp, whl = tmp / "wh-pk-spark", tmp / "wh-pk-lib"
            opts = {"bucket": "4"}
            tp = _table(whp, "db.pk", schema=PK_SCHEMA, partition_keys=["dt"], primary_keys=PK_KEYS, options=opts)
            tl = _table(whl, "db.pk", schema=PK_SCHEMA, partition_keys=["dt"], primary_keys=PK_KEYS, options=opts)
            pk = {PK_SPARK: {"runs": [_timed(lambda: lfs.write(df, "db.pk", warehouse=str(whp)))]}}
            arrow = pa.concat_tables(pq.read_table(p) for p in inputs).cast(PK_SCHEMA)
            pk[PK_LIB] = {"runs": [_timed(lambda: profiled(args.profile, "spark: pk library-only write",
                                                             lambda: tl.write(arrow), profiles))]}
            del arrow
            for name, wh, t in ((PK_SPARK, whp, tp), (PK_LIB, whl, tl)):
                pk[name]["median"] = pk[name]["runs"][0]
                pk[name].update(describe_files(wh))
                pk[name]["rows_read"] = t.read(columns=["dt"]).num_rows
            out["pk"] = pk
            console.print("  read of the compacted primary-key table")
            out["pk_read"] = spark_native.pk_read(spark, tmp, whp, "db.pk", runs)
            console.print("  read of a primary-key table with deletion vectors")
            out["dv_read"] = spark_native.dv_read(spark, tmp, whp, "db.pk", runs)
        if not args.spark_no_compaction:
            console.print("  compaction of 20 buckets")
            rows = pa.concat_tables(pq.read_table(p) for p in inputs).slice(0, args.spark_compact_rows)
            out["compaction"] = spark_native.compaction(spark, tmp, rows, runs)
            del rows
    finally:
        spark.stop()
    return out


def print_results(p: dict) -> None:
    if "write" not in p:   # --spark-only-read
        spark_native.print_results(p)
        return
    w, r = p["write"], p["read"]
    t = RichTable(title=f"spark 1. Append write of one cached DataFrame: {p['rows']:,} rows, {len(p['days'])} days, "
                        f"{p['input_partitions']} Spark partitions, local[2] (Spark {p.get('spark')})",
                  title_justify="left")
    for c in ("contender", "median s", "runs s", "× parquet", "M rows/s", "files", "MB", "codec"):
        t.add_column(c, justify="left" if c in ("contender", "runs s", "codec") else "right")
    base = w[PQ_WRITE]["median"]
    for name in (PQ_WRITE, LF_FLAT_WRITE, PQ_WRITE_LAYOUT, PQ_WRITE_FILES, LF_NATIVE_WRITE, LF_WRITE, LF_BUCKETED):
        v = w.get(name)
        if v is None:
            continue
        t.add_row(name, fmt_s(v["median"]), " ".join(f"{x:.2f}" for x in v["runs"]), fmt_x(ratio(v["median"], base)),
                  f"{p['rows'] / v['median'] / 1e6:.2f}", str(v.get("files", "—")),
                  f"{v.get('bytes', 0) / 1e6:.0f}", str(v.get("codec")))
    console.print(t)
    t = RichTable(title="spark 2. Full read into the noop sink", title_justify="left")
    for c in ("reader", "median s", "runs s", "× parquet", "M rows/s"):
        t.add_column(c, justify="left" if c in ("reader", "runs s") else "right")
    base = r[PQ_READ]["median"]
    for name in (PQ_READ, LF_NATIVE_READ, LF_READ):
        v = r[name]
        t.add_row(name, fmt_s(v["median"]), " ".join(f"{x:.2f}" for x in v["runs"]), fmt_x(ratio(v["median"], base)),
                  f"{p['rows'] / v['median'] / 1e6:.2f}")
    console.print(t)
    b, f = p["breakdown"], p.get("floors") or {}
    console.print(f"  where the time goes: sending every row to Python workers as Arrow (mapInArrow into noop, "
                  f"no work) takes {fmt_s(f.get('to_python'), 2)}s, "
                  f"{fmt_x(ratio(f.get('to_python'), w[PQ_WRITE]['median']))} "
                  f"of Spark's whole Parquet write; the Python work of one task ({b['rows']:,} rows: conform, route, "
                  f"Parquet zstd, statistics) takes {b['seconds']:.2f}s in-process; a 1,000-row write (planning and "
                  f"commit in Python workers) {min(p['tiny_write_seconds']):.2f}s. Reading: a minimal Python data "
                  f"source handing the same files to Spark with pyarrow takes {fmt_s(f.get('from_python'), 2)}s "
                  f"({fmt_x(ratio(f.get('from_python'), r[PQ_READ]['median']))} Spark's Parquet reader)")
    pk = p.get("pk")
    if pk:
        t = RichTable(title=f"spark 3. Primary-key upsert of the same {p['rows']:,} rows (key dt, user_id, item_id; "
                            "4 buckets; one commit)", title_justify="left")
        for c in ("writer", "seconds", "M rows/s", "× library", "files", "MB", "rows after merge"):
            t.add_column(c, justify="left" if c == "writer" else "right")
        for name in (PK_LIB, PK_SPARK):
            v = pk[name]
            t.add_row(name, fmt_s(v["median"]), f"{p['rows'] / v['median'] / 1e6:.2f}",
                      fmt_x(ratio(v["median"], pk[PK_LIB]["median"])), str(v.get("files")),
                      f"{v.get('bytes', 0) / 1e6:.0f}", f"{v['rows_read']:,}")
        console.print(t)
    spark_native.print_results(p)


def goals(p: Optional[dict], add) -> None:
    if not p:
        return
    if "write" not in p:   # --spark-only-read
        spark_native.goals(p, add)
        return
    x = ratio(p["write"][LF_NATIVE_WRITE]["median"], p["write"][PQ_WRITE]["median"])
    add("spark append write: lakeformat.spark.write vs df.write.parquet", x, None if x is None else x <= 1.3, "≤ 1.30×")
    if LF_FLAT_WRITE in p["write"]:
        x = ratio(p["write"][LF_FLAT_WRITE]["median"], p["write"][PQ_WRITE]["median"])
        add("spark append write into an unpartitioned table vs df.write.parquet (same layout)", x,
            None if x is None else x <= 1.3, "≤ 1.30×")
    if PQ_WRITE_LAYOUT in p["write"]:
        x = ratio(p["write"][LF_NATIVE_WRITE]["median"], p["write"][PQ_WRITE_LAYOUT]["median"])
        add("spark append write: lakeformat.spark.write vs Spark writing the table's layout and codec", x,
            None if x is None else x <= 1.3, "≤ 1.30×")
    if PQ_WRITE_FILES in p["write"]:
        x = ratio(p["write"][LF_NATIVE_WRITE]["median"], p["write"][PQ_WRITE_FILES]["median"])
        add("spark append write: lakeformat.spark.write vs Spark writing the table's files (partition column kept)", x,
            None if x is None else x <= 1.3, "≤ 1.30×")
    x = ratio(p["read"][LF_NATIVE_READ]["median"], p["read"][PQ_READ]["median"])
    add("spark append read: read_table vs spark.read.parquet", x, None if x is None else x <= 1.2, "≤ 1.20×")
    spark_native.goals(p, add)
