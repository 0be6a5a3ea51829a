"""Spark's pushed filters as lakeformat predicates (pure; no IO).

Spark hands a data source the conjuncts of a query's WHERE clause it could express as simple
filters (``EqualTo``, ``In``, ``IsNull``, ``Not``...). Each one that maps to lakeformat's filter
language prunes partitions and files and filters rows during the scan. A filter is *exact* when
lakeformat's row filter gives exactly Spark's answer; only those are taken from Spark. Inexact
ones (floats, where Spark orders NaN above everything; zoned timestamps) are still used for
pruning, and Spark evaluates them again; filters with no translation stay with Spark.
"""
from __future__ import annotations

import datetime as dt
import decimal
from dataclasses import dataclass
from typing import Any, Optional
from collections.abc import Sequence

from pyspark.sql import datasource as D
from pyspark.sql import functions as F

from lakeformat.format import predicate as P
from lakeformat.format import types as T
from lakeformat.format.schema import TableSchema
from lakeformat.spark.types import spark_type

_INTS = ("TINYINT", "SMALLINT", "INT", "BIGINT")


@dataclass(frozen=True)
class Translation:
    predicate: P.Predicate
    exact: bool


def _column(schema: TableSchema, attribute: Sequence[str]) -> Optional[T.DataField]:
    if len(attribute) != 1:
        return None   # nested fields: not in lakeformat's filter language
    for f in schema.fields:
        if f.name == attribute[0]:
            return f
    return None


def _value_fits(t: T.DataType, v: Any) -> Optional[bool]:
    """None if ``v`` cannot be compared with column type ``t`` here; else whether the
    comparison is exact."""
    if not isinstance(t, T.AtomicType) or (isinstance(v, bool) and t.root != "BOOLEAN"):
        return None
    r = t.root
    if r == "BOOLEAN":
        return True if isinstance(v, bool) else None
    if r in _INTS:
        return True if isinstance(v, int) else None
    if r in ("FLOAT", "DOUBLE"):
        return False if isinstance(v, (int, float)) else None
    if r == "DECIMAL":   # (pyarrow cannot compare a decimal column with a plain int)
        return True if isinstance(v, decimal.Decimal) else None
    if r in ("CHAR", "VARCHAR"):
        return True if isinstance(v, str) else None
    if r == "DATE":
        return True if isinstance(v, dt.date) and not isinstance(v, dt.datetime) else None
    if r == "TIMESTAMP":
        return True if isinstance(v, dt.datetime) and v.tzinfo is None else None
    if r == "TIMESTAMP_LTZ":
        return False if isinstance(v, dt.datetime) and v.tzinfo is not None else None
    return None


def translate(f: D.Filter, schema: TableSchema) -> Optional[Translation]:
    """The lakeformat predicate for one Spark filter, or None when there is none."""
    if isinstance(f, D.Not):
        return _negated(f.child, schema)
    col = _column(schema, getattr(f, "attribute", ()))
    if col is None:
        return None
    name, t = col.name, col.type
    if isinstance(f, D.IsNull):
        return Translation(P.col(name).is_null(), True)
    if isinstance(f, D.IsNotNull):
        return Translation(P.col(name).is_not_null(), True)
    if isinstance(f, D.EqualNullSafe) and f.value is None:
        return Translation(P.col(name).is_null(), True)
    if isinstance(f, D.In):
        values = [v for v in f.value if v is not None]   # `x IN (1, NULL)` is true only for 1
        each_fits = [_value_fits(t, v) for v in values]
        if not values or any(x is None for x in each_fits):
            return None
        return Translation(P.col(name).isin(values), all(each_fits))
    ops = {D.EqualTo: "==", D.EqualNullSafe: "==", D.GreaterThan: ">", D.GreaterThanOrEqual: ">=",
           D.LessThan: "<", D.LessThanOrEqual: "<="}
    if not isinstance(f, (D.EqualTo, D.EqualNullSafe, D.GreaterThan, D.GreaterThanOrEqual, D.LessThan,
                          D.LessThanOrEqual)):
        return None   # string prefix/suffix/contains: Spark evaluates them
    op = ops[type(f)]
    fits = _value_fits(t, f.value)
    if fits is None:
        return None
    return Translation(P.Compare(name, op, f.value), fits)


