"""Deletion-vector benchmarks (``run.py --only dv``; part of the default run).

A primary-key table (id int64, 4 buckets, one partition) gets ``--dv-keys`` keys, then two update
batches rewriting a third of them each, one commit per batch:

  1. batch read of the table with ``deletion-vectors.enabled`` (each commit's compaction marked
     the replaced rows; the read applies the vectors per file, no merge), vs a raw pyarrow read of
     the same live rows saved as Parquet files (zstd, as many files), vs merge-on-read of the same
     rows in a table without deletion vectors (write-only: three sorted runs per bucket);
  2. compaction of one update batch into the table: merge-on-write (lookup + deletion vectors,
     ``t.compact()`` on a write-only deletion-vector table) beside plain compaction of the same
     table without deletion vectors (``t.compact(full=True)``, which rewrites everything).

Each timing is the median of ``--dv-runs`` runs; compactions run on fresh copies of the table.
"""
from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from rich.table import Table as RichTable

from common import console, fmt_s, fmt_x, lf, median, ratio

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("name", pa.string()), ("price", pa.float64()),
                    ("qty", pa.int64()), ("note", pa.string())])
DV_READ, RAW, MOR = "lakeformat deletion vectors", "raw pyarrow (zstd)", "lakeformat merge-on-read"
DV_COMPACT, PLAIN_COMPACT = "merge-on-write (deletion vectors)", "plain full compaction"
BASE = {"bucket": "4", "target-file-size": "32 mb"}


def add_args(ap) -> None:
    g = ap.add_argument_group("deletion-vector benchmarks (--only dv)")
    g.add_argument("--dv-keys", type=int, default=600_000, help="live keys after the updates")
    g.add_argument("--dv-runs", type=int, default=5, help="runs of each timing")


def quick(args) -> None:
    args.dv_keys, args.dv_runs = 60_000, 2


def batches(keys: int, seed: int = 7) -> list[pa.Table]:
    """All keys, then two updates of a third of the keys each (different thirds)."""
    rng = np.random.default_rng(seed)
    out = []
    for version, ids in enumerate((np.arange(keys), rng.permutation(keys)[: keys // 3],
                                   rng.permutation(keys)[: keys // 3])):
        ids = np.sort(ids)
        n = len(ids)
        out.append(pa.table({
            "id": ids, "name": pa.array([f"user-{i % 9973}-v{version}" for i in ids]),
            "price": rng.random(n) * 100, "qty": rng.integers(0, 1000, n),
            "note": pa.array(np.where(rng.random(n) < 0.5, "plain", "a longer note for some rows"))},
            schema=SCHEMA))
    return out


def create(wh: Path, options: dict):
    cat = lf.Catalog(str(wh))
    cat.create_database("db", ignore_if_exists=True)
    return cat.create_table("db.t", SCHEMA, primary_keys=["id"], options={**BASE, **options})


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def bench(tmp: Path, args, profiles: dict) -> dict:
    data = batches(args.dv_keys)
    root = tmp / "dv"
    dv = create(root / "dv", {"deletion-vectors.enabled": "true"})
    mor = create(root / "mor", {"write-only": "true"})
    for b in data:
        dv.write(b)
        mor.write(b)
    live = dv.read()
    assert live.num_rows == args.dv_keys, (live.num_rows, args.dv_keys)
    assert mor.read().num_rows == args.dv_keys
    raw_dir = root / "raw"
    raw_dir.mkdir()
    files = [f for f in dv.files()]
    per_file = -(-live.num_rows // len(files))
    for i in range(len(files)):
        pq.write_table(live.slice(i * per_file, per_file), raw_dir / f"part-{i}.parquet", compression="zstd")
    read = {DV_READ: [], RAW: [], MOR: []}
    for _ in range(args.dv_runs):
        read[RAW].append(timed(lambda: pq.read_table(raw_dir)))
        read[DV_READ].append(timed(dv.read))
        read[MOR].append(timed(mor.read))
    out = {"keys": args.dv_keys, "files": {"deletion vectors": len(files), "merge-on-read": len(mor.files())},
           "read": {k: {"runs": v, "median": median(v)} for k, v in read.items()}}

    # compaction of the last update batch: prepare a table holding the first two as max-level
    # runs and the third uncompacted, then time compacting it on fresh copies
    compact = {DV_COMPACT: [], PLAIN_COMPACT: []}
    for name, opts in ((DV_COMPACT, {"deletion-vectors.enabled": "true", "write-only": "true"}),
                       (PLAIN_COMPACT, {"write-only": "true"})):
        base = root / f"compact-{len(compact[name])}-{name[:5]}"
        t = create(base, opts)
        t.write(data[0])
        t.write(data[1])
        t.compact(full=True)
        t.write(data[2])
        for r in range(args.dv_runs):
            copy = root / f"copy-{r}"
            shutil.copytree(base, copy)
            c = lf.Catalog(str(copy)).get_table("db.t")
            compact[name].append(timed(lambda: c.compact() if name == DV_COMPACT else c.compact(full=True)))
            assert c.read().num_rows == args.dv_keys
            shutil.rmtree(copy)
    out["compaction"] = {k: {"runs": v, "median": median(v)} for k, v in compact.items()}
    shutil.rmtree(root, ignore_errors=True)
    return out


def print_results(d: Optional[dict]) -> None:
    if not d:
        return
    t = RichTable(title=f"deletion vectors: batch read of {d['keys']:,} live keys (median s)", title_justify="left")
    for col in ("reader", "median", "vs raw"):
        t.add_column(col)
    raw = d["read"][RAW]["median"]
    for k, v in d["read"].items():
        t.add_row(k, fmt_s(v["median"]), fmt_x(ratio(v["median"], raw)))
    console.print(t)
    t = RichTable(title="deletion vectors: compacting an update of a third of the keys (median s)",
                  title_justify="left")
    for col in ("compaction", "median"):
        t.add_column(col)
    for k, v in d["compaction"].items():
        t.add_row(k, fmt_s(v["median"]))
    console.print(t)


def goals(d: Optional[dict], add) -> None:
    if not d:
        return
    r = d["read"]
    x = ratio(r[DV_READ]["median"], r[RAW]["median"])
    add("dv read: lakeformat vs raw pyarrow", x, None if x is None else x <= 1.5, "≤ 1.50×")
    x = ratio(r[DV_READ]["median"], r[MOR]["median"])
    add("dv read: deletion vectors vs merge-on-read", x, None if x is None else x < 1.0, "< 1.00×")
    c = d["compaction"]
    x = ratio(c[DV_COMPACT]["median"], c[PLAIN_COMPACT]["median"])
    add("dv compaction: merge-on-write vs plain full compaction", x, None, "reported")
