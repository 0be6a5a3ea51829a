"""Table schemas (``schema/schema-N`` JSON, version 3) and their evolution.

Field ids never change: a renamed column keeps its id, a new
column gets ``highestFieldId + 1``; readers map old files to the current schema by id.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field, replace
from typing import Optional
from collections.abc import Iterable, Mapping, Sequence

import pyarrow as pa

from lakeformat.errors import SchemaError
from lakeformat.format import types as T
from lakeformat.format.blob import apply_blob_field, check_blob_schema, is_blob
from lakeformat.format.casts import castable
from lakeformat.format.metadata_checks import SCHEMA_KEYS, check_json_keys, check_version

SCHEMA_VERSION = 3
SYSTEM_FIELD_PREFIXES = ("_KEY_", "_SEQUENCE_NUMBER", "_VALUE_KIND")
KEY_FIELD_ID_START = 2147483647 // 2   # a key column's id in a primary-key file: this + the field's id


@dataclass(frozen=True)
class TableSchema:
    id: int
    fields: tuple[T.DataField, ...]
    highest_field_id: int
    partition_keys: tuple[str, ...] = ()
    primary_keys: tuple[str, ...] = ()
    options: Mapping[str, str] = field(default_factory=dict)
    comment: Optional[str] = None
    time_millis: int = 0

    # -- views -------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field(self, name: str) -> T.DataField:
        for f in self.fields:
            if f.name == name:
                return f
        raise SchemaError(f"column {name!r} does not exist; columns are {self.names}")

    def arrow_schema(self) -> pa.Schema:
        return T.arrow_schema(self.fields)

    @property
    def partition_fields(self) -> list[T.DataField]:
        return [self.field(k) for k in self.partition_keys]

    @property
    def trimmed_primary_keys(self) -> list[str]:
        return [k for k in self.primary_keys if k not in self.partition_keys]

    @property
    def bucket_keys(self) -> list[str]:
        """``bucket-key`` if set, else the primary key minus partition keys, else all non-partition columns."""
        raw = self.options.get("bucket-key")
        if raw:
            return [k.strip() for k in raw.split(",") if k.strip()]
        if self.primary_keys:
            return self.trimmed_primary_keys
        return [n for n in self.names if n not in self.partition_keys]

    @property
    def num_buckets(self) -> int:
        return int(self.options.get("bucket", "-1"))

    # -- JSON --------------------------------------------------------------------------
    def to_json(self) -> str:
        return json.dumps({
            "version": SCHEMA_VERSION,
            "id": self.id,
            "fields": [T.field_to_json(f) for f in self.fields],
            "highestFieldId": self.highest_field_id,
            "partitionKeys": list(self.partition_keys),
            "primaryKeys": list(self.primary_keys),
            "options": dict(self.options),
            "comment": self.comment,
            "timeMillis": self.time_millis,
        }, indent=2)

    @classmethod
    def from_json(cls, text: str) -> TableSchema:
        d = json.loads(text)
        if not isinstance(d, dict):
            raise ValueError(f"not a JSON object but a JSON {type(d).__name__}")
        schema = cls(id=int(d["id"]), fields=tuple(T.field_from_json(f) for f in d["fields"]),
                     highest_field_id=int(d["highestFieldId"]),
                     partition_keys=tuple(d.get("partitionKeys") or ()),
                     primary_keys=tuple(d.get("primaryKeys") or ()),
                     options=dict(d.get("options") or {}), comment=d.get("comment"),
                     time_millis=int(d.get("timeMillis") or 0))
        check_version(d.get("version"), SCHEMA_VERSION, "schema")   # a schema, but of a newer Paimon?
        check_json_keys(d, SCHEMA_KEYS, "schema")
        check_blob_schema(schema.fields, schema.partition_keys, schema.primary_keys, schema.options,
                          f"schema {schema.id}")
        return schema


_NAME_RE = re.compile(r"^[^\x00-\x1f]+$")


def new_schema(arrow: pa.Schema, partition_keys: Sequence[str] = (), primary_keys: Sequence[str] = (),
               options: Optional[Mapping[str, str]] = None, comment: Optional[str] = None) -> TableSchema:
    """Schema 0 of a new table, validated the way Paimon validates a CREATE TABLE."""
    names = list(arrow.names)
    if not names:
        raise SchemaError("a table needs at least one column")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise SchemaError(f"duplicate column names: {dupes}")
    for n in names:
        if not n or not _NAME_RE.match(n) or n.startswith(SYSTEM_FIELD_PREFIXES):
            raise SchemaError(f"invalid column name {n!r} (empty, control characters or a reserved system name)")
    for what, keys in (("partition key", partition_keys), ("primary key", primary_keys)):
        for k in keys:
            if k not in names:
                raise SchemaError(f"{what} {k!r} is not a column; columns are {names}")
    if primary_keys and not set(partition_keys) <= set(primary_keys):
        raise SchemaError("a primary-key table's primary key must include all partition keys "
                          f"(primary key {list(primary_keys)}, partition keys {list(partition_keys)})")
    counter = iter(range(len(names), 10**9))
    fields = []
    for i, f in enumerate(arrow):
        nullable = f.nullable and f.name not in primary_keys  # primary keys are NOT NULL in Paimon
        t = T.from_arrow(f.type, nullable, lambda: next(counter))
        if f.name in partition_keys and not isinstance(t, T.AtomicType):
            raise SchemaError(f"partition key {f.name!r} must be an atomic type, not {T.type_to_json(t)}")
        fields.append(T.DataField(i, f.name, t))
    fields = list(apply_blob_field(fields, options or {}))
    check_blob_schema(fields, partition_keys, primary_keys, options or {}, "a new table")
    highest = max([len(names) - 1] + [_max_nested_id(f.type) for f in fields])
    opts = dict(options or {})
    bucket_keys = [k.strip() for k in opts.get("bucket-key", "").split(",") if k.strip()]
    for k in bucket_keys:
        if k not in names:
            raise SchemaError(f"bucket key {k!r} is not a column; columns are {names}")
        if k in partition_keys:
            raise SchemaError(f"bucket key {k!r} cannot be a partition key")
        if primary_keys and k not in primary_keys:
            raise SchemaError(f"bucket key {k!r} of a primary-key table must be part of the primary key")
    if bucket_keys and int(opts.get("bucket", "-1")) < 1:
        raise SchemaError("'bucket-key' needs a fixed bucket count: set 'bucket' to a positive number")
    return TableSchema(0, tuple(fields), highest, tuple(partition_keys), tuple(primary_keys), opts,
                       comment, int(time.time() * 1000))


def _max_nested_id(t: T.DataType) -> int:
    if isinstance(t, T.RowType):
        return max([f.id for f in t.fields] + [_max_nested_id(f.type) for f in t.fields])
    if isinstance(t, T.ArrayType):
        return _max_nested_id(t.element)
    if isinstance(t, T.MapType):
        return max(_max_nested_id(t.key), _max_nested_id(t.value))
    return -1


# ---------------------------------------------------------------- changes (pure)

@dataclass(frozen=True)
class AddColumn:
    name: str
    type: pa.DataType
    nullable: bool = True
    comment: Optional[str] = None


@dataclass(frozen=True)
class RenameColumn:
    name: str
    new_name: str


@dataclass(frozen=True)
class DropColumn:
    name: str


@dataclass(frozen=True)
class UpdateColumnType:
    name: str
    type: pa.DataType


@dataclass(frozen=True)
class SetOption:
    key: str
    value: str


@dataclass(frozen=True)
class RemoveOption:
    key: str


def apply_changes(schema: TableSchema, changes: Iterable) -> TableSchema:
    """The next schema after ``changes``; raises SchemaError for a change Paimon forbids."""
    fields = list(schema.fields)
    highest = schema.highest_field_id
    options = dict(schema.options)
    keys = set(schema.partition_keys) | set(schema.primary_keys)
    partition_keys, primary_keys = list(schema.partition_keys), list(schema.primary_keys)

    def index(name: str) -> int:
        for i, f in enumerate(fields):
            if f.name == name:
                return i
        raise SchemaError(f"column {name!r} does not exist; columns are {[f.name for f in fields]}")

    for c in changes:
        if isinstance(c, AddColumn):
            if any(f.name == c.name for f in fields):
                raise SchemaError(f"column {c.name!r} exists already")
            if not c.name or c.name.startswith(SYSTEM_FIELD_PREFIXES):
                raise SchemaError(f"invalid column name {c.name!r}")
            if not c.nullable:
                raise SchemaError(f"a new column must be nullable: old files have no value for {c.name!r}")

            def next_id() -> int:
                nonlocal highest
                highest += 1
                return highest
            fid = next_id()
            fields.append(T.DataField(fid, c.name, T.from_arrow(c.type, True, next_id), c.comment))
        elif isinstance(c, RenameColumn):
            i = index(c.name)
            if c.name in keys:
                raise SchemaError(f"cannot rename {c.name!r}: it is a partition or primary key")
            if is_blob(fields[i].type):
                raise SchemaError(f"cannot rename BLOB column {c.name!r} (Paimon's rule: blob files name it)")
            if any(f.name == c.new_name for f in fields):
                raise SchemaError(f"cannot rename {c.name!r} to {c.new_name!r}: that column exists")
            fields[i] = replace(fields[i], name=c.new_name)
        elif isinstance(c, DropColumn):
            i = index(c.name)
            if c.name in keys:
                raise SchemaError(f"cannot drop {c.name!r}: it is a partition or primary key")
            if len(fields) == 1:
                raise SchemaError("cannot drop the last column")
            del fields[i]
        elif isinstance(c, UpdateColumnType):
            i = index(c.name)
            old = fields[i].type
            new = T.with_nullable(T.from_arrow(c.type), old.nullable)
            if c.name in schema.partition_keys:
                raise SchemaError(f"cannot change the type of partition key {c.name!r}")
            if c.name in schema.primary_keys and not T.can_widen(old, new):
                raise SchemaError(f"cannot change primary key {c.name!r} from {T.type_to_json(old)} to "
                                  f"{T.type_to_json(new)}: only widening keeps the keys of old files in order")
            if not castable(old, new):
                raise SchemaError(f"cannot change {c.name!r} from {T.type_to_json(old)} to "
                                  f"{T.type_to_json(new)}: Paimon has no cast between them")
            fields[i] = replace(fields[i], type=new)
        elif isinstance(c, SetOption):
            options[c.key] = c.value
        elif isinstance(c, RemoveOption):
            options.pop(c.key, None)
        else:
            raise SchemaError(f"unknown schema change {c!r}")
    check_layout_change(schema.options, options)
    check_blob_schema(fields, partition_keys, primary_keys, options, f"schema {schema.id + 1}")
    return TableSchema(schema.id + 1, tuple(fields), highest, tuple(partition_keys), tuple(primary_keys),
                       options, schema.comment, int(time.time() * 1000))


def check_layout_change(old: Mapping[str, str], new: Mapping[str, str]) -> None:
    """Which bucket a row lives in must not change under existing files, as in Paimon:
    'bucket-key' cannot change, and 'bucket' cannot move between -1 (dynamic or unaware) and a
    fixed count. A fixed count may change; writers then refuse to add to partitions written with
    the old count until an overwrite rewrites them (see TableWrite). Where bucket index files are
    (``index-file-in-data-file-dir``) cannot change either."""
    if _bucket_keys(old) != _bucket_keys(new):
        raise SchemaError(f"cannot change 'bucket-key' from {old.get('bucket-key')!r} to {new.get('bucket-key')!r}: "
                          "rows already written were placed by the old key; create a new table and copy the rows")
    key = "index-file-in-data-file-dir"   # index manifests name files, not where they are
    if old.get(key, "false").strip().lower() != new.get(key, "false").strip().lower():
        raise SchemaError(f"cannot change {key!r} from {old.get(key, 'false')!r} to {new.get(key, 'false')!r}: the "
                          "index files already written would be looked for in the wrong directory")
    try:
        was, now = int(old.get("bucket", "-1")), int(new.get("bucket", "-1"))
    except ValueError:
        return   # option validation names the bad value
    if (was == -1) != (now == -1):
        raise SchemaError(f"cannot change 'bucket' from {was} to {now}: a table cannot move between "
                          "bucket -1 (dynamic or unaware) and a fixed number of buckets")


def _bucket_keys(options: Mapping[str, str]) -> list[str]:
    return [k.strip() for k in options.get("bucket-key", "").split(",") if k.strip()]


# ---------------------------------------------------------------- storage