def _negated(child: D.Filter, schema: TableSchema) -> Optional[Translation]:
    if isinstance(child, D.Not):
        return translate(child.child, schema)
    if isinstance(child, D.EqualNullSafe) and child.value is not None:
        # NOT (x <=> v) is true for nulls too, unlike NOT (x = v)
        inner = translate(D.EqualTo(child.attribute, child.value), schema)
        if inner is None:
            return None
        return Translation(P.Or((P.negate(inner.predicate), P.col(child.attribute[0]).is_null())), inner.exact)
    if isinstance(child, D.In) and any(v is None for v in child.value):
        return None   # NOT IN with a NULL is never true; rare enough to leave to Spark
    inner = translate(child, schema)
    if inner is None:
        return None
    return Translation(P.negate(inner.predicate), inner.exact)


def push(filters: Sequence[D.Filter], schema: TableSchema) -> tuple[Optional[P.Predicate], list[D.Filter]]:
    """(the AND of every translated filter, the filters Spark must still evaluate)."""
    preds, rest = [], []
    for f in filters:
        tr = translate(f, schema)
        if tr is None:
            rest.append(f)
            continue
        preds.append(tr.predicate)
        if not tr.exact:
            rest.append(f)
    if not preds:
        return None, rest
    return (preds[0] if len(preds) == 1 else P.And(tuple(preds))), rest


def to_spark_column(p: P.Predicate, schema: TableSchema):
    """``p`` as a Spark Column with lakeformat's row semantics, for rows Spark reads itself.

    Where Spark and Arrow differ, Arrow's answer is kept: NaN compares false (Spark orders it
    above every number and equal to itself), and literals take the column's type (a naive
    datetime is wall-clock time for ``TIMESTAMP``, not an instant in the session's zone)."""
    if isinstance(p, (P.And, P.Or)):
        cols = [to_spark_column(c, schema) for c in p.children]
        out = cols[0]
        for c in cols[1:]:
            out = (out & c) if isinstance(p, P.And) else (out | c)
        return out
    if not isinstance(p, (P.Compare, P.In, P.IsNull)):
        raise TypeError(f"not a predicate: {p!r}")
    field = schema.field(p.column)
    c = F.col(f"`{p.column}`")
    if isinstance(p, P.IsNull):
        return c.isNotNull() if p.negated else c.isNull()
    floating = isinstance(field.type, T.AtomicType) and field.type.root in ("FLOAT", "DOUBLE")
    if isinstance(p, P.In):
        e = c.isin([_literal(v, field.type) for v in p.values])
        if p.negated:
            e = ~e & c.isNotNull()
        return (e & ~F.isnan(c)) if floating and not p.negated and not any(_nan(v) for v in p.values) else e
    if floating and _nan(p.value):   # Arrow: NaN compares unequal to everything, itself too
        return c.isNotNull() if p.op == "!=" else F.lit(False)
    e = {"==": c.__eq__, "!=": c.__ne__, "<": c.__lt__, "<=": c.__le__, ">": c.__gt__,
         ">=": c.__ge__}[p.op](_literal(p.value, field.type))
    if floating:
        return (e | F.isnan(c)) if p.op == "!=" else (e & ~F.isnan(c))
    return e


def _literal(v: Any, t: T.DataType):
    if isinstance(t, T.AtomicType) and t.root == "TIMESTAMP" and isinstance(v, dt.datetime):
        return F.lit(v.replace(tzinfo=None).isoformat(sep=" ")).cast(spark_type(t))
    return F.lit(v).cast(spark_type(t))


def _nan(v: Any) -> bool:
    return isinstance(v, float) and v != v
