"""The merge tree's pure decision layer: levels, interval partition, picking and planning."""
import itertools
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakeformat.format.binary_row import deserialize_row, serialize_row
from lakeformat.format.manifest import DataFileMeta
from lakeformat.mergetree.compaction import (CompactUnit, Rewrite, Upgrade, _create_unit, full_compaction_due,
                                             needs_stall, pick_full, pick_universal, plan_rewrite,
                                             should_drop_delete)
from lakeformat.mergetree.levels import LevelSortedRun, Levels, SortedRun, interval_partition
from lakeformat.format.options import COMPACTION_TRIGGER, Options
from lakeformat.format.types import type_from_json

INT = [type_from_json("INT")]


def key_of(b: bytes) -> tuple:
    return tuple(deserialize_row(b, INT))


def f(name, lo, hi, level=0, size=100, seq=0, deletes=0) -> DataFileMeta:
    return DataFileMeta(name, size, 10, serialize_row([lo], INT), serialize_row([hi], INT), level=level,
                        min_sequence_number=seq, max_sequence_number=seq, delete_row_count=deletes)


def run(level, *sizes_or_files) -> LevelSortedRun:
    """A run at ``level``; ints become disjoint files of those sizes."""
    files = [x if isinstance(x, DataFileMeta) else f(f"L{level}-{i}-{x}", 10 * i, 10 * i + 5, level, x)
             for i, x in enumerate(sizes_or_files)]
    return LevelSortedRun(level, SortedRun(tuple(files)))


def names(files) -> list[str]:
    return [x.file_name for x in files]


def opts(**kw) -> Options:
    keys = {"trigger": "num-sorted-run.compaction-trigger", "amp": "compaction.max-size-amplification-percent",
            "ratio": "compaction.size-ratio", "stop": "num-sorted-run.stop-trigger",
            "delta": "full-compaction.delta-commits"}
    return Options({keys[k]: v for k, v in kw.items()})


# -- Levels --------------------------------------------------------------------------------------
def test_levels_order_runs_newest_first():
    a, b, c = f("a", 1, 9, seq=5), f("b", 1, 9, seq=7), f("c", 1, 9, seq=5)
    hi1, hi2, top = f("h1", 20, 29, 2), f("h2", 1, 10, 2), f("t", 0, 100, 4)
    lv = Levels([a, top, hi1, b, c, hi2], 5, key_of)
    assert names(lv.level0) == ["b", "a", "c"]                     # seq desc, then name
    assert names(lv.run_of_level(2).files) == ["h2", "h1"]         # by min key
    assert [(r.level, names(r.run.files)) for r in lv.runs()] == [
        (0, ["b"]), (0, ["a"]), (0, ["c"]), (2, ["h2", "h1"]), (4, ["t"])]
    assert lv.number_of_sorted_runs() == 5 and lv.max_level == 4 and lv.num_levels == 5
    assert lv.non_empty_highest_level() == 4
    assert lv.run_of_level(2).total_size == 200
    assert names(lv.all_files()) == ["b", "a", "c", "h2", "h1", "t"]


def test_levels_highest_level_and_widening():
    assert Levels([], 3, key_of).non_empty_highest_level() == -1
    assert Levels([f("a", 1, 2)], 3, key_of).non_empty_highest_level() == 0
    wide = Levels([f("a", 1, 2, level=6)], 3, key_of)          # written with more levels
    assert wide.max_level == 6 and wide.non_empty_highest_level() == 6
    with pytest.raises(ValueError, match="at least 2"):
        Levels([], 1, key_of)
    with pytest.raises(ValueError, match="level 0 is not one sorted run"):
        wide.run_of_level(0)


def test_levels_reject_overlap_above_level0():
    with pytest.raises(ValueError, match="overlapping key ranges"):
        Levels([f("x", 1, 5, 1), f("y", 5, 9, 1)], 3, key_of)   # closed ranges touch at 5
    Levels([f("x", 1, 5, 1), f("y", 6, 9, 1)], 3, key_of)


