"""Structured Streaming from and into lakeformat tables: offsets are snapshot ids, the
checkpoint and the sink's (commit user, batch id) identifiers make every change arrive exactly
once across restarts, and a consumer keeps expiration away from what a stream has not read."""
from __future__ import annotations

import os

import pyarrow as pa

import lakeformat.spark as lfs
from lakeformat.maintenance.consumer import ConsumerManager
from lakeformat.pipeline.demo_data import SCHEMA as UB_SCHEMA, user_behavior
from tests.interop.helpers import assert_same_rows

KEY = ["user_id", "item_id", "ts"]


def run_stream(spark, wh, checkpoint, **source_options):
    """One run of the query src -> dst until it has read everything available, then stop."""
    r = spark.readStream.format("lakeformat").option("warehouse", wh).option("table", "db.src")
    for k, v in source_options.items():
        r = r.option(k, v)
    q = (r.load().writeStream.format("lakeformat").option("warehouse", wh).option("table", "db.dst")
         .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    q.awaitTermination(120)
    assert q.exception() is None, q.exception()


def parquet_files(path):
    return sorted(f for _root, _dirs, files in os.walk(path) for f in files if f.endswith(".parquet"))


def test_stream_restarts_deliver_every_change_once_and_consumer_holds_snapshots(spark, catalog, tmp_path):
    wh, ck = catalog.warehouse, str(tmp_path / "checkpoint")
    src = catalog.create_table("db.src", UB_SCHEMA, partition_keys=["dt"])
    dst = catalog.create_table("db.dst", UB_SCHEMA, partition_keys=["dt"],
                               options={"bucket": "2", "bucket-key": "user_id"})
    batches = [user_behavior(300, ["2024-06-01", "2024-06-02"], seed=i) for i in range(6)]
    src.write(batches[0])
    src.write(batches[1])
    run_stream(spark, wh, ck, **{"consumer-id": "to-dst"})        # the table as it is: snapshot 2 whole
    assert_same_rows(dst.read(), pa.concat_tables(batches[:2]), KEY, "first run")
    src.write(batches[2])
    src.write(batches[3])
    run_stream(spark, wh, ck, **{"consumer-id": "to-dst"})        # restarted: the changes of 3 and 4
    assert_same_rows(dst.read(), pa.concat_tables(batches[:4]), KEY, "after a restart")

    # a crash after the sink committed a batch but before Spark recorded it: Spark replays the
    # batch; it reads the same snapshots and the sink does not commit them again
    src.write(batches[4])
    run_stream(spark, wh, ck, **{"consumer-id": "to-dst"})
    commits = sorted(os.listdir(os.path.join(ck, "commits")), key=lambda n: int(n) if n.isdigit() else -1)
    last = commits[-1]
    os.remove(os.path.join(ck, "commits", last))
    os.remove(os.path.join(ck, "commits", f".{last}.crc"))
    snapshots_before = dst.latest_snapshot().id
    run_stream(spark, wh, ck, **{"consumer-id": "to-dst"})
    assert dst.latest_snapshot().id == snapshots_before
    assert_same_rows(dst.read(), pa.concat_tables(batches[:5]), KEY, "after a replayed batch")
    referenced = {f["file_name"] for s in dst.snapshots() for f in dst.files(s.id)}
    assert set(parquet_files(dst.path)) == referenced      # the replay's files were deleted again

    # the consumer holds back expiration: snapshot 5 is not read yet, 6 and 7 come later
    src.write(batches[5])
    need = ConsumerManager(src.ctx).get("to-dst")
    assert need is not None and need <= 6
    src.expire_snapshots(retain_min=1, retain_max=1, older_than=lf_now())
    assert src.snapshot_manager.earliest_id() <= need
    run_stream(spark, wh, ck, **{"consumer-id": "to-dst"})
    assert_same_rows(dst.read(), pa.concat_tables(batches), KEY, "after expiration")
    # a new query without the checkpoint resumes from the consumer instead of the start
    assert ConsumerManager(src.ctx).get("to-dst") >= 6


def lf_now():
    import datetime as dt
    return dt.datetime.now() + dt.timedelta(seconds=1)


def test_stream_of_a_primary_key_changelog(spark, catalog, tmp_path):
    wh = catalog.warehouse
    schema = pa.schema([pa.field("id", pa.int64(), False), ("name", pa.string())])
    t = catalog.create_table("db.users", schema, primary_keys=["id"],
                             options={"bucket": "1", "changelog-producer": "input"})
    t.write(pa.table({"id": [1, 2, 3], "name": ["ann", "bob", "cy"]}, schema=schema))
    t.write(pa.table({"id": [2], "name": ["bob2"]}, schema=schema))
    t.delete(pa.table({"id": [3]}))

    def stream(name, **options):
        r = spark.readStream.format("lakeformat").option("warehouse", wh).option("table", "db.users") \
            .option("scan.mode", "latest").option("start-snapshot", "0")
        for k, v in options.items():
            r = r.option(k, v)
        q = r.load().writeStream.format("memory").queryName(name) \
            .option("checkpointLocation", str(tmp_path / name)).trigger(availableNow=True).start()
        q.awaitTermination(120)
        assert q.exception() is None, q.exception()
        return sorted((tuple(r) for r in spark.sql(f"select * from {name}").collect()), key=repr)

    # a delete carries only its key: its other columns are null
    assert stream("changes", **{"read.changelog": "true"}) == sorted(
        [(1, "ann", "+I"), (2, "bob", "+I"), (3, "cy", "+I"), (2, "bob2", "+I"), (3, None, "-D")], key=repr)
    assert stream("upserts") == sorted([(1, "ann"), (2, "bob"), (3, "cy"), (2, "bob2")], key=repr)

    # a stream of upserts into another primary-key table: prepare() sends each bucket to one task
    copy = catalog.create_table("db.users_copy", schema, primary_keys=["id"], options={"bucket": "2"})
    source = spark.readStream.format("lakeformat").option("warehouse", wh).option("table", "db.users").load()
    q = lfs.prepare(source.repartition(3), "db.users_copy", warehouse=wh).writeStream.format("lakeformat") \
        .option("warehouse", wh).option("table", "db.users_copy").option("checkpointLocation", str(tmp_path / "copy")) \
        .trigger(availableNow=True).start()
    q.awaitTermination(120)
    assert q.exception() is None, q.exception()
    assert sorted(copy.read().to_pylist(), key=repr) == sorted(t.read().to_pylist(), key=repr)
