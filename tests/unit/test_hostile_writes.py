"""Careless writes: rows outside an overwritten partition, a changed bucket layout, data that is
not Arrow, strings whose statistics need care, values too long for a directory name. Each works
or fails with a lakeformat error that leaves the table exactly as it was."""
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.commit.commit import Overwrite
from tests.conftest import EVENTS, events


def state(t) -> list:
    return sorted(str(p.relative_to(t.path)) for p in Path(t.path).rglob("*") if p.is_file())


@pytest.fixture
def table(catalog):
    t = catalog.create_table("db.t", EVENTS, partition_keys=["dt"])
    t.write(events(4, "d1"))
    t.write(events(3, "d2"))
    return t


def test_static_overwrite_refuses_rows_of_another_partition(table):
    before = state(table)
    with pytest.raises(lf.DataError, match=r"overwrite of partition \{'dt': 'd1'\}.*partition \{'dt': 'd9'\}"):
        table.write(events(5, "d9"), overwrite={"dt": "d1"})
    mixed = pa.concat_tables([events(2, "d1"), events(2, "d9")])
    with pytest.raises(lf.DataError, match="d9"):
        table.write(mixed, overwrite={"dt": "d1"})
    assert state(table) == before
    assert table.read().num_rows == 7


def test_static_overwrite_with_rows_of_that_partition_replaces_it(table):
    table.write(events(2, "d1"), overwrite={"dt": "d1"})
    counts = table.read().group_by("dt").aggregate([("user_id", "count")]).to_pydict()
    assert dict(zip(counts["dt"], counts["user_id_count"])) == {"d1": 2, "d2": 3}


def test_two_phase_static_overwrite_checks_the_messages_too(table):
    w = table.new_write("job")
    w.write(events(2, "d9"))
    msgs = w.prepare_commit()
    with pytest.raises(lf.DataError, match="d9"):
        table.new_commit("job").commit(msgs, 1, overwrite=Overwrite({"dt": "d1"}))
    assert len(table.snapshots()) == 2


PK = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])


@pytest.fixture
def pk(catalog):
    t = catalog.create_table("db.pk", PK, primary_keys=["id"], options={"bucket": "2"})
    t.write(pa.table({"id": list(range(20)), "v": ["a"] * 20}, schema=PK))
    return t


def test_changed_bucket_count_refuses_appends_until_an_overwrite_rewrites(pk):
    pk.alter(lf.SetOption("bucket", "4"))
    before = state(pk)
    with pytest.raises(lf.DataError, match="written with 2 buckets, but 'bucket' is now 4"):
        pk.write(pa.table({"id": list(range(20)), "v": ["b"] * 20}, schema=PK))
    with pytest.raises(lf.DataError, match="2 buckets"):
        pk.delete(pa.table({"id": [1]}))
    assert state(pk) == before
    pk.write(pk.read(), overwrite=True)    # the rescale: every row placed by the new count
    pk.write(pa.table({"id": list(range(20)), "v": ["c"] * 20}, schema=PK))
    pk.delete(pa.table({"id": [1]}))
    out = pk.read()
    assert out.num_rows == 19 and set(out["v"].to_pylist()) == {"c"}


def test_bucket_key_and_bucket_mode_cannot_change(catalog, pk):
    with pytest.raises(lf.SchemaError, match="bucket-key"):
        pk.alter(lf.SetOption("bucket-key", "v"))
    with pytest.raises(lf.SchemaError, match="cannot change 'bucket' from 2 to -1"):
        pk.alter(lf.SetOption("bucket", "-1"))
    t = catalog.create_table("db.a", EVENTS, options={"bucket": "2", "bucket-key": "user_id"})
    with pytest.raises(lf.SchemaError, match="bucket-key"):
        t.alter(lf.RemoveOption("bucket-key"))
    assert len(pk.schema_manager.list_ids()) == 1


@pytest.mark.parametrize("make", [
    lambda t: t.to_pandas(),
    lambda t: t.to_pydict(),
    lambda t: t.to_pylist(),
    lambda t: pa.RecordBatchReader.from_batches(t.schema, t.to_batches()),
])
def test_pandas_dicts_rows_and_readers_are_written(catalog, make):
    t = catalog.create_table("db.t", EVENTS, partition_keys=["dt"])
    t.write(make(events(5)))
    assert t.read().sort_by("user_id").equals(events(5))


def test_a_pandas_frame_with_an_index_writes_its_columns_only(catalog):
    t = catalog.create_table("db.t", EVENTS)
    df = events(3).to_pandas().set_index(pd.Index([7, 8, 9]))
    t.write(df)
    assert t.read().num_rows == 3


@pytest.mark.parametrize("bad", [42, "rows", [1, 2, 3], object()])
def test_what_is_not_tabular_is_refused_by_name(catalog, bad):
    t = catalog.create_table("db.t", EVENTS)
    with pytest.raises(lf.DataError, match=r"cannot (write|convert)"):
        t.write(bad)
    assert t.snapshots() == []


def test_a_string_whose_stats_prefix_bumps_into_the_surrogates_is_written(catalog):
    s = pa.schema([("s", pa.string())])
    t = catalog.create_table("db.s", s)
    values = ["a" * 15 + "\ud7ff" + "tail", "\ud7ff" * 20, "\U0010ffff" * 17]
    for v in values:   # each its own file: each is its file's max
        t.write(pa.table({"s": [v]}, schema=s))
    assert sorted(t.read()["s"].to_pylist()) == sorted(values)
    assert t.read(filter=lf.col("s") == values[0]).num_rows == 1


def test_a_partition_value_too_long_for_a_directory_is_a_data_error(table):
    before = state(table)
    with pytest.raises(lf.DataError, match=r"column 'dt'.*more than the 255"):
        table.write(pa.concat_tables([events(2, "d3"), events(1, "x" * 300)]))
    with pytest.raises(lf.DataError, match="NUL"):
        table.write(events(1, "a\0b"))
    assert state(table) == before


def test_partition_values_with_slashes_and_dots_stay_inside_the_table(table):
    for value in ("../../escape", "a/b", "..", "."):
        table.write(events(1, value))
    assert sorted(table.read()["dt"].unique().to_pylist()) == sorted(["d1", "d2", "../../escape", "a/b", "..", "."])
    outside = Path(table.path).parent
    assert sorted(p.name for p in outside.iterdir()) == ["t"]


def test_long_database_and_table_names_are_invalid_names(catalog):
    for name in ("d" * 253, "d" * 201):
        with pytest.raises(lf.InvalidNameError, match="longer than 200"):
            catalog.create_database(name)
        with pytest.raises(lf.InvalidNameError, match="longer than 200"):
            catalog.create_table(f"db.{name}", EVENTS)
    catalog.create_database("d" * 200)