def test_levels_update_applies_upgrade_and_rewrite():
    a, b, old = f("a", 1, 5, seq=2), f("b", 3, 8, seq=1), f("old", 20, 30, 2)
    lv = Levels([a, b, old], 3, key_of)
    after = lv.update([a, b], [f("m2", 5, 8, 2, seq=2), f("m", 1, 4, 2, seq=2)])
    assert after.level0 == () and names(after.run_of_level(2).files) == ["m", "m2", "old"]
    up = after.update([old], [replace(old, level=1)])              # same name, new level
    assert names(up.run_of_level(1).files) == ["old"] and names(up.run_of_level(2).files) == ["m", "m2"]
    assert names(lv.all_files()) == ["a", "b", "old"]              # the original is untouched
    assert names(up.update([], [replace(old, level=1)]).all_files()) == names(up.all_files())  # no duplicate


# -- interval partition --------------------------------------------------------------------------
def sections_of(files):
    return [[names(r.files) for r in sec] for sec in interval_partition(files, key_of)]


def test_interval_partition_sections_and_packing():
    files = [f("d", 7, 8), f("b", 2, 6), f("a", 1, 3), f("c", 4, 5), f("e", 10, 12)]
    assert sections_of(files) == [[["a", "c"], ["b"]], [["d"]], [["e"]]]


def test_interval_partition_touching_ranges_overlap():
    assert sections_of([f("x", 5, 9), f("w", 1, 5)]) == [[["w"], ["x"]]]
    assert sections_of([f("x", 6, 9), f("w", 1, 5)]) == [[["w"]], [["x"]]]


def test_interval_partition_uses_fewest_runs():
    # [1,10] spans everything; the rest chain into one run after their predecessors end
    files = [f("big", 1, 10), f("p", 1, 2), f("q", 3, 4), f("r", 4, 6), f("s", 7, 9)]
    assert sections_of(files) == [[["p", "q", "s"], ["big"], ["r"]]]
    assert interval_partition([], key_of) == []


# -- universal picking ---------------------------------------------------------------------------
def test_size_amplification_picks_everything_to_max_level():
    runs = [run(0, 10), run(1, 290), run(2, 149)]                  # newer 300 > 200% of 149
    unit = pick_universal(4, runs, opts(trigger=3))
    assert unit == CompactUnit(3, tuple(x for r in runs for x in r.run.files))
    assert pick_universal(4, [run(0, 10), run(1, 290), run(2, 150)], opts(trigger=3)) is None
    assert pick_universal(4, runs, opts(trigger=3, amp=202)) is None
    assert pick_universal(4, runs, opts(trigger=4)) is None        # fewer runs than the trigger


def test_size_ratio_picks_similar_newest_runs():
    o = opts(trigger=3, amp=10_000)
    unit = pick_universal(5, [run(0, 100), run(0, 101), run(3, 1000)], o)
    assert unit.output_level == 2 and [x.file_size for x in unit.files] == [100, 101]
    assert pick_universal(5, [run(0, 100), run(0, 102), run(3, 1000)], o) is None
    assert pick_universal(5, [run(0, 100), run(0, 102), run(3, 1000)], opts(trigger=3, amp=10_000, ratio=2))


def test_size_ratio_takes_level0_and_level1_once_triggered():
    o = opts(trigger=3, amp=10_000)
    unit = pick_universal(5, [run(0, 100), run(0, 100), run(0, 5000), run(1, 9000), run(4, 10**6)], o)
    assert unit.output_level == 3 and [x.file_size for x in unit.files] == [100, 100, 5000, 9000]


def test_file_number_picks_surplus_runs():
    runs = [run(0, 1), run(1, 10), run(2, 100), run(3, 1000), run(4, 10**6)]
    unit = pick_universal(5, runs, opts(trigger=3))
    assert unit.output_level == 2 and [x.file_size for x in unit.files] == [1, 10, 100]
    unit = pick_universal(5, runs, opts(trigger=4))
    assert unit.output_level == 1 and [x.file_size for x in unit.files] == [1, 10]
    assert pick_universal(5, runs, opts(trigger=5)) is None


def test_create_unit_never_outputs_level0():
    runs = [run(0, 1), run(0, 1), run(0, 1), run(1, 1), run(3, 1)]
    assert _create_unit(runs, 4, 2).output_level == 1                           # absorbs up to level 1
    assert len(_create_unit(runs, 4, 2).files) == 4
    assert _create_unit(runs, 4, 4).output_level == 2                           # next run - 1
    assert _create_unit(runs[:3], 4, 2).output_level == 4                       # all picked: max level
    assert _create_unit(runs, 4, 5).output_level == 4


