"""BLOB columns: accepted where Paimon allows them, refused by name elsewhere."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from lakeformat.errors import SchemaError, UnsupportedOptionError, UnsupportedTypeError
from lakeformat.format import types as T
from lakeformat.format.schema import RenameColumn

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
