"""Branches of a table on storage: list, create, delete, fast-forward, and what they keep alive.

A branch ``b`` is ``<table>/branch/branch-b/`` with its own ``snapshot/``, ``schema/`` and ``tag/``;
its snapshots name manifests and data files in the table's own directories, which every branch
shares (Paimon's layout). So:

- creating a branch copies metadata only: the schemas up to the one its start snapshot uses, and
  that snapshot (from a snapshot id or the latest), or a tag and its snapshot (from a tag); an
  empty branch gets the schemas alone (Paimon's ``create_branch(name)``);
- deleting a branch removes its directory; files only it used become orphans, which orphan-file
  removal deletes (every branch's snapshots and tags count as live there);
- fast-forwarding main to ``b`` copies b's snapshots, schemas and tags over main's and removes
  main's snapshots (and tags on them) from b's earliest snapshot on, and its schemas that b does
  not have: main then is b. Files only main's removed snapshots used become orphans;
- a snapshot expiration, a tag deletion or a rollback on one branch must not delete a file
  another branch still names: :func:`other_branches_reach` gives those names. A branch created
  from a snapshot while an expiration of that very snapshot is deleting its files can still
  lose them (the expiration read the branches before the new one existed): branch from a tag,
  as Paimon does, when expirations may run meanwhile.
"""
from __future__ import annotations

import contextlib
import logging
from itertools import chain
from typing import Optional

import pyarrow.fs as pafs

from lakeformat.errors import AlreadyExistsError, LakeformatError, NotFoundError
from lakeformat.format.branch import MAIN, validate_branch_name
from lakeformat.format.snapshot import Snapshot
from lakeformat.io.fileio import FileIO, join
from lakeformat.io.index_files import IndexFiles
from lakeformat.io.manifests import ManifestFile, ManifestList
from lakeformat.io.schemas import SchemaManager
from lakeformat.io.snapshots import SnapshotManager
from lakeformat.io.table_context import BRANCH_DIR, BRANCH_PREFIX, TableContext, branch_path

log = logging.getLogger(__name__)

TAG_DIR, TAG_PREFIX = "tag", "tag-"


def list_branches(io: FileIO, table_path: str) -> list[str]:
    """The names of the table's branches other than main (directories ``branch/branch-*``)."""
    return sorted(i.base_name[len(BRANCH_PREFIX):] for i in io.list_dir(join(table_path, BRANCH_DIR))
                  if i.type == pafs.FileType.Directory and i.base_name.startswith(BRANCH_PREFIX)
                  and len(i.base_name) > len(BRANCH_PREFIX))


def branch_exists(io: FileIO, table_path: str, name: str) -> bool:
    return bool(SchemaManager(io, branch_path(table_path, name)).list_ids())


def _tag_path(root: str, name: str) -> str:
    return join(root, TAG_DIR, TAG_PREFIX + name)


def _read_tag_snapshot(io: FileIO, root: str, name: str) -> tuple[bytes, Snapshot]:
    path = _tag_path(root, name)
    try:
        data = io.read_bytes(path)
    except FileNotFoundError:
        raise NotFoundError(f"tag {name!r} does not exist ({path})") from None
    return data, Snapshot.from_json(data.decode())


