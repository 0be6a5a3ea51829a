"""Partition expiration: drop whole partitions older than ``partition.expiration-time``.

Planning is a pure function of the partitions (values, newest file time), ``now`` and the
options; the executor lists the latest snapshot's partitions and drops the expired ones in ONE
commit of kind OVERWRITE that deletes all their files and adds none (Paimon's drop partition).
That commit goes through the committer: it is recomputed against the latest snapshot on every
retry, so files a concurrent writer just added to an expired partition go too, and a concurrent
compaction of that partition fails with a conflict rather than resurrecting it.

Strategies (``partition.expiration-strategy``):
- ``values-time``: the time read from the partition values (see :mod:`lakeformat.partition_time`);
  partitions whose values make no time (say ``dt=unknown``) never expire and are logged.
- ``update-time``: the creation time of the partition's newest file.
A partition expires when its time is strictly before ``now - expiration-time``. At most
``partition.expiration-max-num`` partitions go per run, oldest first; the rest go next run.

Writers check after their commits (:func:`maybe_expire_partitions`) when the option is set, at
most once per ``partition.expiration-check-interval`` per Table object, and not with
``write-only = true`` (dedicated maintenance jobs expire instead). Unlike Paimon, whose first
check waits one interval after the writer starts, the first commit of a Table object checks:
a daily batch job lives shorter than any sensible interval and would otherwise never expire.
"""
from __future__ import annotations

import datetime as dt
import logging
import time
import uuid
import weakref
from dataclasses import dataclass
from typing import Optional, Union
from collections.abc import Callable, Sequence

from lakeformat.commit.commit import FileStoreCommit, Overwrite
from lakeformat.errors import LakeformatError, OptionError
from lakeformat.format import options as O
from lakeformat.format.commit_message import CommitMessage
from lakeformat.format.manifest import ManifestEntry
from lakeformat.format.snapshot import Snapshot
from lakeformat.io.table_context import TableContext
from lakeformat.read.entries import live_entries
from lakeformat.maintenance.partition_time import (
    check_timestamp_pattern,
    compile_pattern,
    partition_time,
)

log = logging.getLogger(__name__)
Progress = Callable[[int, int, str], None]
VALUES_TIME, UPDATE_TIME = "values-time", "update-time"


@dataclass(frozen=True)
class PartitionInfo:
    """One live partition as planning sees it."""

    partition: bytes            # serialized BinaryRow
    values: tuple
    last_file_creation_millis: Optional[int] = None   # newest file's creation time, epoch ms
    file_count: int = 0
    row_count: int = 0


@dataclass(frozen=True)
class ExpirePolicy:
    expiration_time: dt.timedelta
    strategy: str = VALUES_TIME
    timestamp_formatter: Optional[str] = None
    timestamp_pattern: Optional[str] = None
    max_num: int = 100

    @classmethod
    def of(cls, keys: Sequence[str], options: O.Options,
           expiration_time: Union[None, str, dt.timedelta] = None) -> ExpirePolicy:
        """The table's policy, with ``expiration_time`` overriding the option. Raises
        OptionError for settings that could never expire anything."""
        expiration_time = O.duration(expiration_time, "expiration_time")
        expiration_time = expiration_time if expiration_time is not None else options.get(O.PARTITION_EXPIRATION_TIME)
        if expiration_time is None:
            raise OptionError("partition.expiration-time is not set: set the table option or pass expiration_time")
        if not isinstance(expiration_time, dt.timedelta) or expiration_time < dt.timedelta(0):
            raise OptionError(f"partition expiration time must be a non-negative duration, not {expiration_time!r}")
        policy = cls(expiration_time, options.required(O.PARTITION_EXPIRATION_STRATEGY),
                     options.get(O.PARTITION_TIMESTAMP_FORMATTER), options.get(O.PARTITION_TIMESTAMP_PATTERN),
                     options.required(O.PARTITION_EXPIRATION_MAX_NUM))
        if policy.max_num <= 0:
            raise OptionError(f"partition.expiration-max-num must be positive, not {policy.max_num}")
        if policy.strategy == VALUES_TIME:
            if policy.timestamp_formatter:
                compile_pattern(policy.timestamp_formatter)
            if policy.timestamp_pattern:
                check_timestamp_pattern(policy.timestamp_pattern, keys)
        return policy


@dataclass(frozen=True)
class ExpirePlan:
    cutoff: dt.datetime                                # partitions older than this expire
    expired: tuple[PartitionInfo, ...]                 # oldest first, at most max_num
    deferred: int                                      # expired but over max_num: next run
    undated: tuple[tuple[PartitionInfo, str], ...]     # (partition, why it has no time)


def plan_expiration(keys: Sequence[str], partitions: Sequence[PartitionInfo], now: dt.datetime,
                    policy: ExpirePolicy) -> ExpirePlan:
    """Which partitions expire at ``now`` (a naive local date-time, as partition values are)."""
    cutoff = now - policy.expiration_time
    timed: list[tuple[dt.datetime, PartitionInfo]] = []
    undated: list[tuple[PartitionInfo, str]] = []
    for p in partitions:
        if policy.strategy == UPDATE_TIME:
            if p.last_file_creation_millis is None:
                undated.append((p, "its files carry no creation time"))
                continue
            t = dt.datetime.fromtimestamp(p.last_file_creation_millis / 1000)
        else:
            try:
                t = partition_time(keys, p.values, policy.timestamp_pattern, policy.timestamp_formatter)
            except ValueError as e:
                undated.append((p, str(e)))
                continue
        if t < cutoff:
            timed.append((t, p))
    timed.sort(key=lambda tp: (tp[0], [str(v) for v in tp[1].values]))
    chosen = tuple(p for _, p in timed[:policy.max_num])
    return ExpirePlan(cutoff, chosen, len(timed) - len(chosen), tuple(undated))


