"""Airflow on embedded defaults: a temporary SQLite home, the given DAGs and plugins folders, and
runs with ``dag.test()`` in this process (the real operators, SparkSubmitOperator included;
no scheduler, no server). ``make demo`` and the DAG tests use it.

Airflow reads its configuration once, at first import, so ``prepare`` sets the environment and
must run before anything imports ``airflow``. Airflow itself is imported lazily here: importing
this module costs nothing.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional
from collections.abc import Iterator

from lakeformat.errors import LakeformatError
from lakeformat.table.settings import WAREHOUSE_ENV


def airflow_env(home: str, *, dags: str, plugins: str, warehouse: str, config: str,
                landing: Optional[str] = None, spark_master: str = "local[*]",
                log_level: str = "INFO") -> dict[str, str]:
    """The environment of an embedded Airflow: its folders (``dags``, ``plugins``: the project's
    ``dags/`` and ``plugins/``), the pipeline config, connections (``spark_default`` on
    ``spark_master``, ``lakeformat_default`` on ``warehouse``) and the Python Spark runs."""
    bin_dir = str(Path(sys.executable).parent)   # spark-submit lives next to the venv's python
    env = {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": os.path.abspath(dags),
        "AIRFLOW__CORE__PLUGINS_FOLDER": os.path.abspath(plugins),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{Path(home) / 'airflow.db'}",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": log_level,
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": spark_master}),
        "AIRFLOW_CONN_LAKEFORMAT_DEFAULT": json.dumps({"conn_type": "lakeformat", "host": warehouse}),
        WAREHOUSE_ENV: warehouse,
        "LAKEFORMAT_CONFIG": os.path.abspath(config),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
        "GX_ANALYTICS_ENABLED": "False",
    }
    if landing:
        env["LAKEFORMAT_LANDING"] = landing
    return env


def prepare(home: str, **kwargs) -> dict[str, str]:
    """Point this process at an embedded Airflow home (see ``airflow_env``); before airflow is
    imported, or Airflow keeps the configuration it read first."""
    env = airflow_env(home, **kwargs)
    if "airflow" in sys.modules and os.environ.get("AIRFLOW_HOME") != env["AIRFLOW_HOME"]:
        raise LakeformatError("airflow was imported before prepare(): its configuration is fixed; "
                              "call prepare() first in a fresh process")
    Path(home).mkdir(parents=True, exist_ok=True)
    os.environ.update(env)
    plugins = env["AIRFLOW__CORE__PLUGINS_FOLDER"]
    if plugins not in sys.path:   # as Airflow's plugin manager does
        sys.path.append(plugins)
    return env


def migrate(timeout: int = 600) -> None:
    """``airflow db migrate`` on the prepared home (a subprocess: the CLI owns its logging)."""
    proc = subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], env=dict(os.environ),
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise LakeformatError(f"airflow db migrate failed (exit {proc.returncode}):\n"
                              f"{(proc.stdout + proc.stderr)[-3000:]}")


def dags_folder() -> Path:
    """The DAGs folder ``prepare`` set."""
    folder = os.environ.get("AIRFLOW__CORE__DAGS_FOLDER")
    if not folder:
        raise LakeformatError("no DAGs folder: call prepare() first")
    return Path(folder)


def load_dags(folder: Optional[Path] = None) -> dict[str, Any]:
    """Every DAG of ``folder`` (default: the prepared one) parsed as Airflow 3's DAG processor
    does; import errors raise."""
    from airflow.dag_processing.dagbag import BundleDagBag
    folder = Path(folder or dags_folder())
    bag = BundleDagBag(dag_folder=str(folder), bundle_path=folder)
    if bag.import_errors:
        raise LakeformatError("DAG import errors:\n" + "\n".join(f"{f}: {e}" for f, e in bag.import_errors.items()))
    return dict(bag.dags)


@dataclass(frozen=True)
class RunResult:
    """What one ``dag.test()`` run did: the run's state, each task instance's state (by
    ``task_id`` or ``task_id[map_index]``), their XComs, and the Asset events it emitted."""
    dag_id: str
    run_id: str
    state: str
    tasks: dict = field(default_factory=dict)
    xcom: dict = field(default_factory=dict)        # "task_id[map]:key" -> value
    asset_events: tuple = ()                        # (asset uri, extra)
    labels: dict = field(default_factory=dict)      # "task_id[map]" -> its label in the grid (map_index_template)

    @property
    def ok(self) -> bool:
        return self.state == "success"

    def failed_tasks(self) -> list[str]:
        return sorted(t for t, s in self.tasks.items() if s == "failed")

    def xcoms(self, task_id: str, key: str = "return_value") -> list:
        """The values of ``key`` pushed by every (mapped) instance of ``task_id``, by map index."""
        found = [(k, v) for k, v in self.xcom.items()
                 if k.rsplit(":", 1)[1] == key and _task_of(k.rsplit(":", 1)[0]) == task_id]
        return [v for _, v in sorted(found, key=lambda kv: _map_index(kv[0].rsplit(":", 1)[0]))]


def _task_of(label: str) -> str:
    return label.split("[", 1)[0]


def _map_index(label: str) -> int:
    return int(label.split("[", 1)[1].rstrip("]")) if "[" in label else -1


def _label(task_id: str, map_index: int) -> str:
    return task_id if map_index < 0 else f"{task_id}[{map_index}]"


def run_dag(dag_id: str, logical_date: Optional[dt.datetime] = None, conf: Optional[dict] = None) -> RunResult:
    """Run DAG ``dag_id`` once with ``dag.test()``; a failed task fails the run, it does not
    raise. The DAG files are parsed afresh for every run, as a worker would: tasks run in this
    process, and a run's conf would otherwise stay in the params of the DAG object it ran."""
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    dags = load_dags()
    if dag_id not in dags:
        raise LakeformatError(f"no DAG {dag_id!r} in {dags_folder()} (found: {', '.join(sorted(dags))})")
    dag = dags[dag_id]
    kwargs: dict[str, Any] = {"run_conf": conf or None}
    if logical_date is not None:
        kwargs["logical_date"] = logical_date
    dr = dag.test(**kwargs)
    with create_session() as s:
        tis = s.query(TaskInstance).filter(TaskInstance.dag_id == dag.dag_id,
                                           TaskInstance.run_id == dr.run_id).all()
        tasks = {_label(ti.task_id, ti.map_index): str(getattr(ti.state, "value", ti.state))
                 for ti in tis}
        labels = {_label(ti.task_id, ti.map_index): ti.rendered_map_index for ti in tis if ti.rendered_map_index}
        xs = s.query(XComModel).filter(XComModel.dag_id == dag.dag_id, XComModel.run_id == dr.run_id).all()
        xcom = {f"{_label(x.task_id, x.map_index)}:{x.key}": _value(x.value) for x in xs}
        events = s.query(AssetEvent, AssetModel).join(AssetModel, AssetEvent.asset_id == AssetModel.id).filter(
            AssetEvent.source_dag_id == dag.dag_id, AssetEvent.source_run_id == dr.run_id).all()
        assets = tuple((a.uri, dict(e.extra or {})) for e, a in events)
    state = str(dr.state.value if hasattr(dr.state, "value") else dr.state)
    return RunResult(dag.dag_id, dr.run_id, state, tasks, xcom, assets, labels)


def _value(v: Any) -> Any:
    if isinstance(v, (bytes, str)):
        try:
            return json.loads(v)
        except ValueError:
            return v
    return v


@contextlib.contextmanager
def output_to(path: str) -> Iterator[None]:
    """Send this process's stdout and stderr (file descriptors, so subprocesses such as
    spark-submit too) to ``path`` for the duration: Airflow's task logs, not the user's screen."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(path, "ab") as f:
        os.dup2(f.fileno(), 1)
        os.dup2(f.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