def create_branch(ctx: TableContext, name: str, from_snapshot: Optional[int] = None,
                  from_tag: Optional[str] = None, empty: bool = False) -> Optional[Snapshot]:
    """Create branch ``name`` of the table ``ctx`` is a branch of, starting at ``ctx``'s snapshot
    ``from_snapshot``, its tag ``from_tag``, or (neither) its latest snapshot; ``empty`` (or a
    table without snapshots): no snapshot, the schemas only. Returns the branch's snapshot."""
    validate_branch_name(name)
    if sum((from_snapshot is not None, from_tag is not None, empty)) > 1:
        raise LakeformatError("give one of from_snapshot, from_tag and empty, not several")
    io, root = ctx.io, branch_path(ctx.path, name)
    if branch_exists(io, ctx.path, name):
        raise AlreadyExistsError(f"branch {name!r} of {ctx.name} exists already")
    tag_bytes: Optional[bytes] = None
    snapshot: Optional[Snapshot]
    if from_tag is not None:
        tag_bytes, snapshot = _read_tag_snapshot(io, ctx.branch_path, from_tag)
    elif from_snapshot is not None:
        snapshot = ctx.snapshot_manager.get(from_snapshot)
    else:
        snapshot = None if empty else ctx.snapshot_manager.latest()
    last_schema = snapshot.schema_id if snapshot is not None else ctx.schema_manager.list_ids()[-1]
    schemas = [i for i in ctx.schema_manager.list_ids() if i <= last_schema]
    target = SchemaManager(io, root)
    # schema-0 first, created if absent: of two concurrent creations one wins, the other fails
    if not io.try_create(target.path(schemas[0]), io.read_bytes(ctx.schema_manager.path(schemas[0]))):
        raise AlreadyExistsError(f"branch {name!r} of {ctx.name} was created concurrently")
    for i in schemas[1:]:
        io.write_bytes(target.path(i), io.read_bytes(ctx.schema_manager.path(i)))
    if snapshot is not None:
        sm = SnapshotManager(io, root)
        io.write_bytes(sm.path(snapshot.id), snapshot.to_json().encode())
        sm.write_hint(sm.EARLIEST, snapshot.id)
        sm.write_hint(sm.LATEST, snapshot.id)
    if from_tag is not None and tag_bytes is not None:
        io.write_bytes(_tag_path(root, from_tag), tag_bytes)
    log.info("created branch %r of %s at %s", name, ctx.name,
             f"tag {from_tag!r}" if from_tag else f"snapshot {snapshot.id}" if snapshot else "no snapshot")
    return snapshot


def delete_branch(ctx: TableContext, name: str) -> None:
    """Delete branch ``name`` (its metadata directory; files only it used become orphans)."""
    validate_branch_name(name)
    if not branch_exists(ctx.io, ctx.path, name):
        raise NotFoundError(f"branch {name!r} of {ctx.name} does not exist "
                            f"(branches: {list_branches(ctx.io, ctx.path)})")
    if ctx.branch == name:
        raise LakeformatError(f"cannot delete branch {name!r} through its own table {ctx.name}: delete it through "
                              "main's table")
    main = SchemaManager(ctx.io, ctx.path).latest()
    if main is not None and main.options.get("scan.fallback-branch") == name:
        raise LakeformatError(f"branch {name!r} is the scan.fallback-branch of {ctx.name}: reads of main need "
                              "it; reset that option first")
    ctx.io.delete_dir(branch_path(ctx.path, name))
    log.info("deleted branch %r of %s", name, ctx.name)


def fast_forward(ctx: TableContext, name: str) -> Optional[Snapshot]:
    """Make main what branch ``name`` is (see the module docstring); returns main's new latest
    snapshot. ``ctx`` is main's. Not safe while writers commit to main: stop them first."""
    validate_branch_name(name)
    if ctx.branch != MAIN:
        raise LakeformatError(f"fast-forward moves main to a branch; {ctx.name} is branch {ctx.branch!r}")
    io, root = ctx.io, branch_path(ctx.path, name)
    if not branch_exists(io, ctx.path, name):
        raise NotFoundError(f"branch {name!r} of {ctx.name} does not exist "
                            f"(branches: {list_branches(io, ctx.path)})")
    bsm, msm = SnapshotManager(io, root), SnapshotManager(io, ctx.path)
    ids = bsm.list_ids()
    if not ids:
        raise LakeformatError(f"cannot fast-forward {ctx.name} to branch {name!r}: it has no snapshot")
    earliest = ids[0]
    earliest_schema = bsm.get(earliest).schema_id
    bschemas = SchemaManager(io, root)
    mschemas = ctx.schema_manager
    btags = {n for n in io.list_names(join(root, TAG_DIR)) if n.startswith(TAG_PREFIX)}
    with ctx.lock.hold(ctx.name) if ctx.lock is not None else contextlib.nullcontext():
        # copy first (a reader meanwhile sees either side's complete snapshots), then remove
        for i in bschemas.list_ids():
            io.write_bytes(mschemas.path(i), io.read_bytes(bschemas.path(i)))
        for i in ids:
            io.write_bytes(msm.path(i), io.read_bytes(bsm.path(i)))
        for n in sorted(btags):
            io.write_bytes(join(ctx.path, TAG_DIR, n), io.read_bytes(join(root, TAG_DIR, n)))
        for n in io.list_names(join(ctx.path, TAG_DIR)):
            if n.startswith(TAG_PREFIX) and n not in btags:
                _, tagged = _read_tag_snapshot(io, ctx.path, n[len(TAG_PREFIX):])
                if tagged.id >= earliest:
                    io.delete(join(ctx.path, TAG_DIR, n))
        for i in sorted((i for i in msm.list_ids() if i > ids[-1]), reverse=True):
            io.delete(msm.path(i))
        msm.write_hint(msm.LATEST, ids[-1])
        if (msm.earliest_id() or earliest) >= earliest:
            msm.write_hint(msm.EARLIEST, earliest)
        keep = set(bschemas.list_ids())
        for i in mschemas.list_ids():
            if i >= earliest_schema and i not in keep:
                io.delete(mschemas.path(i))
    ctx.snapshot_manager._cache.clear()
    log.info("fast-forwarded %s to branch %r (snapshots %d..%d)", ctx.name, name, earliest, ids[-1])
    return msm.get(ids[-1])


