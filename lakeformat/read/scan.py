"""Scan planning: snapshot → manifest lists → manifests → live files → splits.

Pruning happens at three depths, cheapest first: whole manifests by their partition statistics,
entries by their exact partition values, files by their value statistics. All decisions are
pure functions of metadata; reading manifests is the only IO, done in parallel threads.
"""
from __future__ import annotations

import dataclasses
import gc
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional
from collections.abc import Sequence

import pyarrow as pa

from lakeformat.errors import UnsupportedError
from lakeformat.format import options as O
from lakeformat.format import predicate as P
from lakeformat.format.binary_row import deserialize_row
from lakeformat.format.index_manifest import DELETION_VECTORS, IndexFileMeta, IndexManifestEntry
from lakeformat.format.manifest import (
    ADD,
    DataFileMeta,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
    merge_entries,
)
from lakeformat.format.metadata_checks import check_write_cols
from lakeformat.format.partition import PartitionFilter
from lakeformat.format.row_tracking import SYSTEM_COLUMNS, SYSTEM_TYPES, system_stats
from lakeformat.format.snapshot import Snapshot
from lakeformat.format.types import DataField
from lakeformat.io.index_files import IndexFiles
from lakeformat.io.manifests import ManifestFile, ManifestList
from lakeformat.io.table_context import TableContext


_gc_lock = threading.Lock()
_gc_state = {"depth": 0, "was_enabled": False}


@contextmanager
def gc_paused():
    """Python's cyclic garbage collector off while a plan decodes manifests. Planning allocates
    millions of small, long-lived, acyclic objects (entries and their statistics); every 700 of
    them start a collection, and the full ones walk all that survived, so planning grew faster
    than the files it planned (a third of the time at 50k files). Nothing made here is cyclic,
    so nothing is lost. Nested and concurrent plans re-enable it only when the last ends."""
    with _gc_lock:
        if _gc_state["depth"] == 0:
            _gc_state["was_enabled"] = gc.isenabled()
            gc.disable()
        _gc_state["depth"] += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_state["depth"] -= 1
            if _gc_state["depth"] == 0 and _gc_state["was_enabled"]:
                gc.enable()


@dataclass(frozen=True)
class Split:
    """Files of one (partition, bucket) to read together."""

    snapshot_id: int
    partition: tuple
    partition_bytes: bytes
    bucket: int
    files: tuple[DataFileMeta, ...]
    deletion_files: tuple[IndexFileMeta, ...] = ()   # deletion-vector index files of the bucket

    @property
    def row_count(self) -> int:
        return sum(f.row_count for f in self.files)


def manifest_may_match(meta: ManifestFileMeta, part_pred, part_fields: Sequence[DataField]) -> bool:
    if part_pred is None or not part_fields:
        return True
    stats = decode_stats(meta.partition_stats, [f.type for f in part_fields])
    names = [f.name for f in part_fields]
    count = meta.num_added_files + meta.num_deleted_files
    return P.may_match(part_pred, _lookup(names, stats, count))


def decode_stats(stats: SimpleStats, types) -> Optional[tuple[list, list, Optional[tuple]]]:
    try:
        return deserialize_row(stats.min_values, types), deserialize_row(stats.max_values, types), stats.null_counts
    except Exception:
        return None   # statistics we cannot decode are treated as unknown


def _lookup(names: Sequence[str], stats, count: int):
    if stats is None:
        return lambda _name: None
    mins, maxs, nulls = stats
    index = {n: i for i, n in enumerate(names)}

    def stats_of(name: str):
        i = index.get(name)
        if i is None or i >= len(mins):
            return None
        n = nulls[i] if nulls and i < len(nulls) else None
        return mins[i], maxs[i], n, count
    return stats_of


