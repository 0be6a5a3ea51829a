"""Metadata lakeformat does not understand is refused, naming it, never ignored into a wrong
result: unknown fields of manifests, manifest lists, index manifests, snapshots and schemas (a
newer Paimon), and fields whose meaning lakeformat does not implement (``_WRITE_COLS``,
``_WRITE_COLS_SEQUENCES``, a snapshot's ``nextRowId``). Unknown fields that are null say nothing
and are ignored. The files are written by lakeformat's own writers, then altered."""
import datetime as dt
import json
import shutil
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.table import staging
from lakeformat.errors import LakeformatError, UnsupportedError
from lakeformat.format.metadata_checks import UnsupportedMetadataError
from lakeformat.io.manifests import ManifestList
from tests.conftest import events

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "paimon-java"


def alter_avro(path: Path, add_field=None, change=None, into: str | None = None) -> None:
    """Rewrite the Avro file ``path``: ``add_field`` (an Avro field) added to its records (or to
    their ``into`` record field), ``change(record)`` applied to each record."""
    with open(path, "rb") as f:
        reader = fastavro.reader(f)
        schema, codec, records = reader.writer_schema, reader.codec, list(reader)
    if add_field is not None:
        target = schema if into is None else next(x for x in schema["fields"] if x["name"] == into)["type"]
        target["fields"].append(add_field)
    for r in records:
        if change is not None:
            change(r)
    with open(path, "wb") as f:
        fastavro.writer(f, schema, records, codec=codec)


def _opt(name, t):
    return {"name": name, "type": ["null", t], "default": None}


@pytest.fixture
def two_snapshots(catalog):
    """A partitioned table of two appends; the second's manifest is the one altered."""
    t = catalog.create_table("db.t", events(1).schema, partition_keys=["dt"])
    t.write(events(3))
    t.write(events(2, start=10))
    return t


def delta_manifests(t, snapshot_id: int) -> list[Path]:
    s = t.snapshot(snapshot_id)
    return [Path(t.path, "manifest", m.file_name) for m in ManifestList(t.io, t.path).read(s.delta_manifest_list)]


def delta_list(t, snapshot_id: int) -> Path:
    return Path(t.path, "manifest", t.snapshot(snapshot_id).delta_manifest_list)


READS = {
    "columns": lambda t: t.read(),   # manifests decoded as Arrow columns
    "filtered": lambda t: t.read(filter=lf.col("dt") == "2024-01-01"),   # record by record (fastavro)
    "compaction": lambda t: t.compact(full=True),
    "orphan scan": lambda t: t.remove_orphan_files(dry_run=True),
}


@pytest.mark.parametrize("how", list(READS))
def test_an_unknown_data_file_field_with_a_value_is_refused_naming_field_and_file(two_snapshots, how):
    t = two_snapshots
    (manifest,) = delta_manifests(t, 2)

    def set_it(r):
        r["_FILE"]["_NEWER_THING"] = "x"
    alter_avro(manifest, _opt("_NEWER_THING", "string"), set_it, into="_FILE")
    # the orphan scan reports every file it cannot read as a reason to delete nothing
    with pytest.raises(LakeformatError if how == "orphan scan" else UnsupportedMetadataError) as e:
        READS[how](t)
    assert "_NEWER_THING" in str(e.value) and manifest.name in str(e.value) and t.path in str(e.value)
    assert "newer Paimon" in str(e.value)
    if how == "orphan scan":   # a valid file of a newer Paimon is not called broken
        assert "does not understand that file" in str(e.value) and "repair" not in str(e.value)
    assert t.read(snapshot_id=1).num_rows == 3   # the snapshot before it does not name that manifest


def test_an_unknown_entry_field_with_a_value_is_refused(two_snapshots):
    t = two_snapshots
    (manifest,) = delta_manifests(t, 2)

    def set_it(r):
        r["_NEWER_ENTRY_THING"] = 7
    alter_avro(manifest, {"name": "_NEWER_ENTRY_THING", "type": "int"}, set_it)
    with pytest.raises(UnsupportedMetadataError, match="_NEWER_ENTRY_THING"):
        t.read()


