"""A real S3-compatible server for tests: moto's standalone server on loopback.

The server runs in a subprocess (not ``ThreadedMotoServer``) so its state cannot be reset by a
``mock_aws`` used elsewhere in the same pytest process, and so worker processes can reach it.
Credentials are fake and passed only through catalog options. Test modules import the fixture
(``from tests.s3server import s3_endpoint``); each importing module gets its own server.
"""
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

BUCKET = "lakeformat-test"
CREDS = {"s3.access-key": "testing", "s3.secret-key": "testing", "s3.region": "us-east-1"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def s3_endpoint():
    port = _free_port()
    endpoint = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                urllib.request.urlopen(endpoint + "/moto-api/", timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto server did not start on {endpoint} (exit {proc.poll()})")
                time.sleep(0.1)
        import boto3

        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="testing",
                     aws_secret_access_key="testing").create_bucket(Bucket=BUCKET)
        yield endpoint
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
