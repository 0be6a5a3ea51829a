"""Tables lakeformat writes with ``metadata.iceberg.storage`` on are read by PyIceberg and DuckDB
exactly as lakeformat reads them, at every retained snapshot."""
import os
from pathlib import Path

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.errors import OptionError, SchemaError
from lakeformat.maintenance.iceberg import iceberg_files
from tests.conftest import EVENTS, events
from tests.iceberg.readers import (
    assert_same_everywhere,
    duckdb_rows,
    lakeformat_rows,
    pyiceberg_rows,
    pyiceberg_snapshots,
)

ON = {"metadata.iceberg.storage": "table-location"}


def test_partitioned_append_table_through_overwrite_compaction_and_expiration(catalog):
    t = catalog.create_table("db.t", EVENTS, partition_keys=["dt"], options={
        **ON, "snapshot.num-retained.min": "2", "snapshot.num-retained.max": "4",
        "compaction.min.file-num": "3"})
    for i in range(4):
        t.write(events(3, "2024-01-01" if i % 2 else "2024-01-02", start=10 * i))
    assert_same_everywhere(t)
    t.write(events(2, "2024-01-01", start=100), overwrite=True)   # replaces one partition
    assert_same_everywhere(t)
    t.compact(full=True)                                          # merges the other partition's files
    assert t.latest_snapshot().commit_kind == "COMPACT"
    assert_same_everywhere(t)
    # retention keeps 4 Paimon snapshots; the Iceberg view keeps exactly those
    assert [s.id for s in t.snapshots()] == [3, 4, 5, 6]
    files = iceberg_files(t.ctx)
    names = os.listdir(files.dir)
    assert [n for n in names if n.endswith(".metadata.json")] == ["v6.metadata.json"]   # older versions deleted
    # the expired snapshots' manifest lists went, and their manifests no kept snapshot shares
    assert sorted(int(n.split("-")[1]) for n in names if n.startswith("snap-")) == [3, 4, 5, 6]
    assert Path(files.dir, "version-hint.text").read_text() == "6"
    # DuckDB also finds the table by its directory (version-hint.text)
    assert duckdb_rows(t, location=t.path) == lakeformat_rows(t)


def test_evolved_schema_keeps_field_ids(catalog):
    t = catalog.create_table("db.t", EVENTS, partition_keys=["dt"], options=ON)
    t.write(events(3))
    t.alter(lf.AddColumn("qty", pa.int32()), lf.RenameColumn("behavior", "action"))
    t.write(pa.table({"user_id": [7], "action": ["buy"], "price": [1.0], "dt": ["2024-01-01"], "qty": [5]},
                     schema=t.arrow_schema()))
    t.alter(lf.DropColumn("price"))
    t.write(pa.table({"user_id": [8], "action": ["pv"], "dt": ["2024-01-02"], "qty": [1]},
                     schema=t.arrow_schema()))
    assert_same_everywhere(t)
    latest = pyiceberg_rows(t)
    assert {"user_id": 0, "action": "pv", "dt": "2024-01-01", "qty": None} in latest