@pytest.mark.parametrize("how", ["columns", "filtered"])
def test_an_unknown_field_is_ignored_while_null_everywhere_and_refused_once_set(two_snapshots, how):
    t = two_snapshots
    (manifest,) = delta_manifests(t, 2)
    alter_avro(manifest, _opt("_NEWER_THING", "string"), into="_FILE")
    alter_avro(delta_list(t, 2), _opt("_NEWER_LIST_THING", "long"))
    assert READS[how](t).num_rows == 5   # null says nothing (Avro schema resolution ignores it too)

    seen = []

    def set_it(r):   # one record of the manifest is enough
        if not seen:
            r["_FILE"]["_NEWER_THING"] = "x"
        seen.append(r)
    alter_avro(manifest, change=set_it)
    with pytest.raises(UnsupportedMetadataError, match="_NEWER_THING"):
        READS[how](t)


@pytest.mark.parametrize("how", ["columns", "filtered", "compaction"])
def test_write_cols_naming_some_columns_is_refused_and_the_previous_snapshot_stays_readable(two_snapshots, how):
    t = two_snapshots
    (manifest,) = delta_manifests(t, 2)

    def full(r):   # every column (in any order): the whole row, as null says
        r["_FILE"]["_WRITE_COLS"] = ["dt", "price", "behavior", "user_id"]
    alter_avro(manifest, change=full)
    if how != "compaction":
        assert READS[how](t).num_rows == 5

    def partial(r):
        r["_FILE"]["_WRITE_COLS"] = ["user_id", "dt"]
    alter_avro(manifest, change=partial)
    with pytest.raises(UnsupportedMetadataError) as e:
        READS[how](t)
    msg = str(e.value)
    assert "_WRITE_COLS" in msg and "['user_id', 'dt']" in msg and t.path in msg
    assert t.read(snapshot_id=1).num_rows == 3


def test_an_overwrite_of_a_table_with_a_partial_file_is_refused(two_snapshots):
    """An overwrite reads the live files to delete them: refused, nothing committed."""
    t = two_snapshots
    (manifest,) = delta_manifests(t, 2)

    def partial(r):
        r["_FILE"]["_WRITE_COLS"] = ["user_id"]
    alter_avro(manifest, change=partial)
    with pytest.raises(UnsupportedMetadataError, match="_WRITE_COLS"):
        t.write(events(1, start=50), overwrite=True)
    assert t.latest_snapshot().id == 2


def test_write_cols_sequences_are_refused(two_snapshots):
    t = two_snapshots
    (manifest,) = delta_manifests(t, 2)

    def set_it(r):
        r["_FILE"]["_WRITE_COLS_SEQUENCES"] = [1, 2, 3, 4]
    alter_avro(manifest, _opt("_WRITE_COLS_SEQUENCES", {"type": "array", "items": "long"}), set_it, into="_FILE")
    with pytest.raises(UnsupportedMetadataError, match="_WRITE_COLS_SEQUENCES"):
        t.read()


def test_an_unknown_manifest_list_field_with_a_value_is_refused_but_pruning_hints_are_not(two_snapshots):
    t = two_snapshots
    path = delta_list(t, 2)

    def hints(r):
        r["_TOTAL_BUCKETS"], r["_MIN_ROW_ID"], r["_MAX_ROW_ID"] = 1, 0, 9
    alter_avro(path, _opt("_TOTAL_BUCKETS", "int"), hints)   # what pypaimon writes: a hint only
    assert t.read().num_rows == 5

    def set_it(r):
        r["_NEWER_LIST_THING"] = 1
    alter_avro(path, _opt("_NEWER_LIST_THING", "long"), set_it)
    with pytest.raises(UnsupportedMetadataError) as e:
        t.read()
    assert "_NEWER_LIST_THING" in str(e.value) and path.name in str(e.value)
    assert t.read(snapshot_id=1).num_rows == 3


def test_manifest_sidecar_files_are_refused(two_snapshots):
    """A manifest's extra files are files the table names: ignoring them, the orphan scan would
    delete them."""
    t = two_snapshots

    def set_it(r):
        r["_EXTRA_FILES"] = ["manifest-x.avro.sidecar"]
    alter_avro(delta_list(t, 2), _opt("_EXTRA_FILES", {"type": "array", "items": "string"}), set_it)
    with pytest.raises(LakeformatError, match="_EXTRA_FILES"):
        t.remove_orphan_files(dry_run=True)
    with pytest.raises(UnsupportedMetadataError, match="_EXTRA_FILES"):
        t.read()


def _snapshot_file(t, sid: int) -> Path:
    return Path(t.path, "snapshot", f"snapshot-{sid}")


