"""test_concurrency's eight appenders + one overwriter, on moto's S3 server instead of a local dir.

Snapshots are created by conditional PUT (``If-None-Match: *``, the default for s3://), so lost
races are detected by the server, not by a local rename or lock.
"""
import uuid

import lakeformat as lf
from tests.integration.test_concurrency import check_history, oracle_ids, run_workers
from tests.integration.workers import SCHEMA
from tests.s3server import BUCKET, CREDS, s3_endpoint  # noqa: F401 (fixture)

# 25 per appender, as on local disk, takes ~80 s against moto on a 2-CPU box (moto serves every
# commit's ~30 requests from one Python process); 10 keeps the same nine-way contention in ~40 s.
COMMITS = 10


def test_eight_processes_commit_into_one_table_on_s3(s3_endpoint, tmp_path):
    wh = f"s3://{BUCKET}/concurrency-{uuid.uuid4().hex[:8]}"
    opts = {"s3.endpoint": s3_endpoint, **CREDS}
    cat = lf.Catalog(wh, **opts)
    cat.create_database("db")
    # Each attempt takes ~0.2 s here, so nine writers lose more races in a row than the default
    # commit.max-retries (10) allows; giving up is correct behaviour, but this test wants every
    # append committed.
    cat.create_table("db.t", SCHEMA, partition_keys=["p"], options={"commit.max-retries": "100"})
    acks = run_workers(wh, [f"{k}={v}" for k, v in opts.items()], appenders=8, commits=COMMITS)
    got = check_history(cat.get_table("db.t"), acks, 8, COMMITS)
    # pypaimon 2.1.0 reads the same s3.* keys, but defaults to virtual-host addressing
    # (bucket.127.0.0.1), which moto on loopback cannot serve
    theirs = oracle_ids(wh, tmp_path / "oracle.parquet", {**opts, "s3.path-style-access": "true"})
    assert sorted(theirs.column("id").to_pylist()) == sorted(got.column("id").to_pylist())
