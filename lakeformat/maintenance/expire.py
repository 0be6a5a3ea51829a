"""Snapshot expiration, with Paimon's rules (``ExpireSnapshotsImpl``).

Which snapshots go is a pure decision over metadata (:func:`plan_expiration`): the newest
``snapshot.num-retained.min`` always stay, anything beyond ``snapshot.num-retained.max`` goes, in
between only snapshots older than ``snapshot.time-retained`` go (stopping at the first younger
one), never one a consumer still needs (>= the smallest ``nextSnapshot``), and at most
``snapshot.expire.limit`` per run. Expiring ``[begin, end)`` then deletes, in this order:

1. data files that the deltas of snapshots ``(begin, end]`` mark DELETE (a file removed by
   snapshot k was live up to k-1 only), unless the nearest tag below k still holds them;
2. changelog files of the expired snapshots (a tagged snapshot keeps its own);
3. manifests, then manifest lists, of the expired snapshots that neither snapshot ``end`` nor an
   overlapping tag refers to (a manifest is shared by a contiguous run of snapshots, so the
   first kept snapshot and the tags decide);

   none of the files in 1-3 that a snapshot, tag or changelog of another branch of the table
   names (branches share the table's manifests and data files; see maintenance/branches.py);
4. the ``snapshot-N`` files, ascending, with the EARLIEST hint following.

Why that order: until step 4 every snapshot file still names its metadata, so a run killed at any
point leaves snapshots >= ``end`` whole and the next run, reading the same metadata, deletes what
is left (deletes are idempotent, missing files are skipped). Before step 1 the run records
``snapshot/EXPIRING-<end>``; a later run finishes at least up to that ``end`` even if its own
rules would keep more, because the interrupted run may already have deleted those snapshots'
data files. Other Paimon readers ignore that file.

Concurrent committers: a committer builds snapshot N+1 on the latest N it read and creates
``snapshot-(N+1)`` only if absent. Expiration never deletes the newest ``retain_min`` snapshots,
and a committer whose base N has been expired treats that as a lost race and retries on the new
latest (``FileStoreCommit._base_exists``). Without a catalog lock that check and the create are
two steps: a committer stalled between them while ``retain_min`` newer snapshots are committed,
outlive ``snapshot.time-retained`` and get expired could re-create an expired id (Paimon has the
same exposure; its defaults, 10 snapshots and 1 h, make it practically impossible). With
``lock.enabled`` the snapshot files are deleted under the catalog lock and the race is closed.

Changelog retention: lakeformat keeps changelog files exactly as long as their snapshots. Paimon
moves changelogs into ``changelog/changelog-N`` files when ``changelog.*`` retention is longer
than the snapshots'; lakeformat does not implement that and rejects such options
(:func:`lakeformat.options.check_changelog_retention`).
"""
from __future__ import annotations

import contextlib
import datetime as dt
import functools
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Literal, Optional, Union, overload
from collections.abc import Callable, Iterable, Sequence

from lakeformat.errors import CorruptFileError, LakeformatError, NotFoundError
from lakeformat.format import options as O
from lakeformat.format.manifest import ADD, DELETE, ManifestEntry, ManifestFileMeta
from lakeformat.format.snapshot import Snapshot
from lakeformat.io.data_file import file_path
from lakeformat.io.fileio import join
from lakeformat.io.index_files import IndexFiles
from lakeformat.io.manifests import ManifestList
from lakeformat.io.snapshots import SnapshotManager
from lakeformat.io.table_context import TableContext
from lakeformat.maintenance.branches import keep_unreached, other_branches_reach
from lakeformat.maintenance.consumer import ConsumerManager
from lakeformat.maintenance.deletes import delete_files
from lakeformat.maintenance.expire_reasons import expire_reasons, limits
from lakeformat.maintenance.tag import TagManager
from lakeformat.read.scan import FileScan

log = logging.getLogger(__name__)

