"""Paimon tags are exported as Iceberg tag refs, as Paimon does: a reader finds a tag's snapshot
by name (PyIceberg's ``snapshot_by_name``) and reads exactly what lakeformat reads there. Tags
made or deleted through lakeformat update the current Iceberg version at once (its number stays
the Paimon snapshot's); a tag made elsewhere shows with the next commit; a tag whose snapshot
expired names no Iceberg snapshot and is left out (a ref to a missing snapshot breaks readers)."""
from pyiceberg.table import StaticTable

from lakeformat.maintenance.iceberg import iceberg_files
from lakeformat.maintenance.tag import TagManager
from tests.conftest import EVENTS, events
from tests.iceberg.readers import assert_same_everywhere, lakeformat_rows, metadata_path, pyiceberg_rows

ON = {"metadata.iceberg.storage": "table-location"}


def iceberg_tags(table) -> dict:
    st = StaticTable.from_metadata(metadata_path(table))
    return {name: ref.snapshot_id for name, ref in st.metadata.refs.items() if ref.snapshot_ref_type == "tag"}


def test_tags_are_iceberg_tag_refs_readers_find_by_name(catalog):
    t = catalog.create_table("db.t", EVENTS, partition_keys=["dt"], options=ON)
    t.write(events(2))
    t.write(events(2, "2024-01-02", start=10))
    t.write(events(1, start=20))
    t.create_tag("first", 1)
    t.create_tag("second", 2)
    files = iceberg_files(t.ctx)
    assert files.current_version() == 3 and files.read_hint() == 3
    assert sorted(files.versions()) == [3]   # the current version was rewritten, not a new one added
    assert iceberg_tags(t) == {"first": 1, "second": 2}
    st = StaticTable.from_metadata(metadata_path(t))
    assert st.current_snapshot().snapshot_id == 3
    for name, sid in (("first", 1), ("second", 2)):
        assert st.snapshot_by_name(name).snapshot_id == sid
        assert pyiceberg_rows(t, st.snapshot_by_name(name).snapshot_id) == lakeformat_rows(t, sid)
    t.delete_tag("first")
    assert iceberg_tags(t) == {"second": 2}
    t.write(events(1, start=30))   # the next version keeps the tags
    assert iceberg_tags(t) == {"second": 2}
    assert_same_everywhere(t)
    t.iceberg_sync(rebuild=True)   # and so does a rebuilt history
    assert iceberg_tags(t) == {"second": 2}


def test_a_tag_made_elsewhere_shows_with_the_next_commit(catalog):
    t = catalog.create_table("db.t", EVENTS, options=ON)
    t.write(events(2))
    TagManager(t.ctx).create("elsewhere", 1)   # as another writer (pypaimon, Paimon) would: no publish
    assert iceberg_tags(t) == {}
    t.write(events(1, start=5))
    assert iceberg_tags(t) == {"elsewhere": 1}
    assert StaticTable.from_metadata(metadata_path(t)).snapshot_by_name("elsewhere").snapshot_id == 1
    TagManager(t.ctx).delete("elsewhere")
    assert t.iceberg_sync().retagged
    assert iceberg_tags(t) == {}


def test_a_tag_on_an_expired_snapshot_is_left_out(catalog):
    t = catalog.create_table("db.t", EVENTS, options={**ON, "write-only": "true"})
    for i in range(4):
        t.write(events(1, start=i))
    t.create_tag("old", 1)
    t.create_tag("kept", 3)
    t.expire_snapshots(retain_min=2, retain_max=2)
    assert [s.id for s in t.snapshots()] == [3, 4]
    assert iceberg_tags(t) == {"kept": 3}
    assert pyiceberg_rows(t, 3) == lakeformat_rows(t, 3)
    assert_same_everywhere(t)
