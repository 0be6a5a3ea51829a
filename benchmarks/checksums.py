"""Parquet page checksums' cost (``run.py --only checksums``; part of the default run).

lakeformat writes a CRC32 into every Parquet page header and verifies it on read, so that a
flipped bit fails the read instead of being read as data (``lakeformat/io/file_format.py``).
This writes the same ``--checksum-rows`` rows of the benchmark data to a fresh file with and
without checksums, with the settings of lakeformat's writer (zstd level 1, no column statistics,
row groups of 2^20 rows), and reads each file back whole (verifying when it has checksums).
On / off alternate in order from run to run; each figure is the median of ``--checksum-runs``
runs, wall clock and the process's CPU time. The goals take CPU time: the work checksums add. The
wall time of a threaded read also says whether the other cores were free, which on a shared
2-core machine swings more than the checksums cost.
"""
from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Optional

import pyarrow.parquet as pq
from rich.table import Table as RichTable

from common import DAYS, console, fmt_ms, median, ratio   # common puts the project on sys.path
from lakeformat.pipeline.demo_data import user_behavior

ON, OFF = "checksums", "no checksums"


def add_args(ap) -> None:
    g = ap.add_argument_group("page checksum benchmark (--only checksums)")
    g.add_argument("--checksum-rows", type=int, default=2_000_000, help="rows written and read")
    g.add_argument("--checksum-runs", type=int, default=15, help="runs of each timing")


def quick(args) -> None:
    args.checksum_rows, args.checksum_runs = 200_000, 3


def _timed(fn) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def _write(path: Path, data, checksums: bool) -> None:
    with pq.ParquetWriter(path, data.schema, compression="zstd", compression_level=1, write_statistics=False,
                          write_page_checksum=checksums) as w:
        w.write_table(data, row_group_size=1 << 20)


def _read(path: Path, checksums: bool, rows: int) -> None:
    table = pq.ParquetFile(path, page_checksum_verification=checksums).read(use_threads=True)
    assert table.num_rows == rows, (table.num_rows, rows)


def bench(tmp: Path, args, profiles: dict) -> dict:
    data = user_behavior(args.checksum_rows, DAYS, seed=11)
    root = tmp / "checksums"
    root.mkdir()
    times = {(op, kind, mode): [] for op in ("write", "read") for mode in (ON, OFF) for kind in ("wall", "cpu")}
    sizes = {}
    for r in range(args.checksum_runs):
        for mode in ((ON, OFF) if r % 2 == 0 else (OFF, ON)):
            path = root / f"run-{r}-{mode.replace(' ', '-')}.parquet"
            for op, fn in (("write", lambda: _write(path, data, mode == ON)),
                           ("read", lambda: _read(path, mode == ON, args.checksum_rows))):
                wall, cpu = _timed(fn)
                times[op, "wall", mode].append(wall)
                times[op, "cpu", mode].append(cpu)
            sizes[mode] = path.stat().st_size
            path.unlink()
    shutil.rmtree(root, ignore_errors=True)
    out = {"rows": args.checksum_rows, "runs": args.checksum_runs, "bytes": sizes}
    for op in ("write", "read"):
        out[op] = {mode: {kind: {"runs": times[op, kind, mode], "median": median(times[op, kind, mode])}
                          for kind in ("wall", "cpu")} for mode in (ON, OFF)}
        out[op]["ratio"] = {kind: ratio(out[op][ON][kind]["median"], out[op][OFF][kind]["median"])
                            for kind in ("wall", "cpu")}
    return out


def print_results(d: Optional[dict]) -> None:
    if not d:
        return
    t = RichTable(title=f"checksums: one Parquet file of {d['rows']:,} rows with / without page checksums "
                        f"(medians of {d['runs']} runs, ms)", title_justify="left")
    for col in ("", "with wall", "without wall", "ratio wall", "with CPU", "without CPU", "ratio CPU"):
        t.add_column(col, justify="right")
    for op in ("write", "read"):
        x = d[op]
        t.add_row(op, fmt_ms(x[ON]["wall"]["median"]), fmt_ms(x[OFF]["wall"]["median"]), f"{x['ratio']['wall']:.3f}×",
                  fmt_ms(x[ON]["cpu"]["median"]), fmt_ms(x[OFF]["cpu"]["median"]), f"{x['ratio']['cpu']:.3f}×")
    console.print(t)
    console.print(f"  file bytes: {d['bytes'][ON]:,} with, {d['bytes'][OFF]:,} without")


def goals(d: Optional[dict], add) -> None:
    if not d:
        return
    for op in ("write", "read"):
        x = d[op]["ratio"]["cpu"]
        add(f"checksums: {op} with / without page checksums (CPU)", x, None if x is None else x <= 1.05, "≤ 1.05×",
            None if x is None else f"{x:.3f}×")
