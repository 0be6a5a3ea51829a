"""How costs grow (``run.py --only growth``): each cost measured at several sizes of the thing it
must not grow with, in one run, with raw pyarrow beside lakeformat where there is a floor, and a
plot of every curve (``results/growth.png``, matplotlib).

1. Commit latency against retained snapshots: ``--growth-commits`` (5,000) one-row appends into one
   table that keeps every snapshot (``snapshot.time-retained = 1 d``, so the expiration check after
   each commit runs and finds nothing due); median and p99 of each window of 250 commits (manifest
   merges included), and the filesystem calls of one commit early and late (a counting
   ``pyarrow.fs`` wrapper: each call is at least one request on S3).
2. Expiring that backlog: ``expire_backlog`` of all but 10 snapshots, steps of
   ``snapshot.expire.limit`` (10); the time per snapshot expired.
3. Streaming reads: net peak resident memory of ``to_batches()`` against table size (append tables
   of 2, 4 and 8 million rows; child processes, ``VmHWM``), beside pyarrow's own ``iter_batches``
   over the same files and lakeformat's whole ``read()``; a primary-key table merged with a 16 MB
   read buffer against ``read()``.
4. Manifest merging: ``merge_manifests`` of a manifest of N entries (days 1-27) plus 30 one-entry
   appends into day 28 (the periodic merge commit of a daily ingest: blocks copied), and the same
   with the last delta a compaction deleting 1% of the base (entries decoded, folded, the kept
   records copied); µs per entry, N = 1k, 10k, 50k; cold (the process's cache of decoded
   manifest blocks emptied before each run) and warm (blocks cached).
5. Planning: ``t.scan().plan()`` of tables of 1k, 5k, 10k and 50k files (100 partitions), ms per
   1k files, cold and warm, with the peak memory per planned file (tracemalloc, cold), and of one
   partition (a filter on ``dt``).
6. Orphan scan: ``remove_orphan_files(dry_run=True)`` of those tables, cold and warm.
"""
from __future__ import annotations

import datetime as dt
import gc
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa

from common import RESULTS, ROOT, console, lf

from tests.iocount import counting  # ROOT is on sys.path

CHILD = ROOT / "tests" / "unit" / "stream_memory_child.py"
SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string()), ("x", pa.float64())])
ONE = pa.schema([("id", pa.int64())])


def _rows(ids) -> pa.Table:
    ids = np.asarray(ids)
    return pa.table({"id": ids, "v": pa.array([f"value-{i % 1000}" for i in ids]), "x": ids * 0.5}, schema=SCHEMA)


def _p99(xs):
    return float(np.percentile(xs, 99)) if xs else None


# ------------------------------------------------------------------ 1 + 2: commits, backlog

