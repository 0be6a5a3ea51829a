"""Fixtures for the plugin tests. Airflow reads its configuration when first imported, so every
test that runs Airflow itself (dag.test, the plugin manager, the API server) does it in a
subprocess with its own AIRFLOW_HOME; the in-process tests import only the plugin's modules,
with AIRFLOW_HOME pointed at a temporary directory before anything imports airflow."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = ROOT / "plugins"
HERE = Path(__file__).resolve().parent
PYTHON = sys.executable

if "airflow" not in sys.modules:   # in-process imports of airflow.sdk must not touch ~/airflow
    os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="lakeformat-plugin-airflow-"))
    os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")


def connection_json(warehouse: str, **fields) -> str:
    return json.dumps({"conn_type": "lakeformat", "host": warehouse, **fields})


def airflow_env(home: Path, warehouse: str | None = None, dags: Path | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "LAKEFORMAT_"))}
    env.update({
        "AIRFLOW_HOME": str(home), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(PLUGINS),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags or home / "dags"),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
        "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT)]),
    })
    if warehouse:
        env["AIRFLOW_CONN_LAKEFORMAT_DEFAULT"] = connection_json(warehouse)
    return env


@pytest.fixture(scope="session")
def migrated_db(tmp_path_factory) -> Path:
    """An Airflow metadata database (SQLite) migrated once; tests copy it."""
    home = tmp_path_factory.mktemp("airflow-template")
    proc = subprocess.run([PYTHON, "-m", "airflow", "db", "migrate"], env=airflow_env(home),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return home / "airflow.db"


@pytest.fixture
def airflow_home(tmp_path, migrated_db) -> Path:
    home = tmp_path / "airflow"
    (home / "dags").mkdir(parents=True)
    shutil.copy(migrated_db, home / "airflow.db")
    return home


def run_dag(home: Path, warehouse: str, dag_source: str, dag_id: str, runs: int = 1,
            timeout: int = 300) -> dict:
    """Write ``dag_source`` into the DAGs folder and run it ``runs`` times with dag.test() in a
    fresh interpreter; returns {"runs": [{"state", "tasks": {id: state}, "xcom": {id: value}}],
    "log": text}."""
    path = home / "dags" / f"{dag_id}.py"
    path.write_text(dag_source + f"\n\nif __name__ == '__main__':\n    import airflow_run\n"
                    f"    airflow_run.main(dag, {runs})\n")
    proc = subprocess.run([PYTHON, str(path)], env=airflow_env(home, warehouse), capture_output=True,
                          text=True, timeout=timeout, cwd=str(home))
    log = proc.stdout + proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT_MARK)]
    assert proc.returncode == 0 and lines, f"dag {dag_id} did not run:\n{log[-6000:]}"
    return {"runs": [json.loads(ln[len(RESULT_MARK):]) for ln in lines], "log": log}


RESULT_MARK = "AIRFLOW_RUN_RESULT "
