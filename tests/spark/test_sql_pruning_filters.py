"""The SQL catalog's data filters, as the jar sends them (JSON of Spark's simple filters), become
lakeformat predicates every matching row satisfies: a conjunction keeps what it can translate,
a disjunction or negation with an untranslatable part prunes nothing (pure, no Spark)."""
from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa

from lakeformat.format import predicate as P
from lakeformat.format.schema import new_schema
from lakeformat.spark.sql_pruning import predicate

SCHEMA = new_schema(pa.schema([("id", pa.int64()), ("name", pa.string()), ("day", pa.date32()),
                               ("price", pa.decimal128(10, 2)), ("ts", pa.timestamp("us"))]))


def v(kind: str, value=None) -> dict:
    return {"type": kind, "value": value}


def test_comparisons_values_and_combinations():
    assert predicate({"op": "GreaterThan", "attribute": "id", "value": v("int", 5)}, SCHEMA) == P.Compare("id", ">", 5)
    assert predicate({"op": "EqualTo", "attribute": "day", "value": v("date", "2024-06-01")}, SCHEMA) == \
        P.Compare("day", "==", dt.date(2024, 6, 1))
    assert predicate({"op": "LessThan", "attribute": "price", "value": v("decimal", "1.50")}, SCHEMA) == \
        P.Compare("price", "<", decimal.Decimal("1.50"))
    assert predicate({"op": "In", "attribute": "name", "values": [v("str", "a"), v("str", "b")]}, SCHEMA) == \
        P.col("name").isin(["a", "b"])
    assert predicate({"op": "IsNull", "attribute": "name"}, SCHEMA) == P.col("name").is_null()
    gt = {"op": "GreaterThan", "attribute": "id", "value": v("int", 5)}
    unknown = {"op": "StringStartsWith", "attribute": "name"}
    wrong_type = {"op": "EqualTo", "attribute": "id", "value": v("str", "5")}   # no comparison across types
    assert predicate({"op": "And", "children": [gt, unknown]}, SCHEMA) == P.Compare("id", ">", 5)
    assert predicate({"op": "Or", "children": [gt, unknown]}, SCHEMA) is None
    assert predicate({"op": "Or", "children": [gt, wrong_type]}, SCHEMA) is None
    assert predicate({"op": "Not", "child": gt}, SCHEMA) == P.negate(P.Compare("id", ">", 5))
    assert predicate({"op": "Not", "child": unknown}, SCHEMA) is None
    assert predicate({"op": "EqualTo", "attribute": "nope", "value": v("int", 1)}, SCHEMA) is None
    assert predicate({"op": "Or", "children": [gt, {"op": "IsNull", "attribute": "name"}]}, SCHEMA) == \
        P.Or((P.Compare("id", ">", 5), P.col("name").is_null()))
