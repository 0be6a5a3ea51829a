"""Self-tests of tests/faultproxy.py with the two real S3 clients lakeformat uses: boto3 (conditional
PUTs of snapshots) and pyarrow's S3FileSystem (the AWS C++ SDK over curl; everything else).

Each fault is checked on both sides: what the client saw (its retries, or the exception it raised)
and what the store holds, read from moto directly rather than through the proxy. Run with -s to
see what each client raised.
"""

import hashlib
import io
import os
import time
import urllib.parse
import uuid
from concurrent.futures import ThreadPoolExecutor

import boto3
import botocore.exceptions
import pyarrow.fs as pafs
import pytest
from botocore.config import Config

from tests.faultproxy import Fired, FaultProxy, faulty_s3  # noqa: F401 (fixture)
from tests.s3server import BUCKET, s3_endpoint  # noqa: F401 (fixture)


def client(url: str, attempts: int = 3, **config):
    """boto3 as lakeformat configures it (standard retries), with fewer attempts to stay quick."""
    return boto3.client("s3", endpoint_url=url, region_name="us-east-1", aws_access_key_id="testing",
                        aws_secret_access_key="testing",
                        config=Config(retries={"mode": "standard", "max_attempts": attempts}, **config))


def arrow(url: str) -> pafs.S3FileSystem:
    return pafs.S3FileSystem(endpoint_override=urllib.parse.urlsplit(url).netloc, scheme="http",
                             access_key="testing", secret_key="testing", region="us-east-1",
                             force_virtual_addressing=False)


def new_key(name: str) -> str:
    return f"faultproxy-{uuid.uuid4().hex[:8]}/{name}"


def stored(moto_url: str, key: str) -> bytes | None:
    """The object as moto holds it, asked directly (not through the proxy); None if absent."""
    try:
        return client(moto_url).get_object(Bucket=BUCKET, Key=key)["Body"].read()
    except botocore.exceptions.ClientError as e:
        assert e.response["Error"]["Code"] == "NoSuchKey"
        return None


def arrow_put(fs: pafs.S3FileSystem, key: str, data: bytes) -> None:
    with fs.open_output_stream(f"{BUCKET}/{key}") as out:
        out.write(data)


def test_rules_fire_after_skip_for_times_and_with_a_seeded_probability():
    proxy = FaultProxy("http://127.0.0.1:9")   # nothing is forwarded here
    try:
        once = proxy.add("put", r"/snapshot-\d+$", "status", skip=1)
        assert [once.fires(m, p) for m, p in [("PUT", "/b/snapshot/snapshot-1"), ("GET", "/b/snapshot/snapshot-2"),
                                               ("PUT", "/b/snapshot/snapshot-2"), ("PUT", "/b/snapshot/snapshot-3"),
                                               ("PUT", "/b/snapshot/LATEST")]] == [False, False, True, False, False]
        assert (once.status, once.matched, once.count) == (503, 3, 1)
        draws = [proxy.add("*", "x", "reset", times=None, probability=0.3, seed=7) for _ in range(2)]
        runs = [[r.fires("GET", "/b/x") for _ in range(1000)] for r in draws]
        assert runs[0] == runs[1] and 250 < sum(runs[0]) < 350
    finally:
        proxy.close()


def test_boto3_passes_through_on_one_kept_alive_connection(faulty_s3, s3_endpoint):
    c, before = client(faulty_s3.url), faulty_s3.connections
    small, large = new_key("dt=2024-01-01/a b.txt"), new_key("large")
    body = os.urandom(6 << 20)
    c.put_object(Bucket=BUCKET, Key=small, Body=b"hello")
    c.put_object(Bucket=BUCKET, Key=large, Body=io.BytesIO(body))   # a file: boto3 sends Expect: 100-continue
    assert c.get_object(Bucket=BUCKET, Key=small)["Body"].read() == b"hello"
    assert c.get_object(Bucket=BUCKET, Key=large)["Body"].read() == body == stored(s3_endpoint, large)
    prefix = small.split("/")[0]
    assert c.list_objects_v2(Bucket=BUCKET, Prefix=prefix)["KeyCount"] == 1
    c.delete_object(Bucket=BUCKET, Key=small)
    with pytest.raises(botocore.exceptions.ClientError) as e:   # moto's errors pass through as they are
        c.head_object(Bucket=BUCKET, Key=small)
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    assert stored(s3_endpoint, small) is None
    assert faulty_s3.connections - before == 1 and faulty_s3.fired == []


