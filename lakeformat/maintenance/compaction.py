"""Dedicated compaction (``Table.compact``, ``Table.compact_report``): the buckets of a table compacted outside the
writers and committed as one COMPACT snapshot.

Planning, one bucket's rewrite and the commit are separate steps, so the same compaction runs in
threads here and as Spark tasks (``lakeformat.spark.compaction``). The buckets of the latest
snapshot (all, or those of the given partitions) are compacted, each by its table kind's
rewriter, and the results commit together through the committer, so a writer that raced the
compaction is caught by the conflict rules instead of losing data. A failure deletes every file
the compaction wrote.

- primary-key tables: each bucket is restored into a merge-tree writer with no input, which
  compacts by the universal picker (or everything into the highest level with ``full``);
- append tables: small files of a bucket are concatenated into files of ``target-file-size``
  (``write/append_compact.py``).
"""
from __future__ import annotations

import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Optional
from collections.abc import Callable, Iterable, Sequence

from lakeformat.errors import OptionError
from lakeformat.format import options as O
from lakeformat.format.commit_message import CommitMessage
from lakeformat.format.index_manifest import DELETION_VECTORS
from lakeformat.format.manifest import DataFileMeta
from lakeformat.format.snapshot import Snapshot
from lakeformat.io.fileio import join
from lakeformat.io.index_files import IndexFiles
from lakeformat.maintenance.expire import ExpireResult, expire_snapshots
from lakeformat.mergetree.writer import MergeTreeWriter
from lakeformat.secrets import mask
from lakeformat.write.append_compact import AppendCompactPolicy, compact_bucket, pick

log = logging.getLogger(__name__)

Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class CompactionResult:
    """Everything a compaction did: its COMPACT snapshot (None: nothing needed compacting) and the
    snapshot expiration that ran after it (None: none ran), or why that expiration failed. A
    failed expiration never turns a committed compaction into an error."""

    snapshot: Optional[Snapshot] = None
    expired: Optional[ExpireResult] = None
    expire_error: Optional[str] = None

    def summary(self, table_name: str = "") -> str:
        of = f" {table_name}" if table_name else ""
        out = (f"compacted{of} in snapshot {self.snapshot.id}" if self.snapshot is not None
               else f"nothing to compact in{of or ' the table'}")
        if self.expire_error is not None:
            return out + f"; the snapshot expiration after it failed: {self.expire_error}"
        if self.expired is not None:
            return out + f"; {self.expired.summary()}"
        return out


def compact_and_expire(table, full: bool = False, partitions: Optional[Sequence[dict]] = None,
                       commit_user: Optional[str] = None, progress: Optional[Progress] = None) -> CompactionResult:
    """``compact_table``, then the snapshot expiration: the commit's own on tables that are not
    ``write-only``, an explicit one on write-only tables (whose writers never expire; this is the
    dedicated compaction Paimon's compaction job is). Also expires when nothing needed compacting."""
    snap, expired = compact_table(table, full, partitions, commit_user, progress)
    if not table.typed_options.get(O.WRITE_ONLY):
        return CompactionResult(snap, expired)
    try:
        return CompactionResult(snap, expire_snapshots(table))
    except Exception as e:   # the compaction is committed; report, don't undo the news
        error = mask(f"{type(e).__name__}: {e}")
        log.warning("%s: %s, but expiring snapshots after it failed (the next compaction tries again): %s",
                    table.name, f"compacted in snapshot {snap.id}" if snap else "nothing to compact", error)
        return CompactionResult(snap, None, error)



@dataclass(frozen=True)
class BucketJob:
    """One bucket to compact: its partition, number and live files."""

    partition: bytes
    bucket: int
    files: tuple[DataFileMeta, ...]
    index_files: tuple = ()   # the bucket's deletion-vector index files


