"""Side-by-side benchmarks: lakeformat vs pypaimon, pypaimon-rust and raw pyarrow (``make bench``).

Everything runs in one invocation, on the same bytes: the data is generated once here, saved as
Parquet files in a temp dir, and every contender (this process for lakeformat and raw pyarrow, a
long-lived worker in ``.venv-oracle`` for pypaimon and pypaimon-rust, see ``oracle_bench.py``)
loads those files into memory before any timer starts. See ``benchmarks/README.md``.

    .venv/bin/python benchmarks/run.py                 # full run (~5 minutes + ~3 for pk)
    .venv/bin/python benchmarks/run.py --quick         # small sizes, smoke test
    .venv/bin/python benchmarks/run.py --only commits,throughput
    .venv/bin/python benchmarks/run.py --only pk       # primary-key tables (primary_key.py)
    .venv/bin/python benchmarks/run.py --only dv       # deletion vectors (deletion_vectors.py)
    .venv/bin/python benchmarks/run.py --only de       # data evolution (data_evolution.py)
    .venv/bin/python benchmarks/run.py --only spark    # Spark data source vs Spark's Parquet (spark.py)
    .venv/bin/python benchmarks/run.py --only sql      # the Spark SQL catalog vs Spark's Parquet (spark_sql_catalog.py)
    .venv/bin/python benchmarks/run.py --only checksums  # Parquet page checksums on vs off (checksums.py)
    .venv/bin/python benchmarks/run.py --only cold     # first call in a fresh process vs warm; import times (cold.py)
    .venv/bin/python benchmarks/run.py --only fresh    # first calls side by side, fresh processes (fresh.py)
    .venv/bin/python benchmarks/run.py --profile       # also cProfile lakeformat's parts
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from pathlib import Path
from typing import Optional

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from rich.table import Table as RichTable

from common import (DAYS, LF, ORACLE_IMPL, PYPAIMON, RAW_SNAPPY, RAW_ZSTD, RESULTS, ROOT, RUST, Oracle,
                    OracleError, console, describe_files, fmt_ms, fmt_s, fmt_x, lf, lf_read, median, profiled, ratio,
                    raw_write)
from lakeformat.pipeline.demo_data import SCHEMA, user_behavior
from commit_worker import SCHEMA as THROUGHPUT_SCHEMA  # benchmarks/ is sys.path[0]
import data_evolution as deb
import deletion_vectors as dvb
import primary_key as pk
import spark as spark_bench  # benchmarks/spark.py; pyspark is imported only when it runs
import spark_sql_catalog as sql_bench  # benchmarks/spark_sql_catalog.py (the `sql` section)
import growth  # benchmarks/growth.py: how costs grow with history and size
import cold as cold_bench  # benchmarks/cold.py: cold-process costs, import times
import fresh  # benchmarks/fresh.py: first calls side by side, a fresh process per contender
import checksums  # benchmarks/checksums.py: the cost of Parquet page checksums

COMMIT_WORKER = Path(__file__).resolve().parent / "commit_worker.py"


# ------------------------------------------------------------------------------- data

def make_data(tmp: Path, rows: int, batches: int) -> list[Path]:
    d = tmp / "input"
    d.mkdir()
    paths = []
    for seed in range(batches):
        p = d / f"batch-{seed}.parquet"
        pq.write_table(user_behavior(rows, DAYS, seed=seed), p, compression="zstd")
        paths.append(p)
    return paths


# ------------------------------------------------------------------------------- 1 + 2: write, read

def lf_write(wh: Path, batches: list[pa.Table]) -> list[float]:
    cat = lf.Catalog(str(wh))
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table("db.t", SCHEMA, partition_keys=["dt"])   # not timed
    per = []
    for tab in batches:
        start = time.perf_counter()
        t.write(tab)
        per.append(time.perf_counter() - start)
    return per


def raw_read(d: Path) -> tuple[float, pa.Table]:
    start = time.perf_counter()
    out = pq.read_table(d)
    return time.perf_counter() - start, out


def checksum(tab: pa.Table) -> int:
    return int(pc.sum(tab.column("user_id")).as_py()) if tab.num_rows else 0


def bench_write_read(tmp: Path, batches: list[pa.Table], oracle: Optional[Oracle], runs: int,
                     profile: bool, profiles: dict) -> tuple[dict, dict]:
    writers = [LF, PYPAIMON, RUST, RAW_ZSTD, RAW_SNAPPY]
    readers = [LF, PYPAIMON, RUST, RAW_ZSTD]
    write = {c: {"runs": [], "per_batch": [], "errors": []} for c in writers}
    read = {c: {"runs": [], "errors": []} for c in readers}
    expected_rows = sum(b.num_rows for b in batches)
    expected_sum = sum(checksum(b) for b in batches)
    for r in range(runs):
        run_dir = tmp / f"run-{r}"
        wh = {c: run_dir / c.replace(" ", "_").replace("(", "").replace(")", "") for c in writers}
        # rotate the order each run so no contender always runs first (or last) on a noisy box
        order = writers[r % len(writers):] + writers[:r % len(writers)]
        for c in order:
            try:
                if c == LF:
                    per = lf_write(wh[c], batches)
                elif c == RAW_ZSTD:
                    per = raw_write(wh[c], batches, compression="zstd", compression_level=1)
                elif c == RAW_SNAPPY:
                    per = raw_write(wh[c], batches)
                else:
                    if oracle is None:
                        raise OracleError("oracle worker not available")
                    per = oracle.call("write", impl=ORACLE_IMPL[c], warehouse=str(wh[c]),
                                      partition_keys=["dt"])["per_batch"]
                write[c]["runs"].append(sum(per))
                write[c]["per_batch"].append(per)
                write[c].update(describe_files(wh[c]))
            except Exception as e:
                write[c]["errors"].append(f"run {r}: {e}")
                console.print(f"[red]write {c} run {r} failed: {e}")
        console.print(f"  write run {r + 1}/{runs}: " + ", ".join(
            f"{c} {write[c]['runs'][-1]:.2f}s" for c in order if len(write[c]["runs"]) > r))
        # reads: lakeformat, pypaimon and pypaimon-rust all read the table lakeformat just wrote
        # (identical files); raw pyarrow reads the raw zstd files of this run
        rorder = readers[r % len(readers):] + readers[:r % len(readers)]
        for c in rorder:
            try:
                if c == LF:
                    secs, out = lf_read(wh[LF])
                    rows, s = out.num_rows, checksum(out)
                    del out
                elif c == RAW_ZSTD:
                    secs, out = raw_read(wh[RAW_ZSTD])
                    rows, s = out.num_rows, checksum(out)
                    del out
                else:
                    if oracle is None:
                        raise OracleError("oracle worker not available")
                    res = oracle.call("read", impl=ORACLE_IMPL[c], warehouse=str(wh[LF]), table="db.t")
                    secs, rows, s = res["seconds"], res["rows"], res["user_id_sum"]
                if rows != expected_rows or s != expected_sum:
                    raise RuntimeError(f"read {rows} rows (sum {s}), expected {expected_rows} (sum {expected_sum})")
                read[c]["runs"].append(secs)
                read[c]["rows"] = rows
            except Exception as e:
                read[c]["errors"].append(f"run {r}: {e}")
                console.print(f"[red]read {c} run {r} failed: {e}")
        console.print(f"  read  run {r + 1}/{runs}: " + ", ".join(
            f"{c} {read[c]['runs'][-1]:.2f}s" for c in rorder if len(read[c]["runs"]) > r))
        shutil.rmtree(run_dir, ignore_errors=True)
    if profile:   # an extra, untimed pass under cProfile (profiling would distort the timed runs)
        prof_wh = tmp / "profile-write"
        profiled(True, "write: lakeformat t.write x3", lambda: lf_write(prof_wh, batches), profiles)
        profiled(True, "read: lakeformat t.read()", lambda: lf_read(prof_wh), profiles)
        shutil.rmtree(prof_wh, ignore_errors=True)
    for d in (write, read):
        for v in d.values():
            v["median"] = median(v["runs"])
    return write, read


# ------------------------------------------------------------------------------- 3: planning

LF_NO_MERGE = "lakeformat, no manifest merges (reference)"
NO_MERGE_OPTIONS = {"manifest.merge-min-count": "1000000"}


def build_planning_table(wh: Path, partitions: int, files_per_partition: int, options: dict):
    """``partitions`` commits, commit k writing ``files_per_partition`` one-row files into
    partition k through the two-phase API (one TableWrite per file, one commit per partition):
    the shape of a daily ingest. Not timed."""
    cat = lf.Catalog(str(wh))
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table("db.plan", SCHEMA, partition_keys=["dt"], options=options)
    start = dt.date(2024, 1, 1)
    days = [(start + dt.timedelta(days=i)).isoformat() for i in range(partitions)]
    user = "bench-planning"
    for k, day in enumerate(days):
        rows = user_behavior(files_per_partition, [day], seed=1000 + k)
        messages = []
        for j in range(files_per_partition):
            w = t.new_write(user)
            w.write(rows.slice(j, 1))
            messages += w.prepare_commit()
        t.new_commit(user).commit(messages)
    return days


def manifest_layout(wh: Path) -> list[dict]:
    """The manifests of the latest snapshot: entries and the partition range each covers."""
    from lakeformat.io.manifests import ManifestList
    from lakeformat.read.scan import decode_stats
    t = lf.Catalog(str(wh)).get_table("db.plan")
    snap = t.latest_snapshot()
    ml = ManifestList(t.io, t.path)
    types = [f.type for f in t.schema.partition_fields]
    out = []
    for m in ml.read(snap.base_manifest_list) + ml.read(snap.delta_manifest_list):
        stats = decode_stats(m.partition_stats, types)
        out.append({"entries": m.num_added_files + m.num_deleted_files, "bytes": m.file_size,
                    "min_dt": stats[0][0] if stats else None, "max_dt": stats[1][0] if stats else None})
    return out


def lf_plan_once(wh: Path, flt) -> tuple[float, int]:
    t = lf.Catalog(str(wh)).get_table("db.plan")   # a fresh table object per run; not timed
    start = time.perf_counter()
    splits = t.scan(filter=flt).plan()
    secs = time.perf_counter() - start
    return secs, sum(len(s.files) for s in splits)


def bench_planning(tmp: Path, oracle: Optional[Oracle], partitions: int, files_per_partition: int,
                   repeat: int, profile: bool, profiles: dict, reference_layout: bool = True) -> dict:
    out = {"partitions": partitions, "files_per_partition": files_per_partition, "results": {}, "layouts": {}}
    layouts = [(LF, {})] + ([(LF_NO_MERGE, NO_MERGE_OPTIONS)] if reference_layout else [])
    whs = {}
    for name, options in layouts:
        wh = whs[name] = tmp / ("planning-" + str(len(whs)))
        start = time.perf_counter()
        days = build_planning_table(wh, partitions, files_per_partition, options)
        build_secs = time.perf_counter() - start
        layout = manifest_layout(wh)
        out["layouts"][name] = {"options": options, "build_seconds": build_secs, "manifests": layout}
        console.print(f"  {name}: planning table built in {build_secs:.1f}s ({partitions * files_per_partition} "
                      f"files, {partitions} commits); latest snapshot has {len(layout)} manifests, the largest "
                      f"{max(m['entries'] for m in layout)} entries covering dt "
                      f"{max(layout, key=lambda m: m['entries'])['min_dt']} .. "
                      f"{max(layout, key=lambda m: m['entries'])['max_dt']}")
    one_day = days[len(days) // 2]
    out["one_partition"] = one_day
    flt = {"all": None, "one": lf.col("dt") == one_day}
    for lname, _ in layouts:
        wh = whs[lname]
        res = {}
        for name in ("all", "one"):
            cold, count = lf_plan_once(wh, flt[name])
            runs = []
            for _i in range(repeat):
                secs, count = lf_plan_once(wh, flt[name])
                runs.append(secs)
            if profile:   # extra untimed pass
                profiled(True, f"plan: {lname} scan().plan() [{name}]", lambda: lf_plan_once(wh, flt[name]),
                         profiles)
            res[name] = {"cold": cold, "runs": runs, "median": median(runs), "files": count}
        res["ratio_all_over_one"] = ratio(res["all"]["median"], res["one"]["median"])
        out["results"][lname] = res
    wh = whs[LF]
    for c in (PYPAIMON, RUST):
        try:
            if oracle is None:
                raise OracleError("oracle worker not available")
            r = {}
            for name, part in (("all", None), ("one", {"dt": one_day})):
                o = oracle.call("plan", impl=ORACLE_IMPL[c], warehouse=str(wh), table="db.plan",
                                partition=part, repeat=repeat + 1)
                r[name] = {"cold": o["runs"][0], "runs": o["runs"][1:], "median": median(o["runs"][1:]),
                           **o["found"]}
            r["ratio_all_over_one"] = ratio(r["all"]["median"], r["one"]["median"])
            out["results"][c] = r
        except Exception as e:
            out["results"][c] = {"error": str(e)}
            console.print(f"[red]planning {c} failed: {e}")
    for wh in whs.values():
        shutil.rmtree(wh, ignore_errors=True)
    return out


# ------------------------------------------------------------------------------- 4: commit latency

COMMIT_WINDOW = 50      # commits per window compared: wide enough that a noisy machine's medians hold


def commit_sequence(tmp: Path, commits: int, profile: bool, profiles: dict) -> dict:
    """``commits`` one-row appends into a fresh table, each timed (commit only, and write+prepare)."""
    wh = tmp / "commits"
    cat = lf.Catalog(str(wh))
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table("db.c", SCHEMA, partition_keys=["dt"])
    user = str(uuid.uuid4())
    commit_times, write_times = [], []
    rows = user_behavior(commits + 10, DAYS[:1], seed=42)

    def one_commit(i):
        start = time.perf_counter()
        w = t.new_write(user)
        w.write(rows.slice(i, 1))
        messages = w.prepare_commit()
        mid = time.perf_counter()
        t.new_commit(user).commit(messages)
        return mid - start, time.perf_counter() - mid

    for i in range(commits):
        wsecs, csecs = one_commit(i)
        write_times.append(wsecs)
        commit_times.append(csecs)
    snap = t.latest_snapshot()
    from lakeformat.io.manifests import ManifestList
    ml = ManifestList(t.io, t.path)
    metas = ml.read(snap.base_manifest_list) + ml.read(snap.delta_manifest_list)
    if profile:   # 10 extra commits under cProfile, after the timed ones
        profiled(True, f"commit: commits {commits + 1}-{commits + 10} (write+prepare+commit)",
                 lambda: [one_commit(commits + j) for j in range(10)], profiles)
    shutil.rmtree(wh, ignore_errors=True)
    first = median(commit_times[:COMMIT_WINDOW])
    last = median(commit_times[-COMMIT_WINDOW:])
    return {"median_first": first, "median_last": last, "ratio_last_over_first": ratio(last, first),
            "snapshots": snap.id, "manifests_in_latest_snapshot": len(metas),
            "commit_seconds": commit_times, "write_prepare_seconds": write_times}


def bench_commits(tmp: Path, commits: int, runs: int, profile: bool, profiles: dict) -> dict:
    """Does commit cost grow with the table's history? ``runs`` sequences of ``commits`` commits;
    the figure is the median over runs of (median of the last window / median of the first)."""
    seqs = [commit_sequence(tmp, commits, profile and r == runs - 1, profiles) for r in range(runs)]
    times = [x for s in seqs for x in s["commit_seconds"]]
    ordered = sorted(times)
    windows = {f"{i + 1}-{min(i + COMMIT_WINDOW, commits)}":
               median([x for s in seqs for x in s["commit_seconds"][i:i + COMMIT_WINDOW]])
               for i in range(0, commits, COMMIT_WINDOW)}
    return {"commits": commits, "runs": runs, "window": COMMIT_WINDOW,
            "median_first": median([s["median_first"] for s in seqs]),
            "median_last": median([s["median_last"] for s in seqs]),
            "ratio_last_over_first": median([s["ratio_last_over_first"] for s in seqs]),
            "ratio_per_run": [s["ratio_last_over_first"] for s in seqs],
            "median_all": median(times), "p90": ordered[int(0.9 * (len(ordered) - 1))], "max": ordered[-1],
            "total_commit_seconds": sum(times) / runs,
            "median_write_prepare": median([x for s in seqs for x in s["write_prepare_seconds"]]),
            "median_by_window": windows, "snapshots": seqs[-1]["snapshots"],
            "manifests_in_latest_snapshot": seqs[-1]["manifests_in_latest_snapshot"],
            "commit_seconds": [s["commit_seconds"] for s in seqs]}


# ------------------------------------------------------------------------------- 5: commit throughput

def throughput_once(wh: Path, procs: int, commits: int, rows: int) -> dict:
    """``procs`` commit_worker.py processes into one fresh table. The window runs from the moment
    all of them are ready (imported, table open) to the last one's end of its last commit."""
    cat = lf.Catalog(str(wh))
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table("db.t", THROUGHPUT_SCHEMA, partition_keys=["p"])
    ps = [subprocess.Popen([sys.executable, str(COMMIT_WORKER), str(wh), "db.t", "--worker", str(w),
                            "--commits", str(commits), "--rows", str(rows)], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT))
          for w in range(procs)]
    try:
        for p in ps:
            if p.stdout.readline().strip() != "ready":
                raise RuntimeError(f"commit worker failed to start: {p.communicate()[1][-2000:]}")
        go = time.time()
        for p in ps:
            p.stdin.write("go\n")
            p.stdin.flush()
        reports = []
        for p in ps:
            out, err = p.communicate(timeout=600)
            if p.returncode != 0:
                raise RuntimeError(f"commit worker failed: {err[-2000:]}")
            reports.append(json.loads(out.splitlines()[-1]))
    finally:
        for p in ps:
            if p.poll() is None:
                p.kill()   # our own child, by handle
    snap = t.latest_snapshot()
    if snap.id != procs * commits or snap.total_record_count != procs * commits * rows:
        raise RuntimeError(f"expected {procs * commits} snapshots of {rows} rows, found {snap.id} "
                           f"({snap.total_record_count} rows)")
    wall = max(r["end"] for r in reports) - go
    latencies = [x for r in reports for x in r["latencies"]]
    return {"seconds": wall, "commits_per_s": procs * commits / wall,
            "retries_per_commit": sum(r["retries"] for r in reports) / (procs * commits),
            "median_latency": median(latencies), "p90_latency": sorted(latencies)[int(0.9 * (len(latencies) - 1))]}


