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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Optional, Protocol
from collections.abc import Callable, Iterable, Sequence

from lakeformat.errors import OptionError
from lakeformat.format import options as O
from lakeformat.format.commit_message import CommitMessage
from lakeformat.format.index_manifest import DELETION_VECTORS
from lakeformat.format.manifest import DataFileMeta
from lakeformat.format.snapshot import Snapshot
from lakeformat.io.fileio import join
from lakeformat.io.index_files import IndexFiles
from lakeformat.io.table_context import TableContext
from lakeformat.maintenance.expire import ExpireResult
from lakeformat.mergetree.writer import MergeTreeWriter
from lakeformat.read.entries import live_entries
from lakeformat.write.append_compact import AppendCompactPolicy, compact_bucket, pick

log = logging.getLogger(__name__)

Progress = Callable[[int, int, str], None]


class Committer(Protocol):
    """The commit a compaction goes through, the caller's: the table's (``Table.new_commit``),
    which expires snapshots after it and reports that in ``expired``."""

    expired: Optional[ExpireResult]

    def commit(self, messages: Sequence[CommitMessage]) -> Optional[Snapshot]: ...

    def abort(self, messages: Sequence[CommitMessage]) -> None: ...


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


@dataclass(frozen=True)
class BucketJob:
    """One bucket to compact: its partition, number and live files."""

    partition: bytes
    bucket: int
    files: tuple[DataFileMeta, ...]
    index_files: tuple = ()   # the bucket's deletion-vector index files


def plan_compaction(ctx: TableContext, full: bool = False,
                    partitions: Optional[Sequence[dict]] = None) -> list[BucketJob]:
    """The buckets of the latest snapshot (all, or those of ``partitions``) that need compacting:
    every primary-key bucket (its picker decides), append buckets the small-file picker chooses."""
    O.check_supported(ctx.schema.options, O.WRITE, ctx.name)
    latest = ctx.latest_snapshot()
    if latest is None:
        return []
    matchers = [ctx.partition_matcher(p) for p in partitions or []]
    buckets: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    for e in live_entries(ctx, latest):
        if not matchers or any(m(e.partition) for m in matchers):
            buckets.setdefault((e.partition, e.bucket), []).append(e.file)
    dvs: dict[tuple[bytes, int], list] = {}
    for ix in IndexFiles.of(ctx).read_manifest(latest.index_manifest):
        if ix.file.index_type == DELETION_VECTORS:
            dvs.setdefault((ix.partition, ix.bucket), []).append(ix.file)
    if not ctx.schema.primary_keys:   # buckets the picker leaves alone are not even opened
        if dvs:
            raise OptionError(f"{ctx.name}: compacting an append table that has deletion vectors is not "
                              "supported (the rewrite would bring deleted rows back)")
        policy = AppendCompactPolicy.of(ctx)
        buckets = {k: files for k, files in buckets.items() if pick(files, policy, full)}
    return [BucketJob(p, b, tuple(buckets[(p, b)]), tuple(dvs.get((p, b), ()))) for p, b in sorted(buckets)]


def compact_bucket_job(ctx: TableContext, job: BucketJob, full: bool) -> CommitMessage:
    """Compact one bucket; on failure the files it wrote are deleted."""
    d = ctx.bucket_dir_of(job.partition, job.bucket)
    if ctx.schema.primary_keys:
        w = MergeTreeWriter(ctx, job.partition, job.bucket, d, list(job.files), job.index_files)
        try:
            w.compact(full=full)
            return w.prepare_commit(ctx.schema.num_buckets)
        except BaseException:
            w.abort()
            raise
    before, after = compact_bucket(ctx, d, list(job.files), AppendCompactPolicy.of(ctx), full)
    return CommitMessage(job.partition, job.bucket, ctx.schema.num_buckets,
                         compact_before=tuple(before), compact_after=tuple(after))


def commit_compaction(ctx: TableContext, commit: Committer, messages: Sequence[CommitMessage]
                      ) -> tuple[Optional[Snapshot], Optional[ExpireResult]]:
    """Commit compaction results as one COMPACT snapshot through ``commit``: (that snapshot or None
    if there are no results, what the commit's own snapshot expiration did); a failed commit
    deletes the new files."""
    messages = [m for m in messages if not m.is_empty()]
    if not messages:
        log.info("%s: nothing to compact", ctx.name)
        return None, None
    try:
        snap = commit.commit(messages)
    except BaseException:
        commit.abort(messages)
        raise
    log.info("%s: compacted %d file(s) of %d bucket(s) into %d, snapshot %d", ctx.name,
             sum(len(m.compact_before) for m in messages), len(messages),
             sum(len(m.compact_after) for m in messages), snap.id if snap else -1)
    return snap, commit.expired


def compact_table(ctx: TableContext, commit: Committer, full: bool = False,
                  partitions: Optional[Sequence[dict]] = None, progress: Optional[Progress] = None,
                  threads: int = 2) -> tuple[Optional[Snapshot], Optional[ExpireResult]]:
    """Compact the buckets of the table (all, or those of ``partitions`` like ``[{"dt": "x"}]``)
    in ``threads`` threads as one COMPACT snapshot: (that snapshot or None when nothing needed
    compacting, what the commit's own snapshot expiration did)."""
    todo = plan_compaction(ctx, full, partitions)
    messages: list[CommitMessage] = []
    if progress:
        progress(0, len(todo), "buckets compacted")
    try:
        with ThreadPoolExecutor(max(1, min(threads, len(todo) or 1))) as pool:
            results = pool.map(lambda job: compact_bucket_job(ctx, job, full), todo)
            for done, (job, m) in enumerate(zip(todo, results), 1):
                messages.append(m)
                if progress:
                    progress(done, len(todo), f"buckets compacted (last: {_describe(ctx, job.partition, job.bucket)})")
    except BaseException:
        delete_outputs(ctx, messages)
        raise
    return commit_compaction(ctx, commit, messages)


def _describe(ctx: TableContext, partition: bytes, bucket: int) -> str:
    values = dict(zip(ctx.partition_keys, ctx.partition_values(partition)))
    return f"{values} bucket {bucket}" if values else f"bucket {bucket}"


def delete_outputs(ctx: TableContext, messages: Iterable[CommitMessage], keep: Iterable[str] = ()) -> None:
    """Files a compaction wrote for buckets that finished before a failure (a file a compaction
    only moved up a level is still the live input: it stays, as do the names in ``keep``)."""
    keep = set(keep)
    for m in messages:
        d = ctx.bucket_dir_of(m.partition, m.bucket)
        moved = {f.file_name for f in m.compact_before}
        for f in (*m.compact_after, *m.compact_changelog):
            if f.file_name not in moved and f.file_name not in keep:
                ctx.io.delete(join(d, f.file_name))
