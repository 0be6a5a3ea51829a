"""``make airflow``: Airflow 3 as its users run it, on this machine, without Docker.

The API server (UI and REST API), the scheduler (LocalExecutor), the DAG processor and the
triggerer, on a PostgreSQL metadata database of their own (``postgres.LocalPostgres``: on
SQLite, concurrent backfills lock the database), with the project's DAGs, plugin and
connections (``spark_default`` on local Spark, ``lakeformat_default`` on the warehouse) and the
demo landing data generated. Everything lives in a state directory (default ``./.airflow``): the
database, Airflow's home with the login, and the services' logs; runs and backfills survive a
restart.

Each service runs in a process group of its own, so a Ctrl-C at the terminal reaches only this
launcher, which then stops them in order: SIGTERM to every group, SIGKILL to what is left after
a grace period, then a sweep for any process still carrying this state directory's marker in
its environment (task supervisors and spark-submit set up groups of their own), and finally the
database. A service that dies on its own stops the rest and is reported with its log.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from lakeformat.errors import LakeformatError
from lakeformat.pipeline import landing, landing_files
from lakeformat.pipeline.local.airflow_home import airflow_env
from lakeformat.pipeline.local.postgres import LocalPostgres, free_port
from lakeformat.table.settings import absolute_location
from lakeformat.table.settings import resolve as resolve_settings
from lakeformat.pipeline.landing_wait import LANDING_DAYS_ENV

SERVICES = ("api-server", "scheduler", "dag-processor", "triggerer")
MARKER = "LAKEFORMAT_AIRFLOW_STATE"   # set in every service's environment, inherited by its children
USER = "admin"
DEMO_DAYS = ("2024-06-01", "2024-06-07")
GRACE = 30   # seconds a service gets to stop on SIGTERM
DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass
class Settings:
    state: Path                       # the state directory
    warehouse: str
    landing: str
    config: str
    dags: str
    plugins: str
    host: str = "127.0.0.1"
    port: int = 8080
    spark_master: str = "local[2]"
    parallelism: int = 4              # task slots: two cores cannot run more Spark jobs at once
    landing_days: tuple[str, str] = DEMO_DAYS
    rows_per_day: int = 100_000
    extra_env: dict = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return self.state / "home"

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


def _secret(path: Path, make) -> str:
    """A value generated once and kept in ``path`` (mode 600): stable across restarts."""
    if not path.exists():
        path.write_text(make())
        path.chmod(0o600)
    return path.read_text().strip()


def login(s: Settings) -> tuple[str, str]:
    """The UI login (SimpleAuthManager's user ``admin`` and its password file in the home)."""
    passwords = s.home / "passwords.json"
    if not passwords.exists():
        passwords.write_text(json.dumps({USER: secrets.token_urlsafe(12)}))
        passwords.chmod(0o600)
    return USER, json.loads(passwords.read_text())[USER]


def services_env(s: Settings, database: str) -> dict[str, str]:
    """The environment every service (and so every task) runs with."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.update(airflow_env(str(s.home), dags=s.dags, plugins=s.plugins, warehouse=s.warehouse,
                           landing=s.landing, config=s.config, spark_master=s.spark_master))
    sync = database.replace("postgresql://", "postgresql+psycopg://", 1)   # psycopg 3, sync and async
    env.update({
        MARKER: str(s.state),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": sync,
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC": sync,
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__PARALLELISM": str(s.parallelism),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(s.home / "passwords.json"),
        "AIRFLOW__API__HOST": s.host,
        "AIRFLOW__API__PORT": str(s.port),
        "AIRFLOW__API__BASE_URL": s.url,
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{s.url}/execution/",
        # one secret for every component: the scheduler signs task tokens the API server checks
        "AIRFLOW__API_AUTH__JWT_SECRET": _secret(s.home / "jwt_secret", lambda: secrets.token_urlsafe(32)),
        "AIRFLOW__API__SECRET_KEY": _secret(s.home / "api_secret", lambda: secrets.token_urlsafe(32)),
        "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(s.state / "logs" / "tasks"),
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "30",
        # the scheduler's and triggerer's log servers: free ports, so a second instance can run
        "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),
        "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(free_port()),
    })
    env.update(s.extra_env)
    return env


def _airflow(env: dict, *args: str, timeout: int = 900) -> None:
    proc = subprocess.run([sys.executable, "-m", "airflow", *args], env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode:
        raise LakeformatError(f"airflow {' '.join(args)} failed (exit {proc.returncode}):\n"
                              f"{(proc.stdout + proc.stderr)[-3000:]}")


def generate_landing(s: Settings) -> list[str]:
    """Demo landing files for ``landing_days`` of every configured table, unless there already.
    A landing root on an object store is left alone: it is filled by its own one-shot (compose's
    ``demo-landing`` service) with the store's credentials, which this launcher does not hold."""
    first, last = s.landing_days
    if landing_files.is_remote(s.landing):
        return []
    if Path(s.landing).exists() and any(Path(s.landing).rglob(f"*{first}*")):
        return []
    landing.main(["--landing", s.landing, "--start", first, "--end", last, "--config", s.config,
                  "--rows-per-day", str(s.rows_per_day)])
    return [first, last]


def landing_days(root: str) -> Optional[str]:
    """``FIRST..LAST``: the days a local landing root has folders for (``dt=2024-06-01``...), for
    ``$LAKEFORMAT_LANDING_DAYS``: the ingest DAGs then schedule no run for a day without data."""
    if landing_files.is_remote(root) or not Path(root).is_dir():
        return None
    days = sorted({m.group(0) for p in Path(root).rglob("*") if p.is_dir() and (m := DAY.search(p.name))})
    return f"{days[0]}..{days[-1]}" if days else None


def _marked_pids(state: Path) -> list[int]:
    """Processes (other than this one) whose environment carries ``state``'s marker."""
    mark = f"{MARKER}={state}".encode()
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) != os.getpid():
            try:
                if mark in (d / "environ").read_bytes().split(b"\0"):
                    found.append(int(d.name))
            except OSError:
                continue
    return found


