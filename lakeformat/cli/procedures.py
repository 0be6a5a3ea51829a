"""``lakeformat`` maintenance verbs, named after Paimon's procedures.

compact, expire-snapshots, expire-partitions, reset-consumer, clear-consumers, create-tag,
delete-tag, branches, create-branch, delete-branch, fast-forward, rollback, remove-orphan-files,
and iceberg-sync (Paimon's Iceberg compatibility). Verbs that delete take
``--dry-run`` (report, change nothing); long ones report progress on stderr (a live bar on a terminal, a line now and
then in a log), so ``--json`` output on stdout stays clean.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from contextlib import contextmanager
from typing import Optional
from collections.abc import Iterator, Sequence

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from lakeformat.cli.output import plain
from lakeformat.errors import DataError, LakeformatError, NotFoundError, OptionError
from lakeformat.format.human import human_duration
from lakeformat.format import options as O
from lakeformat.format.partition import parse_partition_spec
from lakeformat.format.progress import ProgressReporter

# ---------------------------------------------------------------- argument parsing

def partition_spec(text: str) -> dict:
    """``dt=2024-01-01`` or ``dt=2024-01-01,hr=10`` (Paimon's procedure syntax) → a dict."""
    try:
        spec = parse_partition_spec(text)
    except DataError:
        spec = {}
    if not spec:
        raise argparse.ArgumentTypeError(f"a partition is KEY=VALUE[,KEY=VALUE], got {text!r}")
    return spec


def duration(text: str) -> dt.timedelta:
    try:
        d = O.duration(text, "duration")
    except OptionError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if d is None:   # '' is "unset" to the library; a flag given an empty value is a mistake
        raise argparse.ArgumentTypeError("a duration like '1 h', '30 min' or '2 d' is needed, got ''")
    return d


def duration_or_time(text: str) -> dt.timedelta | dt.datetime:
    """A time retained ('1 h', '2 d') or a cutoff timestamp ('2024-06-01 12:00:00', local time)."""
    try:
        d = O.duration(text, "time retained")
        if d is not None:   # '' is neither, below
            return d
    except OptionError:
        pass
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither a duration ('1 h', '30 min', '2 d') nor a timestamp "
            "('2024-06-01 12:00:00')") from None


def non_negative(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {n}")
    return n


def positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return n


# ---------------------------------------------------------------- output

@contextmanager
def progress_reporter(what: str) -> Iterator:
    """A ``progress(done, total, what)`` callback drawing on stderr: a live bar on a terminal,
    otherwise the one ``ProgressReporter``'s lines (for job logs)."""
    console = Console(stderr=True)
    if console.is_terminal:
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=console, transient=True) as bar:
            task = bar.add_task(what, total=None)

            def draw(done: int, total: int, step: str) -> None:
                bar.update(task, completed=done, total=total or None, description=f"{what}: {step}")
            yield draw
        return
    yield ProgressReporter(what, emit=lambda line: print(line, file=sys.stderr, flush=True))


def _report(args, text: str, data: dict, started: Optional[float] = None, details: Sequence[str] = ()) -> None:
    """``data`` as JSON with ``--json`` (unchanged: no timing there), else ``text``, ending in how
    long the verb took when it is a long one (``started``: its time.monotonic()), and then the
    ``details`` lines indented below it."""
    if args.json:
        print(json.dumps(plain(data), indent=2, allow_nan=False))
    else:
        took = f" (took {human_duration(time.monotonic() - started)})" if started is not None else ""
        Console().print(Text("\n".join([text + took, *(f"  {d}" for d in details)])))


def _table(cat, args):
    return cat.get_table(args.table)


# ---------------------------------------------------------------- verbs

def cmd_compact(cat, args) -> None:
    started = time.monotonic()
    t = _table(cat, args)
    with progress_reporter(f"compacting {t.name}") as progress:
        r = t.maintenance.compact(full=args.full, partitions=args.partition or None, progress=progress)
    snap = r.snapshot
    data = {"table": t.name, "snapshot": snap.id if snap else None, "full": args.full,
            "partitions": args.partition or "all",
            "expired_snapshots": list(r.expired.expired) if r.expired else [], "expire_error": r.expire_error}
    text = r.summary(t.name)
    if snap is not None:
        files = t.system_table("buckets").to_pylist()
        data.update(buckets=len(files), files=sum(b["file_count"] for b in files),
                    max_sorted_runs=max((b["sorted_runs"] for b in files), default=0))
        text += (f"; now {data['files']} files in {data['buckets']} buckets, at most "
                 f"{data['max_sorted_runs']} sorted runs per bucket")
    _report(args, text, data, started=started)
    if r.expire_error is not None:
        sys.exit(1)   # the compaction is committed; the failed expiration still fails the verb