INTENT_PREFIX = "EXPIRING-"     # snapshot/EXPIRING-<end>: an expiration up to <end> has started
HINT_EVERY = 50                 # snapshot deletions between EARLIEST hint updates
Progress = Callable[[int, int, str], None]


# ---------------------------------------------------------------- planning (pure)

@dataclass(frozen=True)
class ExpirePlan:
    """Snapshots ``begin .. end-1`` expire; ``end`` is the first snapshot kept."""

    begin: int
    end: int

    @property
    def ids(self) -> range:
        return range(self.begin, self.end)


def plan_expiration(*, earliest: Optional[int], latest: Optional[int],
                    time_of: Callable[[int], Optional[int]], older_than_millis: int,
                    retain_min: int, retain_max: int, max_deletes: int,
                    min_consumer_next: Optional[int] = None,
                    pending_end: Optional[int] = None) -> Optional[ExpirePlan]:
    """The snapshots to expire, or None. ``time_of(id)`` is a snapshot's commit time in epoch
    millis (None if it does not exist); ``older_than_millis`` is now minus the time retained;
    ``pending_end`` is the ``end`` of an interrupted run, which this run must reach."""
    if earliest is None or latest is None:
        return None
    lowest_kept_by_max = max(latest - retain_max + 1, earliest)
    end = latest - retain_min + 1
    if min_consumer_next is not None:
        end = min(end, min_consumer_next)
    end = min(end, earliest + max_deletes)
    for sid in range(lowest_kept_by_max, end):
        t = time_of(sid)
        if t is not None and t >= older_than_millis:
            end = sid          # the first snapshot young enough to keep: it and all after stay
            break
    if pending_end is not None:
        end = max(end, min(pending_end, latest))
    return ExpirePlan(earliest, end) if end > earliest else None


def previous_tag(tag_ids: Sequence[int], snapshot_id: int) -> Optional[int]:
    """The largest tagged snapshot id below ``snapshot_id``. A data file removed by snapshot k
    and held by any tag below k is live from that tag to k-1, so also in this one."""
    below = [t for t in tag_ids if t < snapshot_id]
    return max(below) if below else None


def overlapping_tags(tag_ids: Sequence[int], begin: int, end: int) -> list[int]:
    """Tags whose manifests may be shared with snapshots ``[begin, end)``: those inside the
    range plus the nearest at or below ``begin`` (Paimon's ``findOverlappedSnapshots``)."""
    ids = sorted(set(tag_ids))
    at_or_below = [t for t in ids if t <= begin]
    first = at_or_below[-1] if at_or_below else None
    return [t for t in ids if t < end and (t > begin or t == first)]


def released_files(delta: Iterable[ManifestEntry]) -> list[ManifestEntry]:
    """DELETE entries of a snapshot's delta whose file the same delta does not add again (a
    compaction that only moves a file up a level deletes and adds the same file name)."""
    entries = list(delta)
    added = {(e.partition, e.bucket, e.file.file_name) for e in entries if e.kind == ADD}
    seen, out = set(), []
    for e in entries:
        key = (e.partition, e.bucket, e.file.file_name)
        if e.kind == DELETE and key not in added and key not in seen:
            seen.add(key)
            out.append(e)
    return out


def file_key(e: ManifestEntry) -> tuple:
    return (e.partition, e.bucket, e.file.file_name)


# ---------------------------------------------------------------- settings

@dataclass(frozen=True)
class ExpireSettings:
    retain_min: int
    retain_max: int
    older_than_millis: int
    max_deletes: int


