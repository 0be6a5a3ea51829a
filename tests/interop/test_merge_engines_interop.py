"""Batch scans of partial-update and aggregation tables read every level, as Paimon's do: rows
still in level 0 are merged with the compacted levels, not skipped (only deletion-vector and
first-row tables skip level 0). pypaimon reads the same tables and must agree."""
import pyarrow as pa
import pytest

from tests.interop.helpers import Oracle, assert_same_rows

SCHEMA = pa.schema([pa.field("k", pa.int64(), False), ("a", pa.string()), ("b", pa.int64()), ("n", pa.int64())])


@pytest.fixture
def oracle(tmp_path):
    return Oracle(tmp_path / "oracle")


def table(**cols):
    return pa.table(cols, schema=SCHEMA)


@pytest.mark.parametrize("engine, options, expected", [
    ("partial-update", {}, [{"k": 1, "a": "x2", "b": 10, "n": 3}, {"k": 2, "a": "y", "b": 20, "n": None},
                            {"k": 3, "a": None, "b": 30, "n": 7}]),
    ("aggregation", {"fields.b.aggregate-function": "sum", "fields.n.aggregate-function": "max",
                     "fields.a.aggregate-function": "last_non_null_value"},
     [{"k": 1, "a": "x2", "b": 11, "n": 3}, {"k": 2, "a": "y", "b": 20, "n": None},
      {"k": 3, "a": None, "b": 30, "n": 7}]),
])
def test_level_zero_rows_merge_with_compacted_levels(catalog, oracle, engine, options, expected):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", "merge-engine": engine, "write-only": "true", **options})
    t.write(table(k=[1, 2], a=["x", "y"], b=[10, 20], n=[None, None]))
    t.write(table(k=[1], a=[None], b=[None], n=[3]))
    t.compact(full=True)                                          # k=1,2 in the highest level
    t.write(table(k=[1, 3], a=["x2", None], b=[1 if engine == "aggregation" else None, 30], n=[None, 7]))
    assert {f["level"] for f in t.files()} == {0, t.typed_options.num_levels() - 1}
    got = sorted(t.read().to_pylist(), key=lambda r: r["k"])
    assert got == expected
    i = oracle.read(catalog.warehouse, "db.t", readers=["pypaimon"])
    res = oracle.run()
    assert_same_rows(res.table(i, "pypaimon", SCHEMA), pa.Table.from_pylist(expected, schema=SCHEMA), "k", "pypaimon")
