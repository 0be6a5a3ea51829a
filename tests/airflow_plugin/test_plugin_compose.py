"""docker-compose.yml validates with `docker compose config` (or Debian's docker-compose),
using the committed .env.example; without the secrets it refuses, naming the missing one.
There is no Docker engine here: this checks the file, not running containers."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tomllib

import pytest
import yaml

from tests.airflow_plugin.conftest import ROOT

from lakeformat.table.settings import from_connection as catalog_settings

SERVICES = {"check-secrets", "postgres", "minio", "minio-init", "airflow-init", "airflow-apiserver",
            "airflow-scheduler",
            "airflow-dag-processor", "airflow-triggerer", "spark-master", "spark-worker-1", "spark-worker-2",
            "demo-landing"}
AIRFLOW = {"airflow-apiserver", "airflow-scheduler", "airflow-dag-processor", "airflow-triggerer"}


def _compose() -> list[str]:
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0:
        return [docker, "compose"]
    if shutil.which("docker-compose"):
        return [shutil.which("docker-compose")]
    pytest.fail("neither `docker compose` nor `docker-compose` is installed: run `make compose-cli`")


def _config(env_file) -> subprocess.CompletedProcess:
    """``docker compose config`` with every profile's services (the on-request ``demo-landing``)."""
    clean = {k: v for k, v in os.environ.items()
             if not re.match(r"(AIRFLOW|POSTGRES|MINIO|LAKEHOUSE|SPARK_WORKER|COMPOSE)", k)}
    return subprocess.run([*_compose(), "-f", str(ROOT / "docker-compose.yml"), "--env-file", str(env_file),
                           "--profile", "demo", "config"], capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env=clean)


@pytest.fixture(scope="module")
def config() -> dict:
    proc = _config(ROOT / ".env.example")
    assert proc.returncode == 0, proc.stderr
    return yaml.safe_load(proc.stdout)


def _env(service: dict) -> dict:
    env = service.get("environment", {})
    return env if isinstance(env, dict) else dict(e.split("=", 1) for e in env)


def _mount_target(volume) -> str:
    """The container path of a volume in either output form (v1 short strings, v2 mappings)."""
    if isinstance(volume, dict):
        return volume.get("target", "")
    parts = str(volume).split(":")
    return parts[1] if len(parts) > 1 else parts[0]


def test_plugin_compose_config_validates_with_the_example_env(config):
    assert set(config["services"]) == SERVICES
    s = config["services"]
    assert s["airflow-apiserver"]["command"] in ("api-server", ["api-server"])
    for name in AIRFLOW:
        env = _env(s[name])
        assert env["AIRFLOW__CORE__AUTH_MANAGER"].endswith("SimpleAuthManager")
        assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("postgresql+psycopg2://airflow:")
        assert env["AIRFLOW__CORE__PLUGINS_FOLDER"] == "/opt/lakeformat/plugins"
        assert json.loads(env["AIRFLOW_CONN_SPARK_DEFAULT"])["host"] == "spark://spark-master"
        depends = s[name]["depends_on"]
        assert depends["airflow-init"]["condition"] == "service_completed_successfully"
        assert depends["minio-init"]["condition"] == "service_completed_successfully"
        assert any(_mount_target(v) == "/opt/lakeformat" for v in s[name]["volumes"])
    for worker in ("spark-worker-1", "spark-worker-2"):
        assert s[worker]["command"] == ["worker", "spark://spark-master:7077"]
    assert "mb --ignore-existing" in " ".join(s["minio-init"]["command"])


def _published(port) -> tuple[str, str]:
    """(host address, published port) in either output form (v1 strings, v2 mappings)."""
    if isinstance(port, dict):
        return port.get("host_ip", ""), str(port.get("published"))
    parts = str(port).split(":")
    return (parts[0], parts[1]) if len(parts) == 3 else ("", parts[0])