def partition_infos(ctx: TableContext, entries: Sequence[ManifestEntry]) -> list[PartitionInfo]:
    """Live partitions of a snapshot from its live entries."""
    acc: dict[bytes, list] = {}
    for e in entries:
        a = acc.setdefault(e.partition, [None, 0, 0, False])
        ct = e.file.creation_time_millis
        if ct is None:
            a[3] = True
        elif a[0] is None or ct > a[0]:
            a[0] = ct
        a[1] += 1
        a[2] += e.file.row_count
    # a partition with a file of unknown age has an unknown newest time
    return [PartitionInfo(p, ctx.partition_values(p), None if unknown else newest, n, rows)
            for p, (newest, n, rows, unknown) in acc.items()]


def _local_naive(now: Optional[dt.datetime]) -> dt.datetime:
    if now is None:
        return dt.datetime.now()
    return now.astimezone().replace(tzinfo=None) if now.tzinfo is not None else now


def expire_partitions(ctx: TableContext, *, expiration_time: Union[None, str, dt.timedelta] = None,
                      now: Optional[dt.datetime] = None, dry_run: bool = False,
                      progress: Optional[Progress] = None, commit_user: Optional[str] = None) -> list[dict]:
    """Drop the partitions of the table that expired at ``now`` (default: the current local
    time) in one OVERWRITE commit; returns their values, oldest first. ``dry_run`` only lists
    them. Options as in the module docstring; ``expiration_time`` overrides the table's."""
    keys = ctx.partition_keys
    if not keys:
        raise LakeformatError(f"{ctx.name} has no partition keys: there are no partitions to expire")
    policy = ExpirePolicy.of(keys, ctx.typed_options, expiration_time)
    latest = ctx.latest_snapshot()
    if latest is None:
        return []
    plan = plan_expiration(keys, partition_infos(ctx, live_entries(ctx, latest)), _local_naive(now), policy)
    _log_undated(ctx, plan)
    out = [dict(zip(keys, p.values)) for p in plan.expired]
    if not out:
        log.info("no partition of %s is older than %s (%s)", ctx.name, plan.cutoff, policy.strategy)
        return out
    more = f"; {plan.deferred} more next run (partition.expiration-max-num={policy.max_num})" if plan.deferred else ""
    if dry_run:
        log.info("dry run: would drop %d partition(s) of %s older than %s: %s%s",
                 len(out), ctx.name, plan.cutoff, out, more)
        return out
    if progress:
        progress(0, len(out), "partitions")
    snap = drop_partitions(ctx, [p.partition for p in plan.expired], commit_user)
    if progress:
        progress(len(out), len(out), "partitions")
    log.info("dropped %d partition(s) of %s older than %s in snapshot %s (%d files, %d rows): %s%s",
             len(out), ctx.name, plan.cutoff, snap.id if snap else "-",
             sum(p.file_count for p in plan.expired), sum(p.row_count for p in plan.expired), out, more)
    return out


def _log_undated(ctx: TableContext, plan: ExpirePlan) -> None:
    if plan.undated:
        shown = "; ".join(f"{dict(zip(ctx.partition_keys, p.values))}: {why}" for p, why in plan.undated[:3])
        log.warning("%d partition(s) of %s have no time and never expire (%s%s). Check "
                    "partition.timestamp-formatter / partition.timestamp-pattern.", len(plan.undated),
                    ctx.name, shown, " ..." if len(plan.undated) > 3 else "")


def drop_partitions(ctx: TableContext, partitions: Sequence[bytes],
                    commit_user: Optional[str] = None) -> Optional[Snapshot]:
    """Delete every file of the given serialized partitions in one OVERWRITE commit: a dynamic
    overwrite whose messages name the partitions and carry no files."""
    if not partitions:
        return None
    total = ctx.schema.num_buckets
    messages = [CommitMessage(p, 0, total) for p in dict.fromkeys(partitions)]
    # the committer itself: the drop runs no post-commit steps (no partition check of its own)
    return FileStoreCommit(ctx, commit_user or f"partition-expire-{uuid.uuid4()}").commit(
        messages, overwrite=Overwrite())


# ---------------------------------------------------------------- writer-side check

_last_check: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def maybe_expire_partitions(ctx: TableContext, now: Optional[dt.datetime] = None) -> Optional[list[dict]]:
    """The check writers run after a commit: expire partitions if ``partition.expiration-time``
    is set, the table is not ``write-only`` and the check interval has passed for this Table
    object. None when no check ran. Never raises for a failed expiration: the commit already
    happened, so the problem is logged instead."""
    o = ctx.typed_options
    if o.get(O.PARTITION_EXPIRATION_TIME) is None or not ctx.partition_keys or o.get(O.WRITE_ONLY):
        return None
    interval = o.required(O.PARTITION_EXPIRATION_CHECK_INTERVAL).total_seconds()
    clock = time.monotonic()
    last = _last_check.get(ctx)
    if last is not None and interval > 0 and clock - last < interval:
        return None
    _last_check[ctx] = clock
    try:
        return expire_partitions(ctx, now=now)
    except LakeformatError as e:
        log.warning("partition expiration of %s after the commit failed (the commit itself succeeded): %s",
                    ctx.name, e)
        return None
