"""Compaction as Spark tasks (``lakeformat.spark.compaction``): the rows stay the same, the
buckets end compacted in one COMPACT snapshot, a re-run compacts nothing, and a failed task
leaves the table as it was with no file of the other tasks left behind."""
from __future__ import annotations

import os

import pyarrow as pa
import pytest

from lakeformat.errors import CorruptFileError
from lakeformat.spark.compaction import RESULTS_PREFIX, compact_on_spark, pack
from lakeformat.spark.options import TableRef
from tests.interop.helpers import assert_same_rows

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])


def files_under(path: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(r, f), path) for r, _d, fs in os.walk(path) for f in fs)


def fill(t, writes: int = 4) -> None:
    for w in range(writes):
        ids = list(range(w * 50, w * 50 + 200))
        t.write(pa.table({"id": ids, "v": [f"w{w}-{i}" for i in ids]}, schema=SCHEMA))


def test_primary_key_and_append_tables_compacted_by_spark_tasks(spark, catalog):
    ref = TableRef(catalog.warehouse, "db.pk")
    t = catalog.create_table("db.pk", SCHEMA, primary_keys=["id"], options={"bucket": "4", "write-only": "true"})
    fill(t)
    before = t.read()
    snap, report = compact_on_spark(spark, ref, full=True, commit_user="spark-compact")
    t = catalog.get_table("db.pk")
    assert snap.commit_kind == "COMPACT" and t.latest_snapshot().id == snap.id == 5
    assert report.buckets_compacted == 4 and report.files_before == 16 and "snapshot 5" in report.summary()
    assert_same_rows(t.read(), before, ["id"], "after compaction")
    runs = t.system_table("buckets").to_pylist()
    assert len(runs) == 4 and all(r["sorted_runs"] == 1 for r in runs), runs
    assert not [f for f in os.listdir(t.path) if f.startswith(RESULTS_PREFIX)]
    again, report = compact_on_spark(spark, ref, full=True)
    assert again is None and catalog.get_table("db.pk").latest_snapshot().id == 5

    a = catalog.create_table("db.small", SCHEMA, options={"compaction.min.file-num": "2"})
    fill(a, 3)
    snap, report = compact_on_spark(spark, TableRef(catalog.warehouse, "db.small"))
    a = catalog.get_table("db.small")
    assert snap.commit_kind == "COMPACT" and len(a.files()) == 1 and a.read().num_rows == 600


def test_buckets_are_packed_into_balanced_tasks():
    assert pack([5, 1, 4, 2, 3], 2) == [[0, 3, 1], [2, 4]]   # 8 and 7 bytes
    assert pack([1, 1, 1], 5) == [[0], [1], [2]]            # never an empty task
    assert pack([7], 0) == [[0]]
    groups = pack(list(range(100)), 7)
    assert sorted(i for g in groups for i in g) == list(range(100))
    totals = [sum(g) for g in groups]
    assert max(totals) - min(totals) <= 99


@pytest.mark.parametrize("tasks", [1, 3])
def test_many_buckets_in_few_tasks(spark, catalog, tasks):
    t = catalog.create_table("db.pk", SCHEMA, primary_keys=["id"], options={"bucket": "5", "write-only": "true"})
    fill(t)
    before = t.read()
    sc = spark.sparkContext
    sc.setJobGroup(f"compact-in-{tasks}", "compaction packed into few tasks")
    snap, report = compact_on_spark(spark, TableRef(catalog.warehouse, "db.pk"), full=True, tasks=tasks)
    t = catalog.get_table("db.pk")
    assert snap.commit_kind == "COMPACT" and report.buckets_compacted == 5 and report.files_before == 20
    assert_same_rows(t.read(), before, ["id"], f"after compaction in {tasks} task(s)")
    assert all(r["sorted_runs"] == 1 for r in t.system_table("buckets").to_pylist())
    assert not [f for f in os.listdir(t.path) if f.startswith(RESULTS_PREFIX)]
    tracker = sc.statusTracker()
    stages = [s for j in tracker.getJobIdsForGroup(f"compact-in-{tasks}") for s in tracker.getJobInfo(j).stageIds]
    assert [tracker.getStageInfo(s).numTasks for s in stages] == [tasks]
    sc.setLocalProperty("spark.jobGroup.id", None)


def test_a_failed_task_leaves_no_change_and_no_files(spark, catalog):
    t = catalog.create_table("db.pk", SCHEMA, primary_keys=["id"], options={"bucket": "4", "write-only": "true"})
    fill(t)
    victim = next(e for e in t.live_entries(t.latest_snapshot()) if e.bucket == 2)
    os.remove(os.path.join(t.bucket_dir_of(victim.partition, 2), victim.file.file_name))
    everything = files_under(t.path)
    with pytest.raises(Exception, match=CorruptFileError.__name__ + "|data file is missing"):
        compact_on_spark(spark, TableRef(catalog.warehouse, "db.pk"), full=True)
    assert files_under(t.path) == everything
    assert catalog.get_table("db.pk").latest_snapshot().id == 4