def sweep(state: Path, sig: int = signal.SIGKILL) -> list[int]:
    """Signal every process left behind by the services of ``state``; returns their pids."""
    pids = _marked_pids(state)
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
    return pids


class LocalAirflow:
    """The services of one state directory; ``start()`` then ``stop()`` (idempotent)."""

    def __init__(self, s: Settings, out=sys.stdout):
        self.s = s
        self.out = out
        self.db = LocalPostgres(s.state / "postgres")
        self.procs: dict[str, subprocess.Popen] = {}
        self.env: dict[str, str] = {}

    def say(self, msg: str) -> None:
        print(msg, file=self.out, flush=True)

    def start(self, timeout: float = 300) -> None:
        s = self.s
        (s.state / "logs").mkdir(parents=True, exist_ok=True)
        s.home.mkdir(parents=True, exist_ok=True)
        if sweep(s.state):
            self.say("stopped processes left by an earlier run of this state directory")
        self.db.stop()   # a server left running by a killed launcher
        self.say(f"PostgreSQL: starting ({self.db.root})")
        database = self.db.start()
        login(s)   # before the API server starts, or it makes up a password of its own
        if generate_landing(s):
            self.say(f"landing data: generated {s.landing_days[0]}..{s.landing_days[1]} in {s.landing}")
        self.env = services_env(s, database)
        if days := landing_days(s.landing):
            self.env[LANDING_DAYS_ENV] = days
            self.say(f"ingest DAGs: scheduled over the landing data's days, {days}")
        self.say("Airflow: migrating the metadata database")
        _airflow(self.env, "db", "migrate")
        # the DAGs in the database before the URL is printed: the dag-processor alone would list
        # them some seconds later (under load, after the UI is already open)
        self.say("Airflow: parsing the DAGs")
        _airflow(self.env, "dags", "reserialize")
        for name in SERVICES:
            with open(s.state / "logs" / f"{name}.log", "ab") as log:
                self.procs[name] = subprocess.Popen([sys.executable, "-m", "airflow", name], env=self.env,
                                                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                                    start_new_session=True)
        self._wait_healthy(timeout)

    def _wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            self.check()
            try:
                with urllib.request.urlopen(f"{self.s.url}/api/v2/monitor/health", timeout=5) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise LakeformatError(f"the Airflow API server did not answer at {self.s.url} within "
                                      f"{timeout:.0f} s; see {self.s.state / 'logs' / 'api-server.log'}")
            time.sleep(1)

    def check(self) -> None:
        """Raise, naming the service and quoting its log, if one has exited."""
        for name, p in self.procs.items():
            if p.poll() is not None:
                log = (self.s.state / "logs" / f"{name}.log").read_text(errors="replace")[-3000:]
                raise LakeformatError(f"airflow {name} exited (code {p.returncode}):\n{log}")

    def stop(self) -> None:
        for p in self.procs.values():
            _signal_group(p, signal.SIGTERM)
        deadline = time.monotonic() + GRACE
        for p in self.procs.values():
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            _signal_group(p, signal.SIGKILL)
            p.wait()
        self.procs.clear()
        sweep(self.s.state)
        self.db.stop()