def bench_throughput(tmp: Path, procs_list: list[int], commits: int, runs: int, rows: int = 5) -> dict:
    out = {"commits_per_process": commits, "rows_per_commit": rows, "runs": runs, "results": {}}
    for procs in procs_list:
        per_run = []
        for r in range(runs):
            wh = tmp / f"throughput-{procs}-{r}"
            per_run.append(throughput_once(wh, procs, commits, rows))
            shutil.rmtree(wh, ignore_errors=True)
        res = {k: median([x[k] for x in per_run]) for k in per_run[0]}
        out["results"][str(procs)] = {**res, "per_run": per_run}
        console.print(f"  {procs} process{'es' if procs > 1 else ''}: {res['commits_per_s']:.1f} commits/s, "
                      f"{res['retries_per_commit']:.2f} retries/commit, median commit "
                      f"{res['median_latency'] * 1000:.1f} ms")
    return out


# ------------------------------------------------------------------------------- report

def print_write_read(write: dict, read: dict, rows_per_batch: int, batches: int) -> None:
    raw = write[RAW_ZSTD]["median"]
    base = write[LF]["median"]
    t = RichTable(title=f"1. Append write + commit: {batches} batches × {rows_per_batch:,} rows, "
                        "partitioned by dt, bucket-unaware (one commit per batch)", title_justify="left")
    for col in ("contender", "median s", "runs s", "× raw zstd", "× lakeformat", "M rows/s", "files",
                "MB on disk", "codec"):
        t.add_column(col, justify="left" if col in ("contender", "runs s", "codec") else "right")
    for c in (RAW_ZSTD, RAW_SNAPPY, LF, PYPAIMON, RUST):
        v = write[c]
        m = v["median"]
        t.add_row(c, fmt_s(m), " ".join(f"{x:.2f}" for x in v["runs"]) or "; ".join(v["errors"])[:60],
                  fmt_x(ratio(m, raw)), fmt_x(ratio(m, base)),
                  "—" if not m else f"{rows_per_batch * batches / m / 1e6:.2f}", str(v.get("files", "—")),
                  "—" if "bytes" not in v else f"{v['bytes'] / 1e6:.1f}", str(v.get("codec", "—")))
    console.print(t)
    raw = read[RAW_ZSTD]["median"]
    base = read[LF]["median"]
    t = RichTable(title="2. Full read of that table (lakeformat, pypaimon and pypaimon-rust read the same "
                        "lakeformat-written table; raw reads the raw zstd files)", title_justify="left")
    for col in ("contender", "median s", "runs s", "× raw zstd", "× lakeformat", "M rows/s", "rows"):
        t.add_column(col, justify="left" if col in ("contender", "runs s") else "right")
    for c in (RAW_ZSTD, LF, PYPAIMON, RUST):
        v = read[c]
        m = v["median"]
        t.add_row(c, fmt_s(m), " ".join(f"{x:.2f}" for x in v["runs"]) or "; ".join(v["errors"])[:60],
                  fmt_x(ratio(m, raw)), fmt_x(ratio(m, base)),
                  "—" if not m else f"{v.get('rows', 0) / m / 1e6:.2f}", f"{v.get('rows', 0):,}")
    console.print(t)


