"""Tags: create, read, list, delete, time travel, retention, and files of expired tagged snapshots."""
import datetime as dt
import json
import os
from pathlib import Path
from functools import partial

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.maintenance.references import snapshot_refs
from lakeformat.maintenance.tag import Tag, json_to_local_datetime, local_datetime_to_json
from tests.conftest import id_rows

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])


rows = partial(id_rows, SCHEMA, dt="2024-01-01")


def ids(t: pa.Table) -> list:
    return sorted(t.column("id").to_pylist())


@pytest.fixture
def table(catalog):
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["dt"])
    for i in range(3):                       # snapshots 1..3 hold ids [0], [0,1], [0,1,2]
        t.write(rows([i]))
    return t


def expire_snapshot_files(t, upto: int) -> None:
    """What snapshot expiration does to metadata: snapshot files go, EARLIEST moves on (files
    held by tags stay; nothing else here deletes files)."""
    for i in range(1, upto + 1):
        os.remove(t.snapshot_manager.path(i))
        t.snapshot_manager.forget(i)
    t.snapshot_manager.write_hint("EARLIEST", upto + 1)


def test_create_defaults_to_latest_and_lists_by_snapshot(table):
    b = table.create_tag("b-latest")
    a = table.tags.create("a-first", 1)
    assert (b.snapshot.id, a.snapshot.id) == (3, 1)
    assert [(t.name, t.snapshot_id) for t in table.tags.list()] == [("a-first", 1), ("b-latest", 3)]
    assert table.tags.exists("a-first") and not table.tags.exists("nope")
    assert table.tags.get("a-first") == a
    assert isinstance(a, Tag) and a.create_time is None and a.time_retained is None


def test_tag_file_is_the_snapshot_json_without_retention(table):
    table.create_tag("v1", 2)
    tag_json = json.loads(Path(table.path, "tag", "tag-v1").read_text())
    snap_json = json.loads(Path(table.snapshot_manager.path(2)).read_text())
    assert tag_json == snap_json            # readable by Paimon readers of every version


def test_tag_with_retention_carries_paimon_fields(table):
    before = dt.datetime.now()
    tag = table.create_tag("daily", time_retained=dt.timedelta(days=1))
    d = json.loads(Path(table.path, "tag", "tag-daily").read_text())
    assert d["tagTimeRetained"] == 86400.0
    created = json_to_local_datetime(d["tagCreateTime"])
    assert isinstance(d["tagCreateTime"], list) and before <= created <= dt.datetime.now()
    assert {k: v for k, v in d.items() if not k.startswith("tag")} == json.loads(table.snapshot(3).to_json())
    assert table.tags.get("daily") == tag and tag.expires_at == tag.create_time + dt.timedelta(days=1)
    assert table.create_tag("weekly", time_retained="7 d").time_retained == dt.timedelta(days=7)


def test_java_local_date_time_arrays():
    assert local_datetime_to_json(dt.datetime(2024, 6, 1, 12, 0)) == [2024, 6, 1, 12, 0]
    assert local_datetime_to_json(dt.datetime(2024, 6, 1, 12, 0, 5)) == [2024, 6, 1, 12, 0, 5]
    assert local_datetime_to_json(dt.datetime(2024, 6, 1, 12, 0, 0, 7)) == [2024, 6, 1, 12, 0, 0, 7000]
    assert json_to_local_datetime([2024, 6, 1, 12, 0]) == dt.datetime(2024, 6, 1, 12, 0)
    assert json_to_local_datetime([2024, 6, 1, 12, 0, 5, 123456789]) == dt.datetime(2024, 6, 1, 12, 0, 5, 123456)


def test_reads_a_tag_file_as_java_writes_it(table):
    d = json.loads(table.snapshot(2).to_json())
    d.update(tagCreateTime=[2024, 6, 1, 12, 0], tagTimeRetained=3600.000000000)
    os.makedirs(os.path.join(table.path, "tag"), exist_ok=True)
    with open(os.path.join(table.path, "tag", "tag-java"), "w") as f:
        f.write(json.dumps(d))
    tag = table.tags.get("java")
    assert (tag.snapshot.id, tag.create_time, tag.time_retained) == (
        2, dt.datetime(2024, 6, 1, 12, 0), dt.timedelta(hours=1))


def test_create_errors(catalog, table):
    empty = catalog.create_table("db.empty", SCHEMA)
    with pytest.raises(lf.NotFoundError, match="no snapshot to tag"):
        empty.create_tag("x")
    with pytest.raises(lf.NotFoundError, match="snapshot 9"):
        table.create_tag("x", 9)
    table.create_tag("x", 1)
    with pytest.raises(lf.AlreadyExistsError, match=r"'x' .* exists already .*snapshot 1"):
        table.create_tag("x", 2)
    assert table.tags.get("x").snapshot.id == 1          # nothing overwritten
    with pytest.raises(lf.LakeformatError, match="time_retained"):
        table.create_tag("y", time_retained="soon")
    with pytest.raises(lf.NotFoundError, match="tag 'nope'"):
        table.tags.get("nope")
    with pytest.raises(lf.NotFoundError, match="tag 'nope'"):
        table.delete_tag("nope")


@pytest.mark.parametrize("name", ["", " ", " a", "a/b", "a\\b", "..", ".hidden", "../x", "a\nb", "a\x00",
                                  "123", "x" * 201, None, 7])
def test_bad_tag_names(table, name):
    with pytest.raises(lf.InvalidNameError):
        table.create_tag(name)
    assert not os.path.exists(os.path.join(table.path, "tag")) or os.listdir(os.path.join(table.path, "tag")) == []