def commits(tmp: Path, n: int, window: int = 250) -> dict:
    cat = lf.Catalog(str(tmp / "commits"))
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table("db.c", ONE, options={"snapshot.time-retained": "1 d", "snapshot.num-retained.min": "10"})
    handler = counting(t.io)
    times, cpu, gc2, calls = [], [], [], {}
    gc_start, gc_secs = [0.0], [0.0]

    def on_gc(phase, info):   # time in full (generation 2) collections during each commit
        if info["generation"] == 2:
            if phase == "start":
                gc_start[0] = time.perf_counter()
            else:
                gc_secs[0] += time.perf_counter() - gc_start[0]
    gc.callbacks.append(on_gc)
    for i in range(1, n + 1):
        w = t.new_write("bench")
        w.write(pa.table({"id": [i]}))
        messages = w.prepare_commit()
        handler.calls.clear()
        gc_secs[0] = 0.0
        start, start_cpu = time.perf_counter(), time.process_time()
        t.new_commit("bench").commit(messages)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        gc2.append(gc_secs[0])
        calls[i] = (tuple(sorted(handler.calls.items())), tuple(handler.listed))
        handler.listed.clear()
    gc.callbacks.remove(on_gc)
    # wall time, and the process's CPU time (what the load of other processes on a shared
    # machine does not add to): a tail in wall time with none in CPU time is waiting, not work
    windows = [{"snapshots": k + window, "median_ms": statistics.median(times[k:k + window]) * 1e3,
                "p99_ms": _p99(times[k:k + window]) * 1e3, "max_ms": max(times[k:k + window]) * 1e3,
                "cpu_median_ms": statistics.median(cpu[k:k + window]) * 1e3,
                "cpu_p99_ms": _p99(cpu[k:k + window]) * 1e3, "gc2_ms": sum(gc2[k:k + window]) * 1e3,
                "gc2_commits": sum(1 for x in gc2[k:k + window] if x)}
               for k in range(0, n - window + 1, window)]
    def usual(lo, hi):   # the most common calls of a commit in a window (merge commits aside)
        mode = Counter(calls[i] for i in range(lo, hi)).most_common(1)[0][0]
        return {"calls": dict(mode[0]), "listed": list(mode[1])}
    calls = {"first": usual(1, window + 1), "last": usual(n - window + 1, n + 1)}
    out = {"commits": n, "windows": windows, "calls": calls,
           "first_median_ms": windows[0]["median_ms"], "last_median_ms": windows[-1]["median_ms"],
           "last_over_first": windows[-1]["median_ms"] / windows[0]["median_ms"],
           "first_p99_ms": windows[0]["p99_ms"], "last_p99_ms": windows[-1]["p99_ms"],
           "p99_last_over_first": windows[-1]["p99_ms"] / windows[0]["p99_ms"],
           "cpu_p99_last_over_first": windows[-1]["cpu_p99_ms"] / windows[0]["cpu_p99_ms"],
           "cpu_median_last_over_first": windows[-1]["cpu_median_ms"] / windows[0]["cpu_median_ms"]}
    # 2: the backlog, all but the newest 10
    steps = []
    start = time.perf_counter()
    r = t.expire_backlog(older_than=dt.timedelta(0), progress=lambda done, total, what: steps.append(done))
    secs = time.perf_counter() - start
    out["backlog"] = {"expired": r.snapshots, "steps": len(steps), "seconds": secs,
                      "ms_per_snapshot": secs / max(r.snapshots, 1) * 1e3, "left": len(t.snapshots())}
    return out


# ------------------------------------------------------------------ 3: streaming memory

def _net_peak(wh: Path, how: str, buffer: str = "-") -> int:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, str(CHILD), str(wh), how, buffer], capture_output=True, text=True,
                         env=env, check=True).stdout
    return int(out.split()[1])


