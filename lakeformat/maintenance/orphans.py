"""Orphan files: files under a table that nothing can reach any more.

Crashed or aborted writers, failed commits and interrupted expirations leave data files and
manifests that no snapshot names. They are found by set difference:

- reachable: every file named by any manifest (added or deleted entries alike, and their extra
  files) of any manifest list of any snapshot, tag, changelog (``changelog/changelog-N``) and
  branch, those manifest lists and manifests, index manifests and the index files they name,
  statistics files, and every data file a staged commit (``staged/*.json``) names;
- candidates: files in the bucket directories, ``manifest/``, ``index/`` and ``statistics/``,
  plus temp files (hidden ``*.tmp``) a crashed write left in the metadata directories. Snapshot,
  schema, tag, consumer, hint and stage files themselves are never candidates.
- Iceberg metadata (``metadata.iceberg.storage``): files in its ``metadata/`` directory that no
  present ``vN.metadata.json`` reaches (manifests and manifest lists of a killed publish) are
  candidates too; the versions and ``version-hint.text`` never are.

A candidate goes only if it is unreachable AND older than ``older_than`` by modification time
(default one day), so a writer whose files are not committed yet is never hurt. An
``older_than`` under :data:`MIN_OLDER_THAN` (Paimon's default, one day) is refused unless the
caller passes ``allow_deleting_in_flight_files=True``: files of a write still in flight look
exactly like orphans. With that override, orphans are first moved aside (renamed to hidden
names), then, after :data:`IN_FLIGHT_GRACE`, the snapshots committed meanwhile are read and any
file they name is moved back before the rest is deleted; a commit checks its files exist just
before publishing, so a writer that lost a file fails instead of publishing a hole.

Reading order makes concurrent work safe: the candidates are listed first (a file listed
was written before anything below is read), then stages, then tags and changelogs, then
snapshots (a publish moves files from a stage into a snapshot; a tag is taken from a snapshot
before it expires), and before deleting, stages and tags are listed again and any new one's
files are spared. If any of
them cannot be read the run refuses to delete anything: a file unreadable metadata might name is
not provably an orphan. Bucket directories this run emptied, or found empty and unmodified for
``older_than``, are removed with their emptied partition directories (local disks; object
stores have no directories). One race remains, as in Paimon: a writer creating a directory the
instant it is removed.
"""
from __future__ import annotations

import datetime as dt
import logging
import re
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from itertools import chain
from typing import Optional
from collections.abc import Callable, Iterable, Sequence

import pyarrow.fs as pafs

from lakeformat.commit.staging import list_staged
from lakeformat.errors import LakeformatError, UnsupportedError
from lakeformat.format import options as O
from lakeformat.format.human import human_size
from lakeformat.format.partition import escape_path_name
from lakeformat.format.snapshot import Snapshot
from lakeformat.io.fileio import join
from lakeformat.io.index_files import IndexFiles
from lakeformat.io.manifests import ManifestFile, ManifestList
from lakeformat.io.table_context import TableContext, branch_path
from lakeformat.maintenance.branches import list_branches
from lakeformat.maintenance.deletes import delete_files
from lakeformat.maintenance.iceberg import enabled as iceberg_enabled
from lakeformat.maintenance.iceberg import iceberg_files
from lakeformat.maintenance.iceberg_reachable import reachable_metadata
from lakeformat.read.scan import gc_paused

log = logging.getLogger(__name__)
Progress = Callable[[int, int, str], None]

MIN_OLDER_THAN = dt.timedelta(days=1)   # shorter needs allow_deleting_in_flight_files=True
IN_FLIGHT_GRACE = 5.0   # seconds between moving orphans aside and reading the snapshots made meanwhile

MANIFEST, INDEX, STATISTICS, ICEBERG = "manifest", "index", "statistics", "iceberg"
_METADATA_DIRS = ("snapshot", "schema", "tag", "consumer", "changelog", "staged", "branch")
_TEMP = re.compile(r"^\..+\.tmp$")
_SPARK_DIRS = ("_spark-staging-", "_spark-compact-")   # see lakeformat.spark.native_write / compaction