def cmd_expire_snapshots(cat, args) -> None:
    started = time.monotonic()
    t = _table(cat, args)
    with progress_reporter(f"expiring snapshots of {t.name}") as progress:
        r = t.maintenance.expire_snapshots(retain_min=args.retain_min, retain_max=args.retain_max,
                                           older_than=args.older_than, step=args.step, max_deletes=args.max_deletes,
                                           dry_run=args.dry_run, progress=progress)
    data = {"table": t.name, "dry_run": r.dry_run, "expired_snapshots": list(r.expired),
            "data_files": r.data_files, "changelog_files": r.changelog_files, "manifests": r.manifests,
            "manifest_lists": r.manifest_lists, "held": list(r.held),
            "expired_because": list(r.expired_because), "kept": list(r.kept)}
    _report(args, r.summary(t.name), data, started=started, details=r.reasons())


def cmd_expire_partitions(cat, args) -> None:
    started = time.monotonic()
    t = _table(cat, args)
    with progress_reporter(f"expiring partitions of {t.name}") as progress:
        dropped = t.maintenance.expire_partitions(expiration_time=args.expiration_time, dry_run=args.dry_run,
                                                  progress=progress)
    verb = "would drop" if args.dry_run else "dropped"
    names = ["/".join(f"{k}={v}" for k, v in p.items()) for p in dropped]
    text = f"{verb} {len(dropped)} partition(s) of {t.name}" + (f": {', '.join(names)}" if names else "")
    _report(args, text, {"table": t.name, "dry_run": args.dry_run, "partitions": dropped}, started=started)


def cmd_reset_consumer(cat, args) -> None:
    t = _table(cat, args)
    consumers = t.maintenance.consumers
    old = consumers.get(args.consumer_id)
    if args.next_snapshot is None:   # Paimon's reset_consumer without a snapshot deletes the consumer
        if old is None:
            raise LakeformatError(f"consumer {args.consumer_id!r} of {t.name} does not exist")
        if not args.dry_run:
            consumers.delete(args.consumer_id)
        text = f"{'would delete' if args.dry_run else 'deleted'} consumer {args.consumer_id} of {t.name} (was at {old})"
    else:
        if args.dry_run:
            _check_reset_target(t, args.next_snapshot)
        else:
            consumers.reset(args.consumer_id, args.next_snapshot)
        text = (f"{'would reset' if args.dry_run else 'reset'} consumer {args.consumer_id} of {t.name} "
                f"to snapshot {args.next_snapshot} (was {old if old is not None else 'absent'})")
    _report(args, text, {"table": t.name, "consumer_id": args.consumer_id, "dry_run": args.dry_run,
                         "previous_next_snapshot": old, "next_snapshot": args.next_snapshot})


def _check_reset_target(t, next_snapshot: int) -> None:
    """What ``ConsumerManager.reset`` checks, without writing (for --dry-run)."""
    sm = t.snapshot_manager
    latest = sm.latest_id()
    if not ((latest is None and next_snapshot == 1) or
            (latest is not None and (next_snapshot == latest + 1 or sm.exists(next_snapshot)))):
        raise LakeformatError(f"cannot reset a consumer of {t.name} to snapshot {next_snapshot}: the table has "
                              f"snapshots {sm.earliest_id()}..{latest}")


def cmd_clear_consumers(cat, args) -> None:
    t = _table(cat, args)
    cleared = sorted(t.maintenance.consumers.clear(including=args.including, excluding=args.excluding,
                                                   dry_run=args.dry_run))
    verb = "would clear" if args.dry_run else "cleared"
    text = f"{verb} {len(cleared)} consumer(s) of {t.name}" + (f": {', '.join(cleared)}" if cleared else "")
    _report(args, text, {"table": t.name, "dry_run": args.dry_run, "consumers": cleared})


def cmd_create_tag(cat, args) -> None:
    t = _table(cat, args)
    tag = t.maintenance.create_tag(args.tag, snapshot_id=args.snapshot, time_retained=args.time_retained)
    kept = f", kept for {human_duration(tag.time_retained)}" if tag.time_retained else ""
    _report(args, f"created tag {tag.name} on snapshot {tag.snapshot.id} of {t.name}{kept}",
            {"table": t.name, "tag": tag.name, "snapshot": tag.snapshot.id,
             "time_retained": str(tag.time_retained) if tag.time_retained else None})