def test_names_paimon_auto_tags_use_are_fine(table):
    table.create_tag("2024-06-01 13")
    table.create_tag("v1.0")
    assert table.tags.names() == ["2024-06-01 13", "v1.0"]


def test_time_travel_by_tag(table):
    table.create_tag("two", 2)
    table.write(rows([7], dt="2024-01-02"))
    assert ids(table.read(tag="two")) == [0, 1]
    assert ids(table.read(columns=["id"], filter=lf.col("id") == 1, tag="two")) == [1]
    assert sum(b.num_rows for b in table.to_batches(tag="two")) == 2
    splits = table.scan(tag="two").plan()
    assert splits and {s.snapshot_id for s in splits} == {2}
    with pytest.raises(lf.LakeformatError, match="not several"):
        table.read(snapshot_id=1, tag="two")
    with pytest.raises(lf.NotFoundError, match="tag 'nope'"):
        table.read(tag="nope")


def test_scan_tag_name_option(table):
    table.create_tag("one", 1)
    table.alter(lf.SetOption("scan.tag-name", "one"))
    assert ids(table.read()) == [0]
    assert ids(table.read(snapshot_id=3)) == [0, 1, 2]      # an explicit choice wins


def test_tag_reads_after_its_snapshot_expired(table):
    table.create_tag("one", 1)
    table.write(rows([9]), overwrite=True)           # snapshot 4 replaces everything
    expire_snapshot_files(table, 3)
    assert ids(table.read(tag="one")) == [0]
    assert ids(table.read()) == [9]
    assert table.tags.create("again", 1).snapshot.id == 1   # an expired id is taggable via a tag


def test_delete_keeps_files_while_the_snapshot_exists(table):
    table.create_tag("two", 2)
    files = snapshot_refs(table.ctx, table.snapshot(2)).paths(table.path)
    table.delete_tag("two")
    assert not table.tags.exists("two") and all(os.path.exists(p) for p in files)
    assert ids(table.read(snapshot_id=2)) == [0, 1]


def test_delete_of_expired_tag_removes_only_its_own_files(table):
    table.create_tag("two", 2)
    table.create_tag("two-again", 2)
    table.write(rows([9]), overwrite=True)           # snapshot 4: the data of tag "two" is dead
    expire_snapshot_files(table, 3)
    tagged = snapshot_refs(table.ctx, table.tags.get("two").snapshot)
    live = snapshot_refs(table.ctx, table.latest_snapshot())
    table.delete_tag("two")                          # another tag still holds snapshot 2
    assert all(os.path.exists(p) for p in tagged.paths(table.path))
    table.delete_tag("two-again")
    only_tag = (tagged - live).paths(table.path)
    assert only_tag and not any(os.path.exists(p) for p in only_tag)
    assert all(os.path.exists(p) for p in live.paths(table.path))
    assert ids(table.read()) == [9]


def test_delete_of_expired_tag_keeps_files_a_neighbour_tag_needs(table):
    table.create_tag("one", 1)
    table.create_tag("two", 2)
    table.write(rows([9]), overwrite=True)
    expire_snapshot_files(table, 3)
    table.delete_tag("two")
    assert ids(table.read(tag="one")) == [0]         # id 0's file is shared with tag "one"


def test_expire_by_time_retained(table):
    table.create_tag("forever", 1)
    table.create_tag("hour", 2, time_retained=dt.timedelta(hours=1))
    table.alter(lf.SetOption("tag.default-time-retained", "2 h"))
    table.create_tag("default", 3)
    assert table.tags.get("default").time_retained == dt.timedelta(hours=2)
    now = dt.datetime.now()
    assert table.tags.expire(now) == []
    assert table.tags.expire(now + dt.timedelta(minutes=90)) == ["hour"]
    assert table.tags.expire(now + dt.timedelta(days=365)) == ["default"]
    assert table.tags.names() == ["forever"]


def test_delete_dry_run(table):
    table.create_tag("one", 1)
    table.write(rows([9]), overwrite=True)
    expire_snapshot_files(table, 3)
    before = set(snapshot_refs(table.ctx, table.tags.get("one").snapshot).paths(table.path))
    n = table.delete_tag("one", dry_run=True)
    assert n > 0 and table.tags.names() == ["one"] and all(os.path.exists(p) for p in before)
    assert table.delete_tag("one") == n and not table.tags.exists("one")
    assert table.tags.expire(dry_run=True) == []


def test_delete_of_expired_tag_keeps_what_a_long_lived_changelog_needs(catalog):
    pk = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
    t = catalog.create_table("db.cl", pk, primary_keys=["id"], options={"bucket": "1", "changelog-producer": "input"})
    t.write(pa.table({"id": [1], "v": ["a"]}, schema=pk))
    t.create_tag("first", 1)
    t.write(pa.table({"id": [1], "v": ["b"]}, schema=pk), overwrite=True)
    snap1 = t.snapshot(1)
    os.makedirs(os.path.join(t.path, "changelog"))
    with open(os.path.join(t.path, "changelog", "changelog-1"), "w") as f:   # what changelog retention does
        f.write(snap1.to_json())
    expire_snapshot_files(t, 1)
    from lakeformat.maintenance.references import changelog_refs
    needed = changelog_refs(t.ctx, snap1).paths(t.path)
    assert len(needed) >= 3                      # list, manifest, changelog file
    assert t.delete_tag("first") > 0             # its data file and data manifests go ...
    assert all(os.path.exists(p) for p in needed)   # ... its changelog stays
    assert t.read().to_pylist() == [{"id": 1, "v": "b"}]