def print_planning(p: dict) -> None:
    lay = p["layouts"][LF]["manifests"]
    t = RichTable(title=f"3. Scan planning: {p['partitions'] * p['files_per_partition']:,} files in "
                        f"{p['partitions']} partitions ({p['partitions']} commits; {len(lay)} manifests in the latest "
                        f"snapshot, largest {max(m['entries'] for m in lay):,} entries); all = no filter, "
                        f"one = dt = '{p['one_partition']}'. pypaimon and pypaimon-rust plan the default "
                        "lakeformat table.", title_justify="left")
    for col in ("implementation", "all: median ms", "one: median ms", "all / one", "all: cold ms",
                "one: cold ms", "found (all / one)", "runs all ms", "runs one ms"):
        t.add_column(col, justify="left" if col in ("implementation", "runs all ms", "runs one ms") else "right")
    for c, r in p["results"].items():
        if "error" in r:
            t.add_row(c, "error: " + r["error"][:80], "", "", "", "", "", "", "")
            continue
        key = "files" if "files" in r["all"] else "rows"
        t.add_row(c, fmt_ms(r["all"]["median"]), fmt_ms(r["one"]["median"]), fmt_x(r["ratio_all_over_one"]),
                  fmt_ms(r["all"]["cold"]), fmt_ms(r["one"]["cold"]),
                  f"{r['all'][key]:,} / {r['one'][key]:,} {key}",
                  " ".join(f"{x * 1000:.0f}" for x in r["all"]["runs"]),
                  " ".join(f"{x * 1000:.0f}" for x in r["one"]["runs"]))
    console.print(t)
    for name, lay in p["layouts"].items():
        big = max(lay["manifests"], key=lambda m: m["entries"])
        console.print(f"  {name}: {len(lay['manifests'])} manifests; the largest holds {big['entries']:,} entries "
                      f"for dt {big['min_dt']} .. {big['max_dt']}")


