"""A real Spark standalone cluster for tests: a master and one-core workers started on loopback
ports by ``docker/spark-node.sh`` (the compose services' command; it runs PySpark's own
``spark-class``, no Docker), jobs submitted with ``spark-submit --py-files``, every process
killed afterwards, on failure too.

Each node and each ``spark-submit`` runs in a process group of its own, so teardown reaches the
executors and Python workers they start. The nodes get no ``PYTHONPATH``, no ``AWS_*`` and no
``LAKEFORMAT_*`` variables: executors import lakeformat from the ``--py-files`` archive and learn
the catalog from the job, as on machines of their own.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional
from collections.abc import Iterator, Mapping, Sequence

from tests.servers import free_port, wait_until_serving

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = ROOT / ".venv" / "bin"
SPARK_NODE = ROOT / "docker" / "spark-node.sh"
WORKER_MEMORY = "1g"
EXECUTOR_MEMORY = "512m"
# what every job gets: no UI, executors small enough for two one-core workers, few shuffle tasks
SUBMIT_CONF = {"spark.ui.enabled": "false", "spark.executor.memory": EXECUTOR_MEMORY,
               "spark.sql.shuffle.partitions": "2", "spark.ui.showConsoleProgress": "false"}


def node_env(work: Path, **extra: str) -> dict:
    """The environment of the nodes and of spark-submit: the project's Python first on PATH (the
    compose image's ``python``), the parent's PYTHONPATH, AWS and lakeformat settings left out."""
    import pyspark

    env = {k: v for k, v in os.environ.items()
           if k != "PYTHONPATH" and not k.startswith(("AWS_", "LAKEFORMAT_", "SPARK_", "PYSPARK_"))}
    env.update(PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}", SPARK_HOME=os.path.dirname(pyspark.__file__),
               SPARK_LOCAL_IP="127.0.0.1", SPARK_WORKER_DIR=str(work / "worker"), SPARK_LOG_DIR=str(work),
               SPARK_NO_DAEMONIZE="1", SPARK_DAEMON_MEMORY="256m", PYSPARK_PYTHON="python",
               AWS_EC2_METADATA_DISABLED="true")   # no credentials: no 1 s probe of an EC2 metadata service
    env.update(extra)
    return env


def _state(ui: str) -> dict:
    with urllib.request.urlopen(ui + "/json/", timeout=5) as r:
        return json.load(r)


def _stop(proc: subprocess.Popen, grace: float = 15) -> None:
    """SIGTERM to the process's group, SIGKILL to it after ``grace`` seconds."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
        except ProcessLookupError:
            return
    try:
        os.killpg(proc.pid, signal.SIGKILL)   # the group's leftovers (executors, Python workers)
    except ProcessLookupError:
        pass
    proc.wait()


@dataclass
class Cluster:
    master: str                  # spark://127.0.0.1:PORT
    ui: str                      # the master's web UI (its /json/ lists workers and applications)
    work: Path
    env: dict
    procs: list = field(default_factory=list)

    def state(self) -> dict:
        return _state(self.ui)

    def logs(self) -> str:
        """Every log the nodes and their executors wrote (for failure messages and secret checks)."""
        parts = []
        for p in sorted(self.work.rglob("*")):
            if p.is_file() and p.suffix not in (".zip", ".jar") and p.stat().st_size < 5_000_000:
                parts.append(f"== {p.relative_to(self.work)}\n{p.read_text(errors='replace')}")
        return "\n".join(parts)

    def submit(self, app: str, args: Sequence[str] = (), *, py_files: Path, env: Optional[Mapping[str, str]] = None,
               conf: Optional[Mapping[str, str]] = None, timeout: float = 180) -> subprocess.CompletedProcess:
        """``spark-submit --master <this cluster> --py-files py_files app args`` in client mode;
        the process group is killed when ``timeout`` passes."""
        cmd = [str(VENV_BIN / "spark-submit"), "--master", self.master, "--py-files", str(py_files)]
        for k, v in {**SUBMIT_CONF, **(conf or {})}.items():
            cmd += ["--conf", f"{k}={v}"]
        cmd += [str(app), *args]
        proc = subprocess.Popen(cmd, env={**self.env, **(env or {})}, cwd=self.work, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.procs.append(proc)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _stop(proc, grace=5)
            out, err = proc.communicate()
            raise AssertionError(f"{Path(app).name} did not finish in {timeout:.0f} s:\n{err[-3000:]}") from None
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


@contextmanager
def standalone_cluster(work: Path, workers: int = 2, start_timeout: float = 120,
                       worker_env: Optional[Mapping[str, str]] = None) -> Iterator[Cluster]:
    """A master and ``workers`` one-core workers on loopback; yields once every worker has
    registered. ``worker_env``: more environment of the workers (a compose service's). Every
    process (nodes, submitted jobs and what they started) is killed on exit."""
    work.mkdir(parents=True, exist_ok=True)
    port, ui_port = free_port(), free_port()
    env = node_env(work)
    cluster = Cluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui_port}", work, env)
    log = open(work / "nodes.log", "wb")  # noqa: SIM115 -- the nodes' output for the cluster's life

    def start(role: str, *args: str, **more: str) -> subprocess.Popen:
        proc = subprocess.Popen(["bash", str(SPARK_NODE), role, *args], env={**env, **more}, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        cluster.procs.append(proc)
        return proc

    try:
        master = start("master", SPARK_MASTER_HOST="127.0.0.1", SPARK_MASTER_PORT=str(port),
                       SPARK_MASTER_WEBUI_PORT=str(ui_port))
        wait_until_serving(cluster.ui + "/json/", master, "Spark master", start_timeout)
        for _ in range(workers):
            start("worker", cluster.master, **{"SPARK_WORKER_CORES": "1", "SPARK_WORKER_MEMORY": WORKER_MEMORY,
                                               **(worker_env or {}), "SPARK_WORKER_WEBUI_PORT": str(free_port())})
        deadline = time.monotonic() + start_timeout
        while int(cluster.state().get("aliveworkers", 0)) < workers:
            if time.monotonic() > deadline or any(p.poll() is not None for p in cluster.procs):
                raise RuntimeError(f"Spark workers did not register:\n{(work / 'nodes.log').read_text()[-3000:]}")
            time.sleep(0.5)
        yield cluster
    finally:
        for p in reversed(cluster.procs):
            _stop(p)
        log.close()