class FileScan:
    """Plans which files of a snapshot a read needs."""

    def __init__(self, ctx: TableContext, filter: Optional[P.Predicate] = None, threads: int = 8):
        self.ctx = ctx
        self.filter = filter
        self.schema = ctx.schema
        arrow = self.schema.arrow_schema()
        if ctx.typed_options.get(O.ROW_TRACKING):   # the system columns may be filtered on
            arrow = pa.schema(list(arrow) + [pa.field(c, SYSTEM_TYPES[c]) for c in SYSTEM_COLUMNS])
        P.check(filter, arrow)   # a wrong column or type fails here, not in pruning
        self.part_fields = self.schema.partition_fields
        part_names = {f.name for f in self.part_fields}
        self.part_pred = P.only_on(filter, part_names)
        # a filter on partition keys alone is decided exactly by partitions: no file statistics.
        # In a primary-key table a file may hold a newer version that shadows a matching older
        # one, so only key columns may prune files there.
        self.value_filter = None if filter is None or P.columns(filter) <= part_names else filter
        if self.schema.primary_keys and self.value_filter is not None:
            self.value_filter = P.only_on(filter, set(self.schema.primary_keys))
        # a data-evolution file's statistics cover its own columns of rows that other files complete
        self.evolution = bool(ctx.typed_options.get(O.DATA_EVOLUTION))
        if self.evolution:
            self.value_filter = None
        self.partitions = PartitionFilter(self.part_pred, self.part_fields) if self.part_pred else None
        self.threads = threads
        self._part_types = [f.type for f in self.part_fields]
        self._decode_partition = lru_cache(maxsize=None)(
            lambda b: tuple(deserialize_row(b, self._part_types)))

    def _mlist(self) -> ManifestList:
        return ManifestList(self.ctx.io, self.ctx.path)

    def _mfile(self) -> ManifestFile:
        return ManifestFile(self.ctx.io, self.ctx.path, self._part_types, self.schema.id)

    def read_manifests(self, metas: Sequence[ManifestFileMeta]) -> list[ManifestEntry]:
        """Entries of the manifests that may hold matching partitions, in manifest order."""
        metas = [m for m in metas if manifest_may_match(m, self.part_pred, self.part_fields)]
        mfile = self._mfile()
        chunks: list[list[ManifestEntry]]
        if self.partitions is None:
            chunks = []
            for _, entries in mfile.read_all([m.file_name for m in metas], self.threads):
                if isinstance(entries, Exception):
                    raise entries
                chunks.append(entries)
        elif len(metas) <= 1:
            chunks = [mfile.read(m.file_name, self.partitions) for m in metas]
        else:
            with ThreadPoolExecutor(min(self.threads, len(metas))) as pool:
                chunks = list(pool.map(lambda m: mfile.read(m.file_name, self.partitions), metas))
        return [e for chunk in chunks for e in chunk]

    def live_entries(self, snapshot: Snapshot) -> list[ManifestEntry]:
        mlist = self._mlist()
        metas = mlist.read(snapshot.base_manifest_list) + mlist.read(snapshot.delta_manifest_list)
        live = list(merge_entries(self.read_manifests(metas)).values())
        self._check_partial(live, snapshot)
        return live

    def delta_entries(self, snapshot: Snapshot) -> list[ManifestEntry]:
        entries = self.read_manifests(self._mlist().read(snapshot.delta_manifest_list))
        self._check_partial([e for e in entries if e.kind == ADD], snapshot)
        return entries

    def _check_partial(self, entries: Sequence[ManifestEntry], snapshot: Snapshot) -> None:
        """Files of ``entries`` whose ``_WRITE_COLS`` is set (rare) must hold every column of their
        schema (``metadata_checks.check_write_cols``)."""
        partial = [e.file for e in entries if e.file.write_cols is not None]
        if partial:
            check_write_cols(partial, lambda sid: self.ctx.schema_manager.get(sid).names,
                             f"table {self.ctx.path}, snapshot {snapshot.id}", partial_ok=self.evolution)

    def keep(self, e: ManifestEntry) -> bool:
        """Partition pruning on exact values, then file pruning on value statistics."""
        if self.partitions is not None and not self.partitions.matches(e.partition):
            return False
        if self.value_filter is None:
            return True
        return P.may_match(self.value_filter, self._file_stats(e.file))

    def _file_stats(self, f: DataFileMeta):
        file_schema = self.ctx.schema_manager.get(f.schema_id)
        if f.value_stats_cols is None:
            stat_fields = list(file_schema.fields)
        else:
            by_name = {x.name: x for x in file_schema.fields}
            stat_fields = [by_name[n] for n in f.value_stats_cols if n in by_name]
        stats = decode_stats(f.value_stats, [x.type for x in stat_fields])
        # statistics are per field id: map current names to the names the file was written with
        current_to_file = {}
        file_ids = {x.id: x.name for x in stat_fields}
        for cf in self.schema.fields:
            if cf.id in file_ids:
                current_to_file[cf.name] = file_ids[cf.id]
        inner = _lookup([x.name for x in stat_fields], stats, f.row_count)

        def stats_of(name: str):
            if name in SYSTEM_COLUMNS:
                return system_stats(f, name)
            fname = current_to_file.get(name)
            if fname is None:
                return None
            s = inner(fname)
            cur = self.schema.field(name).type
            old = next(x.type for x in stat_fields if x.name == fname)
            return s if (s is None or cur == old) else None   # widened types: stats not comparable
        return stats_of

    def splits(self, snapshot: Snapshot, entries: Sequence[ManifestEntry]) -> list[Split]:
        groups: dict[tuple[bytes, int], list[DataFileMeta]] = {}
        for e in entries:
            if e.kind == ADD and self.keep(e):
                groups.setdefault((e.partition, e.bucket), []).append(e.file)
        if not self.schema.primary_keys:   # an append bucket reads in write order (as Paimon sorts)
            groups = {k: sorted(files, key=lambda f: f.min_sequence_number) for k, files in groups.items()}
        return [Split(snapshot.id, self._decode_partition(p), p, b, tuple(files))
                for (p, b), files in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][0]))]

    def skips_level0(self) -> bool:
        """Paimon's batch scan of a primary-key table reads no level-0 files when deletion vectors
        or the first-row engine are on: there, compaction into level >= 1 is what makes rows
        visible (it marks the older versions deleted, or drops the newer first rows)."""
        o = self.ctx.typed_options
        return bool(self.schema.primary_keys) and (
            o.get(O.DELETION_VECTORS) or o.get(O.MERGE_ENGINE) == "first-row")

    def index_entries(self, snapshot: Snapshot) -> list[IndexManifestEntry]:
        """The live index files of ``snapshot`` (of matching partitions)."""
        entries = IndexFiles.of(self.ctx).read_manifest(snapshot.index_manifest)
        if self.partitions is not None:
            entries = [e for e in entries if self.partitions.matches(e.partition)]
        return entries

    def plan(self, snapshot: Snapshot) -> list[Split]:
        with gc_paused():
            entries = self.live_entries(snapshot)
            if self.skips_level0():
                entries = [e for e in entries if e.file.level > 0]
            splits = self.splits(snapshot, entries)
        if not snapshot.index_manifest:
            return splits
        dvs: dict[tuple[bytes, int], list[IndexFileMeta]] = {}
        for e in self.index_entries(snapshot):
            if e.file.index_type == DELETION_VECTORS:
                dvs.setdefault((e.partition, e.bucket), []).append(e.file)
        return [dataclasses.replace(s, deletion_files=tuple(dvs[(s.partition_bytes, s.bucket)]))
                if (s.partition_bytes, s.bucket) in dvs else s for s in splits]

    def changelog_entries(self, snapshots: Sequence[Snapshot]) -> list[ManifestEntry]:
        """Changelog files the given snapshots produced, in commit order."""
        mlist, out = self._mlist(), []
        for s in snapshots:
            if s.changelog_manifest_list:
                entries = self.read_manifests(mlist.read(s.changelog_manifest_list))
                self._check_partial([e for e in entries if e.kind == ADD], s)
                out += [e for e in entries if self.keep(e)]
        return out

    def plan_incremental(self, snapshots: Sequence[Snapshot]) -> list[Split]:
        """Files added by the given snapshots' deltas (APPEND commits only: compaction and
        overwrite rewrite rows that are not new)."""
        entries = []
        for s in snapshots:
            if s.commit_kind == "APPEND":
                added = [e for e in self.delta_entries(s) if e.kind == ADD]
                if self.evolution and any(e.file.write_cols is not None for e in added):
                    raise UnsupportedError(f"table {self.ctx.name}: snapshot {s.id} wrote some columns of rows "
                                           "(data evolution); lakeformat does not implement incremental reads of it")
                entries += added
        return self.splits(snapshots[-1], entries) if snapshots else []
