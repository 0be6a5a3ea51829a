"""Cold-process costs (``run.py --only cold``): the first call of an operation in a fresh process
beside the same call made again in that process, and the import time of lakeformat beside
pyarrow's own.

Operations (sizes: ``--cold-rows``, ``--cold-pk-rows``): append write + commit of ``--cold-rows``
rows, full read of that append table, merge-on-read of a primary-key table written in 3
overlapping batches (write-only: 3 sorted runs per bucket), a commit of ``--cold-messages``
prepared one-row files, and the CLI's ``read`` of a small table (``main()`` called twice in one
process; the whole ``lakeformat read`` process is timed from outside too). Each runs in
``--cold-runs`` fresh processes (``cold_child.py``); the figures are medians: cold, warm, and cold
minus warm (the median of each process's difference). Everything is prepared by this process
first (the data generated once; tables written; commits prepared), nothing of it is timed.

Import times: ``import X`` timed inside ``--cold-runs`` x 2 fresh interpreters (medians), for
pyarrow alone, pyarrow with the parquet and compute modules lakeformat uses, lakeformat, and the
CLI's module. ``-X importtime`` of ``import lakeformat`` is summed by top-level package (own time).

What the difference consists of: one more process per operation runs the cold call under cProfile
and ``-X importtime``; the modules first imported during that call, summed by package, and the
top of the profile are in the JSON (``explain``).
"""
from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pyarrow.parquet as pq
from rich.table import Table as RichTable

from common import DAYS, ROOT, console, lf, median
from lakeformat.pipeline.demo_data import user_behavior

HERE = Path(__file__).resolve().parent
CHILD = HERE / "cold_child.py"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}   # children import this tree's lakeformat, wherever they start
OPS = ["write", "read", "merge-read", "commit", "cli-read"]
LABEL = {"write": "append write + commit", "read": "read of the append table", "merge-read": "merge-on-read (pk)",
         "commit": "commit of prepared messages", "cli-read": "CLI read of a small table"}
IMPORTS = {"pyarrow": "import pyarrow",
           "pyarrow + parquet + compute": "import pyarrow, pyarrow.parquet, pyarrow.compute",
           "numpy": "import numpy",
           "lakeformat": "import lakeformat",
           "lakeformat.cli.main": "import lakeformat.cli.main",
           "pandas (reference)": "import pandas",
           "polars (reference)": "import polars"}
GOAL_MS = 100   # each cold call within 100 ms of its warm time


def add_args(ap) -> None:
    ap.add_argument("--cold-runs", type=int, default=7, help="cold: fresh processes per operation")
    ap.add_argument("--cold-rows", type=int, default=300_000, help="cold: rows of the append write and read")
    ap.add_argument("--cold-pk-rows", type=int, default=100_000, help="cold: rows per batch of the pk table (3)")
    ap.add_argument("--cold-messages", type=int, default=100, help="cold: prepared one-row files committed")


def quick(args) -> None:
    args.cold_runs, args.cold_rows, args.cold_pk_rows, args.cold_messages = 3, 30_000, 10_000, 20


def _prepare(tmp: Path, args) -> Path:
    import primary_key as pkb
    d = tmp / "cold"
    d.mkdir()
    append = user_behavior(args.cold_rows, DAYS, seed=0)
    pq.write_table(append, d / "append.parquet")
    cat = lf.Catalog(str(d / "wh"))
    cat.create_database("db")
    cat.create_table("db.append", append.schema, partition_keys=["dt"]).write(append)
    batches = pkb.pk_batches(args.cold_pk_rows, 3, DAYS)
    t = cat.create_table("db.pk", batches[0].schema, partition_keys=["dt"], primary_keys=["dt", "user_id", "item_id"],
                         options={"bucket": "2", "write-only": "true"})
    for b in batches:
        t.write(b)
    small = user_behavior(1_000, DAYS, seed=3)
    cat.create_table("db.small", small.schema, partition_keys=["dt"]).write(small)
    tpl = d / "commit-template"
    c = lf.Catalog(str(tpl))
    c.create_database("db")
    ct = c.create_table("db.c", small.schema, partition_keys=["dt"])
    messages = []
    for i in range(args.cold_messages):
        w = ct.new_write("cold")
        w.write(small.slice(i, 1))
        messages += w.prepare_commit()
    (tpl / "messages.pkl").write_bytes(pickle.dumps(messages))
    return d


def _run_dir(d: Path, k: str) -> Path:
    """What one child needs: the shared tables (read only), fresh commit copies, a fresh place to write."""
    r = d / f"run-{k}"
    r.mkdir()
    for name in ("wh", "append.parquet"):
        (r / name).symlink_to(d / name)
    for i in range(2):
        shutil.copytree(d / "commit-template", r / f"commit-{i}")
    return r