def test_pick_full():
    assert pick_full(3, []) is None
    assert pick_full(3, [run(2, 5, 6)]) is None
    assert pick_full(3, [run(1, 5, 6)]) == CompactUnit(2, run(1, 5, 6).run.files)
    unit = pick_full(3, [run(0, 1), run(2, 5)])
    assert unit.output_level == 2 and [x.file_size for x in unit.files] == [1, 5]


# -- policy --------------------------------------------------------------------------------------
def test_should_drop_delete():
    def levels(*lv):
        return Levels([f(str(i), i, i, level) for i, level in enumerate(lv)], 5, key_of)
    assert not should_drop_delete(0, levels(0))
    assert not should_drop_delete(2, levels(0, 3))
    assert should_drop_delete(3, levels(0, 3)) and should_drop_delete(2, levels(0)) and should_drop_delete(1, levels())


def test_needs_stall_beyond_stop_trigger():
    def levels(n):
        return Levels([f(str(i), 1, 2, seq=i) for i in range(n)], 6, key_of)
    assert not needs_stall(levels(8), opts()) and needs_stall(levels(9), opts())   # 5 + 3
    assert not needs_stall(levels(6), opts(stop=6)) and needs_stall(levels(7), opts(stop=6))


def test_full_compaction_due():
    assert not full_compaction_due(100, opts())
    assert not full_compaction_due(2, opts(delta=3)) and full_compaction_due(3, opts(delta=3))


# -- planning --------------------------------------------------------------------------------------
def plan(files, out=2, drop=False, min_size=0, rewrite_files=False):
    return plan_rewrite(CompactUnit(out, tuple(files), rewrite_files), key_of, drop, min_size)


def shape(steps):
    return [("up", s.file.file_name, s.output_level) if isinstance(s, Upgrade)
            else ("rw", [[names(r.files) for r in sec] for sec in s.sections], s.output_level, s.drop_delete)
            for s in steps]


def test_plan_upgrades_disjoint_files_and_leaves_output_level_alone():
    files = [f("a", 1, 3), f("b", 5, 7, 1), f("c", 9, 12, 2)]
    assert shape(plan(files)) == [("up", "a", 2), ("up", "b", 2)]


def test_plan_rewrites_overlap_and_upgrades_between():
    files = [f("a", 1, 4), f("b", 3, 6, 1), f("c", 10, 12), f("d", 20, 22), f("e", 21, 30, 1)]
    assert shape(plan(files, drop=True)) == [
        ("rw", [[["a"], ["b"]]], 2, True), ("up", "c", 2), ("rw", [[["d"], ["e"]]], 2, True)]


def test_plan_batches_small_files_with_neighbours():
    files = [f("s1", 1, 2, size=5), f("s2", 3, 4, size=5), f("big", 5, 6), f("s3", 7, 8, size=5),
             f("o1", 9, 12), f("o2", 10, 11)]
    assert shape(plan(files, min_size=10)) == [
        ("rw", [[["s1"]], [["s2"]]], 2, False), ("up", "big", 2), ("rw", [[["s3"]], [["o1"], ["o2"]]], 2, False)]
    assert shape(plan([f("s", 1, 2, size=5), f("big", 5, 6)], min_size=10)) == [("up", "s", 2), ("up", "big", 2)]
    assert shape(plan([f("x", 1, 2, size=10), f("y", 5, 6, size=10)], min_size=10)) == [("up", "x", 2), ("up", "y", 2)]


def test_plan_keeps_deletes_out_of_max_level():
    dels, clean, unknown = f("d", 1, 2, deletes=3), f("c", 3, 4), f("u", 5, 6, deletes=None)
    assert shape(plan([dels, clean, unknown], out=4, drop=True)) == [
        ("rw", [[["d"]]], 4, True), ("up", "c", 4), ("rw", [[["u"]]], 4, True)]
    assert shape(plan([dels], out=4, drop=False)) == [("up", "d", 4)]    # deletes kept anyway


