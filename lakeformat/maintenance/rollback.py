"""Roll a table back to an earlier snapshot or tag.

The target becomes the latest snapshot: newer snapshots (and long-lived changelogs), tags on
newer snapshots and the files only they referred to are deleted. Rolling back to a tag whose
snapshot was expired first writes that snapshot back from the tag.

Order, so that a kill at any step leaves a readable table and a second run finishes the job:
recreate the target (if needed) → delete snapshot files newest first (the latest is always a
complete snapshot) → LATEST hint → tags on newer snapshots → consumers past the new end →
EARLIEST hint → files: data, manifests, manifest lists. Files left behind by a kill during the
last step are unreferenced: orphan-file removal deletes them.

Not safe while writers commit: stop them first (as in Paimon).
"""
from __future__ import annotations

import logging
import os
import posixpath
from dataclasses import dataclass
from typing import Optional, Union
from collections.abc import Callable, Mapping, Sequence
from urllib.parse import urlparse

from lakeformat.format.metadata_checks import UnsupportedMetadataError, with_path
from lakeformat.errors import CorruptFileError, LakeformatError, NotFoundError
from lakeformat.format import options as O
from lakeformat.format.snapshot import Snapshot
from lakeformat.io.fileio import join
from lakeformat.io.table_context import TableContext
from lakeformat.maintenance.branches import keep_unreached, other_branches_reach
from lakeformat.maintenance.consumer import ConsumerManager
from lakeformat.maintenance.references import (
    FileRefs,
    added_refs,
    changelog_refs,
    list_refs,
    snapshot_refs,
    union,
)
from lakeformat.maintenance.tag import TagManager

log = logging.getLogger(__name__)

Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class RollbackPlan:
    """Which metadata goes; decided from ids alone (no IO)."""

    target_id: int
    recreate: bool                       # the target's snapshot file is gone: write it from the tag
    snapshots: tuple[int, ...]           # snapshot ids to delete, newest first
    changelogs: tuple[int, ...]          # long-lived changelog ids to delete, newest first
    tags: tuple[str, ...]                # tags on newer snapshots, newest first
    consumers: tuple[str, ...]           # consumers past the new end: reset to target + 1
    earliest: int                        # the earliest snapshot afterwards


@dataclass(frozen=True)
class RollbackResult:
    snapshot: Snapshot                   # the table's latest snapshot now
    deleted_snapshots: tuple[int, ...]
    deleted_tags: tuple[str, ...]
    reset_consumers: tuple[str, ...]
    deleted_files: int
    recreated: bool
    paths: tuple[str, ...] = ()          # the files deleted (with dry_run: the files that would be)
    dry_run: bool = False


def plan_rollback(target_id: int, snapshot_ids: Sequence[int], changelog_ids: Sequence[int],
                  tags: Mapping[str, int], consumers: Mapping[str, int]) -> RollbackPlan:
    """``tags`` maps tag name → snapshot id, ``consumers`` id → next snapshot."""
    newer = sorted((i for i in snapshot_ids if i > target_id), reverse=True)
    kept = [i for i in snapshot_ids if i <= target_id]
    return RollbackPlan(
        target_id=target_id,
        recreate=target_id not in snapshot_ids,
        snapshots=tuple(newer),
        changelogs=tuple(sorted((i for i in changelog_ids if i > target_id), reverse=True)),
        tags=tuple(n for n, _ in sorted(((n, s) for n, s in tags.items() if s > target_id),
                                        key=lambda kv: (-kv[1], kv[0]))),
        consumers=tuple(sorted(c for c, n in consumers.items() if n > target_id + 1)),
        earliest=min(kept + [target_id]))


def files_to_delete(removed: FileRefs, kept: FileRefs) -> FileRefs:
    """What the removed snapshots and tags referred to that nothing kept refers to."""
    return removed - kept


def resolve_target(ctx: TableContext, target: Union[int, str]) -> tuple[Snapshot, Optional[str]]:
    """(snapshot, tag name or None). An int is a snapshot id; a str is a tag name, or a
    snapshot id if all digits (tag names never are)."""
    if isinstance(target, bool):
        raise LakeformatError(f"rollback target must be a snapshot id or a tag name, not {target!r}")
    if isinstance(target, str) and not target.isdigit():
        tag = TagManager(ctx).get(target)
        return tag.snapshot, target
    try:
        sid = int(target)
    except (TypeError, ValueError):
        raise LakeformatError(f"rollback target must be a snapshot id or a tag name, not {target!r}") from None
    sm = ctx.snapshot_manager
    if not sm.exists(sid):
        raise NotFoundError(f"cannot roll {ctx.name} back to snapshot {sid}: it does not exist "
                            f"(snapshots {sm.earliest_id()}..{sm.latest_id()}); to reach an expired "
                            f"snapshot, roll back to a tag that holds it")
    return sm.get(sid), None


def _changelog_ids(ctx: TableContext) -> list[int]:
    names = ctx.io.list_names(join(ctx.branch_path, "changelog"))
    return sorted(int(n[10:]) for n in names if n.startswith("changelog-") and n[10:].isdigit())