def other_branches_reach(ctx: TableContext, threads: int = 8) -> Optional[frozenset]:
    """Names of the files (data, manifests, manifest lists, index manifests, index and statistics
    files) that the snapshots, tags and changelogs of every branch other than ``ctx``'s name;
    None when there is no other branch (nothing to protect). Raises if one of them cannot be
    read (a snapshot expired meanwhile excepted): then the caller deletes nothing."""
    roots = [branch_path(ctx.path, b) for b in [MAIN, *list_branches(ctx.io, ctx.path)] if b != ctx.branch]
    if not roots:
        return None
    io = ctx.io
    records: list[tuple[str, Snapshot]] = []     # (path of the metadata file, what it holds)
    for root in roots:
        for kind, prefix, numbered in (("snapshot", "snapshot-", True), (TAG_DIR, TAG_PREFIX, False),
                                       ("changelog", "changelog-", True)):
            for n in io.list_names(join(root, kind)):
                if not n.startswith(prefix) or not n[len(prefix):] or (numbered and not n[len(prefix):].isdigit()):
                    continue
                path = join(root, kind, n)
                try:
                    records.append((path, Snapshot.from_json(io.read_bytes(path).decode())))
                except FileNotFoundError:
                    continue   # expired or deleted while listed
    users: dict[str, list[str]] = {}
    for path, s in records:
        for name in s.manifest_lists():
            users.setdefault(name, []).append(path)
    mlist = ManifestList(io, ctx.path)
    manifests: set[str] = set()
    for name in sorted(users):
        try:
            manifests |= {m.file_name for m in mlist.read(name)}
        except Exception:
            if any(io.exists(p) for p in users[name]):   # still named: it must be read
                raise
    mfile = ManifestFile(io, ctx.path, [f.type for f in ctx.schema.partition_fields], ctx.schema.id)
    data: set[str] = set()
    for _, named in mfile.read_all(sorted(manifests), threads, file_names=True):
        if isinstance(named, Exception):
            raise named
        data.update(chain.from_iterable(named))
    index_manifests = {s.index_manifest for _, s in records if s.index_manifest}
    index: set[str] = set()
    for name in sorted(index_manifests):
        index |= {e.file.file_name for e in IndexFiles(io, ctx.path).read_manifest(name)}
    statistics = {s.statistics for _, s in records if s.statistics}
    return frozenset(set(users) | manifests | data | index_manifests | index | statistics)


def keep_unreached(paths, reached: Optional[frozenset]) -> list:
    """``paths`` without those whose file name another branch reaches (file names are unique
    in a table: uuids)."""
    if not reached:
        return list(paths)
    return [p for p in paths if p.rsplit("/", 1)[-1] not in reached]
