"""BLOB columns: accepted where Paimon allows them, refused by name elsewhere."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from lakeformat.errors import SchemaError, UnsupportedOptionError, UnsupportedTypeError
from lakeformat.format import types as T
from lakeformat.format.schema import RenameColumn
from tests.s3server import s3_endpoint  # noqa: F401 (fixture)

DE = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}
SCHEMA = pa.schema([("id", pa.int64()), ("pic", pa.binary())])


def test_blob_maps_to_large_binary_and_back_to_json():
    t = T.type_from_json("BLOB NOT NULL")
    assert t == T.AtomicType("BLOB", (), False)
    assert T.to_arrow(t) == pa.large_binary()
    assert T.type_to_json(t) == "BLOB NOT NULL"


def test_blob_field_makes_a_blob_column(catalog):
    t = catalog.create_table("db.b", SCHEMA, options={**DE, "blob-field": "pic"})
    assert T.type_to_json(t.schema.field("pic").type) == "BLOB"
    assert t.arrow_schema().field("pic").type == pa.large_binary()
    assert catalog.get_table("db.b").schema.field("pic").type.root == "BLOB"
    with pytest.raises(SchemaError, match="cannot rename BLOB column 'pic'"):
        t.alter(RenameColumn("pic", "photo"))


@pytest.mark.parametrize("options, error, match", [
    ({"blob-field": "pic"}, UnsupportedTypeError, r"BLOB column\(s\) \['pic'\] need row-tracking.enabled=true "
                                                  "and data-evolution.enabled=true"),
    ({"row-tracking.enabled": "true", "blob-field": "pic"}, UnsupportedTypeError, "data-evolution.enabled=true"),
    ({**DE, "blob-field": "nope"}, SchemaError, "'nope', which is not a column"),
    ({**DE, "blob-field": "id"}, SchemaError, "a BIGINT column"),
    ({**DE, "blob-field": "pic", "blob-as-descriptor": "true"}, UnsupportedOptionError, "as descriptors"),
    ({**DE, "blob-field": "pic", "blob-view-field": "pic"}, UnsupportedOptionError, "BLOB view columns"),
])
def test_blob_columns_only_where_paimon_allows_them(catalog, options, error, match):
    with pytest.raises(error, match=match):
        catalog.create_table("db.b", SCHEMA, options=options)


def test_blob_as_partition_key_or_alone_is_refused(catalog):
    with pytest.raises(UnsupportedTypeError, match="cannot be a partition key"):
        catalog.create_table("db.p", SCHEMA, partition_keys=["pic"], options={**DE, "blob-field": "pic"})
    with pytest.raises(SchemaError, match="needs another column"):
        catalog.create_table("db.a", pa.schema([("pic", pa.binary())]), options={**DE, "blob-field": "pic"})


def _schema_with(catalog, name, typ, options):
    t = catalog.create_table(name, pa.schema([("id", pa.int64())]), options=options)
    path = Path(t.path, "schema", "schema-0")
    d = json.loads(path.read_text())
    d["fields"].append({"id": 9, "name": "payload", "type": typ})
    path.write_text(json.dumps(d))
    return name


def test_a_blob_column_another_engine_wrote_opens_where_allowed(catalog):
    t = catalog.get_table(_schema_with(catalog, "db.ok", "BLOB", DE))
    assert t.arrow_schema().field("payload").type == pa.large_binary()


@pytest.mark.parametrize("typ, options, match", [
    ("BLOB", {}, r"BLOB column\(s\) \['payload'\] need row-tracking.enabled=true"),
    ({"type": "ARRAY", "element": "BLOB"}, DE, "nests BLOB"),
    ({"type": "MAP", "key": "INT", "value": "BLOB"}, DE, "nests BLOB"),
])
def test_a_blob_column_where_paimon_forbids_it_is_refused_at_open(catalog, typ, options, match):
    name = _schema_with(catalog, "db.bad", typ, options)
    with pytest.raises(UnsupportedTypeError, match=match):
        catalog.get_table(name)


def test_the_committer_gives_blob_files_their_data_files_row_ids():
    """Paimon's rule: a data file takes the next row ids; the blob files after it, per column,
    continue from its first row id."""
    from lakeformat.format.manifest import ADD, DataFileMeta, ManifestEntry
    from lakeformat.format.row_tracking import assign_row_ids

    def e(name, rows, cols):
        return ManifestEntry(ADD, b"", 0, -1, DataFileMeta(name, 1, rows, write_cols=cols))
    entries = [e("d1.parquet", 5, ("id",)), e("a1.blob", 3, ("pic",)), e("a2.blob", 2, ("pic",)),
               e("b1.blob", 5, ("doc",)), e("d2.parquet", 4, ("id",)), e("a3.blob", 4, ("pic",))]
    out, next_id = assign_row_ids(entries, 100, 7)
    assert [x.file.first_row_id for x in out] == [100, 100, 103, 100, 105, 105]
    assert next_id == 109 and {x.file.max_sequence_number for x in out} == {7}
    with pytest.raises(Exception, match="more rows than the data file"):
        assign_row_ids([e("d.parquet", 2, ("id",)), e("a.blob", 3, ("pic",))], 0, 1)


def _blob_table(catalog, name="db.w", **extra):
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("pic", pa.binary())])
    return catalog.create_table(name, schema, options={**DE, "blob-field": "pic", **extra})


def test_write_and_read_back_streamed(catalog):
    import os
    t = _blob_table(catalog, **{"blob.target-file-size": "3000"})
    pics = [os.urandom(i * 97) if i % 4 else None for i in range(60)]
    data = pa.table({"id": range(60), "name": [str(i) for i in range(60)], "pic": pics})
    t.write(data.slice(0, 25))
    t.write(data.slice(25))
    names = [f["file_name"] for f in t.files()]
    assert sum(n.endswith(".blob") for n in names) > 4 and sum(n.endswith(".parquet") for n in names) == 2
    out = t.read().sort_by("id")
    assert out.column("pic").to_pylist() == pics and out.schema.field("pic").type == pa.large_binary()
    assert t.read(columns=["id", "name"]).num_rows == 60      # no blob file opened for these
    streamed = pa.Table.from_batches(list(t.to_batches(columns=["pic", "_ROW_ID"]))).sort_by("_ROW_ID")
    assert streamed.column("pic").to_pylist() == pics
    assert streamed.column("_ROW_ID").to_pylist() == list(range(60))


def test_updates_of_other_columns_and_compaction_keep_the_blobs(catalog):
    from lakeformat.errors import UnsupportedError
    t = _blob_table(catalog)
    for i in range(3):
        t.write(pa.table({"id": [i], "name": ["x"], "pic": [bytes([i]) * 10]}))
    t.compact(full=True)
    assert sorted(t.read().column("pic").to_pylist()) == [bytes([i]) * 10 for i in range(3)]
    with pytest.raises(UnsupportedError, match=r"updates of BLOB columns \['pic'\]"):
        t.update_columns(pa.table({"_ROW_ID": [0], "pic": [b"y"]}))
    t.update_columns(pa.table({"_ROW_ID": [1], "name": ["updated"]}))   # other columns: a column file
    rows = sorted(t.read(columns=["id", "name", "pic", "_ROW_ID"]).to_pylist(), key=lambda r: r["_ROW_ID"])
    assert [(r["name"], r["pic"]) for r in rows] == [("x", bytes([i]) * 10) if i != 1 else ("updated", b"\x01" * 10)
                                                    for i in range(3)]
    t.compact(full=True)
    assert sorted(t.read(columns=["name", "pic"]).to_pylist(), key=lambda r: r["pic"]) == [
        {"name": "x", "pic": b"\x00" * 10}, {"name": "updated", "pic": b"\x01" * 10},
        {"name": "x", "pic": b"\x02" * 10}]


def test_a_corrupt_blob_file_fails_the_read_naming_it(catalog):
    from pathlib import Path

    from lakeformat.errors import CorruptFileError
    t = _blob_table(catalog)
    t.write(pa.table({"id": [1], "name": ["x"], "pic": [b"y" * 1000]}))
    blob = next(Path(t.path).rglob("*.blob"))
    data = bytearray(blob.read_bytes())
    data[100] ^= 0xFF
    blob.chmod(0o644)
    blob.write_bytes(bytes(data))
    with pytest.raises(CorruptFileError, match="CRC32"):
        t.read()


def test_orphan_removal_and_expiration_know_blob_files(catalog):
    import datetime as dt
    from pathlib import Path
    t = _blob_table(catalog, **{"blob.target-file-size": "100"})
    for i in range(3):
        t.write(pa.table({"id": [i, i + 10], "name": ["x", "y"], "pic": [bytes([i]) * 300, None]}))
    stray = Path(t.bucket_dir([], 0)) / "data-0000-stray-0.blob"
    stray.write_bytes(b"not referenced")
    t.remove_orphan_files(older_than=dt.timedelta(0), allow_deleting_in_flight_files=True)
    assert not stray.exists()
    assert sorted(t.read().column("id").to_pylist()) == [0, 1, 2, 10, 11, 12]
    t.expire_snapshots(retain_min=1, retain_max=1, older_than=dt.timedelta(0))
    assert sorted(t.read().column("id").to_pylist()) == [0, 1, 2, 10, 11, 12]


def test_spark_refuses_blob_columns_by_name():
    from lakeformat.spark.types import spark_type
    with pytest.raises(UnsupportedTypeError, match="BLOB columns are not implemented by lakeformat's Spark"):
        spark_type(T.atomic("BLOB"))


def test_blob_files_must_cover_their_data_files_rows_once():
    """One write's blob files cover the data file's rows once; gaps, and overlaps within one
    version, are refused by name, never read as if they lined up."""
    from lakeformat.format.blob import blob_slices, blob_versions
    from lakeformat.format.manifest import DataFileMeta

    def f(name, first, rows, seq=1):
        return DataFileMeta(name, 1, rows, first_row_id=first, max_sequence_number=seq, write_cols=("pic",))
    data = f("d.parquet", 10, 6)
    parts = [f("b.blob", 13, 3), f("a.blob", 10, 3)]
    assert [x.file_name for x in blob_slices(data, parts, "pic", "t")] == ["a.blob", "b.blob"]
    assert blob_slices(data, [], "pic", "t") == []       # a column added after these rows: nulls
    with pytest.raises(UnsupportedTypeError, match="more than one version"):
        blob_slices(data, parts + [f("new.blob", 10, 6, seq=2)], "pic", "t")
    # several versions (BLOB updates) are read newest first, each lined up inside the range
    versions = blob_versions(data, parts + [f("new.blob", 12, 2, seq=2)], "pic", "t")
    assert [[x.file_name for x in v] for v in versions] == [["new.blob"], ["a.blob", "b.blob"]]
    with pytest.raises(UnsupportedTypeError, match="overlap or leave the rows"):
        blob_versions(data, parts + [f("new.blob", 15, 2, seq=2)], "pic", "t")
    with pytest.raises(UnsupportedTypeError, match="exactly once"):
        blob_slices(data, [f("a.blob", 10, 3)], "pic", "t")
    with pytest.raises(UnsupportedTypeError, match="exactly once"):
        blob_slices(data, [f("a.blob", 10, 3), f("c.blob", 14, 2)], "pic", "t")


def test_the_cli_shows_a_blob_by_its_first_bytes_and_size():
    from lakeformat.cli.output import cell, plain
    big = bytes(range(256)) * 4096
    assert cell(big) == bytes(range(32)).hex() + "… (1.0 MiB)"
    assert cell(b"\x01\x02") == "0102" and plain(big) == big.hex()   # --json keeps every byte


def test_partitioned_blob_table_overwrite_and_filters(catalog):
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("pic", pa.binary())])
    t = catalog.create_table("db.p", schema, partition_keys=["dt"], options={**DE, "blob-field": "pic"})
    t.write(pa.table({"id": [1, 2, 3], "dt": ["a", "b", "b"], "pic": [b"1", None, b"3" * 100]}))
    t.write(pa.table({"id": [4], "dt": ["b"], "pic": [b"4"]}), overwrite={"dt": "b"})
    rows = sorted(t.read().to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": 1, "dt": "a", "pic": b"1"}, {"id": 4, "dt": "b", "pic": b"4"}]
    from lakeformat.format import predicate as P
    assert t.read(filter=P.col("dt") == "b").column("pic").to_pylist() == [b"4"]
    assert t.read(filter=P.col("id") == 1).column("pic").to_pylist() == [b"1"]


def test_blob_table_on_s3(s3_endpoint):
    """Blob files written with object-store output streams and read back by ranged reads."""
    import os
    import uuid

    import lakeformat as lf
    from tests.s3server import BUCKET, CREDS
    cat = lf.Catalog(f"s3://{BUCKET}/wh-{uuid.uuid4().hex[:8]}", **{"s3.endpoint": s3_endpoint, **CREDS})
    cat.create_database("db")
    t = _blob_table(cat, **{"blob.target-file-size": "200000"})
    pics = [os.urandom(50_000) if i % 5 else None for i in range(20)]
    t.write(pa.table({"id": range(20), "name": ["n"] * 20, "pic": pics}))
    assert sorted(f["file_name"].endswith(".blob") for f in t.files()).count(True) > 1
    got = pa.Table.from_batches(list(cat.get_table("db.w").to_batches())).sort_by("id")
    assert got.column("pic").to_pylist() == pics