@dataclass(frozen=True)
class Candidate:
    """A file that may be an orphan: where it is (``area`` one of data, manifest, index,
    statistics, temp), its path, size and modification time."""

    area: str
    path: str
    name: str
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class Reachable:
    """Names of the files something can reach, per area."""

    data: frozenset = frozenset()
    manifest: frozenset = frozenset()
    index: frozenset = frozenset()
    statistics: frozenset = frozenset()
    iceberg: frozenset = frozenset()

    def reaches(self, c: Candidate) -> bool:
        if c.area == "data" and c.name in self.index:   # index-file-in-data-file-dir: beside the data
            return True
        names = self.data if c.area == "data" else {MANIFEST: self.manifest, INDEX: self.index,
                                                      STATISTICS: self.statistics, ICEBERG: self.iceberg}.get(c.area)
        return names is not None and c.name in names


@dataclass(frozen=True)
class OrphanResult:
    listed: int                     # candidate files looked at
    orphans: tuple[str, ...]        # unreachable and old enough: deleted, or would be with dry_run
    orphan_bytes: int
    too_young: int                  # unreachable but newer than older_than: kept
    dirs_removed: int
    dry_run: bool
    skipped: Optional[str] = None   # why nothing was looked at, e.g. a table without snapshots

    def summary(self, table_name: str = "", older_than=None) -> str:
        of = f" of {table_name}" if table_name else ""
        if self.skipped:
            return f"removed no orphan files{of}: {self.skipped}"
        verb = "would delete" if self.dry_run else "deleted"
        young = f" younger than {older_than}" if older_than is not None else " too young"
        return (f"{verb} {len(self.orphans)} orphan file(s){of} ({human_size(self.orphan_bytes)}) out of {self.listed} "
                f"looked at; {self.too_young} unreachable file(s){young} kept")

    @property
    def deleted(self) -> int:
        return 0 if self.dry_run else len(self.orphans)

    @property
    def deleted_bytes(self) -> int:
        return 0 if self.dry_run else self.orphan_bytes


def select_orphans(candidates: Iterable[Candidate], reachable: Reachable,
                   cutoff_ns: int) -> tuple[list[Candidate], int]:
    """(orphans, how many unreachable files are too young): the pure decision."""
    orphans, young = [], 0
    for c in candidates:
        if reachable.reaches(c):
            continue
        if c.mtime_ns < cutoff_ns:
            orphans.append(c)
        else:
            young += 1
    return orphans, young


# ---------------------------------------------------------------- reachability

class _Refuse(LakeformatError):
    """A file the scan needs could not be read: nothing may be deleted. ``cause`` says why."""

    def __init__(self, message: str, cause: Exception):
        super().__init__(message)
        self.cause = cause


def _read_records(ctx: TableContext, root: str, what: str, names: Iterable[str], parse) -> list:
    """(name, parsed file) of each of ``names`` under ``root/what``."""
    out = []
    for name in names:
        path = join(root, what, name)
        try:
            out.append((name, parse(ctx.io.read_bytes(path).decode())))
        except FileNotFoundError:
            continue   # deleted while we listed (an expired changelog, a deleted tag)
        except Exception as e:
            raise _Refuse(f"{path} cannot be read ({e})", e) from None
    return out


_KINDS = (("tag", r"tag-.+"), ("changelog", r"changelog-\d+"), ("snapshot", r"snapshot-\d+"))


def _records(ctx: TableContext, root: str, kinds: Sequence[str], seen: set) -> list[tuple[str, Snapshot]]:
    """Tags, changelogs and snapshots under ``root`` (in that order, those of ``kinds`` not in
    ``seen``) as (kind, snapshot); adds what it reads to ``seen``."""
    io = ctx.io
    out = []
    for kind, pattern in _KINDS:
        if kind not in kinds:
            continue
        names = sorted(n for n in io.list_names(join(root, kind))
                       if re.fullmatch(pattern, n) and (root, n) not in seen)
        out += [(kind if kind == "snapshot" else f"{kind} file {n}", s)
                for n, s in _read_records(ctx, root, kind, names, Snapshot.from_json)]
        seen.update((root, n) for n in names)
    return out


