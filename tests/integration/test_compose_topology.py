"""The docker-compose topology rehearsed without Docker (issue 16): Airflow's four services on
PostgreSQL (``make airflow``'s launcher), a Spark master and two workers (``docker/spark-node.sh``,
the compose services' entry point), and an S3 endpoint standing in for MinIO, each with the
environment and command its compose service has, read from ``docker compose config`` (so they
cannot drift) with hostnames mapped to loopback ports and /opt/lakeformat to this checkout. The
landing data is in the bucket, written by the compose ``demo-landing`` one-shot's own command; the
ingest DAG runs through the scheduler (a triggered run, not ``dag.test()``), its Spark job on the
cluster reads the landing files from the bucket, and the table is read back from the bucket."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import boto3
import pytest
import yaml
from cryptography.fernet import Fernet

import lakeformat as lf
from lakeformat.pipeline import landing_files
from lakeformat.pipeline.local.airflow_server import SERVICES, LocalAirflow, Settings, _marked_pids, login
from lakeformat.pipeline.local.postgres import free_port
from tests.airflow_plugin.test_plugin_compose import _config
from tests.project import config_waiting
from tests.s3server import s3_endpoint  # noqa: F401 (fixture)
from tests.spark.cluster import ROOT, standalone_cluster

pytestmark = pytest.mark.slow
DAG = "lakeformat_ingest_user_behavior"
DAY = "2024-06-01"
# compose settings this machine provides itself: its database, its secrets, its login file
OWN = {"AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", "AIRFLOW__API_AUTH__JWT_SECRET", "AIRFLOW__API__SECRET_KEY",
       "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"}
HOSTS = ("postgres:", "minio:", "spark-master", "airflow-apiserver", "/opt/")
AIRFLOW_SERVICES = {"airflow-apiserver": "api-server", "airflow-scheduler": "scheduler",
                    "airflow-dag-processor": "dag-processor", "airflow-triggerer": "triggerer"}


def compose_services() -> dict:
    proc = _config(ROOT / ".env.example")
    assert proc.returncode == 0, proc.stderr
    return yaml.safe_load(proc.stdout)["services"]


def environment(service: dict) -> dict:
    env = service.get("environment") or {}
    return {k: str(v) for k, v in (env.items() if isinstance(env, dict) else (e.split("=", 1) for e in env))}


class Loopback:
    """Compose hostnames and container paths -> this machine's ports and checkout."""

    def __init__(self, **pairs: str):
        self.pairs = sorted(pairs.items(), key=lambda kv: -len(kv[0]))   # longest first

    def __call__(self, value: str) -> str:
        for old, new in self.pairs:
            value = value.replace(old, new)
        return value


def api(url: str, user: str, password: str, method: str, path: str, body=None) -> dict:
    def call(u, m, b, headers):
        req = urllib.request.Request(u, method=m, data=None if b is None else json.dumps(b).encode(),
                                     headers={"Content-Type": "application/json", **headers})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read() or b"{}")
    token = call(f"{url}/auth/token", "POST", {"username": user, "password": password}, {})["access_token"]
    return call(f"{url}/api/v2{path}", method, body, {"Authorization": f"Bearer {token}"})


