"""Paimon data types, their JSON form in ``schema/schema-N`` and their Arrow counterparts.

Paimon serialises atomic types as SQL-like strings (``"BIGINT NOT NULL"``, ``"DECIMAL(10, 2)"``)
and nested types as JSON objects (``{"type": "ARRAY", "element": ...}``). Types are frozen
dataclasses so schemas can be compared and hashed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Optional, Union

import pyarrow as pa

from lakeformat.errors import SchemaError, UnsupportedTypeError
from lakeformat.format.metadata_checks import (
    NESTED_TYPE_KEYS,
    SCHEMA_FIELD_KEYS,
    UnsupportedMetadataError,
    check_json_keys,
    check_type_json,
)

MAX_LENGTH = 2147483647

# Atomic roots and how many parameters each takes (min, max).
_PARAMS = {
    "BOOLEAN": (0, 0), "TINYINT": (0, 0), "SMALLINT": (0, 0), "INT": (0, 0), "BIGINT": (0, 0),
    "FLOAT": (0, 0), "DOUBLE": (0, 0), "DATE": (0, 0),
    "DECIMAL": (0, 2), "CHAR": (0, 1), "VARCHAR": (0, 1), "BINARY": (0, 1), "VARBINARY": (0, 1),
    "TIME": (0, 1), "TIMESTAMP": (0, 1), "TIMESTAMP_LTZ": (0, 1), "BLOB": (0, 0),
}
_DEFAULT_PARAMS = {
    "DECIMAL": (10, 0), "CHAR": (1,), "VARCHAR": (1,), "BINARY": (1,), "VARBINARY": (1,),
    "TIME": (0,), "TIMESTAMP": (6,), "TIMESTAMP_LTZ": (6,),
}
# Paimon types lakeformat has no Arrow mapping or reader for. (BLOB, large objects kept in .blob
# files, is read and written where Paimon allows it: format/blob.py states where.)
UNSUPPORTED_TYPES = ("VARIANT", "MULTISET", "VECTOR")
_ALIASES = {"INTEGER": "INT", "STRING": "VARCHAR", "BYTES": "VARBINARY", "DEC": "DECIMAL",
            "NUMERIC": "DECIMAL", "BOOL": "BOOLEAN"}


@dataclass(frozen=True)
class AtomicType:
    root: str
    params: tuple[int, ...] = ()
    nullable: bool = True

    def __str__(self) -> str:
        return type_to_json(self)


@dataclass(frozen=True)
class ArrayType:
    element: DataType
    nullable: bool = True


@dataclass(frozen=True)
class MapType:
    key: DataType
    value: DataType
    nullable: bool = True


@dataclass(frozen=True)
class DataField:
    id: int
    name: str
    type: DataType
    description: Optional[str] = None


@dataclass(frozen=True)
class RowType:
    fields: tuple[DataField, ...]
    nullable: bool = True

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.fields]


DataType = Union[AtomicType, ArrayType, MapType, RowType]


def atomic(root: str, *params: int, nullable: bool = True) -> AtomicType:
    """Build an atomic type, normalising aliases and filling Paimon's default parameters."""
    root = root.upper()
    if root == "STRING":
        return AtomicType("VARCHAR", (MAX_LENGTH,), nullable)
    if root == "BYTES":
        return AtomicType("VARBINARY", (MAX_LENGTH,), nullable)
    root = _ALIASES.get(root, root)
    if root in UNSUPPORTED_TYPES:
        raise UnsupportedTypeError(f"data type {root} is not supported by lakeformat")
    if root not in _PARAMS:
        raise SchemaError(f"unknown data type {root!r}")
    lo, hi = _PARAMS[root]
    if not lo <= len(params) <= hi:
        raise SchemaError(f"type {root} takes {lo}..{hi} parameters, got {len(params)}")
    defaults = _DEFAULT_PARAMS.get(root, ())
    params = tuple(params) + defaults[len(params):]
    if root == "DECIMAL" and not (1 <= params[0] <= 38 and 0 <= params[1] <= params[0]):
        raise SchemaError(f"invalid DECIMAL({params[0]}, {params[1]}): need 1 <= p <= 38, 0 <= s <= p")
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ", "TIME") and not 0 <= params[0] <= 9:
        raise SchemaError(f"invalid {root} precision {params[0]}: need 0..9")
    return AtomicType(root, params, nullable)


def with_nullable(t: DataType, nullable: bool) -> DataType:
    return replace(t, nullable=nullable)


# ---------------------------------------------------------------- JSON (schema files)

