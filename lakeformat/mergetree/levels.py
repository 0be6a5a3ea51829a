"""The files of one bucket of a primary-key table, arranged as Paimon's LSM levels.

Level 0 holds one sorted run per file: flushes of the write buffer, whose key ranges may overlap.
Every level >= 1 is a single sorted run: files ordered by key with disjoint key ranges. Readers
merge runs and compaction merges the newest runs into an older level, so the order of runs is
newest first: level-0 files by descending sequence number, then levels 1, 2, ... in turn.

Keys stay serialized BinaryRow bytes in ``DataFileMeta``; ``key_of`` decodes them to comparable
tuples (``FileStoreTable.key_decoder()``). Everything here is pure: no IO, values never mutate.
"""
from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable, Iterable, Sequence

from lakeformat.format.manifest import DataFileMeta

KeyOf = Callable[[bytes], tuple]


@dataclass(frozen=True)
class SortedRun:
    """Files whose key ranges do not overlap, ordered by key: a reader concatenates them."""

    files: tuple[DataFileMeta, ...]

    @property
    def total_size(self) -> int:
        return sum(f.file_size for f in self.files)


@dataclass(frozen=True)
class LevelSortedRun:
    level: int
    run: SortedRun


def _newest_first(f: DataFileMeta) -> tuple:
    # Two writers of one bucket can produce the same max sequence number; the name keeps both.
    return -f.max_sequence_number, f.file_name


def _sorted_run(files: Iterable[DataFileMeta], key_of: KeyOf, level: int) -> SortedRun:
    """The files of one level >= 1 ordered by min key; overlapping files there are a bug
    upstream (a compaction that wrote overlapping output), so they raise instead of being read
    as if they were disjoint."""
    ordered = sorted(files, key=lambda f: key_of(f.min_key))
    for prev, cur in itertools.pairwise(ordered):
        if not key_of(cur.min_key) > key_of(prev.max_key):
            raise ValueError(f"level {level} is not a sorted run: {prev.file_name} and "
                             f"{cur.file_name} have overlapping key ranges")
    return SortedRun(tuple(ordered))


class Levels:
    """A bucket's files by level. Never changes after construction; ``update`` returns a new
    Levels, so a picked compaction and the state it was picked from cannot drift apart.

    A file above ``num_levels - 1`` (written while ``num-levels`` was larger) widens the tree,
    as in Paimon, rather than being lost.
    """

    def __init__(self, files: Iterable[DataFileMeta], num_levels: int, key_of: KeyOf):
        files = list(files)
        n = max(num_levels, max((f.level for f in files), default=-1) + 1)
        if n < 2:
            raise ValueError(f"an LSM tree needs at least 2 levels, got {n}")
        by_level: dict[int, list[DataFileMeta]] = {}
        for f in files:
            by_level.setdefault(f.level, []).append(f)
        self.key_of = key_of
        self.level0: tuple[DataFileMeta, ...] = tuple(sorted(by_level.get(0, ()), key=_newest_first))
        self._upper = tuple(_sorted_run(by_level.get(i, ()), key_of, i) for i in range(1, n))

    def __repr__(self) -> str:
        return f"Levels({[(r.level, [f.file_name for f in r.run.files]) for r in self.runs()]})"

    @property
    def num_levels(self) -> int:
        return len(self._upper) + 1

    @property
    def max_level(self) -> int:
        return len(self._upper)

    def run_of_level(self, level: int) -> SortedRun:
        if level < 1:
            raise ValueError("level 0 is not one sorted run")
        return self._upper[level - 1]

    def runs(self) -> list[LevelSortedRun]:
        """Sorted runs newest first: each level-0 file, then each non-empty level."""
        return ([LevelSortedRun(0, SortedRun((f,))) for f in self.level0]
                + [LevelSortedRun(i, r) for i, r in enumerate(self._upper, 1) if r.files])

    def number_of_sorted_runs(self) -> int:
        return len(self.level0) + sum(1 for r in self._upper if r.files)

    def non_empty_highest_level(self) -> int:
        """The highest level holding a file, -1 when the bucket is empty."""
        for i in range(len(self._upper), 0, -1):
            if self._upper[i - 1].files:
                return i
        return 0 if self.level0 else -1

    def all_files(self) -> list[DataFileMeta]:
        return [f for r in self.runs() for f in r.run.files]

    def update(self, before: Sequence[DataFileMeta], after: Sequence[DataFileMeta]) -> Levels:
        """Levels after a compaction replaced ``before`` with ``after``. Files are matched by
        (level, name), a file's identity in a bucket, so an upgrade (same name, new level)
        removes the old placement and adds the new one; adding a file already present (a
        restored file seen again) keeps one copy, as Paimon's sets do."""
        gone = {(f.level, f.file_name) for f in before}
        files = {(f.level, f.file_name): f for f in self.all_files() if (f.level, f.file_name) not in gone}
        files.update(((f.level, f.file_name), f) for f in after)
        return Levels(files.values(), self.num_levels, self.key_of)


def interval_partition(files: Iterable[DataFileMeta], key_of: KeyOf) -> list[list[SortedRun]]:
    """Paimon's IntervalPartition: split files into sections whose key ranges are disjoint
    (each section can be read or compacted on its own) and pack each section into the fewest
    sorted runs (fewer runs means a narrower merge). Ranges are closed: [1,5] and [5,9] overlap.

    Sections come in key order; runs within a section in the order they were started.
    """
    keyed = sorted(((key_of(f.min_key), key_of(f.max_key), f) for f in files), key=lambda t: t[:2])
    sections: list[list[SortedRun]] = []
    section: list[tuple] = []
    bound: Any = None   # the largest key of the section so far (None while it is empty)
    for lo, hi, f in keyed:
        if section and lo > bound:
            sections.append(_pack(section))
            section, bound = [], None
        section.append((lo, hi, f))
        bound = hi if bound is None or hi > bound else bound
    if section:
        sections.append(_pack(section))
    return sections


def _pack(section: list[tuple]) -> list[SortedRun]:
    """Greedy interval colouring: put each file (in min-key order) after the run that ends
    earliest if it starts after that run's end, else start a new run. This is optimal because
    a new run is only opened when every run still overlaps the file."""
    runs: list[list[DataFileMeta]] = []
    heap: list[tuple] = []   # (last max key, run index)
    for lo, hi, f in section:
        if heap and lo > heap[0][0]:
            _, i = heapq.heappop(heap)
        else:
            i = len(runs)
            runs.append([])
        runs[i].append(f)
        heapq.heappush(heap, (hi, i))
    return [SortedRun(tuple(r)) for r in runs]
