"""A real S3-compatible server for tests: moto's standalone server on loopback.

The server runs in a subprocess (not ``ThreadedMotoServer``) so its state cannot be reset by a
``mock_aws`` used elsewhere in the same pytest process, and so worker processes can reach it.
Credentials are fake and passed only through catalog options. Test modules import the fixture
(``from tests.s3server import s3_endpoint``); each importing module gets its own server.
"""
import os
import subprocess
import sys

import pytest

from tests.servers import free_port, wait_until_serving

BUCKET = "lakeformat-test"
CREDS = {"s3.access-key": "testing", "s3.secret-key": "testing", "s3.region": "us-east-1"}


@pytest.fixture(scope="session")
def s3_endpoint():
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        wait_until_serving(endpoint + "/moto-api/", proc, "moto server", 20)
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
