"""The SQL catalog's file pruning by a query's data filters (pure over the table's metadata).

Spark prunes partitions itself, by the planned partition values; filters on other columns it
would apply only inside the files it reads (row groups). lakeformat's scan can skip whole files
by the min/max statistics in the manifests: the jar's ``DataFilterPruner`` sends Spark's simple
filters as JSON, they become pyspark's data source filters and then a lakeformat predicate
(:func:`lakeformat.spark.filters.translate`, exact or not: pruning only needs a predicate no
matching row fails), and the snapshot is planned again with it. The answer is the files kept.
"""
from __future__ import annotations

import datetime as dt
import decimal
from typing import Any, Optional
from collections.abc import Mapping, Sequence

from pyspark.sql import datasource as D

from lakeformat.format import predicate as P
from lakeformat.format.schema import TableSchema
from lakeformat.io.fileio import join
from lakeformat.spark.filters import translate
from lakeformat.spark.native_read import spark_path

_COMPARE = {"EqualTo": D.EqualTo, "EqualNullSafe": D.EqualNullSafe, "GreaterThan": D.GreaterThan,
            "GreaterThanOrEqual": D.GreaterThanOrEqual, "LessThan": D.LessThan,
            "LessThanOrEqual": D.LessThanOrEqual}


def _value(v: Mapping[str, Any]) -> Any:
    kind = v["type"]
    if kind == "null":
        return None
    if kind == "date":
        return dt.date.fromisoformat(str(v["value"]))
    if kind == "decimal":
        return decimal.Decimal(str(v["value"]))
    return v["value"]


def predicate(f: Mapping[str, Any], schema: TableSchema) -> Optional[P.Predicate]:
    """One filter of the jar's JSON as a lakeformat predicate that every matching row satisfies
    (None: no such predicate here, nothing is pruned by it)."""
    op = f["op"]
    if op in ("And", "Or"):
        kids = [predicate(c, schema) for c in f["children"]]
        if op == "Or":
            return None if any(k is None for k in kids) else P.Or(tuple(kids))
        known = [k for k in kids if k is not None]
        return None if not known else known[0] if len(known) == 1 else P.And(tuple(known))
    spark_filter = data_source_filter(f)
    tr = None if spark_filter is None else translate(spark_filter, schema)
    return None if tr is None else tr.predicate


def data_source_filter(f: Mapping[str, Any]) -> Optional[D.Filter]:
    """One filter of the jar's JSON (a leaf or a NOT of one) as PySpark's data source filter, the
    form :func:`lakeformat.spark.filters.translate` takes; None for one it does not know."""
    op = f["op"]
    if op == "Not":
        child = data_source_filter(f["child"])
        return None if child is None else D.Not(child)
    attr = (f["attribute"],)
    if op == "IsNull":
        return D.IsNull(attr)
    if op == "IsNotNull":
        return D.IsNotNull(attr)
    if op == "In":
        return D.In(attr, tuple(_value(v) for v in f["values"]))
    if op in _COMPARE:
        return _COMPARE[op](attr, _value(f["value"]))
    return None


def prune_answer(t, snapshot, schema_id: int, filters: Sequence[Mapping[str, Any]]) -> dict:
    """The files of ``snapshot`` whose statistics may hold rows matching ``filters``, as the
    Hadoop paths the catalog planned them with; ``None`` when the filters prune nothing here
    (no translation, or the catalog reads another schema than the table's latest)."""
    if t.schema.id != schema_id:
        return {"files": None}
    preds = [p for p in (predicate(f, t.schema) for f in filters) if p is not None]
    if not preds:
        return {"files": None}
    splits = t.scan(filter=preds[0] if len(preds) == 1 else P.And(tuple(preds)), snapshot_id=snapshot.id).plan()
    return {"files": [spark_path(t, join(t.bucket_dir_of(s.partition_bytes, s.bucket), f.file_name))
                      for s in splits for f in s.files]}
