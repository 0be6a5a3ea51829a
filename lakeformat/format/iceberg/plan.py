"""The decisions behind each published Iceberg snapshot, over metadata only.

- Which files Iceberg sees: every file of an append table; of a primary-key table only the
  files at the highest level of the LSM tree, which full compaction writes (Iceberg readers
  cannot merge sorted runs), exactly as Paimon exports them without deletion vectors; with
  deletion vectors every file above level 0, its vector published as position deletes.
- What a Paimon snapshot changes in that view: its delta's added and removed files, a file a
  compaction only moved up a level counting once.
- Which manifests a removal touches (their partition summaries may hold the partition), when
  small manifests are merged (``metadata.iceberg.compaction.min.file-num`` / ``max.file-num``,
  Paimon's rule), and which Iceberg snapshots expire: those whose Paimon snapshot expired.
"""
from __future__ import annotations

import bisect
import operator
from typing import Optional
from collections.abc import Callable, Sequence

from lakeformat.format.iceberg.manifest import ADDED, DELETED, EXISTING
from lakeformat.format.iceberg.values import from_bytes
from lakeformat.format.manifest import ADD, DataFileMeta, ManifestEntry
from lakeformat.format.types import AtomicType


def exported(primary_key: bool, max_level: int, deletion_vectors: bool = False) -> Callable[[DataFileMeta], bool]:
    """Whether a data file is part of the Iceberg view: of a primary-key table the files at the
    highest level, or with deletion vectors every file above level 0 (what Paimon's own readers
    read then; the vectors become position deletes)."""
    if not primary_key:
        return lambda f: True
    if deletion_vectors:
        return lambda f: f.level > 0
    return lambda f: f.level == max_level


def file_changes(delta: Sequence[ManifestEntry],
                 visible: Callable[[DataFileMeta], bool]) -> tuple[dict, dict]:
    """(added, removed) entries of the Iceberg view, keyed by (partition, bucket, file name)."""
    added: dict[tuple, ManifestEntry] = {}
    removed: dict[tuple, ManifestEntry] = {}
    for e in delta:
        if not visible(e.file):
            continue
        key = (e.partition, e.bucket, e.file.file_name)
        if e.kind == ADD:
            if removed.pop(key, None) is None:
                added[key] = e
        elif added.pop(key, None) is None:
            removed[key] = e
    return added, removed


def may_hold(summaries: Optional[Sequence[dict]], values: Sequence, types: Sequence[AtomicType]) -> bool:
    """Whether a manifest with these partition ``summaries`` may hold a file of the partition
    whose physical (Avro) values are ``values``. Missing summaries may hold anything."""
    if not summaries:
        return True
    for s, v, t in zip(summaries, values, types):
        if v is None:
            if not s.get("contains_null"):
                return False
            continue
        lo, hi = s.get("lower_bound"), s.get("upper_bound")
        if lo is None or hi is None:
            if not s.get("contains_nan"):
                return False
            continue
        if v == v and not from_bytes(lo, t) <= v <= from_bytes(hi, t):
            return False
    return True


def live_after_removal(entries: Sequence[dict], removed_paths: set, snapshot_id: int) -> tuple[list[dict], bool]:
    """A manifest's entries rewritten for ``snapshot_id``: files in ``removed_paths`` become
    DELETED (by this snapshot), other live ones EXISTING, earlier DELETED ones are dropped.
    Returns (entries, whether anything was removed)."""
    out, hit = [], False
    for e in entries:
        if e["status"] == DELETED:
            continue
        if e["data_file"]["file_path"] in removed_paths:
            out.append({**e, "status": DELETED, "snapshot_id": snapshot_id})
            hit = True
        else:
            out.append({**e, "status": EXISTING})
    return out, hit


def merged_entries(entries: Sequence[dict], snapshot_id: int) -> list[dict]:
    """Entries of small manifests merged into one by ``snapshot_id``: what older snapshots added
    becomes EXISTING, what they deleted goes; this snapshot's own changes stay as they are."""
    out = []
    for e in entries:
        if e["snapshot_id"] == snapshot_id and e["status"] != EXISTING:
            out.append(e)
        elif e["status"] == ADDED or e["status"] == EXISTING:
            out.append({**e, "status": EXISTING})
    return out


def compaction_candidates(lengths: Sequence[int], target_size: int, min_files: int,
                          max_files: int) -> list[int]:
    """Indexes of the manifests to merge (Paimon's rule for Iceberg metadata): the small ones
    (< 2/3 of the target size), once there are ``min_files`` of them and either ``max_files``
    or a target size's worth."""
    small = [i for i, n in enumerate(lengths) if n < target_size * 2 // 3]
    if len(small) < min_files:
        return []
    if len(small) < max_files and sum(lengths[i] for i in small) < target_size:
        return []
    return small


def expired_count(snapshots: Sequence, earliest: int) -> int:
    """How many of the oldest Iceberg snapshots (ascending by ``snapshot_id``) expire: those
    whose Paimon snapshot expired (older than ``earliest``); the current one always stays."""
    return min(bisect.bisect_left(snapshots, earliest, key=_SNAPSHOT_ID), max(len(snapshots) - 1, 0))


_SNAPSHOT_ID = operator.attrgetter("snapshot_id")


def operation(removed: bool, added: bool, compact: bool) -> str:
    """Iceberg's snapshot operation for a change."""
    if not removed:
        return "append"
    if compact:
        return "replace"
    return "overwrite" if added else "delete"