def test_plan_file_rewrite_rewrites_each_file_alone():
    files = [f("a", 1, 5, 2), f("b", 6, 9, 2)]
    assert shape(plan(files, rewrite_files=True)) == [("rw", [[["a"]]], 2, False), ("rw", [[["b"]]], 2, False)]


# -- properties ----------------------------------------------------------------------------------
@st.composite
def bucket(draw):
    num_levels = draw(st.integers(2, 6))
    files, n = [], 0
    for _ in range(draw(st.integers(0, 8))):
        lo = draw(st.integers(0, 100))
        files.append(f(f"f{n}", lo, lo + draw(st.integers(0, 30)), 0, draw(st.integers(1, 1000)), seq=n))
        n += 1
    for level in range(1, num_levels):
        bounds = sorted(draw(st.sets(st.integers(0, 200), max_size=6)))
        for lo, hi in zip(bounds[::2], bounds[1::2]):
            files.append(f(f"f{n}", lo, hi, level, draw(st.integers(1, 1000)), seq=-n))
            n += 1
    o = opts(trigger=draw(st.integers(1, 5)), ratio=draw(st.integers(0, 10)), amp=draw(st.integers(0, 400)))
    return Levels(files, num_levels, key_of), o, draw(st.integers(0, 600))


def merged(files, level, name) -> DataFileMeta:
    return f(name, min(key_of(x.min_key) for x in files)[0], max(key_of(x.max_key) for x in files)[0],
             level, sum(x.file_size for x in files), seq=max(x.max_sequence_number for x in files))


def apply(levels: Levels, unit: CompactUnit, min_size: int, step: int) -> Levels:
    """Run the plan as a writer would, each rewrite producing one file over its key range."""
    drop = should_drop_delete(unit.output_level, levels)
    assert not drop or unit.output_level == levels.max_level        # why plan_rewrite needs no max level
    steps = plan_rewrite(unit, key_of, drop, min_size)
    before, after, touched = [], [], []
    for i, s in enumerate(steps):
        files = s.files if isinstance(s, Rewrite) else (s.file,)
        touched += files
        before += files
        after.append(merged(files, s.output_level, f"m{step}-{i}") if isinstance(s, Rewrite)
                     else replace(s.file, level=s.output_level))
    untouched = [x for x in unit.files if x not in touched]
    assert sorted(names(touched)) == sorted(set(names(touched)))          # each file handled once
    assert all(x.level == unit.output_level for x in untouched)           # only in-place files skipped
    new = levels.update(before, after)
    gone = {(x.level, x.file_name) for x in before}
    assert sorted(names(new.all_files())) == sorted(
        names([x for x in levels.all_files() if (x.level, x.file_name) not in gone] + after))
    return new


def check_invariants(levels: Levels):
    for lvl in range(1, levels.num_levels):
        files = levels.run_of_level(lvl).files
        assert all(key_of(b.min_key) > key_of(a.max_key) for a, b in itertools.pairwise(files))


@settings(max_examples=300, deadline=None)
@given(bucket())
def test_picking_takes_newest_runs_and_converges(case):
    levels, o, min_size = case
    for step in range(50):
        runs = levels.runs()
        unit = pick_universal(levels.num_levels, runs, o)
        if unit is None:
            break
        prefix = [x for r in runs for x in r.run.files][:len(unit.files)]
        assert list(unit.files) == prefix and len(unit.files) > 1
        assert unit.output_level >= 1
        n_before = levels.number_of_sorted_runs()
        levels = apply(levels, unit, min_size, step)
        check_invariants(levels)
        assert levels.number_of_sorted_runs() < n_before
    else:
        pytest.fail("picking did not converge")
    assert levels.number_of_sorted_runs() <= o.get(COMPACTION_TRIGGER)


@settings(max_examples=200, deadline=None)
@given(bucket())
def test_full_compaction_leaves_one_run_at_max_level(case):
    levels, _, min_size = case
    unit = pick_full(levels.num_levels, levels.runs())
    if unit is None:
        assert levels.number_of_sorted_runs() == 0 or (
            levels.number_of_sorted_runs() == 1 and levels.non_empty_highest_level() == levels.max_level)
        return
    after = apply(levels, unit, min_size, 0)
    check_invariants(after)
    assert [r.level for r in after.runs()] == [levels.max_level]