def test_compose_services_without_docker_ingest_through_the_scheduler(s3_endpoint):
    services = compose_services()
    # the commands run here are the services' commands
    for name, command in AIRFLOW_SERVICES.items():
        assert services[name]["command"] in (command, [command]), name
    assert sorted(AIRFLOW_SERVICES.values()) == sorted(SERVICES)   # what LocalAirflow starts
    assert services["spark-master"]["entrypoint"] == ["/opt/lakeformat-docker/spark-node.sh"]
    assert services["spark-master"]["command"] == ["master"]
    for worker in ("spark-worker-1", "spark-worker-2"):
        assert services[worker]["command"] == ["worker", "spark://spark-master:7077"]
    tmp = Path(tempfile.mkdtemp(prefix="cluster-compose-"))
    tmp.chmod(0o755)   # PostgreSQL runs as the postgres user: pytest's tmp dirs are private
    bucket = environment(services["minio-init"])["LAKEHOUSE_BUCKET"]
    minio = environment(services["minio"])
    creds = {"s3.access-key": minio["MINIO_ROOT_USER"], "s3.secret-key": minio["MINIO_ROOT_PASSWORD"]}
    boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1", aws_access_key_id=creds["s3.access-key"],
                 aws_secret_access_key=creds["s3.secret-key"]).create_bucket(Bucket=bucket)   # minio-init's job
    airflow = None
    try:
        # the landing data: demo-landing's command with a smaller day, as
        # `docker compose run --rm demo-landing --start DAY --rows-per-day 1000` runs it
        to_here = Loopback(**{"/opt/lakeformat": str(ROOT), "http://minio:9000": s3_endpoint})
        demo = services["demo-landing"]
        assert demo["entrypoint"][:3] == ["python", "-m", "lakeformat.pipeline.landing"]
        demo_env = {k: to_here(v) for k, v in environment(demo).items()}
        done = subprocess.run([sys.executable, *map(to_here, demo["entrypoint"][1:]), "--start", DAY,
                               "--rows-per-day", "1000"], env={**os.environ, **demo_env, "PYTHONPATH": str(ROOT)},
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        # the Spark workers' environment; the image installs the mounted checkout (PYTHONPATH here)
        worker_env = {k: to_here(v) for k, v in environment(services["spark-worker-1"]).items()}
        with standalone_cluster(tmp / "spark", worker_env={**worker_env, "PYTHONPATH": str(ROOT)}) as cluster:
            port = free_port()
            loopback = Loopback(**{"/opt/lakeformat": str(ROOT),
                                   "http://minio:9000": s3_endpoint, "http://airflow-apiserver:8080": f"http://127.0.0.1:{port}",
                                   '"host": "spark://spark-master", "port": 7077':
                                   f'"host": "spark://127.0.0.1", "port": {cluster.master.rsplit(":", 1)[1]}'})
            env = {k: loopback(v) for k, v in environment(services["airflow-scheduler"]).items() if k not in OWN}
            env["AIRFLOW__CORE__FERNET_KEY"] = Fernet.generate_key().decode()   # as the README says to make one
            env["LAKEFORMAT_CONFIG"] = str(config_waiting(tmp / "tables.yaml", "20 s", "5 s",
                                                          Path(env["LAKEFORMAT_CONFIG"])))
            leftovers = {k: v for k, v in env.items() if any(h in v for h in HOSTS)}
            assert not leftovers, f"compose settings not mapped to this machine: {leftovers}"
            lake = json.loads(env["AIRFLOW_CONN_LAKEFORMAT_DEFAULT"])
            landing = env["LAKEFORMAT_LANDING"]
            assert landing == f"s3://{bucket}/landing"   # in the bucket, no folder of this machine
            settings = Settings(state=tmp / "airflow", warehouse=lake["host"], landing=landing,
                                config=env["LAKEFORMAT_CONFIG"], dags=env["AIRFLOW__CORE__DAGS_FOLDER"],
                                plugins=env["AIRFLOW__CORE__PLUGINS_FOLDER"], port=port,
                                spark_master=cluster.master,
                                extra_env=env)
            airflow = LocalAirflow(settings, out=open(tmp / "airflow.out", "w"))  # noqa: SIM115 -- its log while it runs
            airflow.start(timeout=300)
            user, password = login(settings)

            def call(method, path, body=None):
                return api(settings.url, user, password, method, path, body)
            deadline = time.monotonic() + 180
            while True:   # the DAG processor parses the DAG files
                try:
                    call("GET", f"/dags/{DAG}")
                    break
                except urllib.error.HTTPError:
                    airflow.check()
                    assert time.monotonic() < deadline, f"{DAG} was not parsed"
                    time.sleep(3)
            # paused at creation, as in compose. Unpausing schedules the latest day, which has no
            # landing data: its landing task waits for it in the triggerer (issue 16; here 20 s),
            # then skips the run with the reason before any Spark work: the run ends green and,
            # one active run at a time, the landed day is triggered
            call("PATCH", f"/dags/{DAG}", {"is_paused": False})
            deadline = time.monotonic() + 240
            while not (scheduled := [r for r in call("GET", f"/dags/{DAG}/dagRuns")["dag_runs"]
                                     if r["run_type"] == "scheduled" and r["state"] in ("success", "failed")]):
                airflow.check()
                assert time.monotonic() < deadline, "the scheduled run of a day without landing data did not end"
                time.sleep(2)
            (latest,) = scheduled
            skipped = {t["task_id"]: t["state"] for t in call(
                "GET", f"/dags/{DAG}/dagRuns/{latest['dag_run_id']}/taskInstances")["task_instances"]}
            assert latest["state"] == "success" and skipped["landing"] == skipped["plan"] == "skipped", skipped
            waited = task_logs(settings.state, latest["dag_run_id"], "landing")
            assert "no landing data for this run after waiting 20 s" in waited, waited
            run = call("POST", f"/dags/{DAG}/dagRuns", {"dag_run_id": "compose-rehearsal",
                                                        "logical_date": f"{DAY}T00:00:00Z"})["dag_run_id"]
            deadline = time.monotonic() + 600
            while (state := call("GET", f"/dags/{DAG}/dagRuns/{run}")["state"]) not in ("success", "failed"):
                airflow.check()
                assert time.monotonic() < deadline, f"run {run} still {state}"
                time.sleep(5)
            tasks = {(t["task_id"], t["map_index"]): t["state"] for t in
                     call("GET", f"/dags/{DAG}/dagRuns/{run}/taskInstances")["task_instances"]}
            assert state == "success", (tasks, task_logs(settings.state))
            apps = cluster.state()["completedapps"]
        assert any("ingest" in a["name"] and a["state"] == "FINISHED" for a in apps), apps
        table = lf.Catalog(lake["host"], **creds, **lake["extra"]).get_table("demo.user_behavior")
        store = {**creds, **lake["extra"]}
        landed = sum(len(landing_files.landing_io(landing, store).read_bytes(f).splitlines())
                     for f in landing_files.list_files(f"{landing}/user_behavior/dt={DAY}", store))
        rows = table.read()
        assert rows.num_rows == landed > 0 and set(rows.column("dt").to_pylist()) == {DAY}
        assert [(s.commit_kind, s.commit_user) for s in table.snapshots()] == \
            [("APPEND", "lakeformat-ingest-user_behavior")]
    finally:
        if airflow is not None:
            airflow.stop()
            for pid in _marked_pids(airflow.s.state):   # never leave a process behind
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)


def task_logs(state: Path, run_id: str = "", *tasks: str) -> str:
    """The ends of the task logs of ``run_id`` (default: every run) of ``tasks`` (default: plan, stage)."""
    return "\n".join(f"== {p}\n{p.read_text(errors='replace')[-2500:]}"
                     for p in sorted((state / "logs").rglob("*.log"))
                     if run_id in str(p) and any(f"task_id={t}" in str(p) for t in tasks or ("stage", "plan")))
