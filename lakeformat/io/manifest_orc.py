"""Manifests, manifest lists and index manifests as ORC files (``manifest.format = orc``), as
Paimon's Java writers write them: the same records as the Avro form, with Paimon's TINYINT fields
as ORC bytes and arrays of rows (an index manifest's deletion-vector ranges) as lists of structs.

The ORC form is derived from the Avro schemas in ``format/manifest.py`` and
``format/index_manifest.py``, so each stays one definition. Which form a file has is read from
its first bytes, not from the table's option: a table whose ``manifest.format`` changed keeps
manifests of both.
"""
from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.orc as po

from lakeformat.io.orc_ids import metadata_schema

ORC_MAGIC = b"ORC"
_TINYINT_FIELDS = ("_KIND", "_FILE_SOURCE")   # Paimon's TINYINT: 'int' in Avro, a byte in ORC
_PRIMITIVES = {"int": pa.int32(), "long": pa.int64(), "bytes": pa.binary(), "string": pa.string(),
               "boolean": pa.bool_(), "float": pa.float32(), "double": pa.float64()}
_ORC_CODECS = {"zstd": "zstd", "zstandard": "zstd", "snappy": "snappy", "deflate": "zlib", "null": "uncompressed",
               "none": "uncompressed", "lz4": "lz4"}


def is_orc(data: bytes) -> bool:
    return data[:3] == ORC_MAGIC


def _arrow_type(avro, name: str = ""):
    """(Arrow type, nullable) of an Avro type as Paimon writes it."""
    if isinstance(avro, list):
        rest = [t for t in avro if t != "null"]
        return _arrow_type(rest[0], name)[0], True
    if isinstance(avro, dict):
        kind = avro["type"]
        if kind == "record":
            return pa.struct([_arrow_field(f) for f in avro["fields"]]), False
        if kind == "array":
            item, nullable = _arrow_type(avro["items"])
            return pa.list_(pa.field("item", item, nullable)), False
        if avro.get("logicalType") == "timestamp-millis":
            return pa.timestamp("ms"), False
        return _arrow_type(kind, name)
    if name in _TINYINT_FIELDS:
        return pa.int8(), False
    return _PRIMITIVES[avro], False


def _arrow_field(f: dict) -> pa.Field:
    t, nullable = _arrow_type(f["type"], f["name"])
    return pa.field(f["name"], t, nullable)


def arrow_schema(avro_schema: dict) -> pa.Schema:
    return pa.schema([_arrow_field(f) for f in avro_schema["fields"]])


def write_orc(avro_schema: dict, records: list[dict], codec: str) -> bytes:
    """``records`` (the Avro form) as an ORC file."""
    schema = metadata_schema(arrow_schema(avro_schema))   # with Paimon's ids as ORC type attributes
    table = pa.Table.from_pylist(records, schema=schema)
    sink = pa.BufferOutputStream()
    po.write_table(table, sink, compression=_ORC_CODECS.get(codec, "zstd"))
    return sink.getvalue().to_pybytes()


def _utc(v):
    """ORC timestamps come back naive: they are UTC here, as the Avro form's."""
    return v.replace(tzinfo=dt.UTC) if isinstance(v, dt.datetime) and v.tzinfo is None else v


def read_orc(data: bytes) -> list[dict]:
    """The records of an ORC manifest, manifest list or index manifest, in the Avro form's shape."""
    table = po.ORCFile(pa.BufferReader(data)).read()
    records = table.to_pylist()
    if "_FILE" in table.column_names:
        for r in records:
            f = r["_FILE"]
            f["_CREATION_TIME"] = _utc(f.get("_CREATION_TIME"))
    return records
