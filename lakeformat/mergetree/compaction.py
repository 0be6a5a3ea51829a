"""What to compact and how: Paimon's universal compaction picker and compact-task planning.

Pure decisions only. The writer reads files, merges rows and writes outputs; this module says
which sorted runs to merge (``pick_universal``, ``pick_full``), which files merely change level
and which must be rewritten (``plan_rewrite``), whether deletes may be dropped, and when the
writer must stop taking input until compaction catches up. Picking follows RocksDB's universal
compaction as Paimon adapted it, so a bucket written here is compacted the way Paimon would.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union
from collections.abc import Sequence

from lakeformat.format.manifest import DataFileMeta
from lakeformat.format.options import (
    COMPACTION_TRIGGER,
    FULL_COMPACTION_DELTA_COMMITS,
    MAX_SIZE_AMPLIFICATION,
    SIZE_RATIO,
    Options,
)
from lakeformat.mergetree.levels import (
    KeyOf,
    Levels,
    LevelSortedRun,
    SortedRun,
    interval_partition,
)


@dataclass(frozen=True)
class CompactUnit:
    """Files to compact into ``output_level``. ``file_rewrite``: rewrite each file on its own
    (no merging across files), for files that must change content but not placement."""

    output_level: int
    files: tuple[DataFileMeta, ...]
    file_rewrite: bool = False


def _unit(output_level: int, runs: Sequence[LevelSortedRun]) -> CompactUnit:
    return CompactUnit(output_level, tuple(f for r in runs for f in r.run.files))


# -- picking -------------------------------------------------------------------------------------
def pick_universal(num_levels: int, runs: Sequence[LevelSortedRun], options: Options) -> Optional[CompactUnit]:
    """Paimon's UniversalCompaction.pick over ``runs`` (newest first, as ``Levels.runs()``).

    Tried in order: (1) size amplification: the newer runs together exceed
    ``compaction.max-size-amplification-percent`` of the oldest run, so rewrite everything;
    (2) size ratio: merge the newest runs while each next run is not much larger than what is
    picked so far (``compaction.size-ratio`` percent slack), which keeps merges cheap; (3) run
    count: above ``num-sorted-run.compaction-trigger`` runs, merge the newest surplus runs.
    (1) and (2) only look once the run count reaches the trigger. The picked runs are always a
    prefix of ``runs``: merging non-adjacent runs would reorder versions of a key.
    """
    trigger = options.required(COMPACTION_TRIGGER)
    max_level, n = num_levels - 1, len(runs)
    if n >= trigger and n > 1:
        older = sum(r.run.total_size for r in runs[:-1])
        if older * 100 > options.required(MAX_SIZE_AMPLIFICATION) * runs[-1].run.total_size:
            return _unit(max_level, runs)
    ratio = options.required(SIZE_RATIO)
    if n >= trigger:
        unit = _pick_size_ratio(max_level, runs, 1, ratio)
        if unit is not None:
            return unit
    if n > trigger:
        return _pick_size_ratio(max_level, runs, n - trigger + 1, ratio)
    return None


def pick_force_level0(num_levels: int, runs: Sequence[LevelSortedRun], options: Options) -> Optional[CompactUnit]:
    """Paimon's ForceUpLevel0Compaction, the picker of tables that look keys up (deletion
    vectors, first-row, lookup changelog): the universal picker's choice, else every level-0
    run (grown by size ratio) into the level above the next run, so no row stays at level 0,
    which batch reads of those tables skip."""
    unit = pick_universal(num_levels, runs, options)
    if unit is not None:
        return unit
    count = next((i for i, r in enumerate(runs) if r.level > 0), len(runs))
    if count == 0:
        return None
    return _pick_size_ratio(num_levels - 1, runs, count, options.required(SIZE_RATIO), force=True)


def _pick_size_ratio(max_level: int, runs: Sequence[LevelSortedRun], count: int, ratio: int,
                     force: bool = False) -> Optional[CompactUnit]:
    """Grow the newest ``count`` runs while the next run is at most (100 + ratio)% of the picked
    size. Once something is picked, runs at levels 0 and 1 are taken regardless of size: output
    lands below them (level >= 1), so leaving them would stack newer data under older."""
    size = sum(r.run.total_size for r in runs[:count])
    triggered = count > 1 or force
    for nxt in runs[count:]:
        if size * (100 + ratio) < nxt.run.total_size * 100 and (not triggered or nxt.level > 1):
            break
        size += nxt.run.total_size
        count += 1
        triggered = True
    return _create_unit(runs, max_level, count) if triggered else None


def _create_unit(runs: Sequence[LevelSortedRun], max_level: int, count: int) -> CompactUnit:
    """Output just above the next unpicked run (level - 1), so runs stay ordered newest first.
    Output never goes to level 0, which holds one file per run: if the next run is at level 0
    or 1, keep picking up to and including the first run above level 0 and write into its
    level. Picking everything always outputs to the max level."""
    output = max_level if count == len(runs) else max(0, runs[count].level - 1)
    if output == 0:
        for nxt in runs[count:]:
            count += 1
            if nxt.level != 0:
                output = nxt.level
                break
    if count == len(runs):
        output = max_level
    return _unit(output, runs[:count])


def pick_full(num_levels: int, runs: Sequence[LevelSortedRun]) -> Optional[CompactUnit]:
    """Everything into the max level (Paimon's pickFullCompaction). None when there is nothing
    to do: no runs, or a single run already at the max level (it holds no deletes, since
    files only reach the max level with deletes dropped)."""
    max_level = num_levels - 1
    if not runs or (len(runs) == 1 and runs[0].level == max_level):
        return None
    return _unit(max_level, runs)


# -- policy ---------------------------------------------------------------------------------------
def should_drop_delete(output_level: int, levels: Levels) -> bool:
    """Delete rows can go once nothing older could resurrect the key: the output is at level
    >= 1 (level 0 output may sit above older, uncompacted data) and at or above the highest
    non-empty level, i.e. no older data lies below it."""
    return output_level != 0 and output_level >= levels.non_empty_highest_level()


def needs_stall(levels: Levels, options: Options) -> bool:
    """True when the writer must wait for compaction before accepting more input: beyond
    ``num-sorted-run.stop-trigger`` runs, reads would merge too many runs."""
    return levels.number_of_sorted_runs() > options.stop_trigger()


def full_compaction_due(commits_since_full: int, options: Options) -> bool:
    """``full-compaction.delta-commits``: a full compaction every N commits (off when unset)."""
    n = options.get(FULL_COMPACTION_DELTA_COMMITS)
    return n is not None and commits_since_full >= n


# -- planning a compaction -------------------------------------------------------------------------
@dataclass(frozen=True)
class Rewrite:
    """Merge the files of ``sections`` (each a tuple of overlapping runs; sections disjoint
    and in key order) into new files at ``output_level``."""

    output_level: int
    sections: tuple[tuple[SortedRun, ...], ...]
    drop_delete: bool

    @property
    def files(self) -> tuple[DataFileMeta, ...]:
        return tuple(f for s in self.sections for r in s for f in r.files)


@dataclass(frozen=True)
class Upgrade:
    """Move ``file`` to ``output_level`` by metadata only: its key range overlaps nothing
    else being compacted, so its content is already correct there."""

    file: DataFileMeta
    output_level: int


def plan_rewrite(unit: CompactUnit, key_of: KeyOf, drop_delete: bool,
                 min_file_size: int) -> list[Union[Rewrite, Upgrade]]:
    """Paimon's MergeTreeCompactTask as a plan, in key order.

    Sections of the unit with overlapping runs must be merged. A section that is a single run
    is upgraded file by file instead, except that files under ``min_file_size`` join the
    pending merge so small files get combined. Pending sections are merged together whenever
    a large file is upgraded, and at the end; a lone small file is just upgraded (rewriting one
    file alone combines nothing). A file already at the output level stays as it is.

    A file with delete rows (or an unknown count) is rewritten rather than upgraded when
    deletes are dropped, so the bottom of the tree holds no deletes. Paimon states this for
    output to the max level; for units from ``pick_universal``/``pick_full`` that is the same
    thing, because only units that take every run drop deletes, and those go to the max level.
    Paimon's ``min_file_size`` is ``target-file-size // 10 * 7``: a file rolled at the target
    size is not rewritten again.
    """
    out = unit.output_level
    plan: list[Union[Rewrite, Upgrade]] = []
    pending: list[tuple[SortedRun, ...]] = []   # sections waiting to be merged together

    def rewrite(sections: list[tuple[SortedRun, ...]]) -> None:
        plan.append(Rewrite(out, tuple(sections), drop_delete))

    def upgrade(f: DataFileMeta) -> None:
        if f.level == out:
            return
        if drop_delete and f.delete_row_count != 0:
            rewrite([(SortedRun((f,)),)])
        else:
            plan.append(Upgrade(f, out))

    def flush() -> None:
        if len(pending) == 1 and len(pending[0]) == 1:
            for f in pending[0][0].files:
                upgrade(f)
        elif pending:
            rewrite(pending[:])
        pending.clear()

    if unit.file_rewrite:
        for f in unit.files:
            rewrite([(SortedRun((f,)),)])
        return plan
    for section in interval_partition(unit.files, key_of):
        if len(section) > 1:
            pending.append(tuple(section))
            continue
        for f in section[0].files:
            if f.file_size < min_file_size:
                pending.append((SortedRun((f,)),))
            else:
                flush()
                upgrade(f)
    flush()
    return plan
