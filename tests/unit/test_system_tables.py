"""System tables: Paimon's column names, values that agree with the table's metadata."""
import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.table.system_tables import SYSTEM_TABLES, sorted_runs, system_table
from lakeformat.format.manifest import DataFileMeta
from tests.conftest import EVENTS, events

PK = pa.schema([pa.field("id", pa.int64(), False), ("name", pa.string()), pa.field("dt", pa.string(), False)])

COLUMNS = {
    "snapshots": ["snapshot_id", "schema_id", "commit_user", "commit_identifier", "commit_kind", "commit_time",
                  "base_manifest_list", "delta_manifest_list", "changelog_manifest_list", "total_record_count",
                  "delta_record_count", "changelog_record_count", "watermark"],
    "schemas": ["schema_id", "fields", "partition_keys", "primary_keys", "options", "comment", "update_time"],
    "options": ["key", "value"],
    "files": ["partition", "bucket", "file_path", "file_format", "schema_id", "level", "record_count",
              "file_size_in_bytes", "min_key", "max_key", "null_value_counts", "min_value_stats",
              "max_value_stats", "min_sequence_number", "max_sequence_number", "creation_time", "file_source"],
    "manifests": ["file_name", "file_size", "num_added_files", "num_deleted_files", "schema_id",
                  "min_partition_stats", "max_partition_stats"],
    "partitions": ["partition", "record_count", "file_size_in_bytes", "file_count", "last_update_time"],
    "buckets": ["partition", "bucket", "record_count", "file_size_in_bytes", "file_count", "last_update_time",
                "sorted_runs"],
    "consumers": ["consumer_id", "next_snapshot_id"],
    "tags": ["tag_name", "snapshot_id", "schema_id", "commit_time", "record_count", "create_time", "time_retained"],
}


@pytest.fixture
def pk(catalog):
    t = catalog.create_table("db.pk", PK, partition_keys=["dt"], primary_keys=["id", "dt"],
                             options={"bucket": "2", "write-only": "true"})
    t.write(pa.table({"id": [1, 2, 3], "name": ["a", "b", None], "dt": ["x", "x", "y"]}, schema=PK))
    t.write(pa.table({"id": [2, 9], "name": ["b2", "z"], "dt": ["x", "x"]}, schema=PK))
    return t


def test_every_table_has_paimons_columns_even_when_empty(catalog):
    t = catalog.create_table("db.e", EVENTS)
    assert sorted(SYSTEM_TABLES) == sorted(COLUMNS)
    for name, cols in COLUMNS.items():
        got = t.system_table(name)
        assert got.column_names == cols, name
        assert got.num_rows == (1 if name == "schemas" else 0), name


def test_snapshots(pk):
    s = pk.system_table("snapshots")
    assert s.column("snapshot_id").to_pylist() == [1, 2]
    assert s.column("commit_kind").to_pylist() == ["APPEND", "APPEND"]
    assert s.column("total_record_count").to_pylist() == [3, 5]
    assert s.schema.field("commit_time").type == pa.timestamp("ms")
    when = s.column("commit_time")[1].as_py()
    assert abs(when - dt.datetime.now()) < dt.timedelta(minutes=5)     # local wall-clock time
    expected = dt.datetime.fromtimestamp(pk.snapshot(2).time_millis / 1000)
    assert abs(when - expected) <= dt.timedelta(milliseconds=1)


def test_schemas_and_options(pk):
    pk.alter(lf.SetOption("snapshot.num-retained.min", "4"))
    s = pk.system_table("schemas")
    assert s.column("schema_id").to_pylist() == [0, 1]
    fields = json.loads(s.column("fields")[0].as_py())
    assert [f["name"] for f in fields] == ["id", "name", "dt"] and fields[0]["type"] == "BIGINT NOT NULL"
    assert json.loads(s.column("primary_keys")[0].as_py()) == ["id", "dt"]
    assert json.loads(s.column("options")[1].as_py())["snapshot.num-retained.min"] == "4"
    o = pk.system_table("options").to_pylist()
    assert {"key": "bucket", "value": "2"} in o and {"key": "snapshot.num-retained.min", "value": "4"} in o


def test_files_of_a_primary_key_table(pk):
    f = pk.system_table("files")
    rows = f.to_pylist()
    assert sum(r["record_count"] for r in rows) == 5
    assert {r["partition"] for r in rows} == {"dt=x", "dt=y"}
    assert all(Path(r["file_path"]).is_file() and r["file_format"] == "parquet" for r in rows)
    assert all(r["level"] == 0 and r["creation_time"] is not None and r["file_source"] == "APPEND" for r in rows)
    # keys decoded: the first commit put ids 1 and 2 in partition x (one or two buckets)
    first = [r for r in pk.system_table("files", snapshot_id=1).to_pylist() if r["partition"] == "dt=x"]
    assert {k for r in first for k in (r["min_key"], r["max_key"])} == {"[1]", "[2]"}
    y = next(r for r in rows if r["partition"] == "dt=y")
    assert (y["min_key"], y["max_key"]) == ("[3]", "[3]")
    assert y["null_value_counts"] == "{id=0, name=1, dt=0}"
    assert y["min_value_stats"] == "{id=3, name=null, dt=y}"
    # the first snapshot's files
    assert sum(pk.system_table("files", snapshot_id=1).column("record_count").to_pylist()) == 3