def _signal_group(p: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(p.pid, sig)
    except ProcessLookupError:
        pass


class _Stop(Exception):
    pass


def _raise_stop(signum, frame):
    raise _Stop(signal.Signals(signum).name)


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lakeformat.pipeline.local.airflow_server", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--state", default=".airflow", help="state directory (default ./.airflow)")
    ap.add_argument("--warehouse", help="default: the environment's (lakeformat.table.settings), else ./warehouse")
    ap.add_argument("--landing", default=os.environ.get("LAKEFORMAT_LANDING") or "landing")
    ap.add_argument("--config", default=os.environ.get("LAKEFORMAT_CONFIG") or "config/tables.yaml")
    ap.add_argument("--dags", default="dags")
    ap.add_argument("--plugins", default="plugins")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--spark-master", default="local[2]")
    ap.add_argument("--landing-days", nargs=2, default=DEMO_DAYS, metavar=("FIRST", "LAST"),
                    help="days of demo landing data to generate when the landing folder has none")
    ap.add_argument("--rows-per-day", type=int, default=100_000)
    a = ap.parse_args(argv)
    s = Settings(state=Path(a.state).resolve(), warehouse=os.path.abspath(resolve_settings(a.warehouse).warehouse),
                 landing=absolute_location(a.landing), config=os.path.abspath(a.config),
                 dags=os.path.abspath(a.dags), plugins=os.path.abspath(a.plugins), host=a.host, port=a.port,
                 spark_master=a.spark_master, landing_days=tuple(a.landing_days), rows_per_day=a.rows_per_day)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise_stop)
    airflow = LocalAirflow(s)
    code = 0
    try:
        airflow.start()
        user, password = login(s)
        airflow.say(f"\nAirflow is up: {s.url}  (login: {user} / {password})\n"
                    f"  DAGs {s.dags}, warehouse {s.warehouse}, landing {s.landing}\n"
                    f"  logs {s.state / 'logs'}; Ctrl-C stops every service")
        while True:
            airflow.check()
            time.sleep(2)
    except _Stop as e:
        airflow.say(f"\n{e}: stopping Airflow and PostgreSQL")
    except LakeformatError as e:
        airflow.say(f"error: {e}")
        code = 1
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)   # a second Ctrl-C must not cut the clean-up short
        airflow.stop()
        airflow.say("stopped")
    return code


if __name__ == "__main__":
    sys.exit(main())
