"""Metadata is input too: a manifest, snapshot, tag, consumer or stage file that names a path
outside the table, or is not what its kind must be, is reported as corrupt; nothing outside the
table is ever read or deleted, and the table is left exactly as it was."""
import json
import os
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.table import staging
from lakeformat.format.manifest import DataFileMeta
from tests.conftest import events


def tamper_manifests(table_path: str, change) -> int:
    """Rewrite every manifest of the table with ``change(file_record)`` applied; returns how many
    entries it changed."""
    changed = 0
    for p in Path(table_path, "manifest").iterdir():
        if not p.name.startswith("manifest-") or p.name.startswith("manifest-list-"):
            continue
        with open(p, "rb") as f:
            reader = fastavro.reader(f)
            schema, codec, records = reader.writer_schema, reader.codec, list(reader)
        for r in records:
            changed += bool(change(r["_FILE"]))
        with open(p, "wb") as f:
            fastavro.writer(f, schema, records, codec=codec)
    return changed


@pytest.fixture
def victim(tmp_path):
    p = tmp_path / "victim.parquet"
    p.write_bytes(b"precious, not a table's file")
    return p


@pytest.fixture
def overwritten(catalog):
    """Snapshot 1 adds a file; snapshot 2 (an overwrite) deletes it: expiring 1 deletes that file."""
    t = catalog.create_table("db.t", events(1).schema, options={"snapshot.num-retained.min": "1"})
    t.write(events(3))
    first = t.files()[0]["file_name"]
    t.write(events(2), overwrite=True)
    return t, first


def snapshot_state(t):
    return sorted(str(p.relative_to(t.path)) for p in Path(t.path).rglob("*") if p.is_file())


@pytest.mark.parametrize("how", ["relative", "external"])
def test_a_manifest_naming_a_file_outside_the_table_is_corrupt_for_reads_and_expiration(overwritten, victim, how):
    t, first = overwritten
    rel = os.path.relpath(victim, Path(t.path) / "bucket-0")

    def change(f):
        if f["_FILE_NAME"] != first:
            return False
        if how == "relative":
            f["_FILE_NAME"] = rel
        else:
            f["_EXTERNAL_PATH"] = str(victim)
        return True
    assert tamper_manifests(t.path, change) >= 2   # its ADD and its DELETE
    before = snapshot_state(t)
    with pytest.raises(lf.CorruptFileError, match=r"plain file name|external path"):
        t.read(snapshot_id=1)
    with pytest.raises(lf.CorruptFileError, match=r"plain file name|external path"):
        t.expire_snapshots(retain_max=1)
    assert victim.exists() and snapshot_state(t) == before


def test_commit_messages_cannot_name_files_outside_the_bucket():
    for bad in ("../x.parquet", "a/b.parquet", "..", "", "x\0y", "z" * 300):
        with pytest.raises(lf.InvalidNameError, match="plain file name"):
            DataFileMeta(bad, 1, 1)
    with pytest.raises(lf.InvalidNameError):
        DataFileMeta("ok.parquet", 1, 1, extra_files=("../../index",))


@pytest.mark.parametrize("content", ["[1, 2]", '"text"', "42", "null", '{"id": "one"}', "{}", "{ truncated",
                                     b"\xff\xfe", '{"id": 1, "schemaId": 0, "baseManifestList": "../../x", '
                                     '"deltaManifestList": "d", "commitUser": "u", "commitIdentifier": 1, '
                                     '"commitKind": "APPEND", "timeMillis": 1, "totalRecordCount": 1, '
                                     '"deltaRecordCount": 1}'])
def test_a_snapshot_file_that_is_not_a_snapshot_is_corrupt(catalog, content):
    t = catalog.create_table("db.t", events(1).schema)
    t.write(events(3))
    t.write(events(3))
    path = Path(t.snapshot_manager.path(2))
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    fresh = catalog.get_table("db.t")
    with pytest.raises(lf.CorruptFileError, match="snapshot-2"):
        fresh.read()
    with pytest.raises(lf.CorruptFileError):
        fresh.snapshot(2)