def test_pyarrow_passes_a_20_mb_multipart_upload_through_byte_exact(faulty_s3, s3_endpoint):
    fs, key = arrow(faulty_s3.url), new_key("big.bin")
    conns, reqs = faulty_s3.connections, faulty_s3.requests
    data = os.urandom(20 << 20)
    with fs.open_output_stream(f"{BUCKET}/{key}") as out:   # aws-chunked, Transfer-Encoding: chunked
        for i in range(0, len(data), 1 << 20):
            out.write(data[i:i + (1 << 20)])
    digest = hashlib.sha256(data).hexdigest()
    with fs.open_input_stream(f"{BUCKET}/{key}") as f:
        assert hashlib.sha256(f.read()).hexdigest() == digest
    assert hashlib.sha256(stored(s3_endpoint, key)).hexdigest() == digest
    listed = fs.get_file_info(pafs.FileSelector(f"{BUCKET}/{key.split('/')[0]}"))
    assert [(i.base_name, i.size) for i in listed] == [("big.bin", len(data))]
    fs.delete_file(f"{BUCKET}/{key}")
    assert stored(s3_endpoint, key) is None
    assert faulty_s3.requests - reqs >= 7 > faulty_s3.connections - conns   # connections are reused


def test_many_concurrent_connections(faulty_s3, s3_endpoint):
    c, prefix = client(faulty_s3.url, max_pool_connections=16), new_key("")

    def roundtrip(i: int) -> bool:
        c.put_object(Bucket=BUCKET, Key=f"{prefix}{i}", Body=str(i).encode() * 1000)
        return c.get_object(Bucket=BUCKET, Key=f"{prefix}{i}")["Body"].read() == str(i).encode() * 1000

    with ThreadPoolExecutor(16) as pool:
        assert all(pool.map(roundtrip, range(64)))
    assert len(client(s3_endpoint).list_objects_v2(Bucket=BUCKET, Prefix=prefix)["Contents"]) == 64


def test_a_dropped_reply_to_a_conditional_put_is_retried_into_a_412(faulty_s3, s3_endpoint):
    """The production bug: the create-if-absent PUT of a snapshot is applied, its reply is lost,
    botocore retries, and the retry is refused because the object now exists: ours."""
    key = new_key("snapshot/snapshot-3")
    faulty_s3.add("PUT", r"/snapshot/snapshot-\d+$", "drop_reply")
    with pytest.raises(botocore.exceptions.ClientError) as e:
        client(faulty_s3.url).put_object(Bucket=BUCKET, Key=key, Body=b"ours", IfNoneMatch="*")
    print(f"\nboto3, conditional PUT, reply dropped once: {type(e.value).__module__}.{e.value!r}")
    assert e.value.response["Error"]["Code"] == "PreconditionFailed"
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    assert e.value.response["ResponseMetadata"]["RetryAttempts"] == 1
    assert stored(s3_endpoint, key) == b"ours"
    assert faulty_s3.fired == [Fired("PUT", f"/{BUCKET}/{key}", "drop_reply", 200)]


def test_a_dropped_reply_to_a_plain_put_is_retried_into_success(faulty_s3, s3_endpoint):
    key, fs = new_key("data.bin"), arrow(faulty_s3.url)
    faulty_s3.add("PUT", r"/data\.bin$", "drop_reply")
    response = client(faulty_s3.url).put_object(Bucket=BUCKET, Key=key, Body=b"boto3")
    assert response["ResponseMetadata"]["RetryAttempts"] == 1 and stored(s3_endpoint, key) == b"boto3"
    faulty_s3.add("PUT", r"/data\.bin$", "drop_reply")   # pyarrow: an UploadPart (PUT ?partNumber=1)
    arrow_put(fs, key, b"pyarrow")
    assert stored(s3_endpoint, key) == b"pyarrow"
    assert [(f.action, f.status) for f in faulty_s3.fired] == [("drop_reply", 200)] * 2


def test_every_reply_dropped(faulty_s3, s3_endpoint):
    key = new_key("lost")
    faulty_s3.add("PUT", r"/lost$", "drop_reply", times=None)
    with pytest.raises(botocore.exceptions.ConnectionClosedError) as e:
        client(faulty_s3.url).put_object(Bucket=BUCKET, Key=key, Body=b"x")
    print(f"\nboto3, PUT, every reply dropped: {type(e.value).__module__}.{e.value!r}")
    boto3_attempts = len(faulty_s3.fired)
    assert boto3_attempts == 4   # Config(retries={"max_attempts": 3}) counts retries, not attempts
    with pytest.raises(OSError) as a:
        arrow_put(arrow(faulty_s3.url), key, b"y")
    print(f"pyarrow, PUT, every reply dropped: {a.value!r}")
    assert len(faulty_s3.fired) - boto3_attempts == 3   # its UploadPart, tried 3 times
    assert stored(s3_endpoint, key) == b"x"   # boto3's PUTs were applied; pyarrow's upload never completed


