"""Fixtures for the DAG tests. Airflow reads its configuration at first import, so every test
that parses or runs the DAGs does it in a fresh interpreter (dag_runner.py) with its own
AIRFLOW_HOME (a copy of one SQLite database migrated per session) and its own warehouse. This
process never imports airflow."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lakeformat.pipeline.local.airflow_home import airflow_env
from tests.project import CONFIG, DAGS, PLUGINS

HERE = Path(__file__).resolve().parent
RUNNER = HERE / "dag_runner.py"
DAYS = ["2024-06-01", "2024-06-02", "2024-06-03"]
BAD_DAY = "2024-06-03"
ROWS_PER_DAY = 2000


@pytest.fixture(scope="session")
def migrated_db(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("airflow-template")
    env = {**os.environ, **airflow_env(str(home), dags=str(DAGS), plugins=str(PLUGINS), config=str(CONFIG),
                                       warehouse=str(home / "unused"))}
    proc = subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return home / "airflow.db"


@pytest.fixture(scope="session")
def landing(tmp_path_factory) -> Path:
    """Landing files of both configured tables for DAYS; BAD_DAY breaks the quality rules."""
    root = tmp_path_factory.mktemp("landing")
    proc = subprocess.run([sys.executable, "-m", "lakeformat.pipeline.landing", "--landing", str(root),
                           "--start", DAYS[0], "--end", DAYS[-1], "--bad-day", BAD_DAY, "--seed", "7",
                           "--rows-per-day", str(ROWS_PER_DAY), "--config", str(CONFIG)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return root


class Airflow:
    """One embedded Airflow home and warehouse; ``parse()`` and ``run(...)`` each start a
    fresh interpreter. While it runs, its output grows in ``home/runner.out`` and ``.err`` (a
    test can watch a run get somewhere: ``output()``); afterwards both are added to
    ``home/runner.log``, every run in order."""

    def __init__(self, home: Path, warehouse: Path, landing: Path | None, config: Path = CONFIG):
        self.home, self.warehouse, self.landing, self.config = home, warehouse, landing, config

    def output(self) -> str:
        """What the running (or last) interpreter has printed so far."""
        return "".join(p.read_text() for p in (self.home / "runner.out", self.home / "runner.err") if p.exists())

    def _spawn(self, spec: dict, timeout: int) -> list[dict]:
        spec = {"home": str(self.home), "warehouse": str(self.warehouse), "dags": str(DAGS),
                "plugins": str(PLUGINS), "config": str(self.config),
                "landing": str(self.landing) if self.landing else None, **spec}
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "LAKEFORMAT_"))}
        with open(self.home / "runner.out", "w") as out, open(self.home / "runner.err", "w") as err:
            proc = subprocess.run([sys.executable, str(RUNNER), json.dumps(spec)], env={**env, "PYTHONUNBUFFERED": "1"},
                                  stdout=out, stderr=err, timeout=timeout, cwd=str(self.home))
        stdout, stderr = (self.home / "runner.out").read_text(), (self.home / "runner.err").read_text()
        with open(self.home / "runner.log", "a") as f:
            f.write(stdout + stderr)
        results = [json.loads(ln[len("RESULT "):]) for ln in stdout.splitlines() if ln.startswith("RESULT ")]
        assert proc.returncode == 0 and results, \
            f"dag runner failed (exit {proc.returncode}); log {self.home / 'runner.log'}:\n{stderr[-6000:]}"
        return results

    def parse(self, **spec) -> dict:
        return self._spawn({"parse": True, **spec}, timeout=300)[0]

    def run(self, *runs: dict, timeout: int = 600) -> list[dict]:
        return self._spawn({"runs": list(runs)}, timeout=timeout)


def _home(tmp_path: Path, migrated_db: Path) -> Path:
    home = tmp_path / "airflow"
    home.mkdir()
    shutil.copy(migrated_db, home / "airflow.db")
    return home


@pytest.fixture
def airflow_parse(tmp_path, migrated_db) -> Airflow:
    """An Airflow home for parsing only (no landing data)."""
    return Airflow(_home(tmp_path, migrated_db), tmp_path / "warehouse", None)