def print_commits(c: dict) -> None:
    w = c["window"]
    t = RichTable(title=f"4. Commit latency: {c['runs']} × {c['commits']} commits of one 1-row file each into "
                        f"a fresh table (lakeformat; {c['manifests_in_latest_snapshot']} manifests in the "
                        "last snapshot)", title_justify="left")
    for col in (f"commits 1–{w} median ms", f"last {w} median ms", "last / first (median of runs)",
                "per run", "median ms", "p90 ms", "max ms", "total s per run", "write+prepare median ms"):
        t.add_column(col, justify="right")
    t.add_row(fmt_ms(c["median_first"]), fmt_ms(c["median_last"]), fmt_x(c["ratio_last_over_first"]),
              " ".join(fmt_x(x) for x in c["ratio_per_run"]), fmt_ms(c["median_all"]), fmt_ms(c["p90"]),
              fmt_ms(c["max"]), fmt_s(c["total_commit_seconds"], 2), fmt_ms(c["median_write_prepare"]))
    console.print(t)
    console.print(f"  median commit ms per {w} commits: " + "  ".join(
        f"{k}: {v * 1000:.1f}" for k, v in c["median_by_window"].items()))


def print_throughput(th: dict) -> None:
    t = RichTable(title=f"5. Commit throughput: N processes each committing {th['commits_per_process']} appends "
                        f"of {th['rows_per_commit']} rows into the same 2 partitions of one fresh local table "
                        f"(medians of {th['runs']} runs)", title_justify="left")
    for col in ("processes", "commits/s", "× 1 process", "retries / commit", "median commit ms", "p90 commit ms",
                "runs commits/s"):
        t.add_column(col, justify="left" if col == "runs commits/s" else "right")
    one = th["results"].get("1", {}).get("commits_per_s")
    for procs, r in th["results"].items():
        t.add_row(procs, f"{r['commits_per_s']:.1f}", fmt_x(ratio(r["commits_per_s"], one)),
                  f"{r['retries_per_commit']:.2f}", fmt_ms(r["median_latency"]), fmt_ms(r["p90_latency"]),
                  " ".join(f"{x['commits_per_s']:.1f}" for x in r["per_run"]))
    console.print(t)


