"""Processes for the dedicated compaction test: ``python -m tests.integration.compaction_workers``.

``write`` commits continuously to a ``write-only`` table (never compacting, never expiring) and
acknowledges each commit with the sorted runs it then sees; ``compact`` compacts the same
partitions in a loop, as a dedicated compaction job does (which also expires snapshots), until
a stop file appears, then compacts once more fully. Every commit's rows derive from its number,
so the test rebuilds the exact expected table from the acknowledgements.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

import lakeformat as lf

PARTITIONS = ("a", "b")
KEYS = 400            # primary keys per partition
PK_SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.int64()), pa.field("dt", pa.string(), False)])
APPEND_SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("dt", pa.string())])


def pk_upserts(commit: int, dt: str) -> pa.Table:
    rng = np.random.default_rng(commit * 7 + PARTITIONS.index(dt))
    ids = np.sort(rng.choice(KEYS, size=40, replace=False))
    return pa.table({"id": ids, "v": commit * 1_000_000 + ids, "dt": [dt] * len(ids)}, schema=PK_SCHEMA)


def pk_deletes(commit: int, dt: str) -> pa.Table:
    """Every third commit deletes a few keys (after its upserts: deletes win)."""
    if commit % 3:
        return PK_SCHEMA.empty_table()
    rng = np.random.default_rng(10_000 + commit * 7 + PARTITIONS.index(dt))
    ids = np.sort(rng.choice(KEYS, size=8, replace=False))
    return pa.table({"id": ids, "v": pa.nulls(len(ids), pa.int64()), "dt": [dt] * len(ids)}, schema=PK_SCHEMA)


def appends(commit: int, dt: str) -> pa.Table:
    n = 30 + commit % 7
    ids = commit * 1000 + PARTITIONS.index(dt) * 100 + np.arange(n)
    return pa.table({"id": ids, "v": ids * 3, "dt": [dt] * n}, schema=APPEND_SCHEMA)


def max_sorted_runs(t: lf.Table) -> int:
    runs = t.system_table("buckets").column("sorted_runs").to_pylist()
    return max(runs, default=0)


def write(args) -> None:
    t = lf.Catalog(args.warehouse).get_table(args.table)
    pk = bool(t.primary_keys)
    user = "writer"
    for i in range(1, args.commits + 1):
        w = t.new_write(user)
        for dt in PARTITIONS:
            if pk:
                w.write(pk_upserts(i, dt))
                deletes = pk_deletes(i, dt)
                if deletes.num_rows:
                    w.write(deletes, row_kind=3)
            else:
                w.write(appends(i, dt))
        messages = w.prepare_commit()
        commit = t.new_commit(user)
        try:
            snap = commit.commit(messages, identifier=i)
        except BaseException:
            commit.abort(messages)
            raise
        print(json.dumps({"commit": i, "snapshot": snap.id, "runs": max_sorted_runs(t)}), flush=True)
        time.sleep(args.pause)


def compact(args) -> None:
    stop = Path(args.stop)
    parts = [{"dt": dt} for dt in PARTITIONS]
    rounds = 0
    while True:
        last = stop.exists()
        t = lf.Catalog(args.warehouse).get_table(args.table)
        started = time.monotonic()
        runs = max_sorted_runs(t)
        snap = t.compact(full=last, partitions=None if last else parts)
        rounds += 1
        print(json.dumps({"round": rounds, "runs_before": runs, "snapshot": snap.id if snap else None,
                          "seconds": round(time.monotonic() - started, 3), "final": last}), flush=True)
        if last:
            return
        time.sleep(args.pause)


def main(argv=None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["write", "compact"])
    p.add_argument("warehouse")
    p.add_argument("table")
    p.add_argument("--commits", type=int, default=50)
    p.add_argument("--pause", type=float, default=0.0)
    p.add_argument("--stop", help="compact: finish (one full compaction) once this file exists")
    args = p.parse_args(argv)
    {"write": write, "compact": compact}[args.mode](args)


if __name__ == "__main__":
    sys.path.insert(0, os.getcwd())
    main()