@pytest.mark.parametrize("content", ["[1]", "{}", '{"id": 0, "fields": 3}', "7"])
def test_a_tag_or_schema_file_that_is_not_one_is_corrupt(catalog, content):
    t = catalog.create_table("db.t", events(1).schema)
    t.write(events(3))
    t.create_tag("v1")
    Path(t.tags.path("v1")).write_text(content)
    with pytest.raises(lf.CorruptFileError, match="tag-v1"):
        t.read(tag="v1")
    Path(t.schema_manager.path(0)).write_text(content)
    with pytest.raises(lf.CorruptFileError, match="schema-0"):
        catalog.get_table("db.t")


@pytest.mark.parametrize("content", ["[1]", '{"nextSnapshot": "3"}', '{"nextSnapshot": true}', "x"])
def test_a_consumer_file_that_is_not_one_is_corrupt(catalog, content):
    t = catalog.create_table("db.t", events(1).schema)
    t.write(events(3))
    t.consumers.record("etl", 1)
    Path(t.consumers.path("etl")).write_text(content)
    with pytest.raises(lf.CorruptFileError, match="consumer-etl"):
        t.consumers.get("etl")


@pytest.mark.parametrize("content", ["[1]", '{"version": 1}', "null"])
def test_a_stage_file_that_is_not_one_is_corrupt(catalog, content):
    t = catalog.create_table("db.t", events(1).schema)
    w = t.new_write("job")
    w.write(events(3))
    staging.stage(t, w.prepare_commit(), "s1", commit_user="job", identifier=1)
    staged = [p for p in Path(t.path).rglob("*") if p.is_file() and "s1" in p.name]
    assert staged
    staged[0].write_text(content)
    with pytest.raises(lf.CorruptFileError):
        staging.load_staged(t, "s1")


def test_a_manifest_list_in_place_of_a_manifest_is_corrupt(catalog):
    t = catalog.create_table("db.t", events(1).schema)
    t.write(events(3))
    mdir = Path(t.path) / "manifest"
    lst = max((p for p in mdir.iterdir() if p.name.startswith("manifest-list-")), key=lambda p: p.stat().st_size)
    for p in mdir.iterdir():
        if not p.name.startswith("manifest-list-"):
            p.write_bytes(lst.read_bytes())
    with pytest.raises(lf.CorruptFileError, match="not a Paimon manifest"):
        catalog.get_table("db.t").read()


def test_plain_rows_still_read(catalog):
    t = catalog.create_table("db.t", events(1).schema)
    t.write(events(3))
    assert t.read().num_rows == 3 and isinstance(t.read(), pa.Table)


@pytest.mark.parametrize("content", [b"\xff\xfe", b'{"id": 0, "fields": [[1]], "highestFieldId": 0}',
                                     b'{"tagCreateTime": [2024, 1, 1, 0, 0], "tagTimeRetained": 1e999}'])
def test_undecodable_schema_and_tag_files_are_corrupt(catalog, content):
    t = catalog.create_table("db.t", events(1).schema)
    t.write(events(3))
    t.create_tag("v1")
    tag = json.loads(Path(t.tags.path("v1")).read_text())
    if content.startswith(b'{"tagCreateTime"'):
        Path(t.tags.path("v1")).write_text(json.dumps({**tag, **json.loads(content.replace(b"1e999", b"1e308"))})
                                           .replace("1e+308", "1e999"))
        with pytest.raises(lf.CorruptFileError, match="tag-v1"):
            t.tags.get("v1")
        return
    Path(t.schema_manager.path(0)).write_bytes(content)
    with pytest.raises(lf.CorruptFileError, match="schema-0"):
        catalog.get_table("db.t")