def goals(res: dict) -> list[dict]:
    out = []

    def add(name, value, ok, target, display=None):
        out.append({"goal": name, "target": target, "value": value,
                    "status": "n/a" if ok is None else ("met" if ok else "MISSED"),
                    **({"display": display} if display else {})})
    w, r = res.get("write"), res.get("read")
    if w:
        x = ratio(w[LF]["median"], w[RAW_ZSTD]["median"])
        add("write: lakeformat vs raw pyarrow zstd", x, None if x is None else x <= 1.25, "≤ 1.25×")
        for c in (PYPAIMON, RUST):
            x = ratio(w[LF]["median"], w[c]["median"])
            add(f"write: lakeformat vs {c}", x, None if x is None else x <= 0.8, "≤ 0.80×")
    if r:
        x = ratio(r[LF]["median"], r[RUST]["median"])
        add("read: lakeformat vs pypaimon-rust", x, None if x is None else x <= 0.8, "≤ 0.80×")
    p = res.get("planning")
    if p:
        x = p["results"][LF]["ratio_all_over_one"]
        add("planning: all / one partition (lakeformat)", x, None if x is None else x >= 20, "≥ 20×")
    c = res.get("commits")
    if c:
        x = c["ratio_last_over_first"]
        n, w = c["commits"], c["window"]
        add(f"commit latency: commits {n - w + 1}–{n} / 1–{w}", x,
            None if x is None else x <= 1.5, "≤ 1.5×")
    growth.goals(res.get("growth"), add)
    pk.goals(res.get("pk"), add)
    dvb.goals(res.get("dv"), add)
    deb.goals(res.get("de"), add)
    spark_bench.goals(res.get("spark"), add)
    sql_bench.goals(res.get("sql"), add)
    cold_bench.goals(res.get("cold"), add)
    fresh.goals(res.get("fresh"), add)
    checksums.goals(res.get("checksums"), add)
    return out