def cmd_delete_tag(cat, args) -> None:
    t = _table(cat, args)
    tag = t.maintenance.tags.get(args.tag)   # fails clearly if absent, also with --dry-run
    if not args.dry_run:
        t.maintenance.delete_tag(args.tag)
    verb = "would delete" if args.dry_run else "deleted"
    _report(args, f"{verb} tag {tag.name} (snapshot {tag.snapshot.id}) of {t.name}",
            {"table": t.name, "tag": tag.name, "snapshot": tag.snapshot.id, "dry_run": args.dry_run})


def cmd_branches(cat, args) -> None:
    t = _table(cat, args)
    names = t.branches.list()
    _report(args, "\n".join(names) if names else f"{t.name} has no branch besides main",
            {"table": t.name, "branches": names})


def cmd_create_branch(cat, args) -> None:
    t = _table(cat, args)
    snap = t.branches.create(args.branch, from_snapshot=args.from_snapshot, from_tag=args.from_tag, empty=args.empty)
    at = f"tag {args.from_tag} (snapshot {snap.id})" if args.from_tag and snap else \
        f"snapshot {snap.id}" if snap else "no snapshot (schema only)"
    _report(args, f"created branch {args.branch} of {t.name} at {at}",
            {"table": t.name, "branch": args.branch, "snapshot": snap.id if snap else None, "tag": args.from_tag})


def cmd_delete_branch(cat, args) -> None:
    t = _table(cat, args)
    if args.branch not in t.branches:
        raise NotFoundError(f"branch {args.branch!r} of {t.name} does not exist (branches: {t.branches.list()})")
    if not args.dry_run:
        t.branches.delete(args.branch)
    _report(args, f"{'would delete' if args.dry_run else 'deleted'} branch {args.branch} of {t.name}",
            {"table": t.name, "branch": args.branch, "dry_run": args.dry_run})


def cmd_fast_forward(cat, args) -> None:
    t = _table(cat, args)
    snap = t.branches.fast_forward(args.branch)
    _report(args, f"fast-forwarded {t.name} to branch {args.branch}: latest snapshot {snap.id if snap else None}",
            {"table": t.name, "branch": args.branch, "snapshot": snap.id if snap else None})


def cmd_rollback(cat, args) -> None:
    started = time.monotonic()
    t = _table(cat, args)
    target = int(args.to) if args.to.isdigit() else args.to
    with progress_reporter(f"rolling {t.name} back") as progress:
        r = t.maintenance.rollback_to(target, progress=progress, dry_run=args.dry_run)
    verb = "would roll" if args.dry_run else "rolled"
    text = (f"{verb} {t.name} back to snapshot {r.snapshot.id}: {len(r.deleted_snapshots)} snapshot(s), "
            f"{len(r.deleted_tags)} tag(s) and {r.deleted_files} file(s) {'would go' if args.dry_run else 'removed'}"
            + (f"; consumers reset: {', '.join(r.reset_consumers)}" if r.reset_consumers else ""))
    _report(args, text, {"table": t.name, "snapshot": r.snapshot.id, "dry_run": args.dry_run,
                         "deleted_snapshots": list(r.deleted_snapshots), "deleted_tags": list(r.deleted_tags),
                         "reset_consumers": list(r.reset_consumers), "deleted_files": r.deleted_files}, started=started)


def cmd_remove_orphan_files(cat, args) -> None:
    started = time.monotonic()
    t = _table(cat, args)
    with progress_reporter(f"looking for orphan files of {t.name}") as progress:
        r = t.maintenance.remove_orphan_files(older_than=args.older_than, dry_run=args.dry_run, progress=progress,
                                              allow_deleting_in_flight_files=args.allow_deleting_in_flight_files)
    _report(args, r.summary(t.name, args.older_than),
            {"table": t.name, "dry_run": r.dry_run, "listed": r.listed, "orphans": list(r.orphans),
             "orphan_bytes": r.orphan_bytes, "too_young": r.too_young, "skipped": r.skipped}, started=started)


def cmd_iceberg_sync(cat, args) -> None:
    t = _table(cat, args)
    r = t.maintenance.iceberg_sync(rebuild=args.rebuild)
    _report(args, r.summary(t.name), {"table": t.name, "version": r.version, "published": list(r.published),
                                      "expired": list(r.expired), "rebuilt": r.rebuilt,
                                      "deleted": list(r.deleted)})


