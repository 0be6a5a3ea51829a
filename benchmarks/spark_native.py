"""Spark benchmarks of the native paths that need tables of their own (called from spark.py):

  4. read of a compacted primary-key table: ``lakeformat.spark.read_table`` (Spark's Parquet
     reader over the one sorted run of each bucket) vs ``spark.read.parquet`` of the same rows
     written as plain Parquet by Spark, with the Python path (``native=False``) as comparison;
     a second baseline reads the same rows written by Spark in the table's codec (zstd level 1,
     Paimon's default; Spark's own default is snappy, cheaper to decode), the like-for-like floor;
  4b. the same for a primary-key table with deletion vectors, 5% of its keys updated after a full
     compaction (the vectors hide their old rows; Spark applies them by row index);
  5. compaction of a primary-key table of 20 buckets (4 level-0 runs each, write-only):
     ``compact_on_spark`` (the 20 buckets packed into as many tasks as local[2] runs at once) vs
     the library in this process, on one thread (the goal's baseline: what 2 executor cores gain
     over one) and with ``Table.compact``'s default 2 threads (on this 2-core machine those use
     the same two cores Spark's executors do), each on a fresh copy of the same table.
"""
from __future__ import annotations

import shutil
import time
from pathlib import Path

import pyarrow as pa

from common import console, fmt_s, fmt_x, lf, median, ratio

PK_NATIVE = "lakeformat.spark.read_table (native)"
PK_PYTHON = "lakeformat.spark.read_table (native=False, Python path)"
PK_PARQUET = "spark: spark.read.parquet (same rows)"
PK_PARQUET_ZSTD = "spark: spark.read.parquet (same rows, zstd level 1: the table's codec)"
C_SPARK = "compact_on_spark (20 buckets in 2 tasks, local[2])"
C_LIB = "Table.compact (library, this process, 2 threads: its default)"
C_LIB1 = "compact_table(threads=1) (library, this process, one thread)"
COMPACT_BUCKETS = 20


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _noop(df) -> None:
    df.write.format("noop").mode("overwrite").save()


def pk_read(spark, tmp: Path, wh: Path, name: str, runs: int) -> dict:
    """Reads of the compacted primary-key table ``name`` in ``wh``."""
    lf.Catalog(str(wh)).get_table(name).compact(full=True)
    return _read_race(spark, tmp, wh, name, runs)


def dv_read(spark, tmp: Path, wh: Path, name: str, runs: int) -> dict:
    """Reads of a deletion-vector copy of the primary-key table ``name`` in ``wh``, fully compacted,
    then 5% of its keys updated (so the vectors hide 5% of the compacted rows)."""
    cat = lf.Catalog(str(wh))
    src = cat.get_table(name)
    dv_name = name + "_dv"
    rows = src.read()
    t = cat.create_table(dv_name, src.arrow_schema(), partition_keys=src.schema.partition_keys,
                         primary_keys=src.schema.primary_keys,
                         options={"bucket": src.schema.options.get("bucket", "4"), "deletion-vectors.enabled": "true"})
    t.write(rows)
    t.compact(full=True)
    t.write(rows.take(list(range(0, rows.num_rows, 20))))
    assert cat.get_table(dv_name).latest_snapshot().index_manifest, "the update marked rows in deletion vectors"
    return _read_race(spark, tmp, wh, dv_name, runs)


def _read_race(spark, tmp: Path, wh: Path, name: str, runs: int) -> dict:
    import lakeformat.spark as lfs
    raw, rawz = tmp / "pk-as-parquet", tmp / "pk-as-parquet-zstd"
    lfs.read_table(spark, name, warehouse=str(wh)).write.mode("overwrite").parquet(str(raw))
    (lfs.read_table(spark, name, warehouse=str(wh)).write.mode("overwrite").option("compression", "zstd")
     .option("parquet.compression.codec.zstd.level", "1").parquet(str(rawz)))
    readers = {PK_NATIVE: lambda: lfs.read_table(spark, name, warehouse=str(wh)),
               PK_PYTHON: lambda: lfs.read_table(spark, name, warehouse=str(wh), native=False),
               PK_PARQUET: lambda: spark.read.parquet(str(raw)),
               PK_PARQUET_ZSTD: lambda: spark.read.parquet(str(rawz))}
    out = {k: {"runs": []} for k in readers}
    for r in range(runs):
        order = list(readers)
        order = order[r % len(order):] + order[:r % len(order)]
        for k in order:
            out[k]["runs"].append(_timed(lambda: _noop(readers[k]())))
    rows = {k: readers[k]().count() for k in (PK_NATIVE, PK_PARQUET)}
    assert rows[PK_NATIVE] == rows[PK_PARQUET], rows
    for v in out.values():
        v["median"] = median(v["runs"])
    shutil.rmtree(raw, ignore_errors=True)
    shutil.rmtree(rawz, ignore_errors=True)
    return {"rows": rows[PK_NATIVE], "readers": out}


