"""``DELETE FROM <table> [WHERE ...]`` of the Spark SQL catalog, answered by the library.

As Paimon's Spark connector does for a primary-key table: the rows of the latest snapshot that
match the predicate are deleted by key (row kind ``-D`` through the merge tree, ``Table.delete``),
one commit per statement; a statement that matches no row commits nothing; without ``WHERE``
the whole table is overwritten with no rows (as ``TRUNCATE TABLE``). The jar's ``DeleteWhere``
sends Spark's conjuncts as JSON; each must become a lakeformat predicate giving exactly Spark's
answer (:func:`lakeformat.spark.filters.translate` with ``exact``), or the statement is refused
naming it: deleting by a weaker predicate would delete rows the user kept. Append tables are
refused (the library deletes by key only). One difference from Paimon's connector: a predicate
on partition columns only is deleted by key here too (Paimon drops the partitions, an OVERWRITE
commit; the façade has no multi-partition drop in one commit): the same rows remain.
"""
from __future__ import annotations

import json
from typing import Any
from collections.abc import Mapping, Sequence

from lakeformat.errors import UnsupportedError
from lakeformat.format import predicate as P
from lakeformat.format.schema import TableSchema
from lakeformat.spark import sql_ddl
from lakeformat.spark.filters import translate
from lakeformat.spark.sql_pruning import data_source_filter
from lakeformat.spark.tables import catalog_of

_ALWAYS = {"AlwaysTrue": True, "AlwaysFalse": False}


def _refused(t, f: Mapping[str, Any]) -> UnsupportedError:
    return UnsupportedError(f"DELETE FROM {t.name} WHERE {json.dumps(f)} is not supported: the predicate "
                            "has no exact lakeformat form (a float or zoned-timestamp comparison, a nested "
                            "field, or a value of another type than its column)")


def exact_predicate(f: Mapping[str, Any], t, negated: bool = False) -> P.Predicate | bool:
    """One filter of the jar's JSON (under a NOT when ``negated``) as a lakeformat predicate whose
    rows are exactly Spark's (SQL's three-valued logic: a row is deleted when the condition is
    true), or a constant; raises :class:`UnsupportedError` naming a filter with no such form."""
    schema: TableSchema = t.schema
    op = f["op"]
    if op in _ALWAYS:
        return _ALWAYS[op] != negated
    if op == "Not":
        return exact_predicate(f["child"], t, not negated)
    if op in ("And", "Or"):   # NOT pushed down by De Morgan, which holds in three-valued logic
        kids = [exact_predicate(c, t, negated) for c in f["children"]]
        conj = (op == "And") != negated
        if any(k is (not conj) for k in kids):
            return not conj
        preds = [k for k in kids if not isinstance(k, bool)]
        if not preds:
            return conj
        return preds[0] if len(preds) == 1 else P.And(tuple(preds)) if conj else P.Or(tuple(preds))
    leaf = data_source_filter({"op": "Not", "child": f} if negated else f)
    tr = None if leaf is None else translate(leaf, schema)
    if tr is None or not tr.exact:
        raise _refused(t, f)
    return tr.predicate


def delete_where(catalog: str, database: str, name: str, filters: Sequence[Mapping[str, Any]]) -> int:
    """Delete the latest snapshot's rows matching every one of ``filters``; the rows deleted
    (-1: the whole table, overwritten with no rows)."""
    t = catalog_of(catalog).get_table(f"{database}.{name}")
    if not t.schema.primary_keys:
        raise UnsupportedError(f"DELETE FROM needs a primary-key table: {t.name} has no primary key "
                               "(TRUNCATE TABLE or INSERT OVERWRITE replace an append table's rows)")
    parts = [exact_predicate(f, t) for f in filters]   # every conjunct checked before anything is read
    if any(p is False for p in parts):
        return 0
    preds = [p for p in parts if not isinstance(p, bool)]
    if not preds:   # no WHERE: as Paimon, the whole table replaced by nothing
        sql_ddl.truncate(catalog, database, name)
        return -1
    pred = preds[0] if len(preds) == 1 else P.And(tuple(preds))
    keys = list(dict.fromkeys([*t.schema.primary_keys, *t.schema.partition_keys]))
    rows = t.read(columns=keys + sorted(P.columns(pred) - set(keys)), filter=pred)
    rows = rows.filter(P.mask(pred, rows)).select(keys)   # `filter=` may only prune: keep exactly the matches
    if rows.num_rows:
        t.delete(rows)
    return rows.num_rows
