"""Airflow started as ``make airflow`` starts it (``python -m lakeformat.pipeline.local.airflow_server``:
PostgreSQL, API server, scheduler, DAG processor, triggerer), once per module, on a free port,
with its own state directory, warehouse and a small set of demo landing data; and a REST client
logged in as the user it prints."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from lakeformat.pipeline.local.airflow_server import MARKER, _marked_pids
from lakeformat.pipeline.local.postgres import free_port
from tests.project import config_waiting

ROOT = Path(__file__).resolve().parents[2]
UP = re.compile(r"Airflow is up: (\S+)\s+\(login: (\S+) / (\S+)\)")
LANDING_DAYS = ("2024-06-01", "2024-06-04")
ARTEFACTS = Path(os.environ.get("LAKEFORMAT_TEST_ARTEFACTS") or ROOT / "test-artefacts")


@dataclass
class Server:
    url: str
    user: str
    password: str
    state: Path
    warehouse: Path
    proc: subprocess.Popen
    output: Path
    _token: str = ""

    def token(self) -> str:
        """A REST token, asked for once (the API server's default lifetime outlasts the tests)."""
        if not self._token:
            self._token = _post(f"{self.url}/auth/token",
                                {"username": self.user, "password": self.password})["access_token"]
        return self._token

    def api(self, method: str, path: str, body=None) -> dict:
        req = urllib.request.Request(f"{self.url}/api/v2{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {self.token()}",
                                              "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=120) as r:   # a loaded 2-core machine is slow
                return json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            raise AssertionError(f"{method} {path}: {e.code} {e.read()[:2000]!r}") from None

    def runs(self, dag_id: str) -> list[dict]:
        return self.api("GET", f"/dags/{dag_id}/dagRuns?limit=100")["dag_runs"]

    def wait_runs(self, dag_id: str, run_ids: set, timeout: float = 900) -> dict:
        """Wait until the runs ``run_ids`` are finished; returns {run_id: state}."""
        deadline = time.monotonic() + timeout
        while True:
            states = {r["dag_run_id"]: r["state"] for r in self.runs(dag_id) if r["dag_run_id"] in run_ids}
            if len(states) == len(run_ids) and all(s in ("success", "failed") for s in states.values()):
                return states
            assert self.proc.poll() is None, f"make airflow exited:\n{self.output.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"runs of {dag_id} not done after {timeout} s: {states}"
            time.sleep(5)

    def task_log(self, dag_id: str, run_id: str, task_id: str = "", attempt: int | None = None) -> str:
        """The log files of a task (every task: ``task_id`` empty) of a run, as the scheduler's
        workers wrote them; of one ``attempt`` only, if given (a re-run is the next attempt)."""
        return "\n".join(p.read_text(errors="replace") for p in sorted((self.state / "logs").rglob("*.log"))
                         if f"dag_id={dag_id}" in str(p) and f"run_id={run_id}" in str(p)
                         and f"task_id={task_id}" in str(p) and (attempt is None or p.name == f"attempt={attempt}.log"))

    def backfills(self, dag_id: str) -> list[dict]:
        return self.api("GET", f"/backfills?dag_id={dag_id}&limit=100")["backfills"]

    def wait_backfill(self, dag_id: str, backfill_id: int, timeout: float = 900) -> None:
        deadline = time.monotonic() + timeout
        while not next(b for b in self.backfills(dag_id) if b["id"] == backfill_id)["completed_at"]:
            assert self.proc.poll() is None, f"make airflow exited:\n{self.output.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"backfill {backfill_id} of {dag_id} not done after {timeout} s"
            time.sleep(5)

    def task_states(self, dag_id: str, run_id: str) -> dict:
        tis = self.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances?limit=100")["task_instances"]
        return {(t["task_id"], t.get("rendered_map_index") or t["map_index"]): t["state"] for t in tis}


def _post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


def start_server(tmp: Path, timeout: float = 600) -> Server:
    state, wh, landing = tmp / "state", tmp / "warehouse", tmp / "landing"
    out = tmp / "make-airflow.out"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "LAKEFORMAT_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    # the shipped config, but a run waits 10 min, not hours, for landing data that is not there
    config = config_waiting(tmp / "tables.yaml", "10 min", "5 s")
    cmd = [sys.executable, "-m", "lakeformat.pipeline.local.airflow_server", "--state", str(state),
           "--warehouse", str(wh), "--landing", str(landing), "--port", str(free_port()),
           "--landing-days", *LANDING_DAYS, "--rows-per-day", "500", "--config", str(config)]
    with open(out, "wb") as f:   # as `make airflow` does, from the project directory
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=f, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + timeout
    while not (m := UP.search(out.read_text())):
        assert proc.poll() is None, f"make airflow exited {proc.returncode}:\n{out.read_text()[-4000:]}"
        assert time.monotonic() < deadline, f"make airflow not up after {timeout} s:\n{out.read_text()[-4000:]}"
        time.sleep(1)
    return Server(m.group(1), m.group(2), m.group(3), state, wh, proc, out)


def stop_server(server: Server, timeout: float = 120) -> None:
    """Ctrl-C: SIGINT to the launcher, which must exit within ``timeout``."""
    server.proc.send_signal(signal.SIGINT)
    server.proc.wait(timeout)


@pytest.fixture(scope="module")
def airflow_server():
    tmp = Path(tempfile.mkdtemp(prefix="lakeformat-make-airflow-"))
    tmp.chmod(0o755)   # as root, PostgreSQL runs as the postgres user: pytest's tmp dirs are private
    server = start_server(tmp)
    try:
        yield server
    finally:
        if server.proc.poll() is None:
            stop_server(server)
        for pid in _marked_pids(server.state):   # never leave a process behind, whatever failed
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)


__all__ = ["Server", "start_server", "stop_server", "airflow_server", "MARKER", "ARTEFACTS"]