def print_goals(gs: list[dict]) -> None:
    t = RichTable(title="Goals", title_justify="left")
    for col in ("goal", "target", "value", "status"):
        t.add_column(col)
    for g in gs:
        style = {"met": "green", "MISSED": "red"}.get(g["status"], "")
        t.add_row(g["goal"], g["target"], g.get("display") or fmt_x(g["value"]),
                  f"[{style}]{g['status']}" if style else g["status"])
    console.print(t)


def environment(oracle_info: dict) -> dict:
    try:
        from importlib.metadata import version
        lf_version = version("lakeformat")
    except Exception:
        lf_version = None
    return {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "python": platform.python_version(), "platform": platform.platform(),
            "cpu_count": os.cpu_count(), "cpu_model": _cpu_model(), "pyarrow": pa.__version__,
            "lakeformat": lf_version, "oracle_pyarrow": oracle_info.get("pyarrow"),
            "pypaimon": _oracle_pkg("pypaimon"), "pypaimon_rust": _oracle_pkg("pypaimon-rust"),
            "loadavg_start": list(os.getloadavg())}


def _cpu_model() -> Optional[str]:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _oracle_pkg(name: str) -> Optional[str]:
    site = ROOT / ".venv-oracle" / "lib"
    for d in site.glob(f"python*/site-packages/{name.replace('-', '_')}-*.dist-info"):
        return d.name[:-len(".dist-info")].split("-", 1)[1]
    return None


