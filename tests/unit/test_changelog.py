"""Changelog producers: input and full-compaction, read back incrementally with row kinds."""
import pyarrow as pa

from lakeformat.mergetree.changelog import diff

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])


def rows(ids, v):
    return pa.table({"id": list(ids), "v": [v if v is None else f"{v}{i}" for i in ids]}, schema=SCHEMA)


def table(catalog, **options):
    return catalog.create_table("db.c", SCHEMA, primary_keys=["id"], options={"bucket": "1", **options})


def changes(t, start, end=None):
    got = t.read_incremental(start, end)
    return sorted(zip(got.column("id").to_pylist(), got.column("_row_kind").to_pylist(), got.column("v").to_pylist()),
                  key=lambda r: (r[0], "-+".index(r[1][0]) if r[1][1] == "U" else 0))


def test_input_changelog_is_every_input_version(catalog):
    t = table(catalog, **{"changelog-producer": "input"})
    t.write(rows([1, 2], "a"))
    t.write(pa.concat_tables([rows([1], "b"), rows([1], "c")]))
    t.delete(pa.table({"id": [2]}))
    assert changes(t, 0) == [(1, "+I", "a1"), (1, "+I", "b1"), (1, "+I", "c1"), (2, "+I", "a2"), (2, "-D", None)]
    assert changes(t, 1, 2) == [(1, "+I", "b1"), (1, "+I", "c1")]
    assert t.snapshot(1).changelog_record_count == 2 and t.snapshot(1).changelog_manifest_list


def test_full_compaction_changelog_is_the_difference_of_two_compactions(catalog):
    t = table(catalog, **{"changelog-producer": "full-compaction", "write-only": "true"})
    t.write(rows([1, 2, 3], "a"))
    t.compact(full=True)
    first = t.latest_snapshot().id
    assert changes(t, 0) == [(1, "+I", "a1"), (2, "+I", "a2"), (3, "+I", "a3")]
    t.write(rows([1], "b"))                 # update
    t.write(rows([3], "a"))                 # same value: no change
    t.delete(pa.table({"id": [2]}))
    t.write(rows([4], "n"))                 # new key
    assert changes(t, first) == []          # nothing until the next full compaction
    t.compact(full=True)
    assert changes(t, first) == [(1, "-U", "a1"), (1, "+U", "b1"), (2, "-D", "a2"), (4, "+I", "n4")]


def test_full_compaction_every_n_commits(catalog):
    t = table(catalog, **{"changelog-producer": "full-compaction", "full-compaction.delta-commits": "2"})
    w = t.new_write("w")
    for i in range(4):
        w.write(rows([i], "x"))
        t.new_commit("w").commit(w.prepare_commit(), identifier=i)
    kinds = [s.commit_kind for s in t.snapshots()]
    # every 2nd commit compacts fully; its new file is folded into the compaction before it is
    # ever committed (as in Paimon), so that commit is a COMPACT snapshot only
    assert kinds == ["APPEND", "COMPACT", "APPEND", "COMPACT"]
    assert [r[:2] for r in changes(t, 0)] == [(0, "+I"), (1, "+I"), (2, "+I"), (3, "+I")]


def test_diff_is_pure_and_null_aware():
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("_SEQUENCE_NUMBER", pa.int64()),
                        ("_VALUE_KIND", pa.int8())])
    old = pa.table({"id": [1, 2, 3], "v": [None, "x", "y"], "_SEQUENCE_NUMBER": [1, 2, 3],
                    "_VALUE_KIND": [0, 0, 0]}, schema=schema)
    new = pa.table({"id": [1, 3, 5], "v": [None, "z", "w"], "_SEQUENCE_NUMBER": [4, 5, 6],
                    "_VALUE_KIND": [0, 0, 0]}, schema=schema)
    out = diff(old, new, ["id"])
    assert list(zip(out["id"].to_pylist(), out["_VALUE_KIND"].to_pylist(), out["v"].to_pylist())) == [
        (2, 3, "x"), (3, 1, "y"), (3, 2, "z"), (5, 0, "w")]
