"""Compile to .pyc the installed packages that lakeformat's processes import (``make bytecode``).

uv installs no .pyc files, and where PYTHONDONTWRITEBYTECODE is set no process writes them: then
every interpreter compiles what it imports from source, which doubles the start-up of each
process (the CLI, Spark's driver and workers, Airflow tasks, the tests'). Compiling all of
site-packages (17,000 files, most of them never imported: sympy, scipy, cfn-lint...) took longer
than the rest of ``make setup``; this compiles the packages that a probe process imports when it
loads lakeformat's entry points, whole (their lazily imported submodules included).
"""
from __future__ import annotations

import compileall
import json
import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

# What the CLI, the jobs, the DAGs, the demo and the tests' servers import.
ENTRY_MODULES = (
    "lakeformat", "lakeformat.cli.main", "lakeformat.spark", "lakeformat.pipeline.jobs",
    "lakeformat.pipeline.local.demo", "lakeformat.pipeline.airflow.dags.ingest",
    "lakeformat.pipeline.airflow.plugin", "lakeformat.pipeline.quality", "great_expectations",
    "pyarrow.parquet", "pyarrow.compute", "pyarrow.dataset", "pyspark.sql", "pyspark.worker",
    "pandas", "moto.server", "pytest", "selenium.webdriver",
)

PROBE = """
import importlib, json, sys
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except Exception as e:   # a module that cannot load here still leaves what it imported
        print(f"{name}: {e}", file=sys.stderr)
print(json.dumps([getattr(m, "__file__", None) for m in list(sys.modules.values())]))
"""


def imported_packages(purelib: Path) -> list[Path]:
    """The top-level packages (or modules) under ``purelib`` that importing ENTRY_MODULES loads."""
    with tempfile.TemporaryDirectory() as home:   # importing airflow creates its home
        env = dict(os.environ, AIRFLOW_HOME=home, AIRFLOW__CORE__LOAD_EXAMPLES="False")
        out = subprocess.run([sys.executable, "-c", PROBE, *ENTRY_MODULES], env=env, capture_output=True,
                             text=True, check=True).stdout
    tops = set()
    for f in json.loads(out.strip().splitlines()[-1]):
        if f and Path(f).is_relative_to(purelib):
            tops.add(purelib / Path(f).relative_to(purelib).parts[0])
    return sorted(tops)


def main() -> int:
    purelib = Path(sysconfig.get_path("purelib"))
    root = Path(__file__).resolve().parents[1]
    targets = imported_packages(purelib) + [root / "lakeformat"]
    ok = True
    for t in targets:
        if t.is_dir():
            ok &= bool(compileall.compile_dir(t, quiet=1, workers=0))
        elif t.suffix == ".py":
            ok &= bool(compileall.compile_file(t, quiet=1))
    print(f"compiled {len(targets)} packages", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