def _compaction_table(wh: Path, data: pa.Table):
    """``data`` in 4 commits into a write-only primary-key table of 20 buckets (2 days × 10)."""
    from primary_key import KEYS, PK_SCHEMA
    cat = lf.Catalog(str(wh))
    cat.create_database("db")
    t = cat.create_table("db.c", PK_SCHEMA, partition_keys=["dt"], primary_keys=KEYS,
                         options={"bucket": str(COMPACT_BUCKETS // 2), "write-only": "true"})
    data = data.cast(PK_SCHEMA)
    step = -(-data.num_rows // 4)
    for i in range(4):
        t.write(data.slice(i * step, step))
    return t


def compaction(spark, tmp: Path, data: pa.Table, runs: int) -> dict:
    """``data`` written in 4 commits into a 20-bucket primary-key table, then compacted fully by
    each contender, each on its own copy. The first Spark compaction in a session also starts the
    executors' Python workers and imports lakeformat there (a spark-submit job pays that once):
    it is timed on a small table first and reported apart (``cold_seconds``)."""
    from lakeformat.maintenance.compaction import compact_table
    from lakeformat.spark.compaction import compact_on_spark
    from lakeformat.spark.options import TableRef
    _compaction_table(tmp / "wh-compact-cold", data.slice(0, 20_000))
    cold = _timed(lambda: compact_on_spark(spark, TableRef(str(tmp / "wh-compact-cold"), "db.c"), full=True))
    shutil.rmtree(tmp / "wh-compact-cold", ignore_errors=True)
    template = tmp / "wh-compact-template"
    files = len(_compaction_table(template, data).files())
    names = [C_SPARK, C_LIB, C_LIB1]
    out: dict = {k: {"runs": []} for k in names}
    for r in range(runs):
        for i, k in enumerate(names[r % 3:] + names[:r % 3]):
            wh = tmp / f"wh-compact-{r}-{i}"
            shutil.copytree(template, wh)
            if k == C_LIB:
                table = lf.Catalog(str(wh)).get_table("db.c")
                secs = _timed(lambda: table.compact(full=True))
            elif k == C_LIB1:
                table = lf.Catalog(str(wh)).get_table("db.c")
                secs = _timed(lambda: compact_table(table.ctx, table.new_commit(), full=True, threads=1))
            else:
                secs = _timed(lambda: compact_on_spark(spark, TableRef(str(wh), "db.c"), full=True))
            out[k]["runs"].append(secs)
            done = lf.Catalog(str(wh)).get_table("db.c")
            assert done.latest_snapshot().commit_kind == "COMPACT" and len(done.files()) < files
            shutil.rmtree(wh, ignore_errors=True)
    for v in out.values():
        v["median"] = median(v["runs"])
    shutil.rmtree(template, ignore_errors=True)
    return {"rows": data.num_rows, "files_before": files, "buckets": COMPACT_BUCKETS, "contenders": out,
            "cold_seconds": cold}


def print_results(p: dict) -> None:
    from rich.table import Table as RichTable
    titles = {"pk_read": "spark 4. Read of a fully compacted primary-key table",
              "dv_read": "spark 4b. Read of a primary-key table with deletion vectors (5% of rows hidden)"}
    for key, title in titles.items():
        pk = p.get(key)
        if not pk:
            continue
        t = RichTable(title=f"{title} ({pk['rows']:,} rows, 4 buckets) into the noop sink", title_justify="left")
        for c in ("reader", "median s", "runs s", "× parquet"):
            t.add_column(c, justify="left" if c in ("reader", "runs s") else "right")
        base = pk["readers"][PK_PARQUET]["median"]
        for name in (PK_PARQUET, PK_PARQUET_ZSTD, PK_NATIVE, PK_PYTHON):
            v = pk["readers"].get(name)
            if v is None:
                continue
            t.add_row(name, fmt_s(v["median"]), " ".join(f"{x:.2f}" for x in v["runs"]),
                      fmt_x(ratio(v["median"], base)))
        console.print(t)
    c = p.get("compaction")
    if c:
        t = RichTable(title=f"spark 5. Full compaction of {c['buckets']} primary-key buckets ({c['rows']:,} rows, "
                            f"{c['files_before']} files)", title_justify="left")
        for col in ("contender", "median s", "runs s", "speed-up vs one thread", "vs 2 threads"):
            t.add_column(col, justify="left" if col in ("contender", "runs s") else "right")
        one = c["contenders"].get(C_LIB1, {}).get("median")
        two = c["contenders"][C_LIB]["median"]
        for name in (C_LIB1, C_LIB, C_SPARK):
            v = c["contenders"].get(name)
            if v is None:
                continue
            t.add_row(name, fmt_s(v["median"]), " ".join(f"{x:.2f}" for x in v["runs"]),
                      fmt_x(ratio(one, v["median"])), fmt_x(ratio(two, v["median"])))
        console.print(t)
        if "cold_seconds" in c:
            console.print(f"  the session's first compact_on_spark (20,000 rows; starts the executors' Python "
                          f"workers): {fmt_s(c['cold_seconds'])} s")


def goals(p: dict, add) -> None:
    for key, what in (("pk_read", "compacted primary-key"), ("dv_read", "deletion-vector primary-key")):
        pk = p.get(key)
        if pk:
            x = ratio(pk["readers"][PK_NATIVE]["median"], pk["readers"][PK_PARQUET]["median"])
            add(f"spark {what} read: read_table vs spark.read.parquet", x, None if x is None else x <= 1.5, "≤ 1.50×")
            z = pk["readers"].get(PK_PARQUET_ZSTD)
            if z:
                x = ratio(pk["readers"][PK_NATIVE]["median"], z["median"])
                add(f"spark {what} read: read_table vs spark.read.parquet of the rows in the table's codec", x,
                    None if x is None else x <= 1.5, "≤ 1.50×")
    c = p.get("compaction")
    if c:
        spark = c["contenders"][C_SPARK]["median"]
        if C_LIB1 in c["contenders"]:
            x = ratio(c["contenders"][C_LIB1]["median"], spark)
            add("spark compaction of 20 buckets, 2 executor cores: speed-up vs the library on one thread", x,
                None if x is None else x >= 1.6, "≥ 1.60×")
        x = ratio(c["contenders"][C_LIB]["median"], spark)
        add("spark compaction of 20 buckets: speed-up vs the library's default 2 threads (same 2 cores)", x, None,
            "(none)")