def test_primary_key_table_shows_the_compacted_files(catalog):
    schema = pa.schema([pa.field("id", pa.int64(), False), ("name", pa.string()), ("dt", pa.string())])
    t = catalog.create_table("db.pk", schema, partition_keys=["dt"], primary_keys=["id", "dt"],
                             options={**ON, "bucket": "2"})
    t.write(pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"], "dt": ["d1"] * 3}, schema=schema))
    t.write(pa.table({"id": [2, 4], "name": ["B", "d"], "dt": ["d1", "d2"]}, schema=schema))
    assert pyiceberg_rows(t) == []                   # level-0 sorted runs: not in the Iceberg view yet
    t.compact(full=True)
    compacted = t.latest_snapshot().id
    assert pyiceberg_rows(t) == lakeformat_rows(t) == duckdb_rows(t)
    t.delete(pa.table({"id": [1], "dt": ["d1"]}))
    t.write(pa.table({"id": [3], "name": ["C"], "dt": ["d1"]}, schema=schema))
    # until the next full compaction Iceberg readers see the last compacted state
    assert pyiceberg_rows(t) == lakeformat_rows(t, compacted) == duckdb_rows(t)
    t.compact(full=True)
    assert pyiceberg_rows(t) == lakeformat_rows(t) == duckdb_rows(t)
    assert {"id": 3, "name": "C", "dt": "d1"} in pyiceberg_rows(t)
    assert all(r["id"] != 1 for r in pyiceberg_rows(t))
    for sid in pyiceberg_snapshots(t):   # every snapshot: the files at the highest level then
        top = [f for f in t.files(sid) if f["level"] == 5]
        assert sum(f["row_count"] for f in top) == len(pyiceberg_rows(t, sid))


def test_hadoop_catalog_puts_metadata_beside_the_warehouse(catalog, tmp_path):
    t = catalog.create_table("db.cities", pa.schema([("country", pa.string()), ("name", pa.string())]),
                             options={"metadata.iceberg.storage": "hadoop-catalog"})
    t.write(pa.table({"country": ["usa", "germany"], "name": ["new york", "berlin"]}))
    t.write(pa.table({"country": ["germany"], "name": ["hamburg"]}))
    assert iceberg_files(t.ctx).dir == str(tmp_path / "wh" / "iceberg" / "db" / "cities" / "metadata")
    assert not os.path.exists(os.path.join(t.path, "metadata"))
    assert_same_everywhere(t)
    assert duckdb_rows(t, location=str(tmp_path / "wh" / "iceberg" / "db" / "cities")) == lakeformat_rows(t)


def test_types_iceberg_readers_cannot_read_are_refused(catalog):
    with pytest.raises(SchemaError, match=r"'tags'.*cannot be published as Iceberg"):
        catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("tags", pa.list_(pa.string()))]), options=ON)
    t = catalog.create_table("db.t2", pa.schema([("id", pa.int64())]), options=ON)
    with pytest.raises(SchemaError, match="'ts'"):
        t.alter(lf.AddColumn("ts", pa.timestamp("s")))   # TIMESTAMP(0): not in Paimon's Iceberg mapping
    with pytest.raises(OptionError, match=r"hive-catalog.*not supported by lakeformat"):
        catalog.create_table("db.t4", pa.schema([("id", pa.int64())]),
                             options={"metadata.iceberg.storage": "hive-catalog"})
    with pytest.raises(OptionError, match="format-version"):
        catalog.create_table("db.t5", pa.schema([("id", pa.int64())]),
                             options={**ON, "metadata.iceberg.format-version": "3"})


def test_many_types_and_bounds(catalog):
    import datetime as dt
    from decimal import Decimal
    schema = pa.schema([("b", pa.bool_()), ("i", pa.int32()), ("l", pa.int64()), ("f", pa.float32()),
                        ("d", pa.float64()), ("dec", pa.decimal128(10, 2)), ("s", pa.string()),
                        ("bin", pa.binary()), ("day", pa.date32()), ("ts", pa.timestamp("us")),
                        ("tz", pa.timestamp("us", tz="UTC")), ("ms", pa.timestamp("ms")), ("i8", pa.int8()),
                        ("p", pa.date32())])
    t = catalog.create_table("db.types", schema, partition_keys=["p"], options=ON)
    rows = pa.table({"b": [True, False], "i": [1, -2], "l": [2**40, -3], "f": [1.5, -0.5], "d": [2.25, None],
                     "dec": [Decimal("12.34"), Decimal("-0.01")], "s": ["x" * 40, "é"], "bin": [b"\x00\x01", b""],
                     "day": [dt.date(2024, 1, 1), dt.date(1969, 12, 31)],
                     "ts": [dt.datetime(2024, 1, 1, 12), dt.datetime(1960, 1, 1)],
                     "tz": [dt.datetime(2024, 1, 1, tzinfo=dt.UTC)] * 2,
                     "ms": [dt.datetime(2024, 1, 1, 0, 0, 0, 123000), None], "i8": [-1, 7],
                     "p": [dt.date(2024, 5, 1), dt.date(2024, 5, 2)]}, schema=schema)
    t.write(rows)
    assert_same_everywhere(t)
    from pyiceberg.table import StaticTable
    from tests.iceberg.readers import metadata_path
    st = StaticTable.from_metadata(metadata_path(t))
    # the bounds prune: a filter outside every file's range plans no file
    assert len(list(st.scan(row_filter="l > 1099511627776").plan_files())) == 0
    assert len(list(st.scan(row_filter="s = 'é'").plan_files())) == 1
    assert [r["i"] for r in pyiceberg_rows(t) if r["p"] == dt.date(2024, 5, 2)] == [-2]
