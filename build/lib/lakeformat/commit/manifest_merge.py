"""Keeping the manifest list short, so commit and planning cost do not grow with history.

Each commit adds at least one small delta manifest. Without merging, the base manifest list of
snapshot N names N manifests. Paimon's rules, followed here:
- minor: consecutive small manifests (< ``manifest.target-file-size``) are merged into one once
  they add up to the target size, or once there are ``manifest.merge-min-count`` of them;
- full: when manifests holding DELETE entries add up to
  ``manifest.full-compaction-threshold-size``, every manifest is rewritten with only live files.
An ADD and a DELETE of the same file inside one merge cancel; a DELETE whose ADD lies outside
the merged group is kept. Unchanged manifests are reused by name.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from lakeformat.format.manifest import ADD, ManifestEntry, ManifestFileMeta
from lakeformat.io.manifests import ManifestFile


@dataclass(frozen=True)
class MergePlan:
    """Contiguous segments of the manifest list, in order: a segment of one manifest is kept as
    it is, a longer segment is rewritten into new manifest(s). ``full`` drops DELETE entries."""

    full: bool
    segments: tuple[tuple[ManifestFileMeta, ...], ...]

    @property
    def changes_nothing(self) -> bool:
        return all(len(s) == 1 for s in self.segments)


def plan_merge(metas: Sequence[ManifestFileMeta], target_size: int, min_count: int,
               full_threshold: int) -> MergePlan:
    """Pure decision over manifest metadata. Segments are contiguous so the ADD-before-DELETE
    order of the history survives the merge."""
    delete_bytes = sum(m.file_size for m in metas if m.num_deleted_files > 0)
    if delete_bytes >= full_threshold and len(metas) > 1:
        return MergePlan(True, (tuple(metas),))
    segments: list[tuple[ManifestFileMeta, ...]] = []
    candidates: list[ManifestFileMeta] = []
    size = 0
    for m in metas:
        candidates.append(m)
        size += m.file_size
        if size >= target_size:
            segments.append(tuple(candidates))
            candidates, size = [], 0
    if len(candidates) >= min_count:
        segments.append(tuple(candidates))
    else:
        segments += [(m,) for m in candidates]
    return MergePlan(False, tuple(segments))


def fold(entries: Sequence[ManifestEntry], keep_unmatched_deletes: bool) -> list[ManifestEntry]:
    """Cancel ADD/DELETE pairs of the same file, preserving the order of what remains."""
    added: dict[tuple, int] = {}
    out: list = []
    for e in entries:
        key = e.identifier
        if e.kind == ADD:
            added[key] = len(out)
            out.append(e)
        elif key in added:
            out[added.pop(key)] = None
        elif keep_unmatched_deletes:
            out.append(e)
    return [e for e in out if e is not None]


def merge_manifests(mfile: ManifestFile, metas: Sequence[ManifestFileMeta], target_size: int,
                    min_count: int, full_threshold: int) -> tuple[list[ManifestFileMeta], list[str]]:
    """Execute ``plan_merge``: returns the new manifest list and the names of manifests written
    (so a failed commit attempt can delete them)."""
    plan = plan_merge(metas, target_size, min_count, full_threshold)
    if plan.changes_nothing:
        return list(metas), []
    out: list[ManifestFileMeta] = []
    written: list[str] = []
    for segment in plan.segments:
        if len(segment) == 1 and not plan.full:
            out.append(segment[0])
            continue
        entries = [e for m in segment for e in mfile.read(m.file_name)]
        new = mfile.write(fold(entries, keep_unmatched_deletes=not plan.full))
        written += [m.file_name for m in new]
        out += new
    return out, written