def test_files_of_an_append_table_have_no_keys(catalog):
    t = catalog.create_table("db.a", EVENTS, partition_keys=["dt"])
    t.write(events(4, "2024-01-01"))
    f = t.system_table("files").to_pylist()
    assert len(f) == 1 and f[0]["min_key"] is None and f[0]["max_key"] is None
    assert f[0]["partition"] == "dt=2024-01-01" and f[0]["bucket"] == 0
    assert f[0]["max_value_stats"] == "{user_id=3, behavior=pv, price=4.5, dt=2024-01-01}"


def test_partitions_and_buckets_agree_with_the_files(pk):
    files = pk.system_table("files").to_pylist()
    parts = {r["partition"]: r for r in pk.system_table("partitions").to_pylist()}
    assert sorted(parts) == ["dt=x", "dt=y"]
    for p, r in parts.items():
        mine = [f for f in files if f["partition"] == p]
        assert r["record_count"] == sum(f["record_count"] for f in mine)
        assert r["file_count"] == len(mine)
        assert r["file_size_in_bytes"] == sum(f["file_size_in_bytes"] for f in mine)
        assert r["last_update_time"] == max(f["creation_time"] for f in mine)
    buckets = pk.system_table("buckets").to_pylist()
    assert sum(b["file_count"] for b in buckets) == len(files)
    assert all(b["sorted_runs"] == b["file_count"] for b in buckets)      # write-only: all level 0
    pk.compact(full=True)
    after = pk.system_table("buckets").to_pylist()
    assert all(b["sorted_runs"] == 1 for b in after)
    assert {f["level"] for f in pk.system_table("files").to_pylist()} == {5}
    assert sum(b["record_count"] for b in after) == 4                   # id 2 merged in partition x


def test_sorted_runs_count_levels_once():
    files = [DataFileMeta(f"f{i}", 1, 1, level=lvl) for i, lvl in enumerate([0, 0, 1, 1, 3])]
    assert sorted_runs(files, primary_key=True) == 4
    assert sorted_runs(files, primary_key=False) == 5


def test_manifests(pk):
    m = pk.system_table("manifests").to_pylist()
    assert sum(r["num_added_files"] for r in m) == len(pk.system_table("files"))
    assert all(r["min_partition_stats"] == "{x}" for r in m)
    assert {r["max_partition_stats"] for r in m} == {"{x}", "{y}"}
    assert len(pk.system_table("manifests", snapshot_id=1)) == 1


def test_partition_strings_with_several_keys_and_nulls(catalog):
    schema = pa.schema([("x", pa.int64()), ("dt", pa.string()), ("hr", pa.int32())])
    t = catalog.create_table("db.m", schema, partition_keys=["dt", "hr"])
    t.write(pa.table({"x": [1, 2], "dt": ["2024-01-01", None], "hr": [3, 4]}, schema=schema))
    assert t.system_table("partitions").column("partition").to_pylist() == \
        ["dt=2024-01-01/hr=3", "dt=__DEFAULT_PARTITION__/hr=4"]
    assert sorted(t.system_table("manifests").column("min_partition_stats").to_pylist()) == ["{2024-01-01, 3}"]


def test_consumers_and_tags(pk):
    pk.consumers.record("job-a", 2)
    pk.consumers.record("job-b", 1)
    assert pk.system_table("consumers").to_pylist() == [{"consumer_id": "job-a", "next_snapshot_id": 2},
                                                         {"consumer_id": "job-b", "next_snapshot_id": 1}]
    pk.create_tag("first", snapshot_id=1)
    pk.create_tag("kept", time_retained=dt.timedelta(days=2))
    tags = {r["tag_name"]: r for r in pk.system_table("tags").to_pylist()}
    assert tags["first"]["snapshot_id"] == 1 and tags["first"]["record_count"] == 3
    assert tags["first"]["create_time"] is None and tags["first"]["time_retained"] is None
    assert tags["kept"]["snapshot_id"] == 2 and tags["kept"]["time_retained"] == dt.timedelta(days=2)
    assert tags["kept"]["create_time"] is not None


def test_bad_names_are_named(pk):
    with pytest.raises(lf.LakeformatError, match=r"unknown system table 'nope'.*snapshots"):
        pk.system_table("nope")
    with pytest.raises(lf.LakeformatError, match="'options' does not depend on a snapshot"):
        system_table(pk, "options", snapshot_id=1)
    with pytest.raises(lf.NotFoundError, match="99"):
        pk.system_table("files", snapshot_id=99)
