"""What the commit's check that every file it names exists costs: the same commit (one message of
one data file, and 50 messages of one file each in 50 buckets) with the check and with it
skipped, interleaved, on local disk and on moto S3 (a loopback server, so requests cost
round trips, not bandwidth). Prints medians and ratios; writes benchmarks/results/commit_check.json.

    .venv/bin/python benchmarks/commit_check.py [--rounds 15]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import lakeformat as lf  # noqa: E402
from lakeformat.commit.commit import FileStoreCommit  # noqa: E402
from tests.servers import free_port, wait_until_serving  # noqa: E402

CREDS = {"s3.access-key": "testing", "s3.secret-key": "testing", "s3.region": "us-east-1"}


def prepare(catalog, buckets: int):
    name = f"db.t{uuid.uuid4().hex[:8]}"
    t = catalog.create_table(name, pa.schema([("k", pa.int64()), ("v", pa.string())]),
                             primary_keys=["k"], options={"bucket": str(buckets)})
    w = t.new_write()
    n = 1000 * buckets
    w.write(pa.table({"k": pa.array(range(n), pa.int64()), "v": pa.array(["x"] * n)}))
    return t, w.prepare_commit()


def one(catalog, buckets: int, check: bool) -> float:
    t, msgs = prepare(catalog, buckets)
    original = FileStoreCommit._check_files_exist
    if not check:
        FileStoreCommit._check_files_exist = lambda self, m, ms: None
    try:
        c = t.new_commit("bench")
        start = time.perf_counter()
        c.commit(msgs)
        return time.perf_counter() - start
    finally:
        FileStoreCommit._check_files_exist = original


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    rounds = ap.parse_args().rounds
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    moto = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    results = {}
    try:
        wait_until_serving(endpoint + "/moto-api/", moto, "moto server", 20)
        import boto3
        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="testing",
                     aws_secret_access_key="testing").create_bucket(Bucket="bench")
        catalogs = {"local": lf.Catalog(tempfile.mkdtemp(prefix="commit-check-")),
                    "s3": lf.Catalog("s3://bench/wh", **{"s3.endpoint": endpoint, **CREDS})}
        for where, cat in catalogs.items():
            cat.create_database("db")
            for buckets in (1, 50):
                times = {True: [], False: []}
                one(cat, buckets, True)   # warm up
                for _ in range(rounds):
                    for check in (True, False):
                        times[check].append(one(cat, buckets, check))
                with_, without = statistics.median(times[True]), statistics.median(times[False])
                results[f"{where}, {buckets} message(s)"] = {"with_check_s": round(with_, 4),
                                                             "without_check_s": round(without, 4),
                                                             "ratio": round(with_ / without, 3)}
                print(f"{where:5} {buckets:3} message(s): {with_ * 1000:7.1f} ms with the check, "
                      f"{without * 1000:7.1f} ms without ({with_ / without:.2f}x), medians of {rounds}")
    finally:
        moto.terminate()
        moto.wait()
    out = ROOT / "benchmarks" / "results" / "commit_check.json"
    out.write_text(json.dumps({"rounds": rounds, "load": os.getloadavg()[0], "results": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
