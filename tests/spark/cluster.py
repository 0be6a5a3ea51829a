"""A real Spark standalone cluster for tests: a master and two one-core workers started with
PySpark's own ``spark-class`` (no Docker), on loopback, torn down afterwards."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from tests.servers import free_port, wait_until_serving

ROOT = Path(__file__).resolve().parents[2]
SPARK_CLASS = ROOT / ".venv" / "bin" / "spark-class"


def cluster_env(work: Path) -> dict:
    return dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", SPARK_WORKER_DIR=str(work), PYSPARK_PYTHON=sys.executable,
                PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_LOG_DIR=str(work), SPARK_NO_DAEMONIZE="1")


def _alive_workers(ui: str) -> int:
    with urllib.request.urlopen(ui + "/json/", timeout=5) as r:
        return int(json.load(r).get("aliveworkers", 0))


@contextmanager
def standalone_cluster(work: Path, workers: int = 2):
    """Yields (master URL, master UI URL) once every worker has registered."""
    work.mkdir(parents=True, exist_ok=True)
    env = cluster_env(work)
    port, ui_port = free_port(), free_port()
    procs = []
    log = open(work / "cluster.log", "wb")
    try:
        master = subprocess.Popen([str(SPARK_CLASS), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                   "--port", str(port), "--webui-port", str(ui_port)], env=env, stdout=log,
                                  stderr=subprocess.STDOUT)
        procs.append(master)
        ui = f"http://127.0.0.1:{ui_port}"
        wait_until_serving(ui + "/json/", master, "Spark master", 90)
        url = f"spark://127.0.0.1:{port}"
        for _ in range(workers):
            procs.append(subprocess.Popen([str(SPARK_CLASS), "org.apache.spark.deploy.worker.Worker", "--cores", "1",
                                           "--memory", "1g", "--webui-port", str(free_port()), url],
                                          env=env, stdout=log, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + 120
        while _alive_workers(ui) < workers:
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                raise RuntimeError(f"Spark workers did not register: {(work / 'cluster.log').read_text()[-3000:]}")
            time.sleep(0.5)
        yield url, ui
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        log.close()


def completed_apps(ui: str) -> list[dict]:
    with urllib.request.urlopen(ui + "/json/", timeout=5) as r:
        return json.load(r).get("completedapps", [])