# ---------------------------------------------------------------- parser

def register(sub: argparse._SubParsersAction) -> None:
    def verb(name: str, fn, helptext: str, dry_run: bool = False) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=helptext)
        p.add_argument("table", help="database.table")
        if dry_run:
            p.add_argument("--dry-run", action="store_true", help="report what would happen; change nothing")
        p.set_defaults(fn=fn)
        return p

    p = verb("compact", cmd_compact, "compact buckets (a COMPACT snapshot); expires snapshots on write-only tables")
    p.add_argument("--partition", action="append", type=partition_spec, metavar="KEY=VALUE[,KEY=VALUE]",
                   help="compact only this partition (repeatable; default: all)")
    p.add_argument("--full", action="store_true", help="full compaction instead of the picker's choice")

    p = verb("expire-snapshots", cmd_expire_snapshots, "expire every old snapshot due, in steps, and the files only "
             "they use", True)
    p.add_argument("--retain-min", type=positive, help="keep at least this many (snapshot.num-retained.min)")
    p.add_argument("--retain-max", type=positive, help="keep at most this many (snapshot.num-retained.max)")
    p.add_argument("--older-than", type=duration_or_time, metavar="DURATION|TIMESTAMP",
                   help="expire snapshots older than this ('1 h', or '2024-06-01 12:00:00')")
    p.add_argument("--step", type=positive, help="snapshots expired per step (default: snapshot.expire.limit); "
                   "steps repeat until nothing is due")
    p.add_argument("--max-deletes", type=positive, help="expire at most this many in all (default: the whole backlog)")

    p = verb("expire-partitions", cmd_expire_partitions, "drop partitions older than the expiration time", True)
    p.add_argument("--expiration-time", type=duration, metavar="DURATION",
                   help="e.g. '30 d' (default: the table's partition.expiration-time)")

    p = verb("reset-consumer", cmd_reset_consumer, "move a consumer to a snapshot, or delete it", True)
    p.add_argument("consumer_id")
    p.add_argument("--next-snapshot", type=positive, help="the snapshot it reads next (omit to delete the consumer)")

    p = verb("clear-consumers", cmd_clear_consumers, "delete consumers matching patterns", True)
    p.add_argument("--including", default=".*", metavar="REGEX", help="ids to clear (whole match; default all)")
    p.add_argument("--excluding", metavar="REGEX", help="ids to keep even if included")

    p = verb("create-tag", cmd_create_tag, "tag a snapshot (default: the latest)")
    p.add_argument("tag")
    p.add_argument("--snapshot", type=positive, help="snapshot id (default: the latest)")
    p.add_argument("--time-retained", type=duration, metavar="DURATION", help="expire the tag after this long")

    p = verb("delete-tag", cmd_delete_tag, "delete a tag", True)
    p.add_argument("tag")

    p = verb("branches", cmd_branches, "list the table's branches")

    p = verb("create-branch", cmd_create_branch, "create a branch at the latest snapshot, a snapshot or a tag")
    p.add_argument("branch")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--from-snapshot", type=positive, metavar="ID", help="start at this snapshot")
    g.add_argument("--from-tag", metavar="TAG", help="start at this tag (copied into the branch)")
    g.add_argument("--empty", action="store_true", help="no snapshot: the schema only (Paimon's default)")

    p = verb("delete-branch", cmd_delete_branch, "delete a branch", True)
    p.add_argument("branch")

    p = verb("fast-forward", cmd_fast_forward, "make main what a branch is")
    p.add_argument("branch")

    p = verb("rollback", cmd_rollback, "make a snapshot or tag the latest; newer snapshots go", True)
    p.add_argument("--to", required=True, metavar="SNAPSHOT|TAG", help="snapshot id or tag name")

    p = verb("remove-orphan-files", cmd_remove_orphan_files, "delete files no snapshot, tag or staged commit reaches",
             True)
    p.add_argument("--older-than", type=duration, default=dt.timedelta(days=1), metavar="DURATION",
                   help="only files older than this (default: 1 d; shorter needs the next flag)")
    p.add_argument("--allow-deleting-in-flight-files", action="store_true",
                   help="allow --older-than under 1 d, which also deletes files of writes still running")

    p = verb("iceberg-sync", cmd_iceberg_sync, "publish the Iceberg metadata (metadata.iceberg.storage) up to the "
             "latest snapshot, repairing a failed or missing publish")
    p.add_argument("--rebuild", action="store_true", help="rewrite it from the earliest retained snapshot")
