"""Paimon schemas as Iceberg schemas and partition specs, with Paimon's field ids.

Paimon's data files carry their field ids in the Parquet schema, so an Iceberg reader finds
every column by the same id, across renames and added columns. Partition keys become identity
partition fields numbered from 1000, as Paimon's Java publisher does.

The types follow Paimon's mapping (docs/content/iceberg/overview.md): BOOLEAN, INT, BIGINT,
FLOAT, DOUBLE, DECIMAL, CHAR/VARCHAR (string), BINARY/VARBINARY (binary), DATE, TIMESTAMP and
TIMESTAMP WITH LOCAL TIME ZONE of precision 3 to 6 (Iceberg's microsecond timestamps; readers
widen millisecond files), TINYINT and SMALLINT as int, as in Paimon's code. Anything else is refused by name: an
Iceberg reader would otherwise misread the column.
"""
from __future__ import annotations

from typing import Any
from collections.abc import Sequence

from lakeformat.errors import SchemaError
from lakeformat.format import types as T
from lakeformat.format.options import ICEBERG_STORAGE, Options
from lakeformat.format.schema import TableSchema

PARTITION_FIELD_START = 1000   # Iceberg's first partition field id
_PRIMITIVES = {"BOOLEAN": "boolean", "TINYINT": "int", "SMALLINT": "int", "INT": "int", "BIGINT": "long",
               "FLOAT": "float", "DOUBLE": "double", "DATE": "date", "CHAR": "string", "VARCHAR": "string",
               "BINARY": "binary", "VARBINARY": "binary"}


def iceberg_type(t: T.DataType, column: str) -> str:
    """The Iceberg type of a Paimon type; SchemaError naming the column if it has none here."""
    if isinstance(t, T.AtomicType):
        if t.root in _PRIMITIVES:
            return _PRIMITIVES[t.root]
        if t.root == "DECIMAL":
            return f"decimal({t.params[0]}, {t.params[1]})"
        if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and 3 <= t.params[0] <= 6:
            return "timestamptz" if t.root == "TIMESTAMP_LTZ" else "timestamp"
    raise SchemaError(
        f"column {column!r} of type {T.type_to_json(t)} cannot be published as Iceberg metadata "
        "(metadata.iceberg.storage): Paimon's Iceberg compatibility covers BOOLEAN, INT, BIGINT, FLOAT, "
        "DOUBLE, DECIMAL, CHAR, VARCHAR, BINARY, VARBINARY, DATE and TIMESTAMP / TIMESTAMP_LTZ of "
        "precision 3 to 6 (7 to 9 need Iceberg format version 3); lakeformat does not publish nested types "
        "(ARRAY, MAP, ROW) either")


def iceberg_schema(schema: TableSchema) -> dict:
    """The ``schemas`` entry of Iceberg table metadata for one Paimon schema (same id)."""
    fields = []
    for f in schema.fields:
        field = {"id": f.id, "name": f.name, "required": not f.type.nullable, "type": iceberg_type(f.type, f.name)}
        if f.description is not None:
            field["doc"] = f.description
        fields.append(field)
    out: dict[str, Any] = {"type": "struct", "schema-id": schema.id, "fields": fields}
    pk = [schema.field(k).id for k in schema.primary_keys]
    if pk:
        out["identifier-field-ids"] = pk
    return out


def check_publishable(schema: TableSchema) -> None:
    """Raise SchemaError if a column of ``schema`` has no Iceberg type here."""
    for f in schema.fields:
        iceberg_type(f.type, f.name)


def check_table(schema: TableSchema) -> None:
    """What create and alter check: a table that publishes Iceberg metadata has only columns
    Iceberg readers can read (SchemaError naming the first that is not)."""
    if Options(schema.options).get(ICEBERG_STORAGE) != "disabled":
        check_publishable(schema)


def partition_fields(schema: TableSchema) -> list[dict]:
    """The identity partition fields of the spec: one per partition key, ids from 1000."""
    return [{"name": k, "transform": "identity", "source-id": schema.field(k).id,
             "field-id": PARTITION_FIELD_START + i} for i, k in enumerate(schema.partition_keys)]


def partition_spec(schema: TableSchema) -> dict:
    return {"spec-id": 0, "fields": partition_fields(schema)}


def partition_types(schema: TableSchema) -> list[T.DataType]:
    return [f.type for f in schema.partition_fields]


def last_partition_id(schema: TableSchema) -> int:
    return PARTITION_FIELD_START + len(schema.partition_keys) - 1


def field_types_by_id(fields: Sequence[T.DataField]) -> dict[int, T.DataType]:
    return {f.id: f.type for f in fields}
