"""Compaction on a Spark cluster: planned on the driver, the (partition, bucket)s rewritten by
Spark tasks with lakeformat's own bucket compaction, one commit on the driver.

    snap, report = compact_on_spark(spark, ref, full=True)

The buckets are packed into about as many tasks as the cluster runs at once (largest first, each
to the task with the fewest bytes so far): a task costs its start (a Python worker, the table
opened) whatever it rewrites, and one task per bucket made many small buckets slower on Spark than
in one process. Each task opens the table, compacts its buckets (the merge tree's picker for
primary-key tables, small-file merging for append tables) and returns their CommitMessages; the
driver commits them all as one COMPACT snapshot through the committer, so a writer racing the
compaction is caught by the conflict rules. Every task attempt also records each bucket's message
in a results directory inside the table (``_spark-compact-<run>/``) as soon as it is done: if the
job fails, the driver deletes the files of every bucket an attempt finished, and after a success
it deletes those of attempts Spark discarded (speculative or re-run tasks); a bucket that fails
deletes its own. So a failed job leaves the table as it was and no orphaned files. A re-run plans
from the latest snapshot, so what a finished run compacted is not compacted again.
"""
from __future__ import annotations

import logging
import pickle
import uuid
from dataclasses import dataclass
from typing import Optional
from collections.abc import Sequence

from pyspark import TaskContext

from lakeformat.format.commit_message import CommitMessage
from lakeformat.format.snapshot import Snapshot
from lakeformat.io.fileio import join
from lakeformat.table.maintenance import BucketJob, ExpireResult
from lakeformat.spark.options import TableRef

log = logging.getLogger(__name__)
RESULTS_PREFIX = "_spark-compact-"


@dataclass(frozen=True)
class CompactionReport:
    """What a compaction did."""

    buckets_planned: int
    buckets_compacted: int
    files_before: int
    files_after: int
    snapshot_id: Optional[int]
    expired: Optional[ExpireResult] = None   # the snapshot expiration after the commit
    expire_error: Optional[str] = None       # why that expiration failed (the compaction is committed)

    def summary(self) -> str:
        if self.snapshot_id is None:
            out = f"nothing to compact ({self.buckets_planned} bucket(s) looked at)"
        else:
            out = (f"compacted {self.files_before} file(s) of {self.buckets_compacted} bucket(s) into "
                   f"{self.files_after}: snapshot {self.snapshot_id}")
        if self.expire_error is not None:
            return out + f"; the snapshot expiration after it failed: {self.expire_error}"
        return out + (f"; {self.expired.summary()}" if self.expired is not None else "")


def _task(ref: TableRef, schema_id: int, full: bool, results_dir: str):
    def run(bins):
        ctx = TaskContext.get()
        attempt = ctx.attemptNumber() if ctx is not None else 0
        table = None
        for items in bins:
            for i, job in items:
                table = table or ref.open(schema_id)
                message = table.maintenance.compact_bucket(job, full)
                table.io.write_bytes(join(results_dir, f"{i}-{attempt}"), pickle.dumps(message))
                yield i, message
    return run


def pack(sizes: Sequence[int], tasks: int) -> list[list[int]]:
    """Indexes of ``sizes`` in ``tasks`` groups of about equal total: largest first, each to the
    group with the least so far (the longest-processing-time rule). No group is empty."""
    groups: list[list[int]] = [[] for _ in range(max(1, min(tasks, len(sizes))))]
    totals = [0] * len(groups)
    for i in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        g = min(range(len(groups)), key=lambda g: (totals[g], g))
        groups[g].append(i)
        totals[g] += sizes[i]
    return groups


def _recorded(table, results_dir: str) -> list[CommitMessage]:
    return [pickle.loads(table.io.read_bytes(join(results_dir, name))) for name in table.io.list_names(results_dir)]


def _outputs(m: CommitMessage) -> set[str]:
    return {f.file_name for f in (*m.compact_after, *m.compact_changelog)}


def compact_on_spark(spark, ref: TableRef, full: bool = False, partitions: Optional[Sequence[dict]] = None,
                     commit_user: Optional[str] = None, tasks: Optional[int] = None
                     ) -> tuple[Optional[Snapshot], CompactionReport]:
    """Compact ``ref``'s table (all partitions, or those like ``[{"dt": "x"}]``) with Spark tasks
    and one commit; ``tasks``: how many the buckets are packed into (default: the cluster's
    default parallelism; at most one per bucket). Returns the COMPACT snapshot (None if nothing
    needed it) and a report."""
    table = ref.open()
    jobs: list[BucketJob] = table.maintenance.plan_compaction(full, partitions)
    if not jobs:   # a write-only table still expires snapshots
        r = table.maintenance.commit_compaction([], commit_user)
        return None, CompactionReport(0, 0, 0, 0, None, r.expired, r.expire_error)
    results_dir = join(table.path, f"{RESULTS_PREFIX}{uuid.uuid4()}")
    sc = spark.sparkContext
    sc.setJobDescription(f"lakeformat: compact {len(jobs)} bucket(s) of {table.name}")
    try:
        groups = pack([sum(f.file_size for f in j.files) for j in jobs], tasks or sc.defaultParallelism)
        bins = [[(i, jobs[i]) for i in g] for g in groups]
        try:
            collected = sc.parallelize(bins, len(bins)) \
                .mapPartitions(_task(ref, table.schema.id, full, results_dir)).collect()
        except BaseException:
            table.maintenance.discard_compaction(_recorded(table, results_dir))
            raise
        messages = [m for _i, m in sorted(collected, key=lambda x: x[0])]
        kept = set().union(*(_outputs(m) for m in messages))
        discarded = [m for m in _recorded(table, results_dir) if not _outputs(m) <= kept]
        table.maintenance.discard_compaction(discarded, keep=kept)
    finally:
        table.io.delete_dir(results_dir)
    messages = [m for m in messages if not m.is_empty()]
    r = table.maintenance.commit_compaction(messages, commit_user)
    snap = r.snapshot
    report = CompactionReport(len(jobs), len(messages), sum(len(m.compact_before) for m in messages),
                              sum(len(m.compact_after) for m in messages), snap.id if snap else None, r.expired,
                              r.expire_error)
    log.info("%s: %s", table.name, report.summary())
    return snap, report
