"""docker/check_secrets.py, which docker-compose runs before any service: the placeholder
secrets of .env.example and malformed keys are refused, real-looking ones pass."""
import base64
import os
import subprocess
import sys

from tests.project import ROOT

SCRIPT = ROOT / "docker" / "check_secrets.py"


def check(env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT)], env={"PATH": os.environ["PATH"], **env},
                          capture_output=True, text=True, timeout=60)


def example_env() -> dict:
    lines = (ROOT / ".env.example").read_text().splitlines()
    return dict(ln.split("=", 1) for ln in lines if ln and not ln.startswith("#"))


GOOD = {"AIRFLOW_ADMIN_PASSWORD": "horse-battery-staple", "POSTGRES_PASSWORD": "pg-Xk29s0d8f7",
        "MINIO_ROOT_PASSWORD": "minio-Lq81mZ0x", "AIRFLOW_JWT_SECRET": "j" * 24 + "Zx81Kq0s9d8f7g6h5j4k",
        "AIRFLOW_API_SECRET_KEY": "a" * 20 + "Lm28Xv0c9b8n7m6q5w4e",
        "AIRFLOW_FERNET_KEY": base64.urlsafe_b64encode(b"k" * 32).decode()}


def test_the_example_env_is_refused_naming_each_placeholder():
    proc = check(example_env())
    assert proc.returncode == 1
    for name in ("AIRFLOW_ADMIN_PASSWORD", "POSTGRES_PASSWORD", "MINIO_ROOT_PASSWORD", "AIRFLOW_JWT_SECRET",
                 "AIRFLOW_API_SECRET_KEY", "AIRFLOW_FERNET_KEY"):
        assert f"refusing to start: {name} is still a placeholder" in proc.stderr, name


def test_real_looking_secrets_pass_and_each_bad_one_is_named():
    assert check(GOOD).returncode == 0
    for name, value, reason in (("AIRFLOW_FERNET_KEY", "not-a-fernet-key", "not a Fernet key"),
                                ("AIRFLOW_FERNET_KEY", base64.urlsafe_b64encode(b"short").decode(), "not a Fernet key"),
                                ("AIRFLOW_JWT_SECRET", "tooShort1", "shorter than 32"),
                                ("POSTGRES_PASSWORD", "", "is not set"),
                                ("MINIO_ROOT_PASSWORD", "Change-Me-Please", "placeholder")):
        proc = check({**GOOD, name: value})
        line = next((ln for ln in proc.stderr.splitlines() if name in ln), "")
        assert proc.returncode == 1 and reason in line, (name, proc.stderr)
        assert not value or value not in proc.stderr   # never the value itself