def _branch_roots(ctx: TableContext) -> list[str]:
    return [branch_path(ctx.path, b) for b in list_branches(ctx.io, ctx.path)]


def reachable_files(ctx: TableContext, progress: Optional[Progress] = None, threads: int = 8,
                    seen: Optional[set] = None, kinds: Sequence[str] = ("tag", "changelog", "snapshot"),
                    roots: Optional[Sequence[str]] = None) -> Reachable:
    """Everything a snapshot, tag, changelog, branch or stage of the table reaches. Raises
    LakeformatError (naming the file) if any of them cannot be read. ``seen`` (updated) holds
    the stages and metadata files read before: a second call reads only new ones. ``roots``:
    the metadata directories of the branches to follow (default: every branch's); the
    manifests and data files all branches name are the table's own (shared)."""
    seen = set() if seen is None else seen
    try:
        staged_commits = [s for s in list_staged(ctx) if ("staged", s.stage_id, s.create_time) not in seen]
    except Exception as e:
        raise _Refuse(f"a staged commit cannot be read ({e})", e) from None
    data: set[str] = set()
    for s in staged_commits:
        data |= s.file_names()
        seen.add(("staged", s.stage_id, s.create_time))
    manifest_names: set[str] = set()
    index: set[str] = set()
    statistics: set[str] = set()
    for root in roots if roots is not None else [ctx.path] + _branch_roots(ctx):
        records = _records(ctx, root, kinds, seen)
        data_r, manifest_r, index_r = _reach_records(ctx, root, records, progress, threads)
        data |= data_r
        index |= index_r
        statistics |= {r.statistics for _, r in records if r.statistics}
        manifest_names |= manifest_r
    return Reachable(frozenset(data), frozenset(manifest_names), frozenset(index), frozenset(statistics))


def _reach_records(ctx: TableContext, root: str, records: Sequence[tuple[str, Snapshot]], progress, threads: int):
    """(data file names, manifest/ names, index file names) that ``records`` reach."""
    io = ctx.io
    mlist = ManifestList(io, ctx.path)   # every branch's manifests are in the table's manifest/
    mfile = ManifestFile(io, ctx.path, [f.type for f in ctx.schema.partition_fields], ctx.schema.id)
    users: dict[str, list[tuple[str, Snapshot]]] = {}   # manifest (list) name -> records naming it
    for rec in records:
        for name in rec[1].manifest_lists():
            users.setdefault(name, []).append(rec)
    lists = sorted(users)
    for name in lists:
        try:
            metas = mlist.read(name)
        except Exception as e:
            _refuse_unless_expired(ctx, root, users[name], name, e)
            continue
        for m in metas:
            users.setdefault(m.file_name, []).extend(users[name])
    todo = sorted(set(users) - set(lists))

    data: set[str] = set()
    for done, (name, named) in enumerate(mfile.read_all(todo, threads, file_names=True), 1):
        if isinstance(named, Exception):
            _refuse_unless_expired(ctx, root, users[name], name, named)
        else:
            data.update(chain.from_iterable(named))
        if progress:
            progress(done, len(todo), "manifests read")
    index_manifests = sorted({r.index_manifest for _, r in records if r.index_manifest})
    index: set[str] = set()
    for name in index_manifests:
        index |= _index_files(io, ctx.path, name)
    return data, set(users) | set(index_manifests), index


def _index_files(io, root: str, name: str) -> set[str]:
    """Index file names an index manifest lists (it lives in manifest/, index files in index/),
    decoded with the same checks as every read: an index file of a kind or with fields lakeformat
    does not know refuses the run (it cannot tell what such an index keeps alive)."""
    try:
        entries = IndexFiles(io, root).read_manifest(name)
    except Exception as e:
        raise _Refuse(f"an index manifest cannot be read ({e})", e) from None   # e names its path
    return {e.file.file_name for e in entries}