def _alter_json(path: Path, **changes) -> None:
    d = json.loads(path.read_text())
    d.update(changes)
    path.write_text(json.dumps(d))


def test_an_unknown_snapshot_field_with_a_value_is_refused(two_snapshots):
    t = two_snapshots
    path = _snapshot_file(t, 2)
    _alter_json(path, writerVersion="python-2.1.0", newerThing=None)   # informational, and null: ignored
    assert t.read().num_rows == 5
    fresh = lf.Catalog(str(Path(t.path).parents[1])).get_table("db.t")
    _alter_json(path, newerThing="on")
    with pytest.raises(UnsupportedMetadataError) as e:
        fresh.read()
    assert "newerThing" in str(e.value) and str(path) in str(e.value)
    assert fresh.read(snapshot_id=1).num_rows == 3


def test_an_unknown_commit_kind_is_refused_not_skipped_by_incremental_reads(two_snapshots):
    t = two_snapshots
    path = _snapshot_file(t, 2)
    _alter_json(path, commitKind="UPSERT_FROM_THE_FUTURE")
    fresh = lf.Catalog(str(Path(t.path).parents[1])).get_table("db.t")
    with pytest.raises(UnsupportedMetadataError) as e:
        fresh.read_incremental(1, 2)
    assert "UPSERT_FROM_THE_FUTURE" in str(e.value) and str(path) in str(e.value)
    assert fresh.read(snapshot_id=1).num_rows == 3


def test_newer_record_and_file_versions_are_refused(two_snapshots):
    """Paimon's serializers refuse versions they do not know; so does lakeformat."""
    t = two_snapshots
    (manifest,) = delta_manifests(t, 2)
    wh = str(Path(t.path).parents[1])

    def newer(r):
        r["_VERSION"] = 3
    for path in (manifest, delta_list(t, 2)):
        original = path.read_bytes()
        alter_avro(path, change=newer)
        for read in (READS["columns"], READS["filtered"]):
            with pytest.raises(UnsupportedMetadataError, match="version 3 is newer") as e:
                read(lf.Catalog(wh).get_table("db.t"))
            assert path.name in str(e.value)
        path.write_bytes(original)
    snapshot = _snapshot_file(t, 2)
    _alter_json(snapshot, version=4)
    with pytest.raises(UnsupportedMetadataError, match="snapshot version 4"):
        lf.Catalog(wh).get_table("db.t").read()
    assert lf.Catalog(wh).get_table("db.t").read(snapshot_id=1).num_rows == 3
    _alter_json(snapshot, version=3)
    schema = Path(t.path, "schema", "schema-0")
    _alter_json(schema, version=4)
    with pytest.raises(UnsupportedError, match="schema version 4"):
        lf.Catalog(wh).get_table("db.t").read()


def test_an_unknown_schema_field_with_a_value_is_refused(catalog):
    t = catalog.create_table("db.t", events(1).schema)
    t.write(events(2))
    path = Path(t.path, "schema", "schema-0")
    d = json.loads(path.read_text())
    d["fields"][1]["defaultValue"] = "'pv'"   # a column default: rows read would differ
    path.write_text(json.dumps(d))
    with pytest.raises(UnsupportedError) as e:
        lf.Catalog(str(Path(t.path).parents[1])).get_table("db.t").read()
    assert "defaultValue" in str(e.value) and "schema-0" in str(e.value)
    d["fields"][1]["defaultValue"] = None
    d["newerSchemaThing"] = 1
    path.write_text(json.dumps(d))
    with pytest.raises(UnsupportedError, match="newerSchemaThing"):
        lf.Catalog(str(Path(t.path).parents[1])).get_table("db.t").read()


def test_writing_to_a_table_that_tracks_row_ids_is_refused_reading_is_not(two_snapshots):
    t = two_snapshots
    _alter_json(_snapshot_file(t, 2), nextRowId=5)
    fresh = lf.Catalog(str(Path(t.path).parents[1])).get_table("db.t")
    assert fresh.read().num_rows == 5
    with pytest.raises(UnsupportedMetadataError, match="nextRowId"):
        fresh.write(events(1, start=90))
    assert fresh.latest_snapshot().id == 2
    _alter_json(_snapshot_file(t, 2), nextRowId=0)   # what Paimon Java writes without row tracking
    lf.Catalog(str(Path(t.path).parents[1])).get_table("db.t").write(events(1, start=90))