def test_plugin_compose_publishes_ports_on_localhost_and_checks_secrets_first(config):
    s = config["services"]
    published = {name: [_published(p) for p in svc.get("ports", [])] for name, svc in s.items()}
    assert {p for ports in published.values() for _, p in ports} == {"8080", "8081", "9000", "9001"}
    assert all(host == "127.0.0.1" for ports in published.values() for host, _ in ports), published
    # every service waits for check-secrets, directly or through one that does
    waits = {n for n, svc in s.items() if "check-secrets" in (svc.get("depends_on") or {})}
    for name, svc in s.items():
        if name != "check-secrets":
            assert name in waits or set(svc.get("depends_on") or {}) & waits, name
    assert s["check-secrets"]["entrypoint"] == ["python", "/opt/lakeformat/docker/check_secrets.py"]


def test_plugin_compose_lakeformat_connection_builds_an_s3_catalog(config):
    conn = json.loads(_env(config["services"]["airflow-scheduler"])["AIRFLOW_CONN_LAKEFORMAT_DEFAULT"])
    settings = catalog_settings("lakeformat_default", conn["host"], conn["login"], conn["password"], conn["extra"])
    assert settings.warehouse == "s3://lakehouse/warehouse"
    assert settings.options["s3.endpoint"] == "http://minio:9000"
    assert settings.options["s3.access-key"] == "lakeformat"       # from .env.example, not the compose file


def test_plugin_compose_refuses_without_secrets(tmp_path):
    empty = tmp_path / "empty.env"
    empty.write_text("")
    proc = _config(empty)
    assert proc.returncode != 0
    assert re.search(r"set \w+ in \.env", proc.stderr), proc.stderr


def test_plugin_compose_keeps_secrets_out_of_git():
    compose = (ROOT / "docker-compose.yml").read_text()
    example = dict(line.split("=", 1) for line in (ROOT / ".env.example").read_text().splitlines()
                   if line and not line.startswith("#"))
    for key in ("AIRFLOW_ADMIN_PASSWORD", "POSTGRES_PASSWORD", "MINIO_ROOT_PASSWORD", "AIRFLOW_JWT_SECRET"):
        assert example[key].startswith("change-me") and example[key] not in compose
    ignored = subprocess.run(["git", "check-ignore", "-q", ".env"], cwd=ROOT)
    assert ignored.returncode == 0, ".env must be git-ignored"


def test_plugin_airflow_image_matches_the_project_pins():
    dockerfile = (ROOT / "docker" / "airflow.Dockerfile").read_text()
    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["pipeline"]
    airflow_pin = next(p for p in pins if p.startswith("apache-airflow=="))
    version = airflow_pin.split("==")[1]
    assert f"FROM apache/airflow:{version}-python3.11" in dockerfile
    assert f'"{airflow_pin}"' in dockerfile and '-e "/opt/lakeformat[spark,pipeline]"' in dockerfile
    assert "default-jdk-headless" in dockerfile    # spark-submit needs Java, lakeformat's jar its compiler
    # the image builds the jar where lakeformat.spark.jar_path() finds it, from the sources make jar compiles
    makefile = (ROOT / "Makefile").read_text()
    assert "jvm/src/lakeformat/spark/*.java" in dockerfile and "jvm/src/lakeformat/spark/*.java" in makefile
    assert "--file /opt/lakeformat/lakeformat/spark/lakeformat-spark.jar" in dockerfile


def test_plugin_compose_landing_is_in_minio_and_generated_on_request(config):
    s = config["services"]
    landing = {name: _env(svc)["LAKEFORMAT_LANDING"] for name, svc in s.items() if "LAKEFORMAT_LANDING" in _env(svc)}
    assert set(landing) == AIRFLOW | {"airflow-init"} and set(landing.values()) == {"s3://lakehouse/landing"}
    demo = s["demo-landing"]
    args = demo["entrypoint"] + demo["command"]
    assert args[args.index("--landing") + 1] == "s3://lakehouse/landing"
    env = _env(demo)   # the store's credentials in the environment, never in the arguments
    assert env["AWS_SECRET_ACCESS_KEY"] == "change-me-minio-password" and not any("change-me" in a for a in args)
    assert json.loads(env["LAKEFORMAT_CATALOG"])["options"]["s3.endpoint"] == "http://minio:9000"
    assert demo["depends_on"]["minio-init"]["condition"] == "service_completed_successfully"