def type_to_json(t: DataType) -> Any:
    suffix = "" if t.nullable else " NOT NULL"
    if isinstance(t, AtomicType):
        r, p = t.root, t.params
        if r == "VARCHAR" and p == (MAX_LENGTH,):
            return "STRING" + suffix
        if r == "VARBINARY" and p == (MAX_LENGTH,):
            return "BYTES" + suffix
        if r == "DECIMAL":
            return f"DECIMAL({p[0]}, {p[1]}){suffix}"
        if r == "TIMESTAMP_LTZ":
            return f"TIMESTAMP({p[0]}) WITH LOCAL TIME ZONE{suffix}"
        if p:
            return f"{r}({', '.join(map(str, p))}){suffix}"
        return r + suffix
    if isinstance(t, ArrayType):
        return {"type": "ARRAY" + suffix, "element": type_to_json(t.element)}
    if isinstance(t, MapType):
        return {"type": "MAP" + suffix, "key": type_to_json(t.key), "value": type_to_json(t.value)}
    return {"type": "ROW" + suffix, "fields": [field_to_json(f) for f in t.fields]}


def field_to_json(f: DataField) -> dict:
    out = {"id": f.id, "name": f.name, "type": type_to_json(f.type)}
    if f.description is not None:
        out["description"] = f.description
    return out


def field_from_json(d: dict) -> DataField:
    try:
        t = type_from_json(d["type"])
    except (SchemaError, UnsupportedMetadataError) as e:   # name the column: nested fields name their path
        raise type(e)(f"column {d.get('name')!r}: {e}") from None
    field = DataField(int(d["id"]), d["name"], t, d.get("description"))
    check_json_keys(d, SCHEMA_FIELD_KEYS, f"schema column {d['name']!r}")   # a column of a newer Paimon?
    return field


_ATOMIC_RE = re.compile(
    r"^\s*(?P<root>[A-Z_]+)\s*(?:\((?P<params>[^)]*)\))?\s*(?P<ltz>WITH LOCAL TIME ZONE)?"
    r"\s*(?P<null>NOT NULL|NULL)?\s*$", re.IGNORECASE)


def type_from_json(v: Any) -> DataType:
    if isinstance(v, str):
        m = _ATOMIC_RE.match(v)
        if not m:
            raise SchemaError(f"cannot parse data type {v!r}")
        root = m.group("root").upper()
        params = tuple(int(x) for x in m.group("params").split(",")) if m.group("params") else ()
        if m.group("ltz"):
            root = "TIMESTAMP_LTZ"
        nullable = (m.group("null") or "").upper() != "NOT NULL"
        return atomic(root, *params, nullable=nullable)
    if isinstance(v, dict):
        kind = v["type"].upper()
        nullable = "NOT NULL" not in kind
        base = kind.replace("NOT NULL", "").strip()
        if base in NESTED_TYPE_KEYS:   # keys a newer Paimon might add: refused when set
            check_type_json(v, base, nullable)
        if base == "ARRAY":
            return ArrayType(type_from_json(v["element"]), nullable)
        if base == "MAP":
            return MapType(type_from_json(v["key"]), type_from_json(v["value"]), nullable)
        if base == "ROW":
            return RowType(tuple(field_from_json(f) for f in v["fields"]), nullable)
        if base in UNSUPPORTED_TYPES:
            raise UnsupportedTypeError(f"data type {base} is not supported by lakeformat")
        raise SchemaError(f"unsupported nested data type {v['type']!r}")
    raise SchemaError(f"cannot parse data type {v!r}")


# ---------------------------------------------------------------- Arrow

def _ts_unit(precision: int) -> str:
    return "s" if precision == 0 else "ms" if precision <= 3 else "us" if precision <= 6 else "ns"


def to_arrow(t: DataType) -> pa.DataType:
    if isinstance(t, AtomicType):
        r, p = t.root, t.params
        simple = {"BOOLEAN": pa.bool_(), "TINYINT": pa.int8(), "SMALLINT": pa.int16(),
                  "INT": pa.int32(), "BIGINT": pa.int64(), "FLOAT": pa.float32(),
                  "DOUBLE": pa.float64(), "DATE": pa.date32(), "TIME": pa.time32("ms"),
                  "CHAR": pa.string(), "VARCHAR": pa.string(),
                  "BINARY": pa.binary(), "VARBINARY": pa.binary(), "BLOB": pa.large_binary()}
        if r in simple:
            return simple[r]
        if r == "DECIMAL":
            return pa.decimal128(p[0], p[1])
        if r == "TIMESTAMP":
            return pa.timestamp(_ts_unit(p[0]))
        if r == "TIMESTAMP_LTZ":
            return pa.timestamp(_ts_unit(p[0]), tz="UTC")
    if isinstance(t, ArrayType):
        return pa.list_(pa.field("element", to_arrow(t.element), t.element.nullable))
    if isinstance(t, MapType):
        return pa.map_(pa.field("key", to_arrow(t.key), False),
                       pa.field("value", to_arrow(t.value), t.value.nullable))
    if isinstance(t, RowType):
        return pa.struct([arrow_field(f) for f in t.fields])
    raise SchemaError(f"no Arrow type for {t}")