def _refuse_unless_expired(ctx: TableContext, root: str, users: Sequence[tuple[str, Snapshot]], name: str,
                           error: Exception) -> None:
    """A manifest (list) that cannot be read is fine only if every record naming it is a
    snapshot that expired while we read (its snapshot file is gone): then nothing needs it."""
    alive = [f"{kind} (snapshot {s.id})" if kind != "snapshot" else f"snapshot {s.id}" for kind, s in users
             if kind != "snapshot" or ctx.io.exists(join(root, "snapshot", f"snapshot-{s.id}"))]
    if alive:
        raise _Refuse(f"{join(ctx.path, MANIFEST, name)} (named by {', '.join(alive[:3])}) cannot be read "
                      f"({error})", error)
    log.info("%s vanished with its expired snapshot(s) while orphan cleaning read it", name)


def _iceberg_reachable(ctx: TableContext) -> tuple[str, set[str]]:
    try:
        return reachable_metadata(ctx)
    except Exception as e:
        raise _Refuse(f"the Iceberg metadata cannot be read ({e})", e) from None


# ---------------------------------------------------------------- candidates

def _files(io, path: str, area: str) -> list[Candidate]:
    return [Candidate(area, join(path, i.base_name), i.base_name, i.size or 0, i.mtime_ns or 0)
            for i in io.list_dir(path) if i.type == pafs.FileType.File]


def _listed(pool, io, dirs: Sequence[str]) -> list[list[pafs.FileInfo]]:
    """The entries of each of ``dirs``, listed in parallel (tables with many partitions)."""
    return list(pool.map(io.list_dir, dirs))


def _bucket_dirs(ctx: TableContext, pool) -> list[tuple[str, pafs.FileInfo]]:
    """Bucket directories of every partition directory present (whatever its values)."""
    io = ctx.io
    level = [ctx.path]
    for key in ctx.partition_keys:
        prefix = escape_path_name(key) + "="
        level = [join(d, i.base_name) for d, infos in zip(level, _listed(pool, io, level)) for i in infos
                 if i.type == pafs.FileType.Directory and i.base_name.startswith(prefix)]
    return [(join(d, i.base_name), i) for d, infos in zip(level, _listed(pool, io, level)) for i in infos
            if i.type == pafs.FileType.Directory and i.base_name.startswith("bucket-")]


def _spark_leftovers(io, path: str) -> list[Candidate]:
    """Files under a directory Spark jobs stage in (``_spark-*``: native writes, compaction
    results) that a crashed driver left; they are temp files of the table."""
    out, todo = [], [path]
    while todo:
        for i in io.list_dir(todo.pop()):
            if i.type == pafs.FileType.File:
                out.append(Candidate("temp", i.path, i.base_name, i.size or 0, i.mtime_ns or 0))
            elif i.type == pafs.FileType.Directory:
                todo.append(i.path)
    return out


def list_candidates(ctx: TableContext, cutoff_ns: int, threads: int = 16) -> tuple[list[Candidate], list[str]]:
    """Files that may be orphans, and the bucket directories that were empty already and
    unmodified since ``cutoff_ns`` (left by expirations; no writer is starting in them).
    Directories are listed in ``threads`` parallel threads."""
    io = ctx.io
    out: list[Candidate] = []
    empty: list[str] = []
    with ThreadPoolExecutor(threads) as pool:
        buckets = _bucket_dirs(ctx, pool)
        for (path, info), files in zip(buckets, pool.map(lambda b: _files(io, b[0], "data"), buckets)):
            out += files
            if not files and not io.list_dir(path) and (info.mtime_ns or 0) < cutoff_ns:
                empty.append(path)
    for area in (MANIFEST, INDEX, STATISTICS):
        out += _files(io, join(ctx.path, area), area)
    for d in _METADATA_DIRS:
        out += [c for c in _files(io, join(ctx.path, d), "temp") if _TEMP.match(c.name)]
    for i in io.list_dir(ctx.path):
        if i.type == pafs.FileType.Directory and i.base_name.startswith(_SPARK_DIRS):
            out += _spark_leftovers(io, join(ctx.path, i.base_name))
    return out, empty