def resolve_settings(ctx: TableContext, retain_min: Optional[int] = None, retain_max: Optional[int] = None,
                     older_than: Union[None, dt.timedelta, dt.datetime] = None,
                     max_deletes: Optional[int] = None, now: Optional[dt.datetime] = None) -> ExpireSettings:
    """Arguments given win over the table's options; bad values fail naming the argument."""
    o = ctx.typed_options
    rmin = o.required(O.SNAPSHOT_NUM_RETAINED_MIN) if retain_min is None else retain_min
    rmax = o.required(O.SNAPSHOT_NUM_RETAINED_MAX) if retain_max is None else retain_max
    limit = o.required(O.SNAPSHOT_EXPIRE_LIMIT) if max_deletes is None else max_deletes
    for name, value in (("retain_min", rmin), ("retain_max", rmax), ("max_deletes", limit)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise LakeformatError(f"expire snapshots of {ctx.name}: {name} must be a positive integer, "
                                  f"not {value!r}")
    if rmin > rmax:
        raise LakeformatError(f"expire snapshots of {ctx.name}: retain_min ({rmin}) is larger than "
                              f"retain_max ({rmax})")
    now_millis = int((now.timestamp() if now is not None else time.time()) * 1000)
    if older_than is None:
        older_than = o.required(O.SNAPSHOT_TIME_RETAINED)
    if isinstance(older_than, dt.timedelta):
        if older_than < dt.timedelta(0):
            raise LakeformatError(f"expire snapshots of {ctx.name}: older_than must not be negative")
        cutoff = now_millis - older_than // dt.timedelta(milliseconds=1)
    elif isinstance(older_than, dt.datetime):
        cutoff = int(older_than.timestamp() * 1000)
    else:
        raise LakeformatError(f"expire snapshots of {ctx.name}: older_than must be a timedelta (time "
                              f"retained) or a datetime (cutoff), not {older_than!r}")
    return ExpireSettings(rmin, rmax, cutoff, limit)


def reason_limits(ctx: TableContext, cfg: ExpireSettings, retain_min: Optional[int], retain_max: Optional[int],
                  older_than: Union[None, dt.timedelta, dt.datetime]):
    """The settings as ``expire_reasons`` names them: the argument given, or the table option."""
    return limits(cfg.retain_min, cfg.retain_max, cfg.older_than_millis, given_min=retain_min is not None,
                  given_max=retain_max is not None, older_than=older_than,
                  time_retained=ctx.typed_options.required(O.SNAPSHOT_TIME_RETAINED))


# ---------------------------------------------------------------- result

@dataclass(frozen=True)
class ExpireResult:
    begin: Optional[int] = None     # first snapshot expired (None: nothing expired)
    end: Optional[int] = None       # first snapshot kept
    data_files: int = 0
    changelog_files: int = 0
    manifests: int = 0
    manifest_lists: int = 0
    snapshots: int = 0
    dry_run: bool = False
    paths: tuple = field(default=(), repr=False)   # every file deleted (or that would be)
    held: tuple = ()                # why snapshots the retention settings let go were kept
    expired_because: tuple = ()     # which limit removed which snapshots (expire_reasons)
    kept: tuple = ()                # which limit kept which snapshots

    def reasons(self) -> list[str]:
        """One line per range of snapshots: the limit that removed or kept it (``held``, in the
        summary, names what consumers and the per-run limit kept)."""
        return [f"expired {r}" for r in self.expired_because] + [f"kept {r}" for r in self.kept]

    @property
    def expired(self) -> range:
        return range(self.begin, self.end) if self.begin is not None and self.end is not None else range(0)

    def summary(self, table_name: str = "") -> str:
        of = f" of {table_name}" if table_name else ""
        held = f"; kept {'; '.join(self.held)}" if self.held else ""
        if self.begin is None or self.end is None:
            return f"no snapshot{of} to expire{held}"
        verb, deleted = ("would expire", "would delete") if self.dry_run else ("expired", "deleted")
        return (f"{verb} snapshots {self.begin}..{self.end - 1}{of}: {deleted} {self.data_files} data files, "
                f"{self.changelog_files} changelog files, {self.manifests} manifests, "
                f"{self.manifest_lists} manifest lists{held}")


@dataclass(frozen=True)
class Deletions:
    """Everything one expiration deletes, grouped by the step that deletes it."""

    data_files: tuple[str, ...]
    changelog_files: tuple[str, ...]
    manifests: tuple[str, ...]
    manifest_lists: tuple[str, ...]
    snapshots: tuple[int, ...]
    index_files: tuple[str, ...] = ()       # deletion vectors and hash indexes no kept snapshot or tag uses
    index_manifests: tuple[str, ...] = ()

    def without(self, reached: Optional[frozenset]) -> Deletions:
        """These deletions but the files another branch still names (shared files: a branch's
        snapshots name the table's manifests and data files)."""
        if not reached:
            return self
        keep = functools.partial(keep_unreached, reached=reached)
        return Deletions(tuple(keep(self.data_files)), tuple(keep(self.changelog_files)), tuple(keep(self.manifests)),
                         tuple(keep(self.manifest_lists)), self.snapshots, tuple(keep(self.index_files)),
                         tuple(keep(self.index_manifests)))


# ---------------------------------------------------------------- reading metadata

class _Reader:
    """Reads what expiration needs; metadata of expired snapshots may vanish under a concurrent
    expiration, which only means someone else handled it (``None``)."""

    def __init__(self, ctx: TableContext, sm: SnapshotManager):
        self.ctx, self.sm = ctx, sm
        self.scan = FileScan(ctx)
        self.mlist = ManifestList(ctx.io, ctx.path)

    def snapshot(self, sid: int) -> Optional[Snapshot]:
        try:
            return self.sm.get(sid)
        except NotFoundError:
            return None

    def time_of(self, sid: int) -> Optional[int]:
        s = self.snapshot(sid)
        return s.time_millis if s is not None else None

    @overload
    def metas(self, list_name: str, required: Literal[True]) -> list[ManifestFileMeta]: ...
    @overload
    def metas(self, list_name: str, required: bool = False) -> Optional[list[ManifestFileMeta]]: ...
    def metas(self, list_name: str, required: bool = False) -> Optional[list[ManifestFileMeta]]:
        try:
            return self.mlist.read(list_name)
        except CorruptFileError:
            if required or self.ctx.io.exists(join(self.ctx.path, "manifest", list_name)):
                raise
            return None

    @overload
    def entries(self, metas: Sequence[ManifestFileMeta], required: Literal[True]) -> list[ManifestEntry]: ...
    @overload
    def entries(self, metas: Sequence[ManifestFileMeta], required: bool = False) -> Optional[list[ManifestEntry]]: ...
    def entries(self, metas: Sequence[ManifestFileMeta], required: bool = False) -> Optional[list[ManifestEntry]]:
        try:
            return self.scan.read_manifests(metas)
        except CorruptFileError as e:
            if required or self.ctx.io.exists(e.path):   # only a manifest deleted meanwhile is tolerated
                raise
            return None

    def delta(self, s: Snapshot) -> Optional[list[ManifestEntry]]:
        metas = self.metas(s.delta_manifest_list)
        return None if metas is None else self.entries(metas)

    def changelog(self, s: Snapshot) -> list[ManifestEntry]:
        if not s.changelog_manifest_list:
            return []
        metas = self.metas(s.changelog_manifest_list)
        return (self.entries(metas) or []) if metas is not None else []

    def live_keys(self, s: Snapshot) -> set[tuple]:
        metas = self.metas(s.base_manifest_list, True) + self.metas(s.delta_manifest_list, True)
        live: dict[tuple, ManifestEntry] = {}
        for e in self.entries(metas, True):
            if e.kind == ADD:
                live[e.identifier] = e
            else:
                live.pop(e.identifier, None)
        return {file_key(e) for e in live.values()}

    def paths(self, entries: Iterable[ManifestEntry]) -> list[str]:
        out: list[str] = []
        dirs: dict[tuple[bytes, int], str] = {}
        for e in entries:
            d = dirs.get((e.partition, e.bucket))
            if d is None:
                d = dirs[(e.partition, e.bucket)] = self.ctx.bucket_dir_of(e.partition, e.bucket)
            out.append(file_path(self.ctx, d, e.file))
            out += [join(d, x) for x in e.file.extra_files]
        return out


def collect_deletions(ctx: TableContext, reader: _Reader, plan: ExpirePlan, existing: Sequence[int],
                      tags: dict[int, Snapshot]) -> Optional[Deletions]:
    """What expiring ``plan`` deletes, from the metadata alone. None if snapshot ``end`` is gone
    (a concurrent expiration went further)."""
    end_snapshot = reader.snapshot(plan.end)
    if end_snapshot is None:
        return None
    tag_ids = sorted(tags)
    # what the kept side refers to: snapshot `end` and the tags sharing manifests with the range
    keep_lists: set[str] = set()
    keep_manifests: set[str] = set()
    try:
        for s in [end_snapshot] + [tags[t] for t in overlapping_tags(tag_ids, plan.begin, plan.end)]:
            for name in s.manifest_lists():
                keep_lists.add(name)
                keep_manifests.update(m.file_name for m in reader.metas(name, required=True))
    except CorruptFileError:
        sdir = join(ctx.branch_path, "snapshot")
        if not ctx.io.exists(reader.sm.path(plan.end)) or \
                any(e > plan.end for e in _intents(ctx.io.list_names(sdir))):
            return None   # a concurrent run is expiring `end`: the kept side must be read whole, so plan again
        raise

    expired_ids = [i for i in existing if plan.begin <= i < plan.end]
    delta_ids = [i for i in existing if plan.begin < i <= plan.end]
    tag_live: dict[int, set[tuple]] = {}

    def released(sid: int) -> list[str]:
        s = reader.snapshot(sid)
        delta = reader.delta(s) if s is not None else None
        if not delta:
            return []
        gone = released_files(delta)
        tag = previous_tag(tag_ids, sid)
        if tag is not None and gone:
            if tag not in tag_live:
                tag_live[tag] = reader.live_keys(tags[tag])
            gone = [e for e in gone if file_key(e) not in tag_live[tag]]
        return reader.paths(gone)

    def expired_metadata(sid: int) -> tuple[list[str], list[str], list[str]]:
        s = reader.snapshot(sid)
        if s is None:
            return [], [], []
        changelog = [] if sid in tags else reader.paths(e for e in reader.changelog(s) if e.kind == ADD)
        manifests, lists = [], []
        for name in s.manifest_lists():
            if name in keep_lists:
                continue
            metas = reader.metas(name)
            if metas is not None:   # None: deleted by an earlier, interrupted run (its manifests first)
                manifests += [m.file_name for m in metas if m.file_name not in keep_manifests]
            lists.append(name)
        return changelog, manifests, lists

    with ThreadPoolExecutor(4) as pool:
        data = [p for ps in pool.map(released, delta_ids) for p in ps]
        meta = list(pool.map(expired_metadata, expired_ids))
    index_files, index_manifests = _expired_index(ctx, reader, expired_ids, [end_snapshot, *tags.values()])
    mdir = join(ctx.path, "manifest")
    return Deletions(
        data_files=tuple(dict.fromkeys(data)),
        changelog_files=tuple(dict.fromkeys(p for c, _, _ in meta for p in c)),
        manifests=tuple(dict.fromkeys(join(mdir, n) for _, ms, _ in meta for n in ms)),
        manifest_lists=tuple(dict.fromkeys(join(mdir, n) for _, _, ls in meta for n in ls)),
        snapshots=tuple(expired_ids),
        index_files=tuple(index_files),
        index_manifests=tuple(join(mdir, n) for n in index_manifests))


def _expired_index(ctx: TableContext, reader: _Reader, expired_ids: Sequence[int],
                   kept: Sequence[Snapshot]) -> tuple[list[str], list[str]]:
    """(paths of index files, index manifests) that only expired snapshots use. An index manifest
    is shared by a contiguous run of snapshots and an index file, once replaced, never comes back,
    so the first kept snapshot and the tags are all the kept side there is."""
    index = IndexFiles.of(ctx)   # where the files are: index/ or their buckets' directories
    keep_manifests = {s.index_manifest for s in kept if s.index_manifest}
    keep_files = {index.path(e.file) for name in keep_manifests for e in index.read_manifest(name)}
    doomed = sorted({s.index_manifest for s in map(reader.snapshot, expired_ids)
                     if s is not None and s.index_manifest and s.index_manifest not in keep_manifests})
    files: set[str] = set()
    for name in doomed:
        try:
            files |= {index.path(e.file) for e in index.read_manifest(name)}
        except CorruptFileError:   # deleted by an earlier, interrupted run (its index files first)
            continue
    return sorted(files - keep_files), doomed


# ---------------------------------------------------------------- executing

def _intents(names: Iterable[str]) -> list[int]:
    out = []
    for n in names:
        if n.startswith(INTENT_PREFIX) and n[len(INTENT_PREFIX):].isdigit():
            out.append(int(n[len(INTENT_PREFIX):]))
    return out


def _snapshot_ids(names: Iterable[str]) -> list[int]:
    return sorted(int(n[9:]) for n in names if n.startswith("snapshot-") and n[9:].isdigit())


def _tagged_snapshots(ctx: TableContext) -> dict[int, Snapshot]:
    return {t.snapshot.id: t.snapshot for t in TagManager(ctx).list()}


def _min_consumer_next(ctx: TableContext) -> Optional[int]:
    return ConsumerManager(ctx).min_next_snapshot()


class _Deleter:
    """Deletes the groups of one expiration through the maintenance jobs' bounded pool
    (lakeformat/maintenance/deletes.py), counting them for ``progress``."""

    def __init__(self, ctx: TableContext, total: int, progress: Optional[Progress]):
        self.io, self.total, self.done, self.progress = ctx.io, total, 0, progress

    def delete(self, paths: Sequence[str], what: str) -> None:
        if paths:
            step = max(1, len(paths) // 20)
            delete_files(self.io, paths, lambda n: self.tick(n - 1, len(paths), step, what))

    def tick(self, i: int, n: int, step: int, what: str) -> None:
        self.done += 1
        if self.progress is not None and ((i + 1) % step == 0 or i + 1 == n):
            self.progress(self.done, self.total, what)


def _snapshot_range(ctx: TableContext, sm: SnapshotManager, from_hints: bool,
                    latest: Optional[int]) -> tuple[list[int], list[int]]:
    """(snapshot ids, intents of interrupted runs). A listing of ``snapshot/`` unless
    ``from_hints``: then the ids between the EARLIEST and LATEST hints (ids are contiguous;
    one missing is skipped when read) and no intents."""
    if not from_hints:
        names = ctx.io.list_names(join(ctx.branch_path, "snapshot"))
        return _snapshot_ids(names), _intents(names)
    earliest = sm.earliest_id()
    latest = sm.latest_id() if latest is None else latest
    if earliest is None or latest is None:
        return [], []
    return list(range(earliest, latest + 1)), []


def expire_snapshots(ctx: TableContext, *, retain_min: Optional[int] = None, retain_max: Optional[int] = None,
                     older_than: Union[None, dt.timedelta, dt.datetime] = None,
                     max_deletes: Optional[int] = None, dry_run: bool = False,
                     progress: Optional[Progress] = None, now: Optional[dt.datetime] = None,
                     from_hints: bool = False, latest: Optional[int] = None) -> ExpireResult:
    """Expire old snapshots of the table (``ctx``) and delete the files only they referred to.

    Unset arguments come from the table's options (``snapshot.num-retained.min/max``,
    ``snapshot.time-retained``, ``snapshot.expire.limit``). ``older_than`` is a time retained
    (timedelta) or a cutoff (datetime). Tags and consumers are respected. Safe while other
    processes commit: it reads a fresh latest and never touches the newest ``retain_min``.

    ``from_hints`` (the check after every commit; ``latest`` the snapshot just made) finds
    the snapshots through the EARLIEST and LATEST hints instead of listing ``snapshot/`` and
    reads only the oldest snapshots' times, through the table's snapshot cache: the same few
    requests at 10 snapshots as at 5,000. It does not look for interrupted runs
    (``EXPIRING-<end>``); any run without ``from_hints`` finishes those.
    """
    O.check_supported(ctx.schema.options, O.WRITE, ctx.name)
    O.check_changelog_retention(ctx.typed_options)
    cfg = resolve_settings(ctx, retain_min, retain_max, older_than, max_deletes, now)
    lim = reason_limits(ctx, cfg, retain_min, retain_max, older_than)
    io = ctx.io
    sdir = join(ctx.branch_path, "snapshot")
    for _attempt in range(3):
        # fresh (nothing cached from before this run), except for the hinted check after a commit
        sm = ctx.snapshot_manager if from_hints and _attempt == 0 else SnapshotManager(io, ctx.branch_path)
        existing, intents = _snapshot_range(ctx, sm, from_hints, latest)
        if not existing:
            return ExpireResult(dry_run=dry_run)
        earliest, latest = existing[0], existing[-1]
        pending = max((e for e in intents if earliest < e <= latest), default=None)
        reader = _Reader(ctx, sm)
        plan_with = functools.partial(plan_expiration, earliest=earliest, latest=latest, time_of=reader.time_of,
                                      older_than_millis=cfg.older_than_millis, retain_min=cfg.retain_min,
                                      retain_max=cfg.retain_max, pending_end=pending)
        plan = plan_with(max_deletes=cfg.max_deletes)
        held: tuple = ()
        if plan is not None:   # consumers only matter once something could go (a listing saved per commit)
            consumer_next = _min_consumer_next(ctx)
            free = plan_with(max_deletes=latest - earliest + 1)
            plan = plan_with(max_deletes=cfg.max_deletes, min_consumer_next=consumer_next)
            held = _held(ctx, earliest, plan, free, consumer_next, cfg.max_deletes, max_deletes is None)
        if plan is None:
            if not dry_run:
                _forget_intents(io, sdir, [e for e in intents if e <= earliest])
            log.debug("no snapshot of %s to expire (snapshots %d..%d)", ctx.name, earliest, latest)
            if held:
                log.info("no snapshot of %s expired; kept %s", ctx.name, "; ".join(held))
            gone, kept = expire_reasons(earliest=earliest, end=None, latest=latest, time_of=reader.time_of,
                                        lim=lim)
            return ExpireResult(dry_run=dry_run, held=held, expired_because=gone, kept=kept)
        if sm is ctx.snapshot_manager:   # due: read what is deleted without the long-lived cache
            sm = SnapshotManager(io, ctx.branch_path)
            reader = _Reader(ctx, sm)
        deletions = collect_deletions(ctx, reader, plan, existing, _tagged_snapshots(ctx))
        if deletions is None:
            log.info("snapshot %d of %s was expired concurrently; planning again", plan.end, ctx.name)
            continue
        deletions = deletions.without(other_branches_reach(ctx))
        gone, kept = expire_reasons(earliest=plan.begin, end=plan.end, latest=latest, time_of=reader.time_of,
                                    lim=lim)
        result = ExpireResult(
            plan.begin, plan.end, len(deletions.data_files), len(deletions.changelog_files),
            len(deletions.manifests), len(deletions.manifest_lists), len(deletions.snapshots), dry_run,
            deletions.data_files + deletions.changelog_files + deletions.index_files + deletions.manifests
            + deletions.index_manifests + deletions.manifest_lists + tuple(sm.path(i) for i in deletions.snapshots),
            held, gone, kept)
        if not dry_run:
            _execute(ctx, sm, plan, deletions, intents, progress)
        log.info("%s", result.summary(ctx.name))
        return result
    log.info("snapshots of %s kept being expired concurrently; leaving it to the other expiration", ctx.name)
    return ExpireResult(dry_run=dry_run)


def _held(ctx: TableContext, earliest: int, plan: Optional[ExpirePlan], free: Optional[ExpirePlan],
          consumer_next: Optional[int], limit: int, limit_from_options: bool) -> tuple[str, ...]:
    """Why snapshots that the retention settings alone would expire stay: a consumer still
    reading them, or the per-run limit."""
    end = plan.end if plan is not None else earliest
    if free is None or free.end <= end:
        return ()
    out = []
    if consumer_next is not None and consumer_next < free.end:
        needing = sorted(c for c, n in ConsumerManager(ctx).list().items() if n < free.end)
        out.append(f"snapshots {max(consumer_next, end)}..{free.end - 1}: consumer(s) "
                   f"{', '.join(map(repr, needing))} still need snapshot {consumer_next} onwards "
                   "(reset or clear them to let these go)")
    if end == earliest + limit:
        name = "snapshot.expire.limit" if limit_from_options else "max_deletes"
        out.append(f"snapshots {end}..{free.end - 1}: {name} is {limit} snapshots per run (the next run goes on)")
    return tuple(out)


def _execute(ctx: TableContext, sm: SnapshotManager, plan: ExpirePlan, d: Deletions, intents: list[int],
             progress: Optional[Progress]) -> None:
    io, sdir = ctx.io, join(ctx.branch_path, "snapshot")
    if plan.end not in intents:
        io.write_bytes(join(sdir, f"{INTENT_PREFIX}{plan.end}"), str(plan.begin).encode())
    total = (len(d.data_files) + len(d.changelog_files) + len(d.manifests) + len(d.manifest_lists)
             + len(d.snapshots) + len(d.index_files) + len(d.index_manifests))
    deleter = _Deleter(ctx, total, progress)
    deleter.delete(d.data_files, "data files")
    deleter.delete(d.changelog_files, "changelog files")
    deleter.delete(d.index_files, "index files")
    deleter.delete(d.manifests, "manifests")
    deleter.delete(d.index_manifests, "index manifests")
    deleter.delete(d.manifest_lists, "manifest lists")
    # ascending, so the table never has a gap; under the catalog lock if the table has one, so
    # that a committer's check of its base snapshot and its create of the next are atomic
    # with respect to these deletions (see FileStoreCommit._base_exists)
    with ctx.lock.hold(ctx.name) if ctx.lock is not None else contextlib.nullcontext():
        for n, sid in enumerate(d.snapshots, 1):
            io.delete(sm.path(sid))
            ctx.snapshot_manager.forget(sid)
            if n % HINT_EVERY == 0:   # readers that trust EARLIEST (pypaimon) look only ~300 ahead
                sm.write_hint(sm.EARLIEST, sid + 1)
            deleter.tick(n - 1, len(d.snapshots), max(1, len(d.snapshots) // 20), "snapshots")
    sm.write_hint(sm.EARLIEST, plan.end)
    _forget_intents(io, sdir, [e for e in intents if e <= plan.end] + [plan.end])


def _forget_intents(io, sdir: str, ends: Iterable[int]) -> None:
    for e in set(ends):
        io.delete(join(sdir, f"{INTENT_PREFIX}{e}"))


def expire_after_commit(ctx: TableContext, latest: Optional[int] = None) -> Optional[ExpireResult]:
    """Committers call this after each successful commit (``latest``: the snapshot it made), as
    Paimon's writers do, unless the table is ``write-only`` (a dedicated job expires). It never
    lists ``snapshot/`` (``from_hints``). A failure is logged, never raised: the commit has
    happened and must be reported as such."""
    try:
        if ctx.typed_options.get(O.WRITE_ONLY):
            return None
        return expire_snapshots(ctx, from_hints=True, latest=latest)
    except Exception as e:   # the commit succeeded; expiration retries next commit
        log.warning("expiring old snapshots of %s after a commit failed (the commit itself succeeded; "
                    "the next commit tries again): %s", ctx.name, e, exc_info=log.isEnabledFor(logging.DEBUG))
        return None

