"""One fresh process of the cold-start benchmark (``cold.py``): imports lakeformat, makes the first
call of one operation (cold), then the same call again (warm), and prints one JSON line.

    cold_child.py OP WORKDIR [--explain]

Everything an operation needs was prepared by the parent in WORKDIR (tables, data files,
prepared commits); only the calls are timed. The modules first imported during the cold call are
reported (``new_modules``); with ``--explain`` the cold call also runs under cProfile (its top
entries are reported; the timings of such a run are not used)."""
from __future__ import annotations

import time

T0 = time.perf_counter()
import sys  # noqa: E402

BEFORE_IMPORT = set(sys.modules)
import lakeformat as lf  # noqa: E402

IMPORT_SECONDS = time.perf_counter() - T0

import contextlib  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import pickle  # noqa: E402
from pathlib import Path  # noqa: E402


def prepare(op: str, work: Path):
    """Two calls' worth of untimed set-up; returns (cold call, warm call)."""
    if op == "write":
        import pyarrow.parquet as pq
        data = pq.ParquetFile(work / "append.parquet").read()
        tables = []
        for i in range(2):
            cat = lf.Catalog(str(work / f"write-{i}"))
            cat.create_database("db")
            tables.append(cat.create_table("db.t", data.schema, partition_keys=["dt"]))
        return [lambda t=t: t.write(data) for t in tables]
    if op == "read":
        return [lambda: lf.Catalog(str(work / "wh")).get_table("db.append").read() for _ in range(2)]
    if op == "merge-read":
        return [lambda: lf.Catalog(str(work / "wh")).get_table("db.pk").read() for _ in range(2)]
    if op == "commit":
        calls = []
        for i in range(2):
            t = lf.Catalog(str(work / f"commit-{i}")).get_table("db.c")
            messages = pickle.loads((work / f"commit-{i}" / "messages.pkl").read_bytes())
            calls.append(lambda t=t, m=messages: t.new_commit("cold").commit(m))
        return calls
    if op == "cli-read":
        from lakeformat.cli.main import main
        argv = ["--warehouse", str(work / "wh"), "read", "db.small", "--limit", "20"]

        def cli():
            with contextlib.redirect_stdout(io.StringIO()):
                rc = main(argv)
            assert rc in (0, None), rc
        return [cli, cli]
    raise SystemExit(f"unknown operation {op!r}")


def main() -> None:
    op, work = sys.argv[1], Path(sys.argv[2])
    explain = "--explain" in sys.argv
    cold, warm = prepare(op, work)
    if explain:
        import cProfile
        import pstats
    before = set(sys.modules)
    profile = None
    if explain:
        prof = cProfile.Profile()
        start = time.perf_counter()
        prof.runcall(cold)
        cold_s = time.perf_counter() - start
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(30)
        profile = s.getvalue()
    else:
        start = time.perf_counter()
        cold()
        cold_s = time.perf_counter() - start
    new = sorted(set(sys.modules) - before)
    start = time.perf_counter()
    warm()
    warm_s = time.perf_counter() - start
    print("@@" + json.dumps({"op": op, "import_seconds": IMPORT_SECONDS, "cold": cold_s, "warm": warm_s,
                             "new_modules": new, "new_top_modules": sorted({m.split(".")[0] for m in new}),
                             "imported_by_lakeformat": sorted({m.split(".")[0]
                                                               for m in set(sys.modules) - BEFORE_IMPORT}),
                             "profile": profile}))


if __name__ == "__main__":
    main()
