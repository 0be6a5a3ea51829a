"""Reads given careless arguments: nulls in isin, no columns, values of the wrong type, reversed
ranges, times as text; and consumers that start as Paimon's scan.mode says."""
import datetime as dt

import pyarrow as pa
import pytest

import lakeformat as lf
from tests.conftest import EVENTS, events

SCHEMA = pa.schema([("id", pa.int32()), ("v", pa.string())])


@pytest.fixture
def t(catalog):
    t = catalog.create_table("db.t", SCHEMA)
    t.write(pa.table({"id": pa.array([1, None, 3], pa.int32()), "v": ["a", "b", None]}))
    return t


def test_isin_with_null_never_matches_null_rows(t):
    assert t.read(filter=lf.col("id").isin([1, None]))["id"].to_pylist() == [1]
    assert t.read(filter=lf.col("v").isin([None])).num_rows == 0
    assert t.read(filter=~lf.col("id").isin([1])).column("id").to_pylist() == [3]
    assert t.read(filter=~lf.col("id").isin([1, None])).num_rows == 0   # SQL: NOT IN (.., NULL) is never true


def test_no_columns_still_counts_the_rows(t):
    assert t.read(columns=[]).num_rows == 3 and t.read(columns=[]).num_columns == 0
    assert t.read(columns=[], filter=lf.col("id") > 1).num_rows == 1
    assert sum(b.num_rows for b in t.to_batches(columns=[])) == 3


@pytest.mark.parametrize("bad", [lf.col("id") == "one", lf.col("id").isin(["x"]), lf.col("v") > 5,
                                 lf.col("nope") == 1])
def test_a_filter_of_the_wrong_type_or_column_is_a_schema_error(t, bad):
    with pytest.raises(lf.SchemaError, match=r"'id'|'v'|'nope'"):
        t.read(filter=bad)
    with pytest.raises(lf.SchemaError):
        t.scan(filter=bad).plan()


def test_a_partition_filter_of_the_wrong_type_is_an_error_not_an_empty_result(catalog):
    p = catalog.create_table("db.p", EVENTS, partition_keys=["dt"])
    p.write(events(3, "2024"))
    with pytest.raises(lf.SchemaError, match="'dt'"):
        p.read(filter=lf.col("dt") == 2024)


def test_reversed_incremental_range_is_an_error(t):
    t.write(pa.table({"id": pa.array([4], pa.int32()), "v": ["d"]}))
    with pytest.raises(lf.LakeformatError, match="end_snapshot 1 is before start_snapshot 2"):
        t.read_incremental(2, 1)
    with pytest.raises(lf.LakeformatError, match="snapshot id"):
        t.read_incremental(-1)


def test_as_of_takes_iso_text_and_names_bad_values(t):
    future = (dt.datetime.now() + dt.timedelta(days=1)).isoformat(sep=" ", timespec="seconds")
    assert t.read(as_of=future).num_rows == 3
    assert t.read(as_of=dt.date.today().isoformat() + " 23:59:59").num_rows == 3
    with pytest.raises(lf.NotFoundError):
        t.read(as_of="2000-01-01")
    for bad in ("yesterday", "2024-13-01", [1]):
        with pytest.raises(lf.LakeformatError, match="as_of"):
            t.read(as_of=bad)


PK = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])


def test_a_new_consumer_starts_with_the_current_rows_then_changes(catalog):
    t = catalog.create_table("db.pk", PK, primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "v": ["old", "old"]}, schema=PK))
    t.write(pa.table({"id": [1], "v": ["new"]}, schema=PK))
    first = t.read_incremental(consumer_id="c").sort_by("id").to_pylist()
    assert first == [{"id": 1, "v": "new"}, {"id": 2, "v": "old"}]        # the current rows, once each
    assert t.consumers.get("c") == 3
    t.write(pa.table({"id": [3], "v": ["x"]}, schema=PK))
    assert t.read_incremental(consumer_id="c").to_pylist() == [{"id": 3, "v": "x"}]
    stream = t.stream(consumer_id="s", max_batches=1)
    sid, batch = next(iter(stream))
    assert sid == 3 and batch.num_rows == 3                                  # the same start for stream()


def test_a_new_consumer_works_after_expiration(catalog):
    t = catalog.create_table("db.e", SCHEMA, options={"snapshot.num-retained.min": "1"})
    for i in range(4):
        t.write(pa.table({"id": pa.array([i], pa.int32()), "v": ["x"]}))
    t.expire_snapshots(retain_max=1)
    assert t.snapshot_manager.earliest_id() == 4
    assert sorted(t.read_incremental(consumer_id="late")["id"].to_pylist()) == [0, 1, 2, 3]
    assert t.consumers.get("late") == 5


def test_scan_mode_latest_reads_only_new_changes(catalog):
    t = catalog.create_table("db.l", SCHEMA, options={"scan.mode": "latest"})
    t.write(pa.table({"id": pa.array([1], pa.int32()), "v": ["a"]}))
    assert t.read_incremental(consumer_id="c").num_rows == 0 and t.consumers.get("c") == 2
    t.write(pa.table({"id": pa.array([2], pa.int32()), "v": ["b"]}))
    assert t.read_incremental(consumer_id="c")["id"].to_pylist() == [2]


@pytest.mark.parametrize("mode", ["compacted-full", "from-timestamp", "incremental", "full"])
def test_unsupported_scan_mode_for_incremental_reads_is_named(catalog, mode):
    with pytest.raises(lf.OptionError, match=r"scan.mode"):   # refused at create, or at the read
        t = catalog.create_table("db.m", SCHEMA, options={"scan.mode": mode})
        t.write(pa.table({"id": pa.array([1], pa.int32()), "v": ["a"]}))
        t.read_incremental(consumer_id="c")
