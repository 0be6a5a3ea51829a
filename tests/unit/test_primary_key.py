"""Primary-key tables end to end: upserts, deletes, merge-on-read, compaction, engines."""
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import lakeformat as lf

SCHEMA = pa.schema([pa.field("dt", pa.string(), False), pa.field("id", pa.int64(), False),
                    ("name", pa.string()), ("score", pa.int64())])


def rows(ids, dt="d1", name="v", score=None):
    ids = list(ids)
    return pa.table({"dt": [dt] * len(ids), "id": ids, "name": [f"{name}{i}" for i in ids],
                     "score": [score if score is not None else i for i in ids]}, schema=SCHEMA)


def pk_table(catalog, name="db.pk", **options):
    opts = {"bucket": "2", **options}
    return catalog.create_table(name, SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"], options=opts)


def as_dict(t: pa.Table) -> dict:
    return {(r["dt"], r["id"]): (r["name"], r["score"]) for r in t.to_pylist()}


def files(t):
    return t.files()


def test_upserts_and_deletes_read_the_newest_version(catalog):
    t = pk_table(catalog)
    t.write(rows(range(10)))
    t.write(rows(range(5, 15), name="second"))
    t.delete(pa.table({"dt": ["d1", "d1"], "id": [0, 7]}))
    got = as_dict(t.read())
    expected = {("d1", i): (f"v{i}", i) for i in range(1, 5)} | {("d1", i): (f"second{i}", i) for i in range(5, 15)}
    del expected[("d1", 7)]
    assert got == expected
    assert t.read().num_rows == len(expected)
    # time travel sees the state before the delete
    assert ("d1", 7) in as_dict(t.read(snapshot_id=2))


def test_files_carry_paimons_key_value_layout(catalog):
    t = pk_table(catalog, bucket="1")
    t.write(rows(range(3)))
    t.delete(pa.table({"dt": ["d1"], "id": [1]}))
    paths = [f["path"] for f in files(t)]
    data = pa.concat_tables([pq.read_table(p) for p in paths])
    assert data.column_names == ["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND", "dt", "id", "name", "score"]
    schema = pq.read_schema(paths[0])
    assert schema.field("_KEY_id").metadata[b"PARQUET:field_id"] == str(2147483647 // 2 + 1).encode()
    assert schema.field("_SEQUENCE_NUMBER").metadata[b"PARQUET:field_id"] == b"2147483646"
    kinds = sorted(zip(data.column("_SEQUENCE_NUMBER").to_pylist(), data.column("_VALUE_KIND").to_pylist()))
    assert kinds == [(0, 0), (1, 0), (2, 0), (3, 3)]   # sequence numbers continue across commits


def test_value_filter_applies_after_the_merge(catalog):
    """A newer version without the value must shadow an older one that has it."""
    t = pk_table(catalog, bucket="1")
    t.write(rows([1, 2], score=5))
    t.write(rows([1], score=9))
    assert t.read(filter=lf.col("score") == 5).column("id").to_pylist() == [2]
    assert t.read(filter=lf.col("id") == 1).column("score").to_pylist() == [9]


def test_small_write_buffer_makes_several_runs_and_compaction_bounds_them(catalog):
    t = pk_table(catalog, **{"bucket": "1", "write-buffer-size": "4 kb", "write-buffer-spillable": "false",
                                 "num-sorted-run.compaction-trigger": "3"})
    w = t.new_write("w")
    expected = {}
    for batch in range(8):
        data = rows(range(batch * 50, batch * 50 + 400), name=f"b{batch}")
        w.write(data)
        expected |= as_dict(data)
    snap = t.new_commit("w").commit(w.prepare_commit(), identifier=1)
    assert as_dict(t.read()) == expected
    levels = [f["level"] for f in files(t)]
    assert levels.count(0) <= 3 + 3 and max(levels) > 0, levels
    assert snap.commit_kind == "COMPACT"
    assert [s.commit_kind for s in t.snapshots()] == ["APPEND", "COMPACT"]


def test_full_compaction_drops_deletes_and_keeps_rows(catalog):
    t = pk_table(catalog, **{"write-only": "true"})
    for i in range(4):
        t.write(rows(range(i * 10, i * 10 + 30), name=f"r{i}"))
    t.delete(pa.table({"dt": ["d1"] * 5, "id": list(range(5))}))
    before = as_dict(t.read())
    assert all(f["level"] == 0 for f in files(t))          # write-only: writers never compact
    snap = t.compact(full=True)
    assert snap.commit_kind == "COMPACT"
    assert as_dict(t.read()) == before
    after = files(t)
    assert {f["level"] for f in after} == {t.typed_options.num_levels() - 1}
    data = pa.concat_tables([pq.read_table(f["path"]) for f in after])
    assert pc.sum(pc.equal(data.column("_VALUE_KIND"), 3)).as_py() in (0, None)
    assert t.compact(full=True) is None or as_dict(t.read()) == before


def test_rowkind_field_and_sequence_field(catalog):
    schema = SCHEMA.append(pa.field("op", pa.string()))
    t = catalog.create_table("db.cdc", schema, partition_keys=["dt"], primary_keys=["dt", "id"],
                             options={"bucket": "1", "rowkind.field": "op", "sequence.field": "score"})
    t.write(pa.table({"dt": ["d"] * 4, "id": [1, 1, 2, 3], "name": ["a", "old", "b", "c"], "score": [5, 1, 1, 1],
                      "op": ["+I", "+I", "+I", "+I"]}, schema=schema))
    t.write(pa.table({"dt": ["d"], "id": [2], "name": ["b"], "score": [2], "op": ["-D"]}, schema=schema))
    got = {r["id"]: r["name"] for r in t.read().to_pylist()}
    assert got == {1: "a", 3: "c"}          # id 1: score 5 beats the later score 1; id 2 deleted
    with pytest.raises(lf.DataError, match=r"rowkind.field"):
        t.write(pa.table({"dt": ["d"], "id": [9], "name": ["x"], "score": [1], "op": ["??"]}, schema=schema))


@pytest.mark.parametrize("engine,options,expected", [
    ("partial-update", {}, {1: ("new", 1)}),
    ("first-row", {}, {1: ("old", 1)}),
    ("aggregation", {"fields.score.aggregate-function": "sum"}, {1: ("new", 3)}),
])
def test_merge_engines_end_to_end(catalog, engine, options, expected):
    t = catalog.create_table("db.e", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
                             options={"bucket": "1", "merge-engine": engine, **options})
    t.write(pa.table({"dt": ["d"], "id": [1], "name": ["old"], "score": [1]}, schema=SCHEMA))
    t.write(pa.table({"dt": ["d"], "id": [1], "name": ["new"], "score": [None if engine == "partial-update" else 2]},
                     schema=SCHEMA))
    merged = {r["id"]: (r["name"], r["score"]) for r in t.read().to_pylist()}
    assert merged == expected
    t.compact(full=True)
    assert {r["id"]: (r["name"], r["score"]) for r in t.read().to_pylist()} == expected


def test_overwrite_replaces_partition_of_a_primary_key_table(catalog):
    t = pk_table(catalog)
    t.write(rows(range(10), dt="a"))
    t.write(rows(range(10), dt="b"))
    t.write(rows([100], dt="a"), overwrite=True)
    got = as_dict(t.read())
    assert set(got) == {("a", 100)} | {("b", i) for i in range(10)}


def test_two_phase_commit_is_exactly_once_and_abort_keeps_live_files(catalog):
    t = pk_table(catalog, bucket="1")
    w = t.new_write("job")
    w.write(rows(range(5)))
    msgs = w.prepare_commit()
    c = t.new_commit("job")
    c.commit(msgs, identifier=1)
    c.commit(msgs, identifier=1)
    assert len(t.snapshots()) == 1 and t.read().num_rows == 5
    w.write(rows(range(3), name="x"))
    more = w.prepare_commit()
    t.new_commit("job").abort(more)
    assert as_dict(t.read()) == as_dict(rows(range(5)))
    for f in files(t):
        assert Path(f["path"]).exists()


def test_null_primary_key_is_refused(catalog):
    t = pk_table(catalog)
    bad = pa.table({"dt": ["d"], "id": pa.array([None], pa.int64()), "name": ["x"], "score": [1]})
    with pytest.raises(lf.DataError, match="'id'"):
        t.write(bad)
    assert t.snapshots() == []


def test_key_slices_merge_like_one_section(catalog):
    """Tiny write-buffer-size: reads and compactions merge overlapping runs slice by slice;
    versions of a key that straddle a slice boundary in different files still meet."""
    import random
    schema = pa.schema([pa.field("a", pa.int32(), False), pa.field("b", pa.string(), False), ("v", pa.int64())])
    t = catalog.create_table("db.sl", schema, primary_keys=["a", "b"],
                             options={"bucket": "1", "write-only": "true", "write-buffer-size": "2 kb"})
    rnd = random.Random(3)
    model = {}
    for batch in range(6):
        keys = [(rnd.randrange(30), rnd.choice("xyz")) for _ in range(300)]
        data = pa.table({"a": [k[0] for k in keys], "b": [k[1] for k in keys],
                         "v": [batch * 1000 + i for i in range(len(keys))]}, schema=schema)
        t.write(data)
        for k, v in zip(keys, data.column("v").to_pylist()):
            model[k] = v
    got = {(r["a"], r["b"]): r["v"] for r in t.read().to_pylist()}
    assert got == model and t.read().num_rows == len(model)
    from lakeformat.mergetree.slices import slice_count
    live = [e.file for e in t.live_entries(t.latest_snapshot())]
    assert slice_count(live, 2048) > 3          # the read above really went slice by slice
    t.compact(full=True)
    assert {(r["a"], r["b"]): r["v"] for r in t.read().to_pylist()} == model


def test_slice_boundaries_split_sorted_files_at_equal_keys():
    from lakeformat.mergetree.slices import _less_than, boundaries
    keys = pa.table({"a": [1, 1, 2, 2, 3], "b": ["x", "y", "x", "y", "x"]})
    assert _less_than(keys, (2, "x")).tolist() == [True, True, False, False, False]
    assert _less_than(keys, (1, "y")).tolist() == [True, False, False, False, False]
    bounds = boundaries([keys, keys], 3)
    assert bounds == sorted(set(bounds)) and len(bounds) == 2


def test_spillable_buffer_makes_one_level0_run_per_flush(catalog, monkeypatch):
    import os
    import lakeformat.mergetree.spill as spill
    made = []
    real_add = spill.SpilledRuns.add

    def spying_add(self, run):
        real_add(self, run)
        made.append(self.paths[-1])
    monkeypatch.setattr(spill.SpilledRuns, "add", spying_add)
    t = pk_table(catalog, **{"bucket": "1", "write-buffer-size": "4 kb", "write-buffer-spillable": "true",
                             "write-only": "true"})
    w = t.new_write("w")
    expected = {}
    for batch in range(6):
        data = rows(range(batch * 40, batch * 40 + 300), name=f"s{batch}")
        w.write(data)
        expected |= as_dict(data)
    t.new_commit("w").commit(w.prepare_commit(), identifier=1)
    assert len(made) >= 5                                   # the buffer spilled to local disk ...
    assert len(files(t)) == 1                               # ... and one level-0 run was written
    assert not any(os.path.exists(p) for p in made)         # spill files are cleaned up
    assert as_dict(t.read()) == expected


def test_write_buffer_size_bounds_all_buckets_together(catalog, monkeypatch):
    from lakeformat.mergetree.writer import MergeTreeWriter
    released = []
    real = MergeTreeWriter.release
    monkeypatch.setattr(MergeTreeWriter, "release", lambda self: (released.append(self.bucket), real(self)))
    t = pk_table(catalog, **{"bucket": "4", "write-buffer-size": "64 kb", "write-buffer-spillable": "false"})
    w = t.new_write("w")
    data = rows(range(4000))                 # ~100 kb in all, ~25 kb per bucket: each alone fits
    w.write(data)
    assert released
    assert sum(x.buffer_bytes for x in w._writers.values()) < 64 * 1024
    t.new_commit("w").commit(w.prepare_commit())
    assert as_dict(t.read()) == as_dict(data)
