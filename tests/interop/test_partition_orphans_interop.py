"""pypaimon and pypaimon-rust read a table after partition expiration, orphan removal and a
published stage with the rows lakeformat reads (one oracle process for all checks)."""
from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path

import pyarrow as pa

import lakeformat as lf
from lakeformat.table import staging
from tests.interop.helpers import Oracle, check_readers

SCHEMA = pa.schema([("user_id", pa.int64()), ("behavior", pa.string()), ("dt", pa.string()), ("hour", pa.string())])


def rows(ids, day: str, hour: str) -> pa.Table:
    ids = list(ids)
    return pa.table({"user_id": ids, "behavior": [f"b{i % 4}" for i in ids], "dt": [day] * len(ids),
                     "hour": [hour] * len(ids)}, schema=SCHEMA)


def test_oracles_read_after_partition_expiration_orphan_removal_and_publish(catalog, tmp_path):
    t = catalog.create_table("db.events", SCHEMA, partition_keys=["dt", "hour"],
                             options={"bucket": "2", "bucket-key": "user_id"})
    parts = [("20240101", "22"), ("20240102", "03"), ("20240102", "09"), ("20240102", "10")]
    for n, (day, hour) in enumerate(parts):
        t.write(rows(range(n * 10, n * 10 + 10), day, hour))
    # no partition.expiration-time option: writers would expire these 2024 partitions at today's date
    t.alter(lf.SetOption("partition.timestamp-formatter", "yyyyMMdd HH"),
            lf.SetOption("partition.timestamp-pattern", "$dt $hour"))
    before_expiry = t.latest_snapshot().id
    gone = t.expire_partitions(expiration_time="3 h", now=dt.datetime(2024, 1, 2, 11))
    assert gone == [{"dt": "20240101", "hour": "22"}, {"dt": "20240102", "hour": "03"}]
    after_expiry = t.read()
    assert sorted(after_expiry.column("user_id").to_pylist()) == list(range(20, 40))

    # a crashed writer's files, old enough to go; and a staged day whose files are just as old
    w = t.new_write()
    w.write(rows(range(100, 105), "20240102", "10"))
    crashed = {f.file_name for m in w.prepare_commit() for f in m.new_files}
    s = t.new_write("ingest")
    s.write(rows(range(200, 205), "20240102", "11"))
    staging.stage(t, s.prepare_commit(), "day-11", commit_user="ingest", identifier=staging.identifier_for("day", "11"))
    old = time.time() - 2 * 86400
    for p in Path(t.path).rglob("*"):
        if p.is_file():
            os.utime(p, (old, old))
    result = t.remove_orphan_files()
    assert {Path(p).name for p in result.orphans} == crashed and result.deleted == len(crashed)
    assert t.read().sort_by("user_id").equals(after_expiry.sort_by("user_id"))

    oracle = Oracle(tmp_path / "oracle")
    latest = oracle.read(catalog.warehouse, "db.events")
    historic = oracle.read(catalog.warehouse, "db.events", readers=("pypaimon",), snapshot_id=before_expiry)
    res = oracle.run()
    check_readers(res, latest, after_expiry, "user_id", what="after expiration and orphan removal")
    check_readers(res, historic, t.read(snapshot_id=before_expiry), "user_id", readers=("pypaimon",),
                  what="time travel to before the expiration")

    staging.publish(t, "day-11")
    i = oracle.read(catalog.warehouse, "db.events")
    check_readers(oracle.run(), i, t.read(), "user_id", what="after publishing the stage")
    assert t.read().num_rows == 25