def test_an_unknown_index_manifest_field_with_a_value_is_refused(tmp_path):
    wh = tmp_path / "parquet"
    shutil.copytree(FIXTURES / "parquet", wh)
    for p in wh.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    name = "pk_table_scan_and_read_dv.pk_table_scan_and_read_dv"
    t = lf.Catalog(str(wh)).get_table(name)
    before = t.read().num_rows
    (index_manifest,) = Path(t.path, "manifest").glob("index-manifest-*")
    alter_avro(index_manifest, _opt("_NEWER_INDEX_THING", "string"))   # null: ignored
    assert lf.Catalog(str(wh)).get_table(name).read().num_rows == before

    def set_it(r):
        r["_NEWER_INDEX_THING"] = "x"
    alter_avro(index_manifest, change=set_it)
    with pytest.raises(UnsupportedMetadataError) as e:
        lf.Catalog(str(wh)).get_table(name).read()
    assert "_NEWER_INDEX_THING" in str(e.value) and index_manifest.name in str(e.value)

    def external(r):   # Paimon's index manifests have this field; lakeformat would look in index/
        r["_NEWER_INDEX_THING"], r["_EXTERNAL_PATH"] = None, "s3://elsewhere/index-1"
    alter_avro(index_manifest, _opt("_EXTERNAL_PATH", "string"), external)
    with pytest.raises(UnsupportedMetadataError, match=r"_EXTERNAL_PATH.*outside the table's index"):
        lf.Catalog(str(wh)).get_table(name).read()


def test_lakeformat_writes_nothing_it_would_refuse(catalog):
    """Every metadata kind lakeformat writes, read back through the strict checks."""
    t = catalog.create_table("db.pk", pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_keys=["id"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}))
    t.write(pa.table({"id": [2], "v": ["B"]}))
    t.compact(full=True)
    t.create_tag("t1")
    fresh = lf.Catalog(str(Path(t.path).parents[1])).get_table("db.pk")
    assert sorted(fresh.read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "v": "a"}, {"id": 2, "v": "B"}, {"id": 3, "v": "c"}]
    assert fresh.read(tag="t1").num_rows == 3
    fresh.remove_orphan_files(dry_run=True)
    tag = Path(t.path, "tag", "tag-t1")   # and the checks did run on them: a tag is a snapshot too
    _alter_json(tag, newerThing=1)
    with pytest.raises(UnsupportedMetadataError, match=f"newerThing.*|.*{tag.name}"):
        fresh.read(tag="t1")