def test_slowdown_and_internal_error_once_are_retried(faulty_s3, s3_endpoint):
    key, c, fs = new_key("throttled"), client(faulty_s3.url), arrow(faulty_s3.url)
    faulty_s3.add("PUT", r"/throttled$", "status", status=503)
    assert c.put_object(Bucket=BUCKET, Key=key, Body=b"a")["ResponseMetadata"]["RetryAttempts"] == 1
    faulty_s3.add("GET", r"/throttled$", "status", status=500)
    assert c.get_object(Bucket=BUCKET, Key=key)["Body"].read() == b"a"
    faulty_s3.add("PUT", r"/throttled$", "status", status=503)
    data = b"b" * 1000   # more than the error's body: see the next test
    arrow_put(fs, key, data)
    faulty_s3.add("GET", r"/throttled$", "status", status=500)
    with fs.open_input_stream(f"{BUCKET}/{key}") as f:
        assert f.read() == data
    assert [(f.method, f.status) for f in faulty_s3.fired] == [("PUT", 503), ("GET", 500)] * 2


def test_pyarrow_does_not_retry_a_read_smaller_than_the_error_it_gets(faulty_s3):
    """The AWS C++ SDK writes an error's body into the caller's buffer, sized to the range asked
    for; when the ~260-byte XML does not fit, curl aborts (a write error), the status is lost and
    the read fails without a retry (as apache/doris#66557 describes for the same SDK)."""
    key, fs = new_key("hint"), arrow(faulty_s3.url)
    arrow_put(fs, key, b"42")   # e.g. a LATEST hint
    faulty_s3.add("GET", r"/hint$", "status", status=503)
    with pytest.raises(OSError) as a, fs.open_input_stream(f"{BUCKET}/{key}") as f:
        f.read()
    print(f"\npyarrow, GET of 2 bytes, 503 once: {a.value!r}")
    assert "Failed to flush response stream" in str(a.value)
    assert [(f.method, f.status) for f in faulty_s3.fired] == [("GET", 503)]


def test_slowdown_every_time(faulty_s3):
    key = new_key("throttled")
    faulty_s3.add("*", r"/throttled$", "status", status=503, times=None)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        client(faulty_s3.url).put_object(Bucket=BUCKET, Key=key, Body=b"a")
    print(f"\nboto3, PUT, always 503: {type(e.value).__module__}.{e.value!r}")
    assert e.value.response["Error"]["Code"] == "SlowDown"
    with pytest.raises(OSError) as a:
        arrow_put(arrow(faulty_s3.url), key, b"b")
    print(f"pyarrow, PUT, always 503: {a.value!r}")
    assert "SLOW_DOWN" in str(a.value) or "SlowDown" in str(a.value)


def test_a_reset_before_forwarding_never_reaches_the_store(faulty_s3, s3_endpoint):
    key, c, fs = new_key("reset"), client(faulty_s3.url), arrow(faulty_s3.url)
    faulty_s3.add("PUT", r"/reset$", "reset")
    assert c.put_object(Bucket=BUCKET, Key=key, Body=b"a")["ResponseMetadata"]["RetryAttempts"] == 1
    faulty_s3.add("PUT", r"/reset$", "reset")
    arrow_put(fs, key, b"b")
    assert stored(s3_endpoint, key) == b"b"
    assert faulty_s3.fired == [Fired("PUT", f"/{BUCKET}/{key}", "reset", None)] * 2
    faulty_s3.clear()
    never = new_key("reset")
    faulty_s3.add("*", r"/reset$", "reset", times=None)
    with pytest.raises(botocore.exceptions.BotoCoreError) as e:
        c.put_object(Bucket=BUCKET, Key=never, Body=b"a")
    print(f"\nboto3, PUT, always reset: {type(e.value).__module__}.{e.value!r}")
    with pytest.raises(OSError) as a:
        arrow_put(fs, never, b"b")
    print(f"pyarrow, PUT, always reset: {a.value!r}")
    assert stored(s3_endpoint, never) is None


def test_delay(faulty_s3, s3_endpoint):
    key, c, fs = new_key("slow"), client(faulty_s3.url), arrow(faulty_s3.url)
    c.put_object(Bucket=BUCKET, Key=key, Body=b"a")
    faulty_s3.add("GET", r"/slow$", "delay", seconds=1.0, times=2)
    started = time.monotonic()
    assert c.get_object(Bucket=BUCKET, Key=key)["Body"].read() == b"a"
    with fs.open_input_stream(f"{BUCKET}/{key}") as f:
        assert f.read() == b"a"
    took = time.monotonic() - started
    print(f"\ntwo GETs delayed 1 s each took {took:.2f} s")
    assert 2.0 <= took < 4.0
    assert [(f.action, f.status) for f in faulty_s3.fired] == [("delay", 200), ("delay", 206)]   # pyarrow: a range
