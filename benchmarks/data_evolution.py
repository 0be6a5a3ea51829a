"""Data-evolution read benchmark (``run.py --only de``; part of the default run).

An append table with ``row-tracking.enabled`` and ``data-evolution.enabled`` gets ``--de-rows`` rows
in ``--de-batches`` appends (one row id range, one file each), then ``Table.update_columns`` sets
two of its five columns for every row: each range is then two files, the original one and a file
of the two updated columns, merged by row id on read (each column from the newest file holding
it). Beside it: a plain append table holding the same final rows, one file per range.

Timed (median of ``--de-runs``): a full batch read of each table. The goal is the merged read
within 1.5× of the one-file read.
"""
from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Optional

import numpy as np
import pyarrow as pa
from rich.table import Table as RichTable

from common import console, fmt_s, fmt_x, lf, median, ratio

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("price", pa.float64()),
                    ("qty", pa.int64()), ("note", pa.string())])
MERGED, ONE_FILE = "data evolution (2 files per range)", "plain append (1 file per range)"
UPDATED = ("price", "note")


def add_args(ap) -> None:
    g = ap.add_argument_group("data-evolution benchmark (--only de)")
    g.add_argument("--de-rows", type=int, default=2_000_000, help="rows of the table")
    g.add_argument("--de-batches", type=int, default=4, help="appends (row id ranges)")
    g.add_argument("--de-runs", type=int, default=5, help="runs of each timing")


def quick(args) -> None:
    args.de_rows, args.de_runs = 200_000, 3


def rows(start: int, n: int, rng) -> pa.Table:
    ids = np.arange(start, start + n)
    return pa.table({"id": ids, "name": pa.array([f"user-{i % 9973}" for i in ids]),
                     "price": rng.random(n) * 100, "qty": rng.integers(0, 1000, n),
                     "note": pa.array(np.where(rng.random(n) < 0.5, "plain", "a longer note for some rows"))},
                    schema=SCHEMA)


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def bench(tmp: Path, args, profiles: dict) -> dict:
    rng = np.random.default_rng(11)
    root = tmp / "de"
    cat = lf.Catalog(str(root))
    cat.create_database("db", ignore_if_exists=True)
    de = cat.create_table("db.de", SCHEMA, options={"row-tracking.enabled": "true", "data-evolution.enabled": "true"})
    plain = cat.create_table("db.plain", SCHEMA)
    per = -(-args.de_rows // args.de_batches)
    for b in range(args.de_batches):
        de.write(rows(b * per, min(per, args.de_rows - b * per), rng))
    current = de.read(columns=["_ROW_ID", *UPDATED])
    update = pa.table({"_ROW_ID": current.column("_ROW_ID"), "price": rng.random(current.num_rows) * 50,
                       "note": pa.array(np.where(rng.random(current.num_rows) < 0.5, "new", "a newer note"))})
    de.update_columns(update)
    final = de.read()
    for b in range(args.de_batches):
        plain.write(final.slice(b * per, per))
    assert plain.read().equals(final)
    read: dict[str, list[float]] = {MERGED: [], ONE_FILE: []}
    for _ in range(args.de_runs):
        read[ONE_FILE].append(timed(plain.read))
        read[MERGED].append(timed(de.read))
    out = {"rows": args.de_rows, "ranges": args.de_batches,
           "files": {MERGED: len(de.files()), ONE_FILE: len(plain.files())},
           "read": {k: {"runs": v, "median": median(v)} for k, v in read.items()}}
    shutil.rmtree(root, ignore_errors=True)
    return out


def print_results(d: Optional[dict]) -> None:
    if not d:
        return
    t = RichTable(title=f"data evolution: batch read of {d['rows']:,} rows in {d['ranges']} row id ranges "
                        "(median s)", title_justify="left")
    for col in ("table", "files", "median", "vs one file"):
        t.add_column(col)
    base = d["read"][ONE_FILE]["median"]
    for k, v in d["read"].items():
        t.add_row(k, str(d["files"][k]), fmt_s(v["median"]), fmt_x(ratio(v["median"], base)))
    console.print(t)


def goals(d: Optional[dict], add) -> None:
    if not d:
        return
    r = d["read"]
    x = ratio(r[MERGED]["median"], r[ONE_FILE]["median"])
    add("de read: two column files per range vs one file", x, None if x is None else x <= 1.5, "≤ 1.50×")
