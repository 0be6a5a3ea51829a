"""Dedicated compaction (``Table.compact``): the buckets of a table compacted outside the writers
and committed as one COMPACT snapshot.

One loop for both table kinds: the buckets of the latest snapshot (all, or those of the given
partitions) are compacted in parallel threads, each by its table kind's rewriter, and the results
commit together through the committer, so a writer that raced the compaction is caught by the
conflict rules instead of losing data. A failure deletes every file the compaction wrote.

- primary-key tables: each bucket is restored into a merge-tree writer with no input, which
  compacts by the universal picker (or everything into the highest level with ``full``);
- append tables: small files of a bucket are concatenated into files of ``target-file-size``
  (``write/append_compact.py``).
"""
from __future__ import annotations

import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Optional, Sequence

from lakeformat.format.commit_message import CommitMessage
from lakeformat.format.manifest import DataFileMeta
from lakeformat.format.snapshot import Snapshot
from lakeformat.io.fileio import join
from lakeformat.mergetree.writer import MergeTreeWriter
from lakeformat.write.append_compact import AppendCompactPolicy, compact_bucket, pick

log = logging.getLogger(__name__)

Progress = Callable[[int, int, str], None]
BucketKey = tuple[bytes, int]


def compact_table(table, full: bool = False, partitions: Optional[Sequence[dict]] = None,
                  commit_user: Optional[str] = None, progress: Optional[Progress] = None,
                  threads: int = 2) -> Optional[Snapshot]:
    """Compact the buckets of ``table`` (all, or those of ``partitions`` like ``[{"dt": "x"}]``)
    as one COMPACT snapshot; None when nothing needed compacting."""
    latest = table.latest_snapshot()
    if latest is None:
        return None
    matchers = [table.partition_matcher(p) for p in partitions or []]
    buckets: dict[BucketKey, list[DataFileMeta]] = {}
    for e in table.live_entries(latest):
        if not matchers or any(m(e.partition) for m in matchers):
            buckets.setdefault((e.partition, e.bucket), []).append(e.file)
    if table.schema.primary_keys:
        compact_one, todo = _primary_key_bucket, sorted(buckets)
    else:   # buckets the picker leaves alone are not even opened
        policy = AppendCompactPolicy.of(table)
        compact_one = _append_bucket(policy)
        todo = sorted(k for k, files in buckets.items() if pick(files, policy, full))

    messages: list[CommitMessage] = []
    if progress:
        progress(0, len(todo), "compacting")
    try:
        with ThreadPoolExecutor(max(1, min(threads, len(todo) or 1))) as pool:
            results = pool.map(lambda key: compact_one(table, key, buckets[key], full), todo)
            for done, (key, m) in enumerate(zip(todo, results), 1):
                messages.append(m)
                if progress:
                    progress(done, len(todo), _describe(table, *key))
    except BaseException:
        _delete_outputs(table, messages)
        raise
    messages = [m for m in messages if not m.is_empty()]
    if not messages:
        log.info("%s: nothing to compact in %d bucket(s)", table.name, len(buckets))
        return None
    commit = table.new_commit(commit_user or f"compact-{uuid.uuid4()}")
    try:
        snap = commit.commit(messages)
    except BaseException:
        commit.abort(messages)
        raise
    log.info("%s: compacted %d file(s) of %d bucket(s) into %d, snapshot %d", table.name,
             sum(len(m.compact_before) for m in messages), len(messages),
             sum(len(m.compact_after) for m in messages), snap.id if snap else -1)
    return snap


def _primary_key_bucket(table, key: BucketKey, files: list[DataFileMeta], full: bool) -> CommitMessage:
    partition, bucket = key
    w = MergeTreeWriter(table, partition, bucket, table.bucket_dir_of(partition, bucket), files)
    w.compact(full=full)
    return w.prepare_commit(table.schema.num_buckets)


def _append_bucket(policy: AppendCompactPolicy):
    def compact_one(table, key: BucketKey, files: list[DataFileMeta], full: bool) -> CommitMessage:
        partition, bucket = key
        before, after = compact_bucket(table, table.bucket_dir_of(partition, bucket), files, policy, full)
        return CommitMessage(partition, bucket, table.schema.num_buckets,
                             compact_before=tuple(before), compact_after=tuple(after))
    return compact_one


def _describe(table, partition: bytes, bucket: int) -> str:
    values = dict(zip(table.partition_keys, table.partition_values(partition)))
    return f"{values} bucket {bucket}" if values else f"bucket {bucket}"


def _delete_outputs(table, messages: Sequence[CommitMessage]) -> None:
    """Files the compaction wrote for buckets that finished before the failure (a file a
    compaction only moved up a level is still the live input: it stays)."""
    for m in messages:
        d = table.bucket_dir_of(m.partition, m.bucket)
        moved = {f.file_name for f in m.compact_before}
        for f in (*m.compact_after, *m.compact_changelog):
            if f.file_name not in moved:
                table.io.delete(join(d, f.file_name))