def _child(op: str, work: Path, explain: bool = False) -> dict:
    cmd = [sys.executable] + (["-X", "importtime"] if explain else []) + [str(CHILD), op, str(work)] \
        + (["--explain"] if explain else [])
    p = subprocess.run(cmd, cwd=str(ROOT), capture_output=True, text=True, env=ENV)
    if p.returncode:
        raise RuntimeError(f"cold child {op} failed:\n{p.stderr[-3000:]}")
    out = json.loads([ln for ln in p.stdout.splitlines() if ln.startswith("@@")][-1][2:])
    if explain:
        own = {}
        for ln in p.stderr.splitlines():
            if ln.startswith("import time:") and "|" in ln:
                parts = ln[len("import time:"):].split("|")
                try:
                    self_us = int(parts[0])
                except ValueError:
                    continue
                own[parts[2].strip()] = self_us
        by_pkg: dict = {}
        for m in out["new_modules"]:
            if m in own:
                by_pkg[m.split(".")[0]] = by_pkg.get(m.split(".")[0], 0) + own[m] / 1e6
        out["imports_during_cold_call"] = dict(sorted(by_pkg.items(), key=lambda kv: -kv[1]))
    return out


def _fresh_process(argv: list[str]) -> float:
    import time
    start = time.perf_counter()
    subprocess.run(argv, cwd=str(ROOT), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    return time.perf_counter() - start


BYTECODE_MODES = ("pyarrow + parquet + compute", "lakeformat", "lakeformat.cli.main")


def import_times(runs: int, tmp: Path) -> dict:
    """Medians of ``import X`` timed in fresh interpreters, as this environment runs them, and
    for the modules of BYTECODE_MODES also without and with .pyc files whatever the venv holds:
    ``PYTHONPYCACHEPREFIX`` pointing at an empty folder (every module compiled from source, as
    where uv installed no .pyc files and PYTHONDONTWRITEBYTECODE is set) and at a folder primed
    by one import (every module's .pyc read)."""
    empty, primed = tmp / "pyc-empty", tmp / "pyc-primed"
    empty.mkdir()
    no_pyc = {**ENV, "PYTHONPYCACHEPREFIX": str(empty), "PYTHONDONTWRITEBYTECODE": "1"}
    pyc = {k: v for k, v in ENV.items() if k != "PYTHONDONTWRITEBYTECODE"}
    pyc["PYTHONPYCACHEPREFIX"] = str(primed)
    subprocess.run([sys.executable, "-c", "import lakeformat.cli.main"], cwd="/", check=True, env=pyc)   # primes
    jobs = [(name, stmt, ENV) for name, stmt in IMPORTS.items()]
    jobs += [(f"{name} (no .pyc)", IMPORTS[name], no_pyc) for name in BYTECODE_MODES]
    jobs += [(f"{name} (.pyc)", IMPORTS[name], pyc) for name in BYTECODE_MODES]
    out = {name: [] for name, _, _ in jobs}
    for _ in range(runs):
        for name, stmt, env in jobs:
            code = f"import time; t = time.perf_counter(); {stmt}; print(time.perf_counter() - t)"
            p = subprocess.run([sys.executable, "-c", code], cwd="/", capture_output=True, text=True, check=True,
                               env=env)
            out[name].append(float(p.stdout.strip()))
    res = {name: {"median": median(v), "runs": v} for name, v in out.items()}
    res["environment"] = {"PYTHONDONTWRITEBYTECODE": os.environ.get("PYTHONDONTWRITEBYTECODE"),
                          "pyarrow_has_pyc": any((Path(pa_file()).parent / "__pycache__").glob("*.pyc"))}
    p = subprocess.run([sys.executable, "-X", "importtime", "-c", "import lakeformat"], cwd="/", capture_output=True,
                       text=True, check=True, env=ENV)
    by_pkg: dict = {}
    for ln in p.stderr.splitlines():
        if ln.startswith("import time:") and "|" in ln:
            parts = ln[len("import time:"):].split("|")
            try:
                pkg = parts[2].strip().split(".")[0]
                by_pkg[pkg] = by_pkg.get(pkg, 0) + int(parts[0]) / 1e6
            except ValueError:
                pass
    res["lakeformat_importtime_by_package"] = dict(sorted(by_pkg.items(), key=lambda kv: -kv[1])[:15])
    return res


def pa_file() -> str:
    import pyarrow
    return pyarrow.__file__


def bench(tmp: Path, args) -> dict:
    console.print("[bold]cold. first call in a fresh process vs the same call warm[/]")
    d = _prepare(tmp, args)
    runs = {op: [] for op in OPS}
    cli_process, bare_python = [], []
    cli = [str(Path(sys.executable).with_name("lakeformat")), "--warehouse", str(d / "wh"), "read", "db.small",
           "--limit", "20"]
    for k in range(args.cold_runs):
        order = OPS[k % len(OPS):] + OPS[:k % len(OPS)]   # rotated, like every benchmark here
        for op in order:
            r = _run_dir(d, f"{k}-{op}")
            runs[op].append(_child(op, r))
            shutil.rmtree(r, ignore_errors=True)
        cli_process.append(_fresh_process(cli))
        bare_python.append(_fresh_process([sys.executable, "-c", "pass"]))
        console.print(f"  run {k + 1}/{args.cold_runs}: " + ", ".join(
            f"{op} {runs[op][-1]['cold'] * 1000:.0f}/{runs[op][-1]['warm'] * 1000:.0f} ms" for op in OPS))
    ops = {}
    for op in OPS:
        rs = runs[op]
        diff = [x["cold"] - x["warm"] for x in rs]
        ops[op] = {"label": LABEL[op], "cold": median([x["cold"] for x in rs]), "warm": median([x["warm"] for x in rs]),
                   "cold_minus_warm": median(diff), "cold_runs": [x["cold"] for x in rs],
                   "warm_runs": [x["warm"] for x in rs], "import_lakeformat": median([x["import_seconds"] for x in rs]),
                   "new_top_modules_in_cold_call": sorted({m for x in rs for m in x["new_top_modules"]}),
                   "within_goal": median(diff) <= GOAL_MS / 1000}
    explain = {}
    for op in OPS:
        r = _run_dir(d, f"explain-{op}")
        x = _child(op, r, explain=True)
        shutil.rmtree(r, ignore_errors=True)
        explain[op] = {"imports_during_cold_call_s": x["imports_during_cold_call"],
                       "modules_first_imported": x["new_modules"], "profile_top": x["profile"]}
    imports = import_times(max(args.cold_runs, 5), d)
    shutil.rmtree(d, ignore_errors=True)
    return {"runs": args.cold_runs, "rows": args.cold_rows, "pk_rows_per_batch": args.cold_pk_rows,
            "messages": args.cold_messages, "goal_ms": GOAL_MS, "operations": ops,
            "cli_fresh_process": {"median": median(cli_process), "runs": cli_process},
            "python_startup": {"median": median(bare_python), "runs": bare_python},
            "imports": imports, "explain": explain, "loadavg": list(os.getloadavg())}


def print_results(d: Optional[dict]) -> None:
    if not d:
        return
    t = RichTable(title=f"cold. First call in a fresh process (cold) vs the same call again (warm): medians of "
                        f"{d['runs']} processes; goal: cold − warm ≤ {d['goal_ms']} ms", title_justify="left")
    for col in ("operation", "cold ms", "warm ms", "cold − warm ms", "goal", "modules first imported by the cold call"):
        t.add_column(col,
                     justify="left" if col in ("operation", "modules first imported by the cold call") else "right")
    for r in d["operations"].values():
        t.add_row(r["label"], f"{r['cold'] * 1000:.0f}", f"{r['warm'] * 1000:.0f}",
                  f"{r['cold_minus_warm'] * 1000:.0f}",
                  "met" if r["within_goal"] else "MISSED", ", ".join(r["new_top_modules_in_cold_call"])[:70])
    console.print(t)
    console.print(f"  `lakeformat read` of the small table as a whole process: "
                  f"{d['cli_fresh_process']['median'] * 1000:.0f} ms "
                  f"(python -c pass: {d['python_startup']['median'] * 1000:.0f} ms)")
    t = RichTable(title="Import time in a fresh interpreter (medians)", title_justify="left")
    t.add_column("import")
    t.add_column("median ms", justify="right")
    for name, v in d["imports"].items():
        if isinstance(v, dict) and "median" in v:
            t.add_row(name, f"{v['median'] * 1000:.0f}")
    console.print(t)
    console.print("  -X importtime of `import lakeformat`, own time by package (ms): " + ", ".join(
        f"{k} {v * 1000:.0f}" for k, v in d["imports"]["lakeformat_importtime_by_package"].items()))
    for op, e in d["explain"].items():
        top = ", ".join(f"{k} {v * 1000:.0f}" for k, v in list(e["imports_during_cold_call_s"].items())[:6])
        console.print(f"  {op}: imports during the cold call (ms, -X importtime): {top or 'none'}")


def goals(d: Optional[dict], add) -> None:
    if not d:
        return
    for _op, r in d["operations"].items():
        add(f"cold: {r['label']}, cold − warm", r["cold_minus_warm"], r["within_goal"], f"≤ {d['goal_ms']} ms",
            display=f"{r['cold_minus_warm'] * 1000:.0f} ms")
