"""Compacting a primary-key table's buckets outside the writers (``Table.compact``).

Each chosen bucket is restored from the latest snapshot into a merge-tree writer with no input,
which compacts by the picker (or fully); buckets run in parallel threads and the results commit
as one COMPACT snapshot through the committer, so a writer that raced it is caught by the
conflict rules instead of losing data.
"""
from __future__ import annotations

import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Optional, Sequence

from lakeformat.errors import LakeformatError
from lakeformat.mergetree.writer import MergeTreeWriter
from lakeformat.snapshot import Snapshot

log = logging.getLogger(__name__)


def compact_table(table, full: bool, partitions: Optional[Sequence[dict]] = None,
                  commit_user: Optional[str] = None, threads: int = 2,
                  progress: Optional[Callable[[int, int, str], None]] = None) -> Optional[Snapshot]:
    if not table.schema.primary_keys:
        raise LakeformatError(f"{table.name} is an append table: compact it with Table.compact")
    latest = table.latest_snapshot()
    if latest is None:
        return None
    matchers = [table.partition_matcher(p) for p in partitions or []]
    buckets: dict[tuple[bytes, int], list] = {}
    for e in table.live_entries(latest):
        if not matchers or any(m(e.partition) for m in matchers):
            buckets.setdefault((e.partition, e.bucket), []).append(e.file)
    total = table.schema.num_buckets

    def compact_bucket(key):
        partition, bucket = key
        w = MergeTreeWriter(table, partition, bucket, table.bucket_dir_of(partition, bucket), buckets[key])
        w.compact(full=full)
        return w.prepare_commit(total)

    todo = sorted(buckets)
    messages = []
    if progress:
        progress(0, len(todo), "compacting")
    try:
        with ThreadPoolExecutor(max(1, min(threads, len(buckets)))) as pool:
            for done, (key, m) in enumerate(zip(todo, pool.map(compact_bucket, todo)), 1):
                messages.append(m)
                if progress:
                    values = dict(zip(table.partition_keys, table.partition_values(key[0])))
                    progress(done, len(todo), f"{values} bucket {key[1]}" if values else f"bucket {key[1]}")
    except BaseException:
        table.new_commit().abort(messages)   # buckets already compacted: their new files go
        raise
    messages = [m for m in messages if not m.is_empty()]
    if not messages:
        log.info("%s: nothing to compact in %d bucket(s)", table.name, len(buckets))
        return None
    user = commit_user or f"compact-{uuid.uuid4()}"
    commit = table.new_commit(user)
    try:
        snap = commit.commit(messages)
    except BaseException:
        commit.abort(messages)
        raise
    before = sum(len(m.compact_before) for m in messages)
    after = sum(len(m.compact_after) for m in messages)
    log.info("%s: compacted %d bucket(s), %d file(s) into %d, snapshot %d", table.name, len(messages),
             before, after, snap.id if snap else -1)
    return snap
