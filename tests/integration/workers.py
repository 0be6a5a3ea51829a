"""Worker processes for the concurrency and crash tests: ``python -m tests.integration.workers``.

Each worker commits rows whose ids encode (worker, commit) so the test can rebuild the model of
what must be in the table from what the workers acknowledged.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time

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


def table_write(args) -> None:
    """``Table.write`` for ``--seconds``, each call's outcome on stdout: the snapshot it returned,
    or the error it raised (a caller following the error's advice would write the rows again)."""
    t = catalog(args.warehouse, args.option).get_table(args.table)
    deadline, i = time.monotonic() + args.seconds, 0
    while time.monotonic() < deadline:
        i += 1
        try:
            snap = t.write(rows(args.worker, i, args.rows, f"p{i % 2}"))
            out = {"worker": args.worker, "commit": i, "snapshot": snap.id}
        except Exception as e:   # reported, the test decides
            out = {"worker": args.worker, "commit": i, "error": type(e).__name__, "message": str(e)[:300]}
        print(json.dumps(out), flush=True)


def maintain(args) -> None:
    """Compaction, snapshot expiration or orphan removal (no age limit) in a loop for ``--seconds``;
    failures are reported, never stop the loop."""
    t = catalog(args.warehouse, args.option).get_table(args.table)
    step = {"compact": lambda: t.compact(full=True),
            "expire": lambda: t.expire_snapshots(retain_min=2, retain_max=3, older_than=dt.timedelta(0)),
            "orphans": lambda: t.remove_orphan_files(older_than=dt.timedelta(0),
                                                     allow_deleting_in_flight_files=True)}[args.mode]
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        try:
            step()
            print(json.dumps({"mode": args.mode, "ok": True}), flush=True)
        except Exception as e:   # reported, the test decides
            print(json.dumps({"mode": args.mode, "error": type(e).__name__, "message": str(e)[:300]}), flush=True)
        time.sleep(0.05)


def main(argv=None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["append", "overwrite", "table-write", "compact", "expire", "orphans"])
    p.add_argument("warehouse")
    p.add_argument("table")
    p.add_argument("--worker", type=int, required=True)
    p.add_argument("--commits", type=int, default=25)
    p.add_argument("--rows", type=int, default=3)
    p.add_argument("--option", action="append", default=[])
    p.add_argument("--seconds", type=float, default=60)
    args = p.parse_args(argv)
    {"append": append, "overwrite": overwrite, "table-write": table_write, "compact": maintain,
     "expire": maintain, "orphans": maintain}[args.mode](args)


if __name__ == "__main__":
    sys.path.insert(0, os.getcwd())
    main()