def plan_compaction(table, full: bool = False, partitions: Optional[Sequence[dict]] = None) -> list[BucketJob]:
    """The buckets of the latest snapshot (all, or those of ``partitions``) that need compacting:
    every primary-key bucket (its picker decides), append buckets the small-file picker chooses."""
    O.check_supported(table.schema.options, O.WRITE, table.name)
    latest = table.latest_snapshot()
    if latest is None:
        return []
    matchers = [table.partition_matcher(p) for p in partitions or []]
    buckets: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    for e in table.live_entries(latest):
        if not matchers or any(m(e.partition) for m in matchers):
            buckets.setdefault((e.partition, e.bucket), []).append(e.file)
    dvs: dict[tuple[bytes, int], list] = {}
    for e in IndexFiles(table.io, table.path).read_manifest(latest.index_manifest):
        if e.file.index_type == DELETION_VECTORS:
            dvs.setdefault((e.partition, e.bucket), []).append(e.file)
    if not table.schema.primary_keys:   # buckets the picker leaves alone are not even opened
        if dvs:
            raise OptionError(f"{table.name}: compacting an append table that has deletion vectors is not "
                              "supported (the rewrite would bring deleted rows back)")
        policy = AppendCompactPolicy.of(table)
        buckets = {k: files for k, files in buckets.items() if pick(files, policy, full)}
    return [BucketJob(p, b, tuple(buckets[(p, b)]), tuple(dvs.get((p, b), ()))) for p, b in sorted(buckets)]


def compact_bucket_job(table, job: BucketJob, full: bool) -> CommitMessage:
    """Compact one bucket; on failure the files it wrote are deleted."""
    d = table.bucket_dir_of(job.partition, job.bucket)
    if table.schema.primary_keys:
        w = MergeTreeWriter(table, job.partition, job.bucket, d, list(job.files), job.index_files)
        try:
            w.compact(full=full)
            return w.prepare_commit(table.schema.num_buckets)
        except BaseException:
            w.abort()
            raise
    before, after = compact_bucket(table, d, list(job.files), AppendCompactPolicy.of(table), full)
    return CommitMessage(job.partition, job.bucket, table.schema.num_buckets,
                         compact_before=tuple(before), compact_after=tuple(after))


def commit_compaction(table, messages: Sequence[CommitMessage], commit_user: Optional[str] = None
                      ) -> tuple[Optional[Snapshot], Optional[ExpireResult]]:
    """Commit compaction results as one COMPACT snapshot: (that snapshot or None if there are no
    results, what the commit's own snapshot expiration did); a failed commit deletes the new files."""
    messages = [m for m in messages if not m.is_empty()]
    if not messages:
        log.info("%s: nothing to compact", table.name)
        return None, None
    commit = table.new_commit(commit_user or f"compact-{uuid.uuid4()}")
    try:
        snap = commit.commit(messages)
    except BaseException:
        commit.abort(messages)
        raise
    log.info("%s: compacted %d file(s) of %d bucket(s) into %d, snapshot %d", table.name,
             sum(len(m.compact_before) for m in messages), len(messages),
             sum(len(m.compact_after) for m in messages), snap.id if snap else -1)
    return snap, commit.expired


def compact_table(table, full: bool = False, partitions: Optional[Sequence[dict]] = None,
                  commit_user: Optional[str] = None, progress: Optional[Progress] = None,
                  threads: int = 2) -> tuple[Optional[Snapshot], Optional[ExpireResult]]:
    """Compact the buckets of ``table`` (all, or those of ``partitions`` like ``[{"dt": "x"}]``)
    in ``threads`` threads as one COMPACT snapshot: (that snapshot or None when nothing needed
    compacting, what the commit's own snapshot expiration did)."""
    todo = plan_compaction(table, full, partitions)
    messages: list[CommitMessage] = []
    if progress:
        progress(0, len(todo), "compacting")
    try:
        with ThreadPoolExecutor(max(1, min(threads, len(todo) or 1))) as pool:
            results = pool.map(lambda job: compact_bucket_job(table, job, full), todo)
            for done, (job, m) in enumerate(zip(todo, results), 1):
                messages.append(m)
                if progress:
                    progress(done, len(todo), _describe(table, job.partition, job.bucket))
    except BaseException:
        delete_outputs(table, messages)
        raise
    return commit_compaction(table, messages, commit_user)


def _describe(table, partition: bytes, bucket: int) -> str:
    values = dict(zip(table.partition_keys, table.partition_values(partition)))
    return f"{values} bucket {bucket}" if values else f"bucket {bucket}"


def delete_outputs(table, messages: Iterable[CommitMessage], keep: Iterable[str] = ()) -> None:
    """Files a compaction wrote for buckets that finished before a failure (a file a compaction
    only moved up a level is still the live input: it stays, as do the names in ``keep``)."""
    keep = set(keep)
    for m in messages:
        d = table.bucket_dir_of(m.partition, m.bucket)
        moved = {f.file_name for f in m.compact_before}
        for f in (*m.compact_after, *m.compact_changelog):
            if f.file_name not in moved and f.file_name not in keep:
                table.io.delete(join(d, f.file_name))
