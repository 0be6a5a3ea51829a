"""A small filter language that scan planning can inspect.

``col("dt") == "2024-01-01"``, ``col("price") > 10``, ``col("id").isin([1, 2])``,
``col("x").is_null()``, combined with ``&``, ``|`` and ``~``. The same expression prunes
partitions (exact values), prunes files (min/max/null-count statistics, conservatively) and
finally filters rows (translated to ``pyarrow.compute`` expressions).
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Optional, Union
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import SchemaError
from lakeformat.format import arrays as A

_FLIP = {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}
_OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
        ">": operator.gt, ">=": operator.ge}


class Predicate:
    def __and__(self, other: Predicate) -> Predicate:
        return And((self, other))

    def __or__(self, other: Predicate) -> Predicate:
        return Or((self, other))

    def __invert__(self) -> Predicate:
        return negate(self)


@dataclass(frozen=True)
class Compare(Predicate):
    column: str
    op: str
    value: Any


@dataclass(frozen=True)
class In(Predicate):
    column: str
    values: tuple
    negated: bool = False


@dataclass(frozen=True)
class IsNull(Predicate):
    column: str
    negated: bool = False


@dataclass(frozen=True)
class And(Predicate):
    children: tuple


@dataclass(frozen=True)
class Or(Predicate):
    children: tuple


@dataclass(frozen=True)
class Col:
    """Entry point of the filter language: ``col("name") <op> value``."""

    name: str

    def _cmp(self, op: str, value: Any) -> Predicate:
        if value is None:
            raise ValueError(f"compare {self.name!r} with None: use is_null() / is_not_null()")
        return Compare(self.name, op, value)

    def __eq__(self, v):
        return self._cmp("==", v)

    def __ne__(self, v):
        return self._cmp("!=", v)

    def __lt__(self, v):
        return self._cmp("<", v)

    def __le__(self, v):
        return self._cmp("<=", v)

    def __gt__(self, v):
        return self._cmp(">", v)

    def __ge__(self, v):
        return self._cmp(">=", v)

    def __hash__(self):
        return hash(self.name)

    def isin(self, values: Sequence) -> Predicate:
        return In(self.name, tuple(values))

    def is_null(self) -> Predicate:
        return IsNull(self.name)

    def is_not_null(self) -> Predicate:
        return IsNull(self.name, negated=True)


def col(name: str) -> Col:
    return Col(name)


def negate(p: Predicate) -> Predicate:
    """Push a NOT down to the leaves (De Morgan), so pruning never sees a NOT node."""
    if isinstance(p, Compare):
        return Compare(p.column, _FLIP[p.op], p.value)
    if isinstance(p, In):
        return In(p.column, p.values, not p.negated)
    if isinstance(p, IsNull):
        return IsNull(p.column, not p.negated)
    if isinstance(p, And):
        return Or(tuple(negate(c) for c in p.children))
    if isinstance(p, Or):
        return And(tuple(negate(c) for c in p.children))
    raise TypeError(f"not a predicate: {p!r}")


def as_leaf(p: Predicate) -> Union[Compare, In, IsNull]:
    """``p`` as a predicate on one column (And and Or are handled by the caller)."""
    if not isinstance(p, (Compare, In, IsNull)):
        raise TypeError(f"not a predicate: {p!r}")
    return p


def columns(p: Optional[Predicate]) -> set[str]:
    if p is None:
        return set()
    if isinstance(p, (And, Or)):
        return set().union(*(columns(c) for c in p.children))
    return {as_leaf(p).column}


def only_on(p: Optional[Predicate], names: set[str]) -> Optional[Predicate]:
    """The part of an AND-tree that mentions only ``names`` (None if nothing is left).
    Used to split a filter into its partition part and the rest."""
    if p is None:
        return None
    if isinstance(p, And):
        kept = [c for c in (only_on(c, names) for c in p.children) if c is not None]
        return None if not kept else kept[0] if len(kept) == 1 else And(tuple(kept))
    return p if columns(p) <= names else None


# ---------------------------------------------------------------- pruning

# A column's statistics: (min, max, null_count, row_count); min/max None when unknown.
Stats = tuple[Any, Any, Optional[int], int]


def may_match(p: Optional[Predicate], stats_of: Callable[[str], Optional[Stats]]) -> bool:
    """False only when no row summarised by ``stats_of`` can satisfy ``p``.
    ``stats_of(column)`` returns None when nothing is known about the column."""
    if p is None:
        return True
    if isinstance(p, And):
        return all(may_match(c, stats_of) for c in p.children)
    if isinstance(p, Or):
        return any(may_match(c, stats_of) for c in p.children)
    p = as_leaf(p)
    s = stats_of(p.column)
    if s is None:
        return True
    lo, hi, nulls, count = s
    if isinstance(p, IsNull):
        if nulls is None:
            return True
        return nulls < count if p.negated else nulls > 0
    if nulls is not None and nulls >= count:
        return False  # all null: no comparison can be true
    if lo is None or hi is None:
        return True
    try:
        if isinstance(p, In):
            if p.negated:
                return not (lo == hi and lo in p.values)
            return any(lo <= v <= hi for v in p.values)
        v, op = p.value, p.op
        if op == "==":
            return lo <= v <= hi
        if op == "!=":
            return not (lo == hi == v)
        if op == "<":
            return lo < v
        if op == "<=":
            return lo <= v
        if op == ">":
            return hi > v
        return hi >= v
    except TypeError:
        return True  # incomparable statistic (e.g. truncated or differently typed): keep the file


def to_arrow(p: Predicate) -> pc.Expression:
    """The row filter for ``p`` as a pyarrow expression (SQL semantics: null never matches)."""
    if isinstance(p, And):
        out = to_arrow(p.children[0])
        for c in p.children[1:]:
            out = out & to_arrow(c)
        return out
    if isinstance(p, Or):
        out = to_arrow(p.children[0])
        for c in p.children[1:]:
            out = out | to_arrow(c)
        return out
    p = as_leaf(p)
    f = pc.field(p.column)
    if isinstance(p, IsNull):
        return f.is_valid() if p.negated else f.is_null()
    if isinstance(p, In):
        values = [v for v in p.values if v is not None]
        if p.negated:   # SQL: x NOT IN (.., NULL) is never true
            if len(values) < len(p.values):
                return pc.scalar(False)
            return (~f.isin(values) & f.is_valid()) if values else f.is_valid()
        return (f.isin(values) & f.is_valid()) if values else pc.scalar(False)   # a null in the list matches no row
    return _OPS[p.op](f, p.value)


_PC = {"==": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater,
       ">=": pc.greater_equal}


def mask(p: Predicate, data: pa.Table):
    """The rows of ``data`` that ``p`` selects, as a boolean array for ``Table.filter`` (null:
    not selected): what ``table.filter(to_arrow(p))`` selects, evaluated with compute functions
    on the columns, so that neither ``pyarrow.dataset`` nor pandas is imported (see
    ``lakeformat/format/arrays.py``)."""
    if isinstance(p, (And, Or)):
        fn = pc.and_kleene if isinstance(p, And) else pc.or_kleene
        out = mask(p.children[0], data)
        for c in p.children[1:]:
            out = fn(out, mask(c, data))
        return out
    p = as_leaf(p)
    col = data.column(p.column)
    if isinstance(p, IsNull):
        return pc.is_valid(col) if p.negated else pc.is_null(col)
    if isinstance(p, In):
        values = [v for v in p.values if v is not None]
        none = A.from_numpy(np.zeros(data.num_rows, np.bool_))
        if p.negated:   # SQL: x NOT IN (.., NULL) is never true
            if len(values) < len(p.values):
                return none
            return pc.and_kleene(pc.invert(pc.is_in(col, value_set=A.infer_array(values))), pc.is_valid(col)) \
                if values else pc.is_valid(col)
        return pc.and_kleene(pc.is_in(col, value_set=A.infer_array(values)), pc.is_valid(col)) if values else none
    if p.value is None:   # compared with null: never true
        return A.from_numpy(np.zeros(data.num_rows, np.bool_))
    return _PC[p.op](col, A.infer_scalar(p.value))


def leaves(p: Optional[Predicate]) -> list:
    if p is None:
        return []
    if isinstance(p, (And, Or)):
        return [x for c in p.children for x in leaves(c)]
    return [p]


def check(p: Optional[Predicate], schema: pa.Schema) -> None:
    """SchemaError naming the column when ``p`` names a column the schema lacks or compares one
    with a value of a type it cannot be compared with (checked once, before any file is read)."""
    for leaf in leaves(p):
        if leaf.column not in schema.names:
            raise SchemaError(f"filter on unknown column {leaf.column!r}; the table has {schema.names}")
        if isinstance(leaf, IsNull):
            continue
        field = schema.field(leaf.column)
        try:
            mask(leaf, A.empty_table(pa.schema([field])))
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
            value = leaf.value if isinstance(leaf, Compare) else list(leaf.values)
            raise SchemaError(f"filter on column {leaf.column!r} of type {field.type}: cannot compare it with "
                              f"{value!r} ({type(value).__name__}); give a value of the column's type") from None
