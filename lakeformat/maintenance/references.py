"""Which files a snapshot (or a tag, or a removed snapshot) refers to.

Deleting metadata safely is set arithmetic: the files the removed things refer to, minus the
files everything kept refers to. ``FileRefs`` is that set, split by kind so deletions can go in
a safe order (data files first, manifests next, manifest lists last: a half-finished deletion
then leaves unreferenced files, never a manifest pointing at a missing file).
"""
from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Iterable

from lakeformat.format.manifest import ADD, ManifestEntry, merge_entries
from lakeformat.format.snapshot import Snapshot
from lakeformat.io.data_file import file_path
from lakeformat.io.fileio import join
from lakeformat.io.index_files import IndexFiles
from lakeformat.io.manifests import ManifestList
from lakeformat.io.table_context import TableContext
from lakeformat.read.scan import FileScan


@dataclass(frozen=True)
class FileRefs:
    manifest_lists: frozenset = frozenset()   # names under manifest/
    manifests: frozenset = frozenset()        # names under manifest/
    data_files: frozenset = frozenset()       # full paths: data, changelog and extra files
    index_manifests: frozenset = frozenset()  # names under manifest/
    index_files: frozenset = frozenset()      # full paths: deletion vectors, hash and global indexes

    def __or__(self, other: FileRefs) -> FileRefs:
        return FileRefs(self.manifest_lists | other.manifest_lists, self.manifests | other.manifests,
                        self.data_files | other.data_files, self.index_manifests | other.index_manifests,
                        self.index_files | other.index_files)

    def __sub__(self, other: FileRefs) -> FileRefs:
        return FileRefs(self.manifest_lists - other.manifest_lists, self.manifests - other.manifests,
                        self.data_files - other.data_files, self.index_manifests - other.index_manifests,
                        self.index_files - other.index_files)

    def __len__(self) -> int:
        return (len(self.manifest_lists) + len(self.manifests) + len(self.data_files) + len(self.index_manifests)
                + len(self.index_files))

    def paths(self, table_path: str) -> list[str]:
        """Every file as a path, in safe deletion order (data and index files, manifests, index
        manifests, manifest lists): a half-finished deletion leaves unreferenced files only."""
        manifest_dir = join(table_path, "manifest")
        return (sorted(self.data_files) + sorted(self.index_files)
                + [join(manifest_dir, n) for n in sorted(self.manifests)]
                + [join(manifest_dir, n) for n in sorted(self.index_manifests)]
                + [join(manifest_dir, n) for n in sorted(self.manifest_lists)])


def union(refs: Iterable[FileRefs]) -> FileRefs:
    out = FileRefs()
    for r in refs:
        out = out | r
    return out


def entry_paths(ctx: TableContext, entries: Iterable[ManifestEntry]) -> set[str]:
    """Paths of the files entries describe, with their extra files (indexes beside them)."""
    out: set[str] = set()
    dirs: dict[tuple, str] = {}
    for e in entries:
        key = (e.partition, e.bucket)
        if key not in dirs:
            dirs[key] = ctx.bucket_dir_of(e.partition, e.bucket)
        d = dirs[key]
        out.add(file_path(ctx, d, e.file))
        out.update(join(d, x) for x in e.file.extra_files)
    return out


def _lists(snapshot: Snapshot) -> frozenset:
    return frozenset(snapshot.manifest_lists())


def _index(snapshot: Snapshot) -> frozenset:
    return frozenset([snapshot.index_manifest]) if snapshot.index_manifest else frozenset()


def index_file_names(ctx: TableContext, snapshot: Snapshot) -> frozenset:
    """Paths of the index files (deletion vectors, hash and global indexes) live in ``snapshot``."""
    index = IndexFiles.of(ctx)
    return frozenset(index.path(e.file) for e in index.read_manifest(snapshot.index_manifest))


def snapshot_refs(ctx: TableContext, snapshot: Snapshot) -> FileRefs:
    """Everything a reader of ``snapshot`` may open: its manifest lists, their manifests, its
    live data files and its changelog files."""
    scan = FileScan(ctx)
    mlist = ManifestList(ctx.io, ctx.path)
    data_metas = mlist.read(snapshot.base_manifest_list) + mlist.read(snapshot.delta_manifest_list)
    changelog_metas = mlist.read(snapshot.changelog_manifest_list) if snapshot.changelog_manifest_list else []
    live = merge_entries(scan.read_manifests(data_metas)).values()
    changelog = scan.read_manifests(changelog_metas)
    return FileRefs(_lists(snapshot), frozenset(m.file_name for m in data_metas + changelog_metas),
                    frozenset(entry_paths(ctx, live) | entry_paths(ctx, changelog)), _index(snapshot),
                    index_file_names(ctx, snapshot))


def added_refs(ctx: TableContext, snapshot: Snapshot) -> FileRefs:
    """What ``snapshot`` may have brought: its manifest lists, the manifests they name, the
    files its delta added and its changelog files. A superset of what it created: callers
    subtract what the kept snapshots refer to."""
    scan = FileScan(ctx)
    mlist = ManifestList(ctx.io, ctx.path)
    base = mlist.read(snapshot.base_manifest_list)
    delta = mlist.read(snapshot.delta_manifest_list)
    changelog = mlist.read(snapshot.changelog_manifest_list) if snapshot.changelog_manifest_list else []
    added = [e for e in scan.read_manifests(delta) if e.kind == ADD]
    files = entry_paths(ctx, added) | entry_paths(ctx, scan.read_manifests(changelog))
    return FileRefs(_lists(snapshot), frozenset(m.file_name for m in base + delta + changelog),
                    frozenset(files), _index(snapshot), index_file_names(ctx, snapshot))


def changelog_refs(ctx: TableContext, snapshot: Snapshot) -> FileRefs:
    """Only the changelog of ``snapshot``: its changelog manifest list, manifests and files
    (what a long-lived ``changelog/changelog-N`` still needs once snapshot N is gone)."""
    if not snapshot.changelog_manifest_list:
        return FileRefs()
    metas = ManifestList(ctx.io, ctx.path).read(snapshot.changelog_manifest_list)
    files = entry_paths(ctx, FileScan(ctx).read_manifests(metas))
    return FileRefs(frozenset([snapshot.changelog_manifest_list]), frozenset(m.file_name for m in metas),
                    frozenset(files))


def list_refs(ctx: TableContext, snapshot: Snapshot) -> FileRefs:
    """Only the manifest lists, the index manifest and its index files (no data manifest reads)."""
    return FileRefs(_lists(snapshot), index_manifests=_index(snapshot), index_files=index_file_names(ctx, snapshot))
