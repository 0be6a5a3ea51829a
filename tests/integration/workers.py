"""Worker processes for the concurrency and crash tests: ``python -m tests.integration.workers``.

Each worker commits rows whose ids encode (worker, commit) so the test can rebuild the model of
what must be in the table from what the workers acknowledged.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import pyarrow as pa

import lakeformat as lf

SCHEMA = pa.schema([("id", pa.int64()), ("worker", pa.int32()), ("p", pa.string())])


def rows(worker: int, commit: int, n: int, partition: str) -> pa.Table:
    base = (worker * 100_000 + commit) * 100_000
    return pa.table({"id": list(range(base, base + n)), "worker": [worker] * n, "p": [partition] * n},
                    schema=SCHEMA)


def catalog(warehouse: str, options: list[str]) -> lf.Catalog:
    return lf.Catalog(warehouse, **dict(o.split("=", 1) for o in options))


def append(args) -> None:
    """Commit ``n`` appends, each acknowledged on stdout once commit() returned."""
    t = catalog(args.warehouse, args.option).get_table(args.table)
    for i in range(1, args.commits + 1):
        w = t.new_write(f"w{args.worker}")
        w.write(rows(args.worker, i, args.rows, f"p{i % 2}"))
        snap = t.new_commit(f"w{args.worker}").commit(w.prepare_commit(), identifier=i)
        print(json.dumps({"worker": args.worker, "commit": i, "snapshot": snap.id}), flush=True)


def overwrite(args) -> None:
    """Repeatedly replace partition ``ow`` with the rows of commit i."""
    t = catalog(args.warehouse, args.option).get_table(args.table)
    for i in range(1, args.commits + 1):
        snap = t.write(rows(args.worker, i, args.rows, "ow"), overwrite={"p": "ow"})
        print(json.dumps({"worker": args.worker, "commit": i, "snapshot": snap.id}), flush=True)


def main(argv=None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["append", "overwrite"])
    p.add_argument("warehouse")
    p.add_argument("table")
    p.add_argument("--worker", type=int, required=True)
    p.add_argument("--commits", type=int, default=25)
    p.add_argument("--rows", type=int, default=3)
    p.add_argument("--option", action="append", default=[])
    args = p.parse_args(argv)
    {"append": append, "overwrite": overwrite}[args.mode](args)


if __name__ == "__main__":
    sys.path.insert(0, os.getcwd())
    main()