# ---------------------------------------------------------------- executor

def remove_orphan_files(ctx: TableContext, *, older_than: dt.timedelta = dt.timedelta(days=1), dry_run: bool = False,
                        progress: Optional[Progress] = None,
                        allow_deleting_in_flight_files: bool = False) -> OrphanResult:
    """Delete files of the table that nothing reaches and that are older than ``older_than``
    (see the module docstring). ``dry_run`` lists them and deletes nothing. An ``older_than``
    under one day also deletes files of writes still in flight, which then fail: it is refused
    unless ``allow_deleting_in_flight_files`` says the caller accepts that."""
    if not isinstance(older_than, dt.timedelta) or older_than < dt.timedelta(0):
        raise LakeformatError(f"older_than must be a non-negative timedelta, not {older_than!r}")
    if older_than < MIN_OLDER_THAN and not dry_run and not allow_deleting_in_flight_files:
        raise LakeformatError(
            f"refusing to remove orphan files of {ctx.name} with older_than={older_than}: under one day it "
            "would also delete the files of writes still in flight (they are not committed yet, so they look like "
            "orphans), and those writes would fail. Use older_than of at least one day, or pass "
            "allow_deleting_in_flight_files=True (CLI: --allow-deleting-in-flight-files) when no writer can be running")
    O.check_supported(ctx.schema.options, O.WRITE, ctx.name)
    if not ctx.snapshot_manager.list_ids():
        # a partial restore or a sync that missed snapshot/: every file would look unreachable
        reason = ("the table has no snapshot (snapshot/ is missing or empty), so no file can be proven "
                  "unreachable; nothing was deleted. Restore snapshot/ if it is missing")
        log.warning("not removing orphan files of %s: %s", ctx.name, reason)
        return OrphanResult(0, (), 0, 0, 0, dry_run, skipped=reason)
    cutoff_ns = time.time_ns() - int(older_than.total_seconds() * 1e9)
    seen: set = set()
    try:
        # listed first: every candidate was written before the metadata that may name it is read
        candidates, empty_dirs = list_candidates(ctx, cutoff_ns)
        iceberg = iceberg_enabled(ctx)
        if iceberg:
            iceberg_dir = iceberg_files(ctx).dir
            candidates += _files(ctx.io, iceberg_dir, ICEBERG)
        with gc_paused():   # millions of long-lived entries: see read/scan.py
            reachable = reachable_files(ctx, progress, seen=seen)
        if iceberg:
            reachable = replace(reachable, iceberg=frozenset(_iceberg_reachable(ctx)[1]))
        orphans, young = select_orphans(candidates, reachable, cutoff_ns)
        if orphans:
            # a stage or tag made while we read (from a snapshot then expired) protects its files
            # too; without an age limit, so does a snapshot committed meanwhile
            kinds = ("tag", "changelog", "snapshot") if older_than < MIN_OLDER_THAN else ("tag", "changelog")
            late = reachable_files(ctx, seen=seen, kinds=kinds)   # every branch: one may be new
            orphans = [c for c in orphans if not late.reaches(c)]
    except _Refuse as e:
        todo = ("lakeformat does not understand that file, so it cannot tell which files it keeps alive"
                if isinstance(e.cause, UnsupportedError) else "repair or remove that file first")
        raise LakeformatError(f"refusing to remove orphan files of {ctx.name}: {e}. Nothing was "
                              f"deleted; {todo}.") from None
    total_bytes = sum(c.size for c in orphans)
    if dry_run:
        log.info("dry run: %d orphan file(s) of %s (%d bytes) older than %s would be deleted; %d younger kept",
                 len(orphans), ctx.name, total_bytes, older_than, young)
        return OrphanResult(len(candidates), tuple(c.path for c in orphans), total_bytes, young, 0, True)
    safe_ns = time.time_ns() - int(MIN_OLDER_THAN.total_seconds() * 1e9)
    young_orphans = [c for c in orphans if c.mtime_ns >= safe_ns]   # may be a running write's
    if young_orphans:
        orphans = [c for c in orphans if c.mtime_ns < safe_ns] + _delete_unless_claimed(
            ctx, young_orphans, seen, progress)
        total_bytes = sum(c.size for c in orphans)
    delete_files(ctx.io, [c.path for c in orphans if c.mtime_ns < safe_ns],
                 progress and (lambda done: progress(done, len(orphans), "orphan files deleted")))
    dirs = _remove_empty_dirs(ctx, {c.path.rsplit("/", 1)[0] for c in orphans if c.area == "data"} | set(empty_dirs))
    dirs += _remove_spark_dirs(ctx, cutoff_ns)
    log.info("deleted %d orphan file(s) of %s (%d bytes) older than %s; %d younger kept; %d empty "
             "directories removed", len(orphans), ctx.name, total_bytes, older_than, young, dirs)
    return OrphanResult(len(candidates), tuple(c.path for c in orphans), total_bytes, young, dirs, False)