def streaming(tmp: Path, sizes: list[int]) -> dict:
    out = {"append": [], "primary_key": []}
    for n in sizes:
        wh = tmp / f"stream-{n}"
        cat = lf.Catalog(str(wh))
        cat.create_database("db")
        t = cat.create_table("db.t", SCHEMA, options={"target-file-size": "32 mb"})
        for k in range(0, n, 1_000_000):
            t.write(_rows(range(k, min(n, k + 1_000_000))))
        row = {"rows": n, "files": len(t.files()), "pyarrow_iter_batches_mib": _net_peak(wh, "pyarrow"),
               "to_batches_mib": _net_peak(wh, "stream"), "read_mib": _net_peak(wh, "read")}
        row["over_pyarrow"] = row["to_batches_mib"] / max(row["pyarrow_iter_batches_mib"], 1)
        out["append"].append(row)
        console.print(f"  streaming append {n:,} rows: {row}")
    for n in sizes[:2]:
        wh = tmp / f"stream-pk-{n}"
        cat = lf.Catalog(str(wh))
        cat.create_database("db")
        t = cat.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1", "write-only": "true"})
        rng = np.random.default_rng(0)
        for _ in range(3):
            t.write(_rows(rng.permutation(n)[: n // 3]))
        row = {"rows_written": n, "read_mib": _net_peak(wh, "read"),
               "to_batches_16mb_buffer_mib": _net_peak(wh, "stream", str(16 << 20))}
        out["primary_key"].append(row)
        console.print(f"  streaming primary key {n:,} rows: {row}")
    return out


# ------------------------------------------------------------------ 4: manifest merge

def merging(tmp: Path, sizes: list[int]) -> list[dict]:
    from lakeformat.commit.manifest_merge import merge_manifests
    from lakeformat.format.manifest import ADD, DELETE, DataFileMeta, ManifestEntry
    from lakeformat.io.manifests import ManifestFile
    from lakeformat.io import manifest_cache
    from lakeformat.format.binary_row import serialize_row
    out = []
    for n in sizes:
        cat = lf.Catalog(str(tmp / f"merge-{n}"))
        cat.create_database("db")
        t = cat.create_table("db.m", pa.schema([("id", pa.int64()), ("dt", pa.string())]), partition_keys=["dt"])
        types = [f.type for f in t.schema.partition_fields]
        mf = ManifestFile(t.io, t.path, types, 0)
        parts = [serialize_row([f"2024-01-{d:02d}"], types) for d in range(1, 29)]

        def entry(i, kind=ADD, part=None):
            return ManifestEntry(kind, parts[i % 27] if part is None else part, 0, -1, DataFileMeta(
                f"data-{i:08d}-0.parquet", 1000 + i, 10, min_sequence_number=i, max_sequence_number=i,
                creation_time_millis=1_700_000_000_000 + i))
        base = mf.write([entry(i) for i in range(n)])   # days 1-27; then 30 appends into day 28
        appends = [m for i in range(30) for m in mf.write([entry(n + i, part=parts[27])])]
        # a compaction among the deltas: DELETE entries that cancel entries of the base
        compaction = mf.write([entry(i, DELETE) for i in range(0, n, 100)])
        row = {"entries": n + 30}
        for label, metas in (("appends", base + appends), ("with_deletes", base + appends[:-1] + compaction)):
            for cache in ("", "_warm"):   # cold: the cache of decoded blocks emptied first
                runs, cpu = [], []
                for _ in range(3):
                    if not cache:
                        manifest_cache.CACHE.clear()
                    gc.collect()
                    start, start_cpu = time.perf_counter(), time.process_time()
                    merge_manifests(mf, metas, 8 << 20, 30, 1 << 40)
                    runs.append(time.perf_counter() - start)
                    cpu.append(time.process_time() - start_cpu)
                row[f"{label}{cache}_seconds"] = statistics.median(runs)
                row[f"{label}{cache}_us_per_entry"] = row[f"{label}{cache}_seconds"] / (n + 30) * 1e6
                row[f"{label}{cache}_cpu_us_per_entry"] = statistics.median(cpu) / (n + 30) * 1e6
        row["us_per_entry"] = row["appends_us_per_entry"]
        out.append(row)
        console.print(f"  manifest merge of {n + 30:,} entries: appends {row['appends_seconds'] * 1e3:.0f} ms "
                      f"({row['appends_us_per_entry']:.2f} µs/entry), with deletes "
                      f"{row['with_deletes_seconds'] * 1e3:.0f} ms "
                      f"({row['with_deletes_us_per_entry']:.1f} µs/entry, CPU "
                      f"{row['with_deletes_cpu_us_per_entry']:.1f}; "
                      f"{row['with_deletes_warm_us_per_entry']:.1f} with the blocks cached)")
    return out


# ------------------------------------------------------------------ 5 + 6: planning, orphans

def planning_and_orphans(tmp: Path, sizes: list[int]) -> tuple[list[dict], list[dict]]:
    import tracemalloc
    from lakeformat.io import manifest_cache
    plan, orphans = [], []
    for n in sizes:
        wh = tmp / f"plan-{n}"
        cat = lf.Catalog(str(wh))
        cat.create_database("db")
        t = cat.create_table("db.p", pa.schema([("id", pa.int64()), ("dt", pa.string())]), partition_keys=["dt"])
        per = n // 100
        day0 = dt.date(2024, 1, 1)
        for k in range(100):
            day = (day0 + dt.timedelta(days=k)).isoformat()
            messages = []
            for j in range(per):
                w = t.new_write("bench")
                w.write(pa.table({"id": [k * per + j], "dt": [day]}))
                messages += w.prepare_commit()
            t.new_commit("bench").commit(messages)
        middle = (day0 + dt.timedelta(days=50)).isoformat()
        runs = {k: [] for k in ("all", "all_warm", "one", "all_cpu", "all_warm_cpu")}
        for _ in range(5):
            manifest_cache.CACHE.clear()   # cold: nothing decoded yet in this process
            t2 = lf.Catalog(str(wh)).get_table("db.p")
            for key in ("all", "all_warm"):   # then warm: every block in the cache
                start, start_cpu = time.perf_counter(), time.process_time()
                files = sum(len(s.files) for s in t2.scan().plan())
                runs[key].append(time.perf_counter() - start)
                runs[key + "_cpu"].append(time.process_time() - start_cpu)
                t2 = lf.Catalog(str(wh)).get_table("db.p")
            manifest_cache.CACHE.clear()
            start = time.perf_counter()
            one = sum(len(s.files) for s in t2.scan(filter=lf.col("dt") == middle).plan())
            runs["one"].append(time.perf_counter() - start)
        assert files == n and one == per
        row = {"files": n, "all_ms": statistics.median(runs["all"]) * 1e3,
               "all_cpu_ms": statistics.median(runs["all_cpu"]) * 1e3,
               "all_warm_ms": statistics.median(runs["all_warm"]) * 1e3,
               "all_warm_cpu_ms": statistics.median(runs["all_warm_cpu"]) * 1e3,
               "one_partition_ms": statistics.median(runs["one"]) * 1e3}
        row["ms_per_1k_files"] = row["all_ms"] / (n / 1000)
        row["warm_ms_per_1k_files"] = row["all_warm_ms"] / (n / 1000)
        manifest_cache.CACHE.clear()
        gc.collect()
        tracemalloc.start()
        files = lf.Catalog(str(wh)).get_table("db.p").scan().plan()
        row["bytes_per_planned_file"] = tracemalloc.get_traced_memory()[1] / n   # peak, cache included
        tracemalloc.stop()
        del files
        plan.append(row)
        o = {"files": n, "listed": 0}
        for cache in ("", "_warm"):
            if not cache:
                manifest_cache.CACHE.clear()
            secs, cpu = [], []
            for _ in range(3 if n <= 10_000 else 1):
                start, start_cpu = time.perf_counter(), time.process_time()
                r = lf.Catalog(str(wh)).get_table("db.p").remove_orphan_files(dry_run=True)
                secs.append(time.perf_counter() - start)
                cpu.append(time.process_time() - start_cpu)
                if not cache:
                    manifest_cache.CACHE.clear()
            o["seconds" + cache] = statistics.median(secs)
            o["cpu_seconds" + cache] = statistics.median(cpu)
            o["listed"], o["orphans"] = r.listed, len(r.orphans)
        orphans.append(o)
        console.print(f"  planning {n:,} files: {row}; orphan scan {o['seconds']:.2f} s "
                      f"({o['seconds_warm']:.2f} s with the blocks cached)")
    return plan, orphans


# ------------------------------------------------------------------ all

def bench(tmp: Path, args) -> dict:
    quick = args.quick
    res = {}
    console.print("[bold]How costs grow")
    res["commits"] = commits(tmp, 500 if quick else args.growth_commits)
    c = res["commits"]
    console.print(f"  commits: median {c['first_median_ms']:.1f} ms (first 250) -> {c['last_median_ms']:.1f} ms "
                  f"(last 250) = {c['last_over_first']:.2f}x; "
                  f"p99 {c['first_p99_ms']:.1f} -> {c['last_p99_ms']:.1f} ms; calls {c['calls']}")
    console.print(f"  backlog: {c['backlog']}")
    res["streaming"] = streaming(tmp, [1_000_000, 2_000_000] if quick else [2_000_000, 4_000_000, 8_000_000])
    res["merge"] = merging(tmp, [1_000, 5_000] if quick else [1_000, 10_000, 50_000])
    res["planning"], res["orphans"] = planning_and_orphans(tmp,
                                                           [1_000, 2_000] if quick else [1_000, 5_000, 10_000, 50_000])
    plot(res, RESULTS / "growth.png")
    return res


def goals(g, add) -> None:
    """Issue 17's goals, judged on this run's figures."""
    if not g:
        return
    c = g["commits"]
    add(f"growth: commit median, last / first 250 of {c['commits']}", c["last_over_first"],
        c["last_over_first"] <= 1.3, "≤ 1.3×")
    add("growth: commit p99, last / first 250", c["p99_last_over_first"], c["p99_last_over_first"] <= 1.3, "≤ 1.3×")
    if "cpu_p99_last_over_first" in c:
        add("growth: commit p99 of CPU time, last / first 250 (what the load adds nothing to)",
            c["cpu_p99_last_over_first"], None, "shown only: the goal is wall time")
    same = c["calls"]["first"] == c["calls"]["last"]
    add("growth: filesystem calls of a commit, last 250 vs first 250", float(same), same, "equal",
        display=f"{sum(c['calls']['last']['calls'].values())} calls, {len(c['calls']['last']['listed'])} listings")
    m = g["merge"][-1]
    add(f"growth: manifest merge µs/entry at {m['entries']:,} (appends)", m["us_per_entry"], m["us_per_entry"] <= 10,
        "≤ 10", display=f"{m['us_per_entry']:.2f} µs")
    add(f"growth: manifest merge µs/entry at {m['entries']:,} (with deletes, cold)", m["with_deletes_us_per_entry"],
        m["with_deletes_us_per_entry"] <= 10, "≤ 10", display=f"{m['with_deletes_us_per_entry']:.1f} µs")
    add(f"growth: manifest merge CPU µs/entry at {m['entries']:,} (with deletes, cold)",
        m["with_deletes_cpu_us_per_entry"], None, "shown only: the goal is wall time",
        display=f"{m['with_deletes_cpu_us_per_entry']:.1f} µs")
    if "with_deletes_warm_us_per_entry" in m:
        add(f"growth: manifest merge µs/entry at {m['entries']:,} (with deletes, blocks cached)",
            m["with_deletes_warm_us_per_entry"], None, "shown only: goals are judged cold",
            display=f"{m['with_deletes_warm_us_per_entry']:.1f} µs")
    p = g["planning"][-1]
    add(f"growth: planning ms per 1k files at {p['files']:,} (cold)", p["ms_per_1k_files"], p["ms_per_1k_files"] <= 15,
        "≤ 15",
        display=f"{p['ms_per_1k_files']:.1f} ms")
    add(f"growth: planning CPU ms per 1k files at {p['files']:,} (cold)", p["all_cpu_ms"] / (p["files"] / 1000), None,
        "shown only: the goal is wall time", display=f"{p['all_cpu_ms'] / (p['files'] / 1000):.1f} ms")
    if "warm_ms_per_1k_files" in p:
        add(f"growth: planning ms per 1k files at {p['files']:,} (blocks cached)", p["warm_ms_per_1k_files"],
            None, "shown only: goals are judged cold", display=f"{p['warm_ms_per_1k_files']:.1f} ms")
        add(f"growth: planning memory per file at {p['files']:,} (peak, bytes)", p["bytes_per_planned_file"],
            p["bytes_per_planned_file"] <= 1024, "≤ 1 KB", display=f"{p['bytes_per_planned_file']:.0f} B")
    s = g["streaming"]["append"][-1]
    add(f"growth: to_batches peak / pyarrow iter_batches at {s['rows']:,} rows", s["over_pyarrow"],
        s["over_pyarrow"] <= 2, "≤ 2×")
    o = g["orphans"][-1]
    add(f"growth: orphan scan s at {o['files']:,} files, cold (goal: 50k files < 2 s)", o["seconds"],
        o["seconds"] < 2 if o["files"] >= 50_000 else None, "< 2 s at 50k", display=f"{o['seconds']:.2f} s")
    add(f"growth: orphan scan CPU s at {o['files']:,} files, cold", o["cpu_seconds"], None,
        "shown only: the goal is wall time", display=f"{o['cpu_seconds']:.2f} s")


def plot(res: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(2, 3, figsize=(15, 8))
    w = res["commits"]["windows"]
    a = ax[0][0]
    a.plot([x["snapshots"] for x in w], [x["median_ms"] for x in w], "o-", label="median")
    a.plot([x["snapshots"] for x in w], [x["p99_ms"] for x in w], "s--", label="p99")
    if all("cpu_p99_ms" in x for x in w):
        a.plot([x["snapshots"] for x in w], [x["cpu_p99_ms"] for x in w], "^:", label="p99 of CPU time")
    a.set(title="commit latency", xlabel="retained snapshots", ylabel="ms")
    a.legend()
    s = res["streaming"]["append"]
    a = ax[0][1]
    for key, label in (("to_batches_mib", "lakeformat to_batches"),
                       ("pyarrow_iter_batches_mib", "pyarrow iter_batches"),
                       ("read_mib", "lakeformat read()")):
        a.plot([x["rows"] / 1e6 for x in s], [x[key] for x in s], "o-", label=label)
    a.set(title="streaming read, append table", xlabel="million rows", ylabel="net peak RSS (MiB)")
    a.legend()
    p = res["streaming"]["primary_key"]
    a = ax[0][2]
    a.plot([x["rows_written"] / 1e6 for x in p], [x["read_mib"] for x in p], "o-", label="read()")
    a.plot([x["rows_written"] / 1e6 for x in p], [x["to_batches_16mb_buffer_mib"] for x in p], "o-",
           label="to_batches, 16 MB buffer")
    a.set(title="streaming read, primary-key table", xlabel="million rows written", ylabel="net peak RSS (MiB)")
    a.legend()
    m = res["merge"]
    a = ax[1][0]
    a.plot([x["entries"] for x in m], [x["appends_us_per_entry"] for x in m], "o-", label="appends (blocks copied)")
    a.plot([x["entries"] for x in m], [x["with_deletes_us_per_entry"] for x in m], "o-", label="with deletes (decoded)")
    if all("with_deletes_warm_us_per_entry" in x for x in m):
        a.plot([x["entries"] for x in m], [x["with_deletes_warm_us_per_entry"] for x in m], "o--",
               label="with deletes, blocks cached")
    a.set(title="manifest merge", xlabel="entries", ylabel="µs per entry", xscale="log", yscale="log")
    a.legend()
    pl = res["planning"]
    a = ax[1][1]
    a.plot([x["files"] for x in pl], [x["all_ms"] for x in pl], "o-", label="whole table")
    if all("all_warm_ms" in x for x in pl):
        a.plot([x["files"] for x in pl], [x["all_warm_ms"] for x in pl], "o--", label="whole table, blocks cached")
    a.plot([x["files"] for x in pl], [x["one_partition_ms"] for x in pl], "o-", label="one partition")
    a.set(title="scan planning", xlabel="files", ylabel="ms")
    a.legend()
    o = res["orphans"]
    a = ax[1][2]
    a.plot([x["files"] for x in o], [x["seconds"] for x in o], "o-", label="cold")
    if all("seconds_warm" in x for x in o):
        a.plot([x["files"] for x in o], [x["seconds_warm"] for x in o], "o--", label="blocks cached")
    a.legend()
    a.set(title="orphan scan (dry run)", xlabel="files", ylabel="s")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    console.print(f"  plot: {path}")