# ------------------------------------------------------------------------------- main

ALL = "write,planning,commits,throughput,growth,pk,dv,de,spark,sql,checksums,cold,fresh"

def default_out(only: str, quick: bool) -> Path:
    """Only a full run replaces latest.json: the committed figures of every benchmark."""
    if quick:
        return RESULTS / "quick.json"
    if set(only.split(",")) != set(ALL.split(",")):
        return RESULTS / f"partial-{'-'.join(sorted(only.split(',')))}.json"
    return RESULTS / "latest.json"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5, help="runs of benchmarks 1 and 2 (fresh warehouses each)")
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows per batch")
    ap.add_argument("--batches", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=100, help="planning table: partitions")
    ap.add_argument("--files-per-partition", type=int, default=100, help="planning table: files per partition")
    ap.add_argument("--plan-repeat", type=int, default=7, help="timed planning runs per scan")
    ap.add_argument("--commits", type=int, default=500)
    ap.add_argument("--commit-runs", type=int, default=3, help="sequences of --commits commits")
    ap.add_argument("--procs", default="1,2,4,8", help="throughput: comma list of process counts")
    ap.add_argument("--throughput-commits", type=int, default=20, help="throughput: commits per process")
    ap.add_argument("--throughput-runs", type=int, default=3, help="throughput: runs per process count")
    ap.add_argument("--no-reference-layout", action="store_true",
                    help="planning: skip the reference table built without manifest merges")
    ap.add_argument("--only", default=ALL,
                    help="comma list of: write (benchmarks 1 and 2), planning, commits, throughput, growth "
                         "(how costs grow: growth.py), pk (primary-key tables: primary_key.py), dv (deletion "
                         "vectors: deletion_vectors.py), de (data evolution: data_evolution.py), spark (the Spark "
                         "data source: spark.py), sql (the Spark SQL catalog: spark_sql_catalog.py), checksums "
                         "(Parquet page checksums on vs off: checksums.py), cold (first call in a fresh process vs "
                         "warm, import times: cold.py)")
    ap.add_argument("--growth-commits", type=int, default=5000, help="growth: commits (= retained snapshots)")
    ap.add_argument("--quick", action="store_true", help="small sizes for a smoke test")
    ap.add_argument("--profile", action="store_true",
                    help="cProfile lakeformat's write, read, planning and commits into results/profile.txt")
    ap.add_argument("--out", default=None,
                    help="results file (default: results/latest.json for a full run, results/partial-<only>.json "
                         "for --only, results/quick.json for --quick)")
    pk.add_args(ap)
    dvb.add_args(ap)
    deb.add_args(ap)
    spark_bench.add_args(ap)
    sql_bench.add_args(ap)
    cold_bench.add_args(ap)
    fresh.add_args(ap)
    checksums.add_args(ap)
    args = ap.parse_args()
    if args.quick:
        args.rows, args.runs, args.partitions, args.files_per_partition = 100_000, 2, 10, 10
        args.plan_repeat, args.commits = 3, 40
        args.throughput_commits, args.throughput_runs = 5, 1
        pk.quick(args)
        dvb.quick(args)
        deb.quick(args)
        spark_bench.quick(args)
        sql_bench.quick(args)
        cold_bench.quick(args)
        fresh.quick(args)
        checksums.quick(args)
    args.out = args.out or str(default_out(args.only, args.quick))
    only = set(args.only.split(","))
    started = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="lakeformat-bench-"))
    profiles: dict[str, str] = {}
    res: dict = {"config": {k: v for k, v in vars(args).items() if k != "out"}}
    oracle = None
    oracle_info: dict = {}
    try:
        console.print(f"[bold]lakeformat benchmarks[/] (temp dir {tmp})")
        files = make_data(tmp, args.rows, args.batches) if only & {"write", "fresh"} else []
        batches = [pq.read_table(f) for f in files]   # loaded before any timer starts
        res["config"]["input_files"] = [{"name": f.name, "bytes": f.stat().st_size} for f in files]
        if only & {"write", "planning", "pk"}:
            try:
                oracle = Oracle(tmp / "oracle-stderr.log")
                oracle_info = oracle.call("load", files=[str(f) for f in files])
            except Exception as e:
                console.print(f"[red]oracle worker unavailable: {e}")
                oracle = None
        res["env"] = environment(oracle_info)
        if "write" in only:
            console.print("[bold]1+2. write and read[/]")
            res["write"], res["read"] = bench_write_read(tmp, batches, oracle, args.runs, args.profile, profiles)
        del batches
        if "planning" in only:
            console.print("[bold]3. scan planning[/]")
            res["planning"] = bench_planning(tmp, oracle, args.partitions, args.files_per_partition,
                                             args.plan_repeat, args.profile, profiles,
                                             not args.no_reference_layout)
        if "commits" in only:
            console.print("[bold]4. commit latency[/]")
            res["commits"] = bench_commits(tmp, args.commits, args.commit_runs, args.profile, profiles)
        if "throughput" in only:
            console.print("[bold]5. commit throughput[/]")
            res["throughput"] = bench_throughput(tmp, [int(n) for n in args.procs.split(",")],
                                                 args.throughput_commits, args.throughput_runs)
        if "growth" in only:
            res["growth"] = growth.bench(tmp, args)
        if "pk" in only:
            res["pk"] = pk.bench(tmp, oracle, args, profiles)
        if "dv" in only:
            console.print("[bold]dv. deletion vectors: read and compaction[/]")
            res["dv"] = dvb.bench(tmp, args, profiles)
        if "de" in only:
            console.print("[bold]de. data evolution: a read merging column files by row id[/]")
            res["de"] = deb.bench(tmp, args, profiles)
        if "spark" in only:
            console.print("[bold]spark. the lakeformat data source vs Spark's Parquet source[/]")
            res["spark"] = spark_bench.bench(tmp, args, profiles)
        if "sql" in only:
            console.print("[bold]sql. lakeformat's SQL catalog vs Spark's Parquet source[/]")
            res["sql"] = sql_bench.bench(tmp, args)
        if "cold" in only:
            res["cold"] = cold_bench.bench(tmp, args)
        if "fresh" in only:
            res["fresh"] = fresh.bench(tmp, files, args)
        if "checksums" in only:
            console.print("[bold]checksums. Parquet page checksums on vs off[/]")
            res["checksums"] = checksums.bench(tmp, args, profiles)
    except Exception:
        traceback.print_exc()
        res["error"] = traceback.format_exc()
    finally:
        if oracle is not None:
            oracle.close()
        shutil.rmtree(tmp, ignore_errors=True)
    res.setdefault("env", environment(oracle_info))
    res["env"]["loadavg_end"] = list(os.getloadavg())
    res["env"]["total_seconds"] = time.perf_counter() - started
    res["goals"] = goals(res)

    console.print()
    if "write" in res:
        print_write_read(res["write"], res["read"], args.rows, args.batches)
    if "planning" in res:
        print_planning(res["planning"])
    if "commits" in res:
        print_commits(res["commits"])
    if "throughput" in res:
        print_throughput(res["throughput"])
    if "pk" in res:
        pk.print_results(res["pk"])
    if "dv" in res:
        dvb.print_results(res["dv"])
    if "de" in res:
        deb.print_results(res["de"])
    if "spark" in res:
        spark_bench.print_results(res["spark"])
    if "sql" in res:
        sql_bench.print_results(res["sql"])
    if "cold" in res:
        cold_bench.print_results(res["cold"])
    if "fresh" in res:
        fresh.print_results(res["fresh"])
    if "checksums" in res:
        checksums.print_results(res["checksums"])
    print_goals(res["goals"])
    e = res["env"]
    console.print(f"python {e['python']}, pyarrow {e['pyarrow']} (oracle pyarrow {e['oracle_pyarrow']}, "
                  f"pypaimon {e['pypaimon']}, pypaimon-rust {e['pypaimon_rust']}), {e['cpu_count']} CPUs "
                  f"({e['cpu_model']}), load avg {e['loadavg_start'][0]:.2f} → {e['loadavg_end'][0]:.2f}, "
                  f"total {e['total_seconds']:.0f} s")

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=2, default=str) + "\n")
    console.print(f"results written to {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    if profiles:
        prof_path = out.with_name("profile.txt")
        prof_path.write_text("\n\n".join(f"===== {k} =====\n{v}" for k, v in profiles.items()))
        console.print(f"profiles written to "
                      f"{prof_path.relative_to(ROOT) if prof_path.is_relative_to(ROOT) else prof_path}")
    return 1 if "error" in res else 0


if __name__ == "__main__":
    sys.exit(main())