def _aside(c: Candidate, run: str) -> str:
    head, _, name = c.path.rpartition("/")
    return f"{head}/.{name}.{run}.orphan.tmp"


def _delete_unless_claimed(ctx: TableContext, orphans: list[Candidate], seen: set, progress) -> list[Candidate]:
    """Orphans of a run without an age limit, deleted only if no commit claimed them meanwhile:
    moved aside first; after :data:`IN_FLIGHT_GRACE`, every snapshot, tag and stage made since the
    first read is read, and the files they name are moved back. Returns what was deleted."""
    run = uuid.uuid4().hex[:12]
    moved = []
    for c in orphans:
        try:
            ctx.io.move(c.path, _aside(c, run))
            moved.append(c)
        except FileNotFoundError:
            continue   # gone already (its writer aborted)
    time.sleep(IN_FLIGHT_GRACE)
    try:
        claimed = reachable_files(ctx, seen=seen)
        if any(c.area == ICEBERG for c in moved):
            claimed = replace(claimed, iceberg=frozenset(_iceberg_reachable(ctx)[1]))
    except _Refuse as e:
        claimed = None
        log.warning("orphan removal of %s cannot read what was committed meanwhile (%s): every file it moved "
                    "aside goes back", ctx.name, e)
    deleted = []
    for c in moved:
        if claimed is None or claimed.reaches(c):
            log.warning("%s was committed while orphan removal ran: moved back, not deleted", c.path)
            ctx.io.move(_aside(c, run), c.path)
        else:
            deleted.append(c)
    delete_files(ctx.io, [_aside(c, run) for c in deleted],
                 progress and (lambda done: progress(done, len(deleted), "orphan files deleted")))
    return deleted


def _remove_spark_dirs(ctx: TableContext, cutoff_ns: int) -> int:
    """Remove ``_spark-*`` staging directories holding no file any more and unmodified since
    ``cutoff_ns`` (a Spark job that just made one has not written into it yet)."""
    removed = 0
    for i in ctx.io.list_dir(ctx.path):
        if i.type == pafs.FileType.Directory and i.base_name.startswith(_SPARK_DIRS) \
                and (i.mtime_ns or 0) < cutoff_ns and not _spark_leftovers(ctx.io, i.path):
            ctx.io.delete_dir(i.path)
            removed += 1
    return removed


def _remove_empty_dirs(ctx: TableContext, bucket_dirs: set[str]) -> int:
    """Remove the given (emptied or long empty) bucket directories, then partition directories
    left empty, bottom up. Only empty directories go (an rmdir fails on a file a writer just created)."""
    removed = 0
    parents: set[str] = set()
    for d in sorted(bucket_dirs):
        if ctx.io.delete_empty_dir(d):
            removed += 1
            parents.add(d.rsplit("/", 1)[0])
    for _ in ctx.partition_keys:
        nxt = set()
        for d in sorted(parents):
            if d.rstrip("/") != ctx.path.rstrip("/") and ctx.io.delete_empty_dir(d):
                removed += 1
                nxt.add(d.rsplit("/", 1)[0])
        parents = nxt
    return removed
