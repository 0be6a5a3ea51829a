"""One committing process of the commit-throughput benchmark (started by ``run.py``).

Imports, opens the table and prints ``ready``, then waits for a line on stdin, so that
interpreter start-up is outside the measured window and all processes start committing together.
Each commit writes a few rows into one of two shared partitions, then ``commit()``; only the
``commit()`` call is timed per commit. Prints one JSON line: latencies, retries (lost races for a
snapshot id, from the one FileStoreCommit the process uses) and the wall-clock end time.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa

import lakeformat as lf

SCHEMA = pa.schema([("id", pa.int64()), ("worker", pa.int32()), ("p", pa.string())])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("warehouse")
    ap.add_argument("table")
    ap.add_argument("--worker", type=int, required=True)
    ap.add_argument("--commits", type=int, default=20)
    ap.add_argument("--rows", type=int, default=5)
    ap.add_argument("--option", action="append", default=[])
    args = ap.parse_args()
    t = lf.Catalog(args.warehouse, **dict(o.split("=", 1) for o in args.option)).get_table(args.table)
    user = f"bench-{args.worker}"
    committer = t.new_commit(user)
    print("ready", flush=True)
    sys.stdin.readline()
    latencies = []
    for i in range(1, args.commits + 1):
        base = (args.worker * 10_000 + i) * args.rows
        w = t.new_write(user)
        w.write(pa.table({"id": range(base, base + args.rows), "worker": [args.worker] * args.rows,
                          "p": [f"p{i % 2}"] * args.rows}, schema=SCHEMA))
        messages = w.prepare_commit()
        start = time.perf_counter()
        committer.commit(messages, identifier=i)
        latencies.append(time.perf_counter() - start)
    print(json.dumps({"worker": args.worker, "latencies": latencies, "retries": committer.retries,
                      "end": time.time()}), flush=True)


if __name__ == "__main__":
    main()