def arrow_field(f: DataField) -> pa.Field:
    return pa.field(f.name, to_arrow(f.type), f.type.nullable)


def arrow_schema(fields) -> pa.Schema:
    return pa.schema([arrow_field(f) for f in fields])


def from_arrow(t: pa.DataType, nullable: bool = True, next_id=None) -> DataType:
    """Paimon type for an Arrow type. ``next_id`` hands out field ids for nested ROW fields."""
    if next_id is None:
        counter = iter(range(10**9))
        next_id = lambda: next(counter)  # noqa: E731
    T = pa.types
    for pred, root in ((T.is_boolean, "BOOLEAN"), (T.is_int8, "TINYINT"), (T.is_int16, "SMALLINT"),
                       (T.is_int32, "INT"), (T.is_int64, "BIGINT"), (T.is_float32, "FLOAT"),
                       (T.is_float64, "DOUBLE"), (T.is_date32, "DATE")):
        if pred(t):
            return atomic(root, nullable=nullable)
    if T.is_string(t) or T.is_large_string(t) or T.is_string_view(t):
        return atomic("STRING", nullable=nullable)
    if T.is_fixed_size_binary(t):
        return atomic("BINARY", t.byte_width, nullable=nullable)
    if T.is_binary(t) or T.is_large_binary(t) or T.is_binary_view(t):
        return atomic("BYTES", nullable=nullable)
    if T.is_decimal(t):
        return atomic("DECIMAL", t.precision, t.scale, nullable=nullable)
    if T.is_time(t):
        return atomic("TIME", {"s": 0, "ms": 3, "us": 6, "ns": 9}[t.unit], nullable=nullable)
    if T.is_timestamp(t):
        precision = {"s": 0, "ms": 3, "us": 6, "ns": 9}[t.unit]
        return atomic("TIMESTAMP_LTZ" if t.tz else "TIMESTAMP", precision, nullable=nullable)
    if T.is_list(t) or T.is_large_list(t):
        return ArrayType(from_arrow(t.value_type, t.value_field.nullable, next_id), nullable)
    if T.is_map(t):
        return MapType(from_arrow(t.key_type, False, next_id),
                       from_arrow(t.item_type, t.item_field.nullable, next_id), nullable)
    if T.is_struct(t):
        fields = []
        for i in range(t.num_fields):
            f = t.field(i)
            fields.append(DataField(next_id(), f.name, from_arrow(f.type, f.nullable, next_id)))
        return RowType(tuple(fields), nullable)
    if T.is_dictionary(t):
        return from_arrow(t.value_type, nullable, next_id)
    raise SchemaError(f"Arrow type {t} has no Paimon equivalent")


# ---------------------------------------------------------------- evolution

_INT_ORDER = ["TINYINT", "SMALLINT", "INT", "BIGINT"]


def can_widen(old: DataType, new: DataType) -> bool:
    """True if every value of ``old`` is exactly representable in ``new`` (safe evolution)."""
    if not isinstance(old, AtomicType) or not isinstance(new, AtomicType):
        return False
    o, n = old.root, new.root
    if o == n and old.params == new.params:
        return True
    if o in _INT_ORDER and n in _INT_ORDER:
        return _INT_ORDER.index(o) <= _INT_ORDER.index(n)
    if o in _INT_ORDER[:2] and n in ("FLOAT", "DOUBLE"):
        return True
    if o == "INT" and n == "DOUBLE":
        return True
    if o == "FLOAT" and n == "DOUBLE":
        return True
    if o in _INT_ORDER and n == "DECIMAL":
        digits = {"TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 19}[o]
        return new.params[0] - new.params[1] >= digits
    if o == n == "DECIMAL":
        return new.params[1] >= old.params[1] and new.params[0] - new.params[1] >= old.params[0] - old.params[1]
    if o in ("CHAR", "VARCHAR") and n == "VARCHAR":
        return new.params[0] >= old.params[0]
    if o in ("BINARY", "VARBINARY") and n == "VARBINARY":
        return new.params[0] >= old.params[0]
    if o == n and o in ("TIMESTAMP", "TIMESTAMP_LTZ", "TIME"):
        return new.params[0] >= old.params[0]
    return False
