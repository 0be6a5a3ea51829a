"""First calls side by side (``run.py --only fresh``): every contender's call in a fresh process.

A job, a CLI call or a Spark task makes one call in a new process, so this is the comparison a
user sees: for each round, each contender gets a new benchmark worker (``oracle_bench.py``: from
``.venv`` for lakeformat and raw pyarrow, ``.venv-oracle`` for pypaimon and pypaimon-rust) that
loads the input into memory and imports its library (neither timed), then makes the one timed call.
Rounds interleave the contenders, rotating their order; figures are medians over rounds.

- append write + commit: ``--rows`` × ``--batches`` of the ``write`` section, one commit per batch,
  partitioned by ``dt`` (lakeformat's partition split included), beside raw ``pq.write_table``
  (zstd 1) of the same batches;
- append read: the whole table lakeformat wrote in that round (raw pyarrow: its own files);
- merge-on-read: the primary-key table of the ``pk`` section (``--pk-rows`` × ``--pk-batches``,
  write-only: overlapping sorted runs per bucket), written once by lakeformat, read by each.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import pyarrow.compute as pc
import pyarrow.parquet as pq
from rich.table import Table as RichTable

from common import LF, ORACLE_PY, PYPAIMON, RAW_ZSTD, RUST, Oracle, console, fmt_s, fmt_x, median, ratio
import primary_key as pk

IMPL = {LF: "lakeformat", RAW_ZSTD: "raw", PYPAIMON: "pypaimon", RUST: "rust"}
WRITERS = [LF, RAW_ZSTD, PYPAIMON, RUST]
READERS = [LF, RAW_ZSTD, PYPAIMON, RUST]
MERGE_READERS = [LF, RUST]   # pypaimon takes ~6 s where these take ~0.2 s: the goal is against rust


def add_args(ap) -> None:
    ap.add_argument("--fresh-runs", type=int, default=3, help="fresh: rounds (a fresh process per call)")


def quick(args) -> None:
    args.fresh_runs = 2


def _call(tmp: Path, contender: str, files: list[Path], dataset: str, cmd: str, **kw) -> dict:
    """One fresh worker: load ``files`` (not timed), make the call, quit."""
    python = Path(sys.executable) if contender in (LF, RAW_ZSTD) else ORACLE_PY
    w = Oracle(tmp / f"fresh-{IMPL[contender]}.log", python=python)
    try:
        w.call("load", files=[str(f) for f in files], dataset=dataset)
        return w.call(cmd, impl=IMPL[contender], **({"dataset": dataset} if cmd == "write" else {}), **kw)
    finally:
        w.close()


def _rotate(xs: list[str], r: int) -> list[str]:
    return xs[r % len(xs):] + xs[:r % len(xs)]


def bench(tmp: Path, files: list[Path], args) -> dict:
    console.print("[bold]fresh. first calls, a fresh process per contender and call[/]")
    d = tmp / "fresh"
    d.mkdir()
    batches = [pq.read_table(f) for f in files]
    expected = {"rows": sum(b.num_rows for b in batches),
                "user_id_sum": sum(pc.sum(b.column("user_id")).as_py() for b in batches)}
    del batches
    pk_batches = pk.pk_batches(args.pk_rows, args.pk_batches)
    pk_wh = d / "pk-wh"
    pk.lf_write(pk_wh, pk.OPTIONS[pk.LF_WO], pk_batches)   # the shared table, not timed
    pk_rows = pk.latest_versions(pk_batches).num_rows
    del pk_batches
    out: dict = {k: {c: {"runs": [], "errors": []} for c in cs}
                 for k, cs in (("write", WRITERS), ("read", READERS), ("merge_read", MERGE_READERS))}

    def record(kind: str, c: str, r: int, fn) -> None:
        try:
            out[kind][c]["runs"].append(fn())
        except Exception as e:   # one failing contender must not sink the others
            out[kind][c]["errors"].append(f"round {r}: {e}")
            console.print(f"[red]fresh {kind} {c} round {r} failed: {e}")

    for r in range(args.fresh_runs):
        wh = {c: d / f"round-{r}" / IMPL[c] for c in WRITERS}
        for c in _rotate(WRITERS, r):
            record("write", c, r, lambda c=c: _call(tmp, c, files, "append", "write", warehouse=str(wh[c]),
                                                    partition_keys=["dt"])["seconds"])
        for c in _rotate(READERS, r):
            def read(c=c) -> float:
                res = _call(tmp, c, [], "append", "read", warehouse=str(wh[RAW_ZSTD if c == RAW_ZSTD else LF]),
                            table="db.t")
                got = {"rows": res["rows"], "user_id_sum": res["user_id_sum"]}
                if got != expected:
                    raise RuntimeError(f"read {got}, expected {expected}")
                return res["seconds"]
            record("read", c, r, read)
        for c in _rotate(MERGE_READERS, r):
            def merge_read(c=c) -> float:
                res = _call(tmp, c, [], "pk", "read", warehouse=str(pk_wh), table="db.t")
                if res["rows"] != pk_rows:
                    raise RuntimeError(f"read {res['rows']} rows, expected {pk_rows} (one per key)")
                return res["seconds"]
            record("merge_read", c, r, merge_read)
        console.print(f"  fresh round {r + 1}/{args.fresh_runs}: " + "; ".join(
            f"{kind} " + ", ".join(f"{c} {v['runs'][-1]:.2f}s" for c, v in cs.items() if len(v["runs"]) > r)
            for kind, cs in out.items()))
    for cs in out.values():
        for v in cs.values():
            v["median"] = median(v["runs"])
    out["pk_rows"], out["input_files"] = pk_rows, [f.name for f in files]
    return out


def _faster(res: dict, *cs: str) -> Optional[float]:
    ms = [res[c]["median"] for c in cs if res[c]["median"] is not None]
    return min(ms) if ms else None


def goals(f: Optional[dict], add) -> None:
    """Issue 31's targets, on first calls in fresh processes."""
    if not f:
        return
    w, r, m = f["write"], f["read"], f["merge_read"]
    x = ratio(w[LF]["median"], w[RAW_ZSTD]["median"])
    add("fresh append write: lakeformat vs raw pyarrow zstd", x, None if x is None else x <= 1.25, "≤ 1.25×")
    x = ratio(w[LF]["median"], _faster(w, PYPAIMON, RUST))
    add("fresh append write: lakeformat vs faster of pypaimon, pypaimon-rust", x, None if x is None else x <= 0.8,
        "≤ 0.80×")
    x = ratio(r[LF]["median"], r[RUST]["median"])
    add("fresh append read: lakeformat vs pypaimon-rust", x, None if x is None else x <= 0.8, "≤ 0.80×")
    x = ratio(m[LF]["median"], m[RUST]["median"])
    add("fresh merge-on-read: lakeformat vs pypaimon-rust", x, None if x is None else x <= 0.8, "≤ 0.80×")


def print_results(f: dict) -> None:
    t = RichTable(title="fresh. First calls: each contender's call in a fresh process (library imported, "
                        "input loaded, not timed); medians over rounds")
    for col in ("call", "contender", "median s", "runs s", "× lakeformat"):
        t.add_column(col, justify="left" if col in ("call", "contender") else "right")
    labels = {"write": "append write + commit", "read": "append read",
              "merge_read": f"merge-on-read ({f['pk_rows']:,} keys)"}
    for kind, label in labels.items():
        base = f[kind][LF]["median"]
        for c, v in f[kind].items():
            runs = " ".join(f"{x:.2f}" for x in v["runs"]) or "; ".join(v["errors"])
            t.add_row(label, c, fmt_s(v["median"]), runs, fmt_x(ratio(v["median"], base)))
    console.print(t)