def test_a_changelog_file_of_some_columns_is_refused(catalog):
    """Changelog files are read as rows too: the same rule as data files."""
    t = catalog.create_table("db.c", pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_keys=["id"],
                             options={"bucket": "1", "changelog-producer": "input"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    t.write(pa.table({"id": [1], "v": ["c"]}))
    metas = ManifestList(t.io, t.path).read(t.snapshot(2).changelog_manifest_list)
    assert t.read_incremental(1, 2).num_rows == 1

    def partial(r):
        r["_FILE"]["_WRITE_COLS"] = ["id"]
    for m in metas:
        alter_avro(Path(t.path, "manifest", m.file_name), change=partial)
    with pytest.raises(UnsupportedMetadataError, match="_WRITE_COLS"):
        t.read_incremental(1, 2)
    assert t.read_incremental(0, 1).num_rows == 2


# ---------------------------------------------------------------- index types a newer Paimon writes

NEWER_INDEX = "NEWER_INDEX_KIND"


def _with_newer_index(t, manifest: Path) -> str:
    """Add to the index manifest ``manifest`` an index file of a type lakeformat does not know
    (the file itself placed in index/, as its writer would), for bucket 0; returns its name."""
    name = "index-newer-kind-0"
    Path(t.path, "index", name).parent.mkdir(exist_ok=True)
    Path(t.path, "index", name).write_bytes(b"newer index")
    with open(manifest, "rb") as f:
        reader = fastavro.reader(f)
        schema, codec, records = reader.writer_schema, reader.codec, list(reader)
    extra = dict(records[0], _INDEX_TYPE=NEWER_INDEX, _FILE_NAME=name, _FILE_SIZE=11, _ROW_COUNT=1,
                 _DELETIONS_VECTORS_RANGES=None)
    with open(manifest, "wb") as f:
        fastavro.writer(f, schema, records + [extra], codec=codec)
    return name


@pytest.fixture
def dv_table_with_newer_index(catalog):
    """A deletion-vector table whose latest index manifest also lists an index file of
    a newer Paimon's kind, and an old unreachable file (a real orphan)."""
    t = catalog.create_table("db.pk", pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_keys=["id"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write(pa.table({"id": range(100), "v": ["a"] * 100}))
    t.write(pa.table({"id": [2], "v": ["B"]}))
    manifest = Path(t.path, "manifest", t.latest_snapshot().index_manifest)
    name = _with_newer_index(t, manifest)
    orphan = Path(t.path, "bucket-0", "data-orphan-0.parquet")
    orphan.write_bytes(b"x")
    return lf.Catalog(str(Path(t.path).parents[1])).get_table("db.pk"), manifest, name, orphan


def _names_newer_index(e, manifest: Path, name: str) -> None:
    msg = str(e.value)
    assert NEWER_INDEX in msg and name in msg and manifest.name in msg, msg


@pytest.mark.parametrize("how", ["read", "filtered read", "write", "compaction", "overwrite"])
def test_an_index_file_of_an_unknown_type_is_refused(dv_table_with_newer_index, how):
    t, manifest, name, _ = dv_table_with_newer_index
    latest = t.latest_snapshot().id
    act = {"read": lambda: t.read(), "filtered read": lambda: t.read(filter=lf.col("id") == 1),
           "write": lambda: t.write(pa.table({"id": [4], "v": ["d"]})),
           "compaction": lambda: t.compact(full=True),
           "overwrite": lambda: t.write(pa.table({"id": [9], "v": ["z"]}), overwrite=True)}[how]
    with pytest.raises(UnsupportedMetadataError) as e:
        act()
    _names_newer_index(e, manifest, name)
    assert t.latest_snapshot().id == latest


def test_expiration_refuses_a_table_with_an_index_file_of_an_unknown_type(dv_table_with_newer_index):
    t, manifest, name, _ = dv_table_with_newer_index
    before = sorted(p for p in Path(t.path).rglob("*") if p.is_file())
    with pytest.raises(UnsupportedMetadataError) as e:
        t.expire_snapshots(retain_min=1, retain_max=1, older_than=dt.timedelta(0))
    _names_newer_index(e, manifest, name)
    assert sorted(p for p in Path(t.path).rglob("*") if p.is_file()) == before


def test_orphan_removal_refuses_a_table_with_an_index_file_of_an_unknown_type(dv_table_with_newer_index):
    t, manifest, name, orphan = dv_table_with_newer_index
    before = sorted(p for p in Path(t.path).rglob("*") if p.is_file())
    assert orphan in before
    with pytest.raises(LakeformatError) as e:
        t.remove_orphan_files(older_than=dt.timedelta(0), allow_deleting_in_flight_files=True)
    _names_newer_index(e, manifest, name)
    assert "does not understand that file" in str(e.value)
    assert str(e.value).count(manifest.name) == 1, "the index manifest named once"
    assert sorted(p for p in Path(t.path).rglob("*") if p.is_file()) == before   # not even the orphan


def test_a_commit_does_not_carry_along_an_index_file_of_an_unknown_type(two_snapshots):
    """An append table's writes never read the index manifest; the commit does: it would name
    that index, unchanged, in a snapshot whose files it no longer describes."""
    from lakeformat.format.index_manifest import IndexFileMeta, IndexManifestEntry
    from lakeformat.io.index_files import IndexFiles
    t = two_snapshots
    entry = IndexManifestEntry(0, t.live_entries(t.latest_snapshot())[0].partition, 0,
                               IndexFileMeta(NEWER_INDEX, "index-newer-kind-0", 11, 1))
    manifest = Path(t.path, "manifest", IndexFiles(t.io, t.path).write_manifest([entry]))
    _alter_json(_snapshot_file(t, 2), indexManifest=manifest.name)
    fresh = lf.Catalog(str(Path(t.path).parents[1])).get_table("db.t")
    with pytest.raises(UnsupportedMetadataError) as e:
        fresh.write(events(1, start=90))
    _names_newer_index(e, manifest, "index-newer-kind-0")
    assert fresh.latest_snapshot().id == 2


# ---------------------------------------------------------------- nested types of a newer Paimon

NESTED = pa.schema([("id", pa.int64()), ("tags", pa.list_(pa.string())),
                    ("attrs", pa.map_(pa.string(), pa.int64())),
                    ("point", pa.struct([("x", pa.float64()), ("y", pa.float64())]))])


@pytest.fixture
def nested_table(catalog):
    t = catalog.create_table("db.n", NESTED)
    t.write(pa.table({"id": [1], "tags": [["a"]], "attrs": [[("k", 1)]], "point": [{"x": 1.0, "y": 2.0}]},
                     schema=NESTED))
    return t


def _schema_types(t) -> tuple[Path, dict]:
    path = Path(t.path, "schema", "schema-0")
    return path, json.loads(path.read_text())


@pytest.mark.parametrize("column,kind", [("tags", "ARRAY"), ("attrs", "MAP"), ("point", "ROW")])
def test_an_unknown_key_of_a_nested_type_is_refused(nested_table, column, kind):
    t = nested_table
    path, d = _schema_types(t)
    (field,) = [f for f in d["fields"] if f["name"] == column]
    assert field["type"]["type"] == kind
    field["type"]["newerTypeThing"] = None   # null says nothing
    path.write_text(json.dumps(d))
    assert lf.Catalog(str(Path(t.path).parents[1])).get_table("db.n").read().num_rows == 1
    field["type"]["newerTypeThing"] = 3
    path.write_text(json.dumps(d))
    with pytest.raises(UnsupportedMetadataError) as e:
        lf.Catalog(str(Path(t.path).parents[1])).get_table("db.n").read()
    msg = str(e.value)
    assert "newerTypeThing" in msg and kind in msg and repr(column) in msg and "schema-0" in msg, msg


def test_an_unknown_key_deep_inside_a_nested_type_is_refused(catalog):
    schema = pa.schema([("id", pa.int64()), ("deep", pa.list_(pa.map_(pa.string(), pa.list_(pa.int32()))))])
    t = catalog.create_table("db.d", schema)
    path, d = _schema_types(t)
    d["fields"][1]["type"]["element"]["value"]["newerTypeThing"] = "x"
    path.write_text(json.dumps(d))
    with pytest.raises(UnsupportedMetadataError, match=r"newerTypeThing.*ARRAY|ARRAY.*newerTypeThing"):
        lf.Catalog(str(Path(t.path).parents[1])).get_table("db.d").read()


def test_pypaimons_redundant_nullable_key_of_nested_types_is_accepted_when_it_agrees(nested_table):
    """pypaimon writes ``"nullable"`` beside the type string (Paimon Java ignores it): the same
    fact twice. Disagreeing, the type would mean two things (pypaimon's MAP reader takes the key)."""
    t = nested_table
    path, d = _schema_types(t)
    for f in d["fields"][1:]:
        f["type"]["nullable"] = True
    path.write_text(json.dumps(d))
    assert lf.Catalog(str(Path(t.path).parents[1])).get_table("db.n").read().num_rows == 1
    d["fields"][2]["type"]["nullable"] = False
    path.write_text(json.dumps(d))
    with pytest.raises(UnsupportedMetadataError, match="nullable"):
        lf.Catalog(str(Path(t.path).parents[1])).get_table("db.n").read()


def test_a_staged_commit_naming_an_index_file_of_an_unknown_type_is_refused_not_published(catalog):
    """A stage another (newer) writer left with an index file lakeformat does not know is refused,
    naming the type and the stage file, and publishing it makes no snapshot."""
    import json
    t = catalog.create_table("db.st", pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_keys=["id"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write(pa.table({"id": range(10), "v": ["a"] * 10}))
    w = t.new_write("job")
    w.write(pa.table({"id": [2], "v": ["B"]}))
    staging.stage(t, w.prepare_commit(), "s1", commit_user="job", identifier=1)
    stage_file = next(p for p in Path(t.path).rglob("*") if p.is_file() and "s1" in p.name)
    d = json.loads(stage_file.read_text())
    added = [f for m in d["messages"] for f in m.get("index_added", ())]
    assert added, "the update marked a row in a deletion vector"
    added[0]["index_type"] = NEWER_INDEX
    stage_file.write_text(json.dumps(d))
    latest = t.latest_snapshot().id
    with pytest.raises(UnsupportedMetadataError) as e:
        staging.load_staged(t, "s1")
    assert NEWER_INDEX in str(e.value) and stage_file.name in str(e.value)
    with pytest.raises(UnsupportedMetadataError):
        staging.publish(t, "s1")
    assert t.latest_snapshot().id == latest
