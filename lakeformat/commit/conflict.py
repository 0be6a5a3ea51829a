"""Conflict detection between a commit and what was committed since its writer started.

Pure functions over manifest entries. Appends never conflict. A commit conflicts when it
deletes a file that is no longer live (compacted or overwritten meanwhile), or, in a
primary-key table, adds a file at level >= 1 whose key range overlaps a live file of the same
level (two compactions of the same bucket raced).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional
from collections.abc import Callable, Iterable, Mapping, Sequence

from lakeformat.format.manifest import ADD, DELETE, ManifestEntry


@dataclass(frozen=True)
class Conflict:
    reason: str
    partition: bytes
    bucket: int
    files: tuple[str, ...]


def needs_check(entries: Iterable[ManifestEntry]) -> bool:
    """Only deletes and leveled adds can conflict; a pure append needs no check (and no IO)."""
    return any(e.kind == DELETE or e.file.level > 0 for e in entries)


def missing_deletes(entries: Sequence[ManifestEntry], live: Mapping[tuple, ManifestEntry]) -> list[Conflict]:
    """DELETE entries whose file is no longer live."""
    gone: dict[tuple[bytes, int], list[str]] = {}
    for e in entries:
        if e.kind == DELETE and e.identifier not in live:
            gone.setdefault((e.partition, e.bucket), []).append(e.file.file_name)
    return [Conflict("deletes a file that is no longer live (compacted or overwritten by another commit)",
                     p, b, tuple(files)) for (p, b), files in gone.items()]


def level_overlaps(entries: Sequence[ManifestEntry], live: Mapping[tuple, ManifestEntry],
                   decode_key: Callable[[bytes], tuple]) -> list[Conflict]:
    """New files at level >= 1 overlapping live files of the same (partition, bucket, level),
    not counting files this commit deletes."""
    deleted = {e.identifier for e in entries if e.kind == DELETE}
    by_level: dict[tuple, list[ManifestEntry]] = {}
    for e in live.values():
        if e.file.level > 0 and e.identifier not in deleted:
            by_level.setdefault((e.partition, e.bucket, e.file.level), []).append(e)
    out = []
    for e in entries:
        if e.kind != ADD or e.file.level == 0:
            continue
        lo, hi = decode_key(e.file.min_key), decode_key(e.file.max_key)
        hits = [x.file.file_name for x in by_level.get((e.partition, e.bucket, e.file.level), [])
                if not (decode_key(x.file.max_key) < lo or hi < decode_key(x.file.min_key))]
        if hits:
            out.append(Conflict(f"adds {e.file.file_name} at level {e.file.level} overlapping the key "
                                "range of live files of that level (a concurrent compaction)",
                                e.partition, e.bucket, tuple(hits)))
    return out


def find_conflicts(entries: Sequence[ManifestEntry], live: Mapping[tuple, ManifestEntry],
                   decode_key: Optional[Callable[[bytes], tuple]] = None) -> list[Conflict]:
    out = missing_deletes(entries, live)
    if decode_key is not None:
        out += level_overlaps(entries, live, decode_key)
    return out
