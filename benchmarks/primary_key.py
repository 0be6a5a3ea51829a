"""Primary-key table benchmarks (``run.py --only pk``; part of the default run).

Four benchmarks on ``user_behavior`` rows with primary key (dt, user_id, item_id), partitioned by
dt, 4 buckets (see ``benchmarks/README.md``):

  1. upsert write + commit of 3 batches (later batches update about half of earlier keys):
     lakeformat (default options, and ``write-only``), pypaimon, pypaimon-rust, raw pyarrow;
  2. merge-on-read before compaction: each contender reads its own table, and all read
     lakeformat's write-only table (several sorted runs per bucket, the same files);
  3. full compaction of 5 sorted runs × 1,000,000 rows vs a raw read + write of those rows;
  4. peak RSS of a child process streaming 10,000,000 rows into a table with a 64 mb write buffer.

Run as a script it is the child process of benchmark 4 (``--memory-child``).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Optional
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from rich.table import Table as RichTable

from common import (DAYS, LF, ORACLE_IMPL, PYPAIMON, RUST, Oracle, OracleError, console, describe_files, fmt_s,
                    fmt_x, lf, lf_read, median, profiled, ratio, raw_write)
from lakeformat.pipeline.demo_data import SCHEMA, user_behavior
from oracle_bench import table_digest  # pyarrow only: shared with the oracle venv

KEYS = ["dt", "user_id", "item_id"]
PK_SCHEMA = pa.schema([f.with_nullable(False) if f.name in KEYS else f for f in SCHEMA])
BUCKETS = "4"
LF_WO = "lakeformat (write-only)"
RAW = "raw pyarrow (zstd)"
OPTIONS = {LF: {"bucket": BUCKETS}, LF_WO: {"bucket": BUCKETS, "write-only": "true"},
           PYPAIMON: {"bucket": BUCKETS}, RUST: {"bucket": BUCKETS}}
WRITERS = [LF, LF_WO, PYPAIMON, RUST, RAW]
SHARED = "lakeformat write-only table"
OWN = "own table"
# (reader, which table): every contender reads its own table; all read lakeformat's write-only one
READS = [(RAW, "3 raw Parquet files"), (LF, SHARED), (PYPAIMON, SHARED), (RUST, SHARED),
         (LF, OWN), (PYPAIMON, OWN), (RUST, OWN)]
MEM_GOAL_MB = 1536
PROFILE = {"sorts": ("cumulative", "tottime"), "threads": True}   # worker threads do most of the work


def add_args(ap: argparse.ArgumentParser) -> None:
    g = ap.add_argument_group("primary-key benchmarks (--only pk)")
    g.add_argument("--pk-rows", type=int, default=300_000, help="pk write/read: rows per batch")
    g.add_argument("--pk-batches", type=int, default=3, help="pk write/read: batches (one commit each)")
    g.add_argument("--pk-runs", type=int, default=3, help="pk write/read: runs (fresh warehouses each)")
    g.add_argument("--pk-read-repeat", type=int, default=3,
                   help="pk merge-on-read: reads per run of each fast reader (pypaimon reads once per run)")
    g.add_argument("--pk-update-fraction", type=float, default=0.5,
                   help="share of each later batch's rows that update keys of earlier batches")
    g.add_argument("--compact-rows", type=int, default=1_000_000, help="pk compaction: rows per sorted run")
    g.add_argument("--compact-batches", type=int, default=5, help="pk compaction: sorted runs (write-only batches)")
    g.add_argument("--compact-repeat", type=int, default=3, help="pk compaction: timed runs")
    g.add_argument("--mem-rows", type=int, default=10_000_000, help="pk memory: rows streamed into the table")
    g.add_argument("--mem-batch-rows", type=int, default=100_000, help="pk memory: rows per input RecordBatch")
    g.add_argument("--mem-buffer", default="64 mb", help="pk memory: write-buffer-size")


def quick(args) -> None:
    args.pk_rows, args.pk_runs, args.compact_rows, args.compact_repeat = 30_000, 2, 100_000, 1
    args.mem_rows = 1_000_000


# ------------------------------------------------------------------------------- data

def _day_starts(days: list[str]) -> np.ndarray:
    return np.array([int(dt.datetime.fromisoformat(d).timestamp() * 1000) for d in days], dtype=np.int64)


def _codes(day_idx: np.ndarray, users: np.ndarray, items: np.ndarray) -> np.ndarray:
    """One int64 per key (dt index, user_id ≤ 100,000, item_id ≤ 50,000)."""
    return (day_idx.astype(np.int64) * 100_001 + users) * 50_001 + items


def _day_index(tab: pa.Table, days: list[str]) -> np.ndarray:
    return pc.index_in(tab.column("dt"), pa.array(days)).to_numpy(zero_copy_only=False).astype(np.int64)


def pk_batches(rows: int, batches: int, days: list[str] = DAYS, seed: int = 0,
               update_fraction: float = 0.5) -> list[pa.Table]:
    """``batches`` tables of ``rows`` rows with distinct keys within each batch; batch 0 is all new
    keys, each later batch updates ``update_fraction`` of its rows' keys from earlier batches
    (new behavior, price and ts, same day) and inserts new keys for the rest. Rows are clustered
    by dt (as landing data is), shuffled within a day. Deterministic for a seed."""
    rng = np.random.default_rng(7_000 + seed)
    starts = _day_starts(days)
    seen_codes = np.empty(0, dtype=np.int64)
    seen = {"day": np.empty(0, np.int64), "user_id": np.empty(0, np.int64), "item_id": np.empty(0, np.int64)}
    out = []
    for b in range(batches):
        n_upd = 0 if b == 0 else round(rows * update_fraction)
        n_new = rows - n_upd
        fresh = user_behavior(int(n_new * 1.02) + 1000, days, seed=seed * 100 + b)
        day = _day_index(fresh, days)
        codes = _codes(day, fresh.column("user_id").to_numpy(), fresh.column("item_id").to_numpy())
        _, first = np.unique(codes, return_index=True)
        ok = np.zeros(len(codes), bool)
        ok[first] = True
        ok &= ~np.isin(codes, seen_codes)
        new_idx = np.sort(rng.choice(np.flatnonzero(ok), n_new, replace=False))
        new = fresh.take(pa.array(new_idx))
        parts = [new]
        if n_upd:
            pick = rng.choice(len(seen_codes), n_upd, replace=False)
            vals = user_behavior(n_upd, days, seed=seed * 100 + 50 + b)
            vday = _day_index(vals, days)
            offset = vals.column("ts").cast(pa.int64()).to_numpy() - starts[vday]
            uday = seen["day"][pick]
            parts.append(pa.table({
                "user_id": seen["user_id"][pick], "item_id": seen["item_id"][pick],
                "behavior": vals.column("behavior"), "price": vals.column("price"),
                "ts": pa.array(starts[uday] + offset, pa.timestamp("ms")),
                "dt": pa.array(np.array(days, dtype=object)[uday], pa.string())}))
        tab = pa.concat_tables([p.cast(PK_SCHEMA) for p in parts])
        tday = _day_index(tab, days)
        perm = rng.permutation(tab.num_rows)
        order = perm[np.argsort(tday[perm], kind="stable")]
        out.append(tab.take(pa.array(order)).combine_chunks())
        new_day = day[new_idx]
        seen_codes = np.concatenate([seen_codes, codes[new_idx]])
        seen["day"] = np.concatenate([seen["day"], new_day])
        seen["user_id"] = np.concatenate([seen["user_id"], new.column("user_id").to_numpy()])
        seen["item_id"] = np.concatenate([seen["item_id"], new.column("item_id").to_numpy()])
    return out


def latest_versions(batches: list[pa.Table], days: list[str] = DAYS) -> pa.Table:
    """The expected table after upserting ``batches`` in order: the newest version of each key."""
    taken = np.empty(0, dtype=np.int64)
    parts = []
    for tab in reversed(batches):
        codes = _codes(_day_index(tab, days), tab.column("user_id").to_numpy(), tab.column("item_id").to_numpy())
        keep = ~np.isin(codes, taken)
        parts.append(tab.filter(pa.array(keep)))
        taken = np.concatenate([taken, codes[keep]])
    return pa.concat_tables(parts)


def save(tabs: list[pa.Table], d: Path, stem: str) -> list[Path]:
    d.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, tab in enumerate(tabs):
        p = d / f"{stem}-{i}.parquet"
        pq.write_table(tab, p, compression="zstd", compression_level=1)
        paths.append(p)
    return paths


# ------------------------------------------------------------------------------- helpers

def create(wh: Path, options: dict, name: str = "db.t"):
    cat = lf.Catalog(str(wh))
    cat.create_database("db", ignore_if_exists=True)
    return cat.create_table(name, PK_SCHEMA, partition_keys=["dt"], primary_keys=KEYS, options=options)


def layout(wh: Path) -> dict:
    """Live files of a table (any writer's; lakeformat reads them all): per level, and the most
    sorted runs in one bucket (level-0 files each, plus one per non-empty higher level)."""
    files = lf.Catalog(str(wh)).get_table("db.t").files()
    levels: dict[str, int] = {}
    buckets: dict[tuple, dict] = {}
    for f in files:
        levels[str(f["level"])] = levels.get(str(f["level"]), 0) + 1
        b = buckets.setdefault((str(f["partition"]), f["bucket"]), {"l0": 0, "higher": set()})
        if f["level"] == 0:
            b["l0"] += 1
        else:
            b["higher"].add(f["level"])
    runs = max((b["l0"] + len(b["higher"]) for b in buckets.values()), default=0)
    return {"live_files": len(files), "levels": dict(sorted(levels.items())), "buckets": len(buckets),
            "max_sorted_runs_per_bucket": runs, "rows_in_files": sum(f["row_count"] for f in files),
            "live_bytes": sum(f["file_size"] for f in files)}


def _levels_str(lay: Optional[dict]) -> str:
    if not lay:
        return "—"
    levels = " ".join(f"L{k}:{v}" for k, v in lay["levels"].items())
    return f"{levels} ({lay['max_sorted_runs_per_bucket']} runs/bucket)"


def _wh_name(c: str) -> str:
    return c.replace(" ", "_").replace("(", "").replace(")", "")


def lf_write(wh: Path, options: dict, batches: list[pa.Table]) -> list[float]:
    t = create(wh, options)   # not timed
    per = []
    for tab in batches:
        start = time.perf_counter()
        t.write(tab)
        per.append(time.perf_counter() - start)
    return per


# ------------------------------------------------------------------------------- 1 + 2: upsert write, merge-on-read

def bench_write_read(tmp: Path, batches: list[pa.Table], expected: dict, oracle: Optional[Oracle], runs: int,
                     read_repeat: int, profile: bool, profiles: dict) -> tuple[dict, dict]:
    write = {c: {"runs": [], "per_batch": [], "errors": []} for c in WRITERS}
    read = {f"{c} | {what}": {"reader": c, "table": what, "runs": [], "errors": [], "checks": []}
            for c, what in READS}
    total_rows = sum(b.num_rows for b in batches)
    for r in range(runs):
        run_dir = tmp / f"pk-run-{r}"
        wh = {c: run_dir / _wh_name(c) for c in WRITERS}
        order = WRITERS[r % len(WRITERS):] + WRITERS[:r % len(WRITERS)]
        for c in order:
            try:
                if c in (LF, LF_WO):
                    per = lf_write(wh[c], OPTIONS[c], batches)
                elif c == RAW:
                    per = raw_write(wh[c], batches, compression="zstd", compression_level=1)
                else:
                    if oracle is None:
                        raise OracleError("oracle worker not available")
                    per = oracle.call("write", impl=ORACLE_IMPL[c], warehouse=str(wh[c]), partition_keys=["dt"],
                                      primary_keys=KEYS, options=OPTIONS[c], dataset="pk")["per_batch"]
                write[c]["runs"].append(sum(per))
                write[c]["per_batch"].append(per)
                write[c].update(describe_files(wh[c]))   # files on disk
                if c != RAW:   # live files (a writer's compaction leaves replaced, committed files on disk)
                    lay = write[c]["layout"] = layout(wh[c])
                    write[c].update({"files": lay["live_files"], "bytes": lay["live_bytes"]})
            except Exception as e:
                write[c]["errors"].append(f"run {r}: {e}")
                console.print(f"[red]pk write {c} run {r} failed: {e}")
        console.print(f"  pk write run {r + 1}/{runs}: " + ", ".join(
            f"{c} {write[c]['runs'][-1]:.2f}s" for c in order if len(write[c]["runs"]) > r))
        # reads rotate too; the fast readers read `read_repeat` times per run (the first one checked)
        rorder = [x for _ in range(read_repeat) for x in READS[r % len(READS):] + READS[:r % len(READS)]]
        for i, (c, what) in enumerate(rorder):
            key, check = f"{c} | {what}", i < len(READS)
            if c == PYPAIMON and not check:
                continue   # ~100x slower than the others: once per run
            try:
                table_wh = wh[LF_WO] if what == SHARED else wh[c]
                if c == RAW:
                    start = time.perf_counter()
                    out = pq.read_table(wh[RAW])
                    secs = time.perf_counter() - start
                    if out.num_rows != total_rows:
                        raise RuntimeError(f"read {out.num_rows} rows, expected {total_rows}")
                    read[key]["runs"].append(secs)
                    read[key]["rows"] = out.num_rows
                    del out
                    continue
                if c == LF:
                    secs, out = lf_read(table_wh)
                    digest = table_digest(out.select(PK_SCHEMA.names), KEYS) if check else None
                    rows = out.num_rows
                    del out
                else:
                    if oracle is None:
                        raise OracleError("oracle worker not available")
                    res = oracle.call("read", impl=ORACLE_IMPL[c], warehouse=str(table_wh), table="db.t",
                                      digest_keys=KEYS if check else None)
                    secs, digest, rows = res["seconds"], res.get("digest"), res["rows"]
                if check:
                    ok = digest == expected
                    read[key]["checks"].append(ok)
                    read[key]["digest"] = digest
                    if not ok:
                        raise RuntimeError(f"result differs from the expected table: {digest} vs {expected}")
                elif rows != expected["rows"]:
                    raise RuntimeError(f"read {rows} rows, expected {expected['rows']}")
                read[key]["runs"].append(secs)
                read[key]["rows"] = rows
            except Exception as e:
                read[key]["errors"].append(f"run {r}: {e}")
                console.print(f"[red]pk read {key} run {r} failed: {e}")
        console.print(f"  pk read  run {r + 1}/{runs}: " + ", ".join(
            f"{c} ({'shared' if what == SHARED else 'own' if what == OWN else 'raw'}) "
            f"{read[f'{c} | {what}']['runs'][-1]:.2f}s"
            for c, what in rorder[:len(READS)] if read[f"{c} | {what}"]["runs"]))
        shutil.rmtree(run_dir, ignore_errors=True)
    if profile:   # extra, untimed passes under cProfile
        for c in (LF, LF_WO):
            prof_wh = tmp / f"pk-profile-{_wh_name(c)}"
            profiled(True, f"pk write: {c} t.write x{len(batches)}",
                     lambda: lf_write(prof_wh, OPTIONS[c], batches), profiles, **PROFILE)
            if c == LF_WO:
                profiled(True, "pk merge-on-read: lakeformat t.read() of the write-only table",
                         lambda: lf_read(prof_wh), profiles, **PROFILE)
            shutil.rmtree(prof_wh, ignore_errors=True)
    for d in (write, read):
        for v in d.values():
            v["median"] = median(v["runs"])
    return write, read


# ------------------------------------------------------------------------------- 3: full compaction

def bench_compaction(tmp: Path, rows: int, batches: int, repeat: int, update_fraction: float,
                     profile: bool, profiles: dict) -> dict:
    """``batches`` write-only commits of ``rows`` rows into one partition (dt = DAYS[0]) of a
    4-bucket table: ``batches`` sorted runs per bucket. Timed: ``t.compact(full=True)`` on a fresh
    copy of that warehouse, vs ``pq.read_table`` of the same rows as ``batches`` raw files +
    ``pq.write_table`` of their concatenation."""
    days = DAYS[:1]
    data = pk_batches(rows, batches, days, seed=3, update_fraction=update_fraction)
    expected = table_digest(latest_versions(data, days), KEYS)
    raw_in = save(data, tmp / "compact-raw-in", "run")
    base = tmp / "compact-base"
    t = create(base, {"bucket": BUCKETS, "write-only": "true"})
    start = time.perf_counter()
    for tab in data:
        t.write(tab)
    build = time.perf_counter() - start
    del data
    before = layout(base)
    out = {"rows_per_run": rows, "runs_written": batches, "partitions": 1, "buckets": int(BUCKETS),
           "build_seconds": build, "layout_before": before, "expected_rows": expected["rows"],
           "lakeformat": {"runs": [], "errors": []}, RAW: {"runs": [], "errors": []}}
    console.print(f"  compaction table built in {build:.1f}s: {_levels_str(before)}, {before['rows_in_files']:,} rows "
                  f"in files, {expected['rows']:,} distinct keys")
    for r in range(repeat):
        order = [LF, RAW] if r % 2 == 0 else [RAW, LF]
        for c in order:
            try:
                if c == LF:
                    wh = tmp / f"compact-{r}"
                    shutil.copytree(base, wh)
                    t = lf.Catalog(str(wh)).get_table("db.t")   # not timed
                    start = time.perf_counter()
                    snap = t.compact(full=True)
                    secs = time.perf_counter() - start
                    after = layout(wh)
                    if snap is None or after["rows_in_files"] != expected["rows"] or len(after["levels"]) != 1:
                        raise RuntimeError(f"after compaction: {after}, expected {expected['rows']} rows in one level")
                    if r == 0:   # the merged content, once (reading 3M rows is not cheap)
                        got = table_digest(t.refresh().read().select(PK_SCHEMA.names), KEYS)
                        if got != expected:
                            raise RuntimeError(f"compacted table differs from the expected: {got} vs {expected}")
                    out[LF]["runs"].append(secs)
                    out[LF]["layout_after"] = after
                    out[LF].update({"files": after["live_files"], "bytes": after["live_bytes"]})
                    shutil.rmtree(wh, ignore_errors=True)
                else:
                    dst = tmp / f"compact-raw-{r}.parquet"
                    start = time.perf_counter()
                    tab = pa.concat_tables([pq.read_table(p) for p in raw_in])
                    pq.write_table(tab, dst, compression="zstd", compression_level=1)
                    secs = time.perf_counter() - start
                    del tab
                    out[RAW]["runs"].append(secs)
                    out[RAW].update({"files": 1, "bytes": dst.stat().st_size})
                    dst.unlink()
            except Exception as e:
                out[c]["errors"].append(f"run {r}: {e}")
                console.print(f"[red]pk compaction {c} run {r} failed: {e}")
        console.print(f"  compaction run {r + 1}/{repeat}: " + ", ".join(
            f"{c} {out[c]['runs'][-1]:.2f}s" for c in order if len(out[c]["runs"]) > r))
    if profile:
        wh = tmp / "compact-profile"
        shutil.copytree(base, wh)
        t = lf.Catalog(str(wh)).get_table("db.t")
        profiled(True, "pk compaction: lakeformat t.compact(full=True)", lambda: t.compact(full=True), profiles,
                 **PROFILE)
        shutil.rmtree(wh, ignore_errors=True)
    for c in (LF, RAW):
        out[c]["median"] = median(out[c]["runs"])
    out["ratio_lakeformat_over_raw"] = ratio(out[LF]["median"], out[RAW]["median"])
    shutil.rmtree(base, ignore_errors=True)
    return out


# ------------------------------------------------------------------------------- 4: peak memory (child process)

def stream(rows: int, batch_rows: int) -> Iterator[pa.RecordBatch]:
    """``rows`` user_behavior rows, generated one RecordBatch at a time (seed = batch number)."""
    for i, start in enumerate(range(0, rows, batch_rows)):
        tab = user_behavior(min(batch_rows, rows - start), DAYS, seed=10_000 + i).cast(PK_SCHEMA)
        yield from tab.to_batches()


def _status_mb(field: str = "VmHWM") -> Optional[float]:
    """A memory figure of this process from /proc/self/status, in MiB. VmHWM is the peak resident
    set; unlike ``ru_maxrss`` it starts afresh at exec (Linux carries the parent's high-water mark
    over into a child's ``ru_maxrss``)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


class _RssSampler:
    """Samples /proc/self/status every ``interval`` s in a thread: the peaks of anonymous memory
    (heap, Arrow buffers) and of file-backed resident pages (memory-mapped files, such as spilled
    runs) separately; VmHWM counts both."""

    def __init__(self, interval: float = 0.01):
        self.peaks = {"RssAnon": 0.0, "RssFile": 0.0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for k in self.peaks:
                v = _status_mb(k)
                if v is not None and v > self.peaks[k]:
                    self.peaks[k] = v
            self._stop.wait(0.01)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *_):
        self._stop.set()
        self._thread.join()


def _ru_maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024   # KiB on Linux


def memory_child(wh: Path, rows: int, batch_rows: int, buffer: str) -> dict:
    t = create(wh, {"bucket": BUCKETS, "write-buffer-size": buffer})
    base_hwm, base_ru = _status_mb(), _ru_maxrss_mb()
    reader = pa.RecordBatchReader.from_batches(PK_SCHEMA, stream(rows, batch_rows))
    with _RssSampler() as sampler:
        start = time.perf_counter()
        w = t.new_write("bench-memory")   # = t.write(reader), in its two phases to see where the peak is
        w.write(reader)
        hwm_ingest = _status_mb()         # every batch routed; buffers as full as they get
        ingest_secs = time.perf_counter() - start
        snap = t.new_commit("bench-memory").commit(w.prepare_commit())   # flush what is buffered, commit
        secs = time.perf_counter() - start
        hwm, ru = _status_mb(), _ru_maxrss_mb()
    peak = hwm if hwm is not None else ru
    # checks, after the peak is taken: distinct keys of the input vs rows in files and rows read
    codes = np.unique(np.concatenate([
        _codes(_day_index(pa.Table.from_batches([b]), DAYS), b.column("user_id").to_numpy(),
               b.column("item_id").to_numpy()) for b in stream(rows, batch_rows)]))
    lay = layout(wh)
    read_rows = sum(b.num_rows for b in t.refresh().to_batches(columns=["user_id"]))
    return {"rows": rows, "batch_rows": batch_rows, "write_buffer_size": buffer, "seconds": secs,
            "rows_per_s": rows / secs, "peak_rss_mb": peak, "vm_hwm_mb": hwm, "ru_maxrss_mb": ru,
            "ingest_seconds": ingest_secs, "peak_rss_before_prepare_commit_mb": hwm_ingest,
            "peak_anon_mb_sampled": sampler.peaks["RssAnon"], "peak_file_backed_mb_sampled": sampler.peaks["RssFile"],
            "arrow_pool": pa.default_memory_pool().backend_name,
            "arrow_pool_peak_mb": pa.default_memory_pool().max_memory() / 2**20,   # live Arrow allocations
            "rss_before_write_mb": base_hwm if base_hwm is not None else base_ru,
            "ru_maxrss_before_write_mb": base_ru, "parent_peak_rss_mb": _parent_peak_mb,
            "snapshot": snap.id if snap else None, "commit_kind": snap.commit_kind if snap else None,
            "distinct_keys": len(codes), "rows_read": read_rows, "layout": lay,
            "ok": read_rows == len(codes)}


_parent_peak_mb = None   # the spawning process's VmHWM, given to the child on its command line


def bench_memory(tmp: Path, rows: int, batch_rows: int, buffer: str) -> dict:
    wh = tmp / "pk-memory"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--memory-child", str(wh), "--rows", str(rows),
           "--batch-rows", str(batch_rows), "--buffer", buffer, "--parent-peak", str(_status_mb() or 0)]
    start = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - start
    shutil.rmtree(wh, ignore_errors=True)
    if p.returncode != 0:
        raise RuntimeError(f"memory child failed: {p.stderr[-3000:]}")
    out = json.loads(p.stdout.strip().splitlines()[-1])
    out["child_wall_seconds"] = wall
    return out


# ------------------------------------------------------------------------------- entry, report, goals

def bench(tmp: Path, oracle: Optional[Oracle], args, profiles: dict) -> dict:
    out: dict = {"keys": KEYS, "buckets": int(BUCKETS)}
    console.print("[bold]pk 1+2. upsert write and merge-on-read[/]")
    start = time.perf_counter()
    batches = pk_batches(args.pk_rows, args.pk_batches, update_fraction=args.pk_update_fraction)
    expected_table = latest_versions(batches)
    expected = table_digest(expected_table, KEYS)
    files = save(batches, tmp / "pk-input", "pk-batch")
    batches = [pq.read_table(f) for f in files]   # every contender loads the same bytes before timing
    out["data"] = {"rows_per_batch": args.pk_rows, "batches": args.pk_batches,
                   "update_fraction": args.pk_update_fraction, "total_rows": sum(b.num_rows for b in batches),
                   "distinct_keys": expected["rows"], "expected_digest": expected,
                   "input_files": [{"name": f.name, "bytes": f.stat().st_size} for f in files],
                   "generate_seconds": time.perf_counter() - start}
    console.print(f"  {args.pk_batches} batches × {args.pk_rows:,} rows, {expected['rows']:,} distinct keys")
    if oracle is not None:
        try:
            oracle.call("load", files=[str(f) for f in files], dataset="pk")
        except Exception as e:
            console.print(f"[red]oracle could not load the pk data: {e}")
            oracle = None
    out["write"], out["read"] = bench_write_read(tmp, batches, expected, oracle, args.pk_runs, args.pk_read_repeat,
                                                 args.profile, profiles)
    out["data"]["read_repeat"] = args.pk_read_repeat
    del batches, expected_table
    console.print("[bold]pk 3. full compaction[/]")
    try:
        out["compaction"] = bench_compaction(tmp, args.compact_rows, args.compact_batches, args.compact_repeat,
                                             args.pk_update_fraction, args.profile, profiles)
    except Exception as e:
        console.print(f"[red]pk compaction failed: {e}")
        out["compaction"] = {"error": str(e)}
    console.print("[bold]pk 4. peak memory of a streamed write[/]")
    try:
        m = out["memory"] = bench_memory(tmp, args.mem_rows, args.mem_batch_rows, args.mem_buffer)
        console.print(f"  {m['rows']:,} rows in {m['seconds']:.1f}s ({m['rows_per_s'] / 1e6:.2f} M rows/s), "
                      f"peak RSS {m['peak_rss_mb']:.0f} MB")
    except Exception as e:
        console.print(f"[red]pk memory failed: {e}")
        out["memory"] = {"error": str(e)}
    return out


def _runs(v: dict) -> str:
    return " ".join(f"{x:.2f}" for x in v["runs"]) or "; ".join(v["errors"])[:60]


def print_results(p: dict) -> None:
    d = p["data"]
    w, r = p["write"], p["read"]
    raw = w[RAW]["median"]
    t = RichTable(title=f"pk 1. Upsert write + commit: {d['batches']} batches × {d['rows_per_batch']:,} rows "
                        f"({d['update_fraction']:.0%} of each later batch updates earlier keys; "
                        f"{d['distinct_keys']:,} distinct keys), primary key ({', '.join(p['keys'])}), "
                        f"partitioned by dt, {p['buckets']} buckets, one commit per batch", title_justify="left")
    for col in ("contender", "median s", "runs s", "× raw zstd", "lakeformat / this", "write-only / this",
                "M rows/s", "files", "MB", "levels (max sorted runs per bucket)"):
        t.add_column(col, justify="left" if col in ("contender", "runs s", "levels (max sorted runs per bucket)")
                     else "right")
    for c in (RAW, LF, LF_WO, PYPAIMON, RUST):
        v = w[c]
        m = v["median"]
        t.add_row(c, fmt_s(m), _runs(v), fmt_x(ratio(m, raw)), fmt_x(ratio(w[LF]["median"], m)),
                  fmt_x(ratio(w[LF_WO]["median"], m)), "—" if not m else f"{d['total_rows'] / m / 1e6:.2f}",
                  str(v.get("files", "—")), "—" if "bytes" not in v else f"{v['bytes'] / 1e6:.1f}",
                  "—" if c == RAW else _levels_str(v.get("layout")))
    console.print(t)
    raw = r[f"{RAW} | {READS[0][1]}"]["median"]
    t = RichTable(title="pk 2. Merge-on-read before compaction (plan + read into one pyarrow.Table); every "
                        "result checked against the expected newest version of each key (sorted keys + row hash)",
                  title_justify="left")
    for col in ("reader", "table", "median s", "reads: min–max s", "× raw zstd", "lakeformat / this", "M rows/s",
                "rows", "same as expected"):
        t.add_column(col, justify="left" if col in ("reader", "table", "reads: min–max s") else "right")
    for c, what in READS:
        v = r[f"{c} | {what}"]
        m = v["median"]
        lf_same = r[f"{LF} | {what}"]["median"] if what in (SHARED, OWN) else None
        table = what
        if what == OWN:
            table = f"own ({'lakeformat, default options' if c == LF else 'written by ' + c})"
        spread = f"{len(v['runs'])}: {min(v['runs']):.3f}–{max(v['runs']):.3f}" if v["runs"] else _runs(v)
        t.add_row(c, table, fmt_s(m), spread, fmt_x(ratio(m, raw)), fmt_x(ratio(lf_same, m)),
                  "—" if not m else f"{v.get('rows', 0) / m / 1e6:.2f}", f"{v.get('rows', 0):,}",
                  "—" if c == RAW else ("yes" if v["checks"] and all(v["checks"]) else "NO"))
    console.print(t)
    lay = w[LF_WO].get("layout")
    if lay:
        console.print(f"  lakeformat write-only table: {_levels_str(lay)}, {lay['rows_in_files']:,} rows in files "
                      f"for {d['distinct_keys']:,} keys")
    c = p.get("compaction", {})
    if "error" in c:
        console.print(f"[red]pk 3. compaction: {c['error']}")
    elif c:
        t = RichTable(title=f"pk 3. Full compaction: {c['runs_written']} write-only commits × "
                            f"{c['rows_per_run']:,} rows into one partition × {c['buckets']} buckets "
                            f"({c['runs_written']} sorted runs per bucket, {c['expected_rows']:,} distinct keys) vs "
                            "raw read + write of the same rows",
                      title_justify="left")
        for col in ("contender", "median s", "runs s", "× raw", "M input rows/s", "live files after", "MB after"):
            t.add_column(col, justify="left" if col in ("contender", "runs s") else "right")
        total = c["rows_per_run"] * c["runs_written"]
        for name, label in ((RAW, f"{RAW}: read {c['runs_written']} files + write 1"),
                            (LF, "lakeformat t.compact(full=True)")):
            v = c[name]
            m = v["median"]
            t.add_row(label, fmt_s(m), _runs(v), fmt_x(ratio(m, c[RAW]["median"])),
                      "—" if not m else f"{total / m / 1e6:.2f}", str(v.get("files", "—")),
                      "—" if "bytes" not in v else f"{v['bytes'] / 1e6:.1f}")
        t.add_row("pypaimon / pypaimon-rust", "n/a", "no compaction in their Python write APIs", "", "", "", "")
        console.print(t)
        console.print(f"  before: {_levels_str(c['layout_before'])}; after: {_levels_str(c[LF].get('layout_after'))}")
    m = p.get("memory", {})
    if "error" in m:
        console.print(f"[red]pk 4. memory: {m['error']}")
    elif m:
        t = RichTable(title=f"pk 4. Peak memory: {m['rows']:,} rows streamed as RecordBatches of {m['batch_rows']:,} "
                            f"into one lakeformat table (write-buffer-size {m['write_buffer_size']}, default options), "
                            "one commit, in a child process", title_justify="left")
        for col in ("peak RSS MB (VmHWM)", "before prepare_commit", "anon / file-backed (sampled)",
                    "Arrow pool peak", "write+commit s", "M rows/s", "rows read back (= distinct keys)",
                    "levels after"):
            t.add_column(col, justify="right")
        t.add_row(f"{m['peak_rss_mb']:.0f}", fmt_s(m.get("peak_rss_before_prepare_commit_mb"), 0),
                  f"{fmt_s(m.get('peak_anon_mb_sampled'), 0)} / {fmt_s(m.get('peak_file_backed_mb_sampled'), 0)}",
                  fmt_s(m.get("arrow_pool_peak_mb"), 0), f"{m['seconds']:.1f}", f"{m['rows_per_s'] / 1e6:.2f}",
                  f"{m['rows_read']:,}" + (" (ok)" if m["ok"] else f" (MISMATCH: {m['distinct_keys']:,} keys)"),
                  _levels_str(m["layout"]))
        console.print(t)
        console.print(f"  RSS before writing {m['rss_before_write_mb']:.0f} MB; ru_maxrss {m['ru_maxrss_mb']:.0f} MB "
                      f"(a child's ru_maxrss starts at its parent's peak, here {fmt_s(m.get('parent_peak_rss_mb'), 0)} "
                      "MB, so VmHWM is the figure); all in MiB")


def goals(p: Optional[dict], add) -> None:
    if not p:
        return
    w, r = p["write"], p["read"]
    x = ratio(w[LF]["median"], w[RUST]["median"])
    add("pk write: lakeformat vs pypaimon-rust", x, None if x is None else x <= 1.0, "≤ 1.00×")
    x = ratio(w[LF_WO]["median"], w[RUST]["median"])
    add("pk write: lakeformat (write-only) vs pypaimon-rust", x, None if x is None else x <= 1.0, "≤ 1.00×")
    x = ratio(r[f"{LF} | {SHARED}"]["median"], r[f"{RUST} | {SHARED}"]["median"])
    add("pk merge-on-read (same table): lakeformat vs pypaimon-rust", x, None if x is None else x <= 0.8, "≤ 0.80×")
    c = p.get("compaction") or {}
    x = c.get("ratio_lakeformat_over_raw")
    add("pk full compaction: lakeformat vs raw read + write", x, None if x is None else x <= 3.0, "≤ 3.00×")
    m = p.get("memory") or {}
    mb = m.get("peak_rss_mb")
    add(f"pk peak RSS writing {m.get('rows', 0):,} rows (64 mb buffer)", mb,
        None if mb is None else mb < MEM_GOAL_MB, f"< {MEM_GOAL_MB} MB", display=None if mb is None else f"{mb:.0f} MB")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="child process of the pk memory benchmark")
    ap.add_argument("--memory-child", required=True, metavar="WAREHOUSE")
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--batch-rows", type=int, default=100_000)
    ap.add_argument("--buffer", default="64 mb")
    ap.add_argument("--parent-peak", type=float, default=None)
    a = ap.parse_args()
    _parent_peak_mb = a.parent_peak
    print(json.dumps(memory_child(Path(a.memory_child), a.rows, a.batch_rows, a.buffer)))