def _read_changelog(ctx: TableContext, cid: int) -> Snapshot:
    path = join(ctx.branch_path, "changelog", f"changelog-{cid}")
    try:
        return Snapshot.from_json(ctx.io.read_bytes(path).decode())
    except UnsupportedMetadataError as e:
        raise with_path(e, path) from None
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError, UnicodeDecodeError) as e:
        raise CorruptFileError(path, f"cannot parse changelog: {e}") from None


def doomed_files(ctx: TableContext, snapshot: Snapshot, plan: RollbackPlan, tags) -> FileRefs:
    """The files the plan's removed snapshots, changelogs and tags refer to that nothing kept
    does (reads their metadata; deletes nothing)."""
    sm = ctx.snapshot_manager
    removed_tags = [t for t in tags if t.name in plan.tags]
    kept_tags = [t for t in tags if t.name not in plan.tags and t.snapshot.id != snapshot.id]
    removed = union([added_refs(ctx, sm.get(i)) for i in plan.snapshots]
                    + [changelog_refs(ctx, _read_changelog(ctx, i)) for i in plan.changelogs]
                    + [snapshot_refs(ctx, t.snapshot) for t in removed_tags])
    oldest = min(plan.snapshots) if plan.snapshots else None
    if oldest is not None and oldest > snapshot.id + 1:   # snapshots expired in between: all it holds
        removed = removed | snapshot_refs(ctx, sm.get(oldest))
    kept = union([snapshot_refs(ctx, snapshot)] + [snapshot_refs(ctx, t.snapshot) for t in kept_tags]
                 + [list_refs(ctx, sm.get(i)) for i in sm.list_ids() if i < snapshot.id])
    return files_to_delete(removed, kept)


def rollback_to(ctx: TableContext, target: Union[int, str], progress: Optional[Progress] = None,
                dry_run: bool = False) -> RollbackResult:
    """Make ``target`` (a snapshot id or tag name) the latest snapshot; with ``dry_run`` only
    report what would go."""
    O.check_supported(ctx.schema.options, O.WRITE, ctx.name)
    sm = ctx.snapshot_manager
    snapshot, tag_name = resolve_target(ctx, target)
    tags = TagManager(ctx).list()
    latest = sm.latest_id()
    if tag_name is not None and latest is not None and snapshot.id > latest:
        raise LakeformatError(f"tag {tag_name!r} holds snapshot {snapshot.id}, newer than the latest snapshot "
                              f"{latest} of {ctx.name} (left by an interrupted rollback?): delete the tag")
    plan = plan_rollback(snapshot.id, sm.list_ids(), _changelog_ids(ctx),
                         {t.name: t.snapshot.id for t in tags}, ConsumerManager(ctx).list())

    doomed = doomed_files(ctx, snapshot, plan, tags)   # read before anything goes
    paths = keep_unreached(doomed.paths(ctx.path), other_branches_reach(ctx) if doomed else None)
    if dry_run:
        return RollbackResult(snapshot, plan.snapshots, plan.tags, plan.consumers, len(paths), plan.recreate,
                              tuple(paths), True)

    if plan.recreate and sm.try_create(snapshot):
        log.info("recreated snapshot %d of %s from tag %r", snapshot.id, ctx.name, tag_name)
    for i in plan.snapshots:
        ctx.io.delete(sm.path(i))
        sm.forget(i)
    for i in plan.changelogs:
        ctx.io.delete(join(ctx.branch_path, "changelog", f"changelog-{i}"))
    sm.write_hint(sm.LATEST, snapshot.id)
    for name in plan.tags:
        ctx.io.delete(TagManager(ctx).path(name))
    for cid in plan.consumers:
        ConsumerManager(ctx).record(cid, snapshot.id + 1)
    sm.write_hint(sm.EARLIEST, plan.earliest)
    now_latest = sm.latest_id()
    if now_latest != snapshot.id:   # a writer committed meanwhile: its snapshot may use these files
        raise LakeformatError(f"snapshot {now_latest} of {ctx.name} was committed during the rollback to "
                              f"{snapshot.id}; no files were deleted. Stop the writers and roll back again")

    for n, path in enumerate(paths, 1):
        ctx.io.delete(path)
        if progress and (n % 100 == 0 or n == len(paths)):
            progress(n, len(paths), "files")
    remove_empty_dirs(ctx, {posixpath.dirname(p) for p in doomed.data_files})
    log.info("rolled %s back to snapshot %d: deleted snapshots %s, tags %s, %d files",
             ctx.name, snapshot.id, list(plan.snapshots), list(plan.tags), len(paths))
    return RollbackResult(snapshot, plan.snapshots, plan.tags, plan.consumers, len(paths), plan.recreate,
                          tuple(paths))


def remove_empty_dirs(ctx: TableContext, dirs: set) -> None:
    """Remove bucket and partition directories left empty (local disks: object stores have no
    directories). A directory is only removed while it lists as empty."""
    if ctx.io.scheme != "file":
        return
    root = ctx.path.rstrip("/")
    todo = sorted(dirs, key=len, reverse=True)
    seen = set()
    while todo:
        d = todo.pop(0)
        if d in seen or not d.startswith(root + "/"):
            continue
        seen.add(d)
        if ctx.io.list_dir(d) or not ctx.io.exists(d):
            continue
        try:
            os.rmdir(urlparse(d).path if d.startswith("file:") else d)
        except OSError:      # something was written into it meanwhile
            continue
        todo.append(posixpath.dirname(d))

