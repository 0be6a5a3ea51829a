"""Paimon's field ids as ORC type attributes (``paimon.id``), as Paimon's Java writers put them
on every type of an ORC file (``OrcTypeUtil#convertToOrcType``): a column's own id, an array
element's and a map key's or value's derived from it (``SpecialFields``), a nested row's fields
their own ids. Paimon Java reads ORC by column name and does not need them; readers that match
ORC columns by id (Trino's Paimon connector) do.

pyarrow's ORC writer stores an Arrow field's metadata as the ORC type's attributes, so the ids
go on as field metadata: ``paimon.id`` and nothing else, as in Java's files.
"""
from __future__ import annotations

from typing import Optional
from collections.abc import Sequence

import pyarrow as pa

from lakeformat.format import types as T
from lakeformat.format.schema import KEY_FIELD_ID_START

PAIMON_ORC_ID = b"paimon.id"
PARQUET_ID = b"PARQUET:field_id"
_BASE = 2147483647 // 4          # SpecialFields.STRUCTURED_TYPE_FIELD_ID_BASE
_DEPTH = 1 << 10                 # SpecialFields.STRUCTURED_TYPE_FIELD_DEPTH_LIMIT
VERSION_FIELD_ID = -1            # the _VERSION field of Paimon's versioned metadata records


def _int32(v: int) -> int:
    """Java's int arithmetic (wraps around)."""
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def array_element_id(field_id: int, depth: int) -> int:
    return _int32(_BASE + field_id * _DEPTH + depth)


def map_key_id(field_id: int, depth: int) -> int:
    return _int32(_BASE - field_id * _DEPTH - depth)


map_value_id = array_element_id


def _tag(f: pa.Field, field_id: int) -> pa.Field:
    return f.with_metadata({PAIMON_ORC_ID: str(field_id).encode()})


def _positional_ids(t: pa.StructType) -> list[int]:
    """Ids of a metadata record's fields: their positions, ``_VERSION`` -1 (Paimon's schemas of
    manifests, manifest lists and index manifests number their fields so)."""
    ids, n = [], 0
    for i in range(t.num_fields):
        if t.field(i).name == "_VERSION":
            ids.append(VERSION_FIELD_ID)
        else:
            ids.append(n)
            n += 1
    return ids


def with_ids(f: pa.Field, field_id: int, t: Optional[T.DataType] = None, depth: int = 0) -> pa.Field:
    """``f`` with ``paimon.id`` on it and on every nested type. ``t`` is its Paimon type, whose
    nested rows give their fields' ids; without it (metadata files) they are positional."""
    at = f.type
    if pa.types.is_list(at) or pa.types.is_large_list(at):
        elem = t.element if isinstance(t, T.ArrayType) else None
        v = _tag(with_ids(at.value_field, field_id, elem, depth + 1), array_element_id(field_id, depth + 1))
        at = pa.large_list(v) if pa.types.is_large_list(at) else pa.list_(v)
    elif pa.types.is_map(at):
        key = t.key if isinstance(t, T.MapType) else None
        value = t.value if isinstance(t, T.MapType) else None
        k = _tag(with_ids(at.key_field, field_id, key, depth + 1), map_key_id(field_id, depth + 1))
        v = _tag(with_ids(at.item_field, field_id, value, depth + 1), map_value_id(field_id, depth + 1))
        at = pa.map_(k, v, keys_sorted=at.keys_sorted)
    elif pa.types.is_struct(at):
        subtypes: list[Optional[T.DataType]]
        if isinstance(t, T.RowType) and len(t.fields) == at.num_fields:
            ids, subtypes = [x.id for x in t.fields], [x.type for x in t.fields]
        else:
            ids, subtypes = _positional_ids(at), [None] * at.num_fields
        at = pa.struct([with_ids(at.field(i), ids[i], subtypes[i], 0) for i in range(at.num_fields)])
    return _tag(f.with_type(at), field_id)


def metadata_schema(schema: pa.Schema) -> pa.Schema:
    """The Arrow schema of a manifest, manifest list or index manifest with Paimon's ids."""
    ids = _positional_ids(pa.struct(list(schema)))
    return pa.schema([with_ids(f, i) for f, i in zip(schema, ids)])


def data_schema(schema: pa.Schema, fields: Sequence) -> pa.Schema:
    """The Arrow schema of a data file with Paimon's ids. Each column's id is its
    ``PARQUET:field_id`` (the table's field id; a key column of a primary-key file
    ``KEY_FIELD_ID_START`` + it; the system columns theirs); ``fields`` (the table schema's
    ``DataField``s) give nested rows their fields' ids."""
    types = {x.id: x.type for x in fields}
    out = []
    for f in schema:
        fid = int((f.metadata or {})[PARQUET_ID])
        t = types.get(fid - KEY_FIELD_ID_START if fid >= KEY_FIELD_ID_START else fid)
        out.append(with_ids(f, fid, t))
    return pa.schema(out)
