"""Filters typed by people, for ``lakeformat read --filter`` and the Lakehouse page's data
preview: a small SQL ``WHERE`` syntax parsed into lakeformat's predicates (predicate.py), so the
same filter prunes partitions and files before rows are read.

    dt = '2024-06-01' and price >= 10
    behavior in ('pv', 'buy') or user_id is null
    not (price < 1.5) and `odd name` != 'x'

Operators ``= == != <> < <= > >=``, ``in (...)``, ``not in (...)``, ``is [not] null``, ``and``,
``or``, ``not`` and parentheses. Values are numbers, quoted text ('it''s'), ``true``/``false``;
each is turned into its column's type (a date column compares with '2024-06-01'). Columns are
bare names or `back-quoted`. Anything else is a FilterError naming the filter and what is wrong.
"""
from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal, InvalidOperation
from typing import Any, Optional

import pyarrow as pa

from lakeformat.errors import DataError, SchemaError
from lakeformat.format import predicate as P


class FilterError(DataError):
    """A filter that cannot be parsed or does not fit the table's columns."""


_TOKEN = re.compile(r"""\s*(?:
    (?P<str>'(?:[^']|'')*')
  | (?P<quoted>`(?:[^`]|``)+`)
  | (?P<num>[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)(?![\w.])
  | (?P<op><=|>=|<>|!=|==|=|<|>)
  | (?P<punct>[(),])
  | (?P<word>[A-Za-z_][\w.$]*)
)""", re.X)
_KEYWORDS = {"and", "or", "not", "in", "is", "null", "true", "false"}
_OP = {"=": "==", "==": "==", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


class _Lit:
    """A literal as typed: its Python value and its text (for text columns and messages)."""

    def __init__(self, value: Any, text: str):
        self.value, self.text = value, text


def _tokens(text: str) -> list[tuple[str, Any, int]]:
    out: list[tuple[str, Any, int]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            at = pos + len(text[pos:]) - len(text[pos:].lstrip())
            raise FilterError(f"bad filter {text!r}: cannot read {text[at:at + 20]!r} (character {at + 1})")
        kind = m.lastgroup
        assert kind is not None, "every alternative of _TOKEN is a named group"
        raw = m.group(kind)
        start = m.start(kind)
        if kind == "str":
            out.append(("lit", _Lit(raw[1:-1].replace("''", "'"), raw[1:-1].replace("''", "'")), start))
        elif kind == "quoted":
            out.append(("name", raw[1:-1].replace("``", "`"), start))
        elif kind == "num":
            value = float(raw) if any(c in raw for c in ".eE") else int(raw)
            out.append(("lit", _Lit(value, raw), start))
        elif kind == "word" and raw.lower() in _KEYWORDS:
            word = raw.lower()
            if word in ("true", "false"):
                out.append(("lit", _Lit(word == "true", word), start))
            else:
                out.append((word, word, start))
        elif kind == "word":
            out.append(("name", raw, start))
        else:
            out.append((kind if kind == "punct" else "op", raw, start))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text: str, schema: pa.Schema):
        self.text, self.schema = text, schema
        self.toks, self.i = _tokens(text), 0

    def fail(self, what: str) -> FilterError:
        if self.i < len(self.toks):
            _, raw, at = self.toks[self.i]
            where = f"at {str(raw if not isinstance(raw, _Lit) else raw.text)!r} (character {at + 1})"
        else:
            where = "at the end"
        return FilterError(f"bad filter {self.text!r}: {what} {where}")

    def peek(self, *kinds: str) -> bool:
        return self.i < len(self.toks) and (self.toks[self.i][0] in kinds or self.toks[self.i][1] in kinds)

    def take(self, *kinds: str, what: str):
        if not self.peek(*kinds):
            raise self.fail(f"expected {what}")
        self.i += 1
        return self.toks[self.i - 1][1]

    def parse(self) -> P.Predicate:
        if not self.toks:
            raise FilterError("empty filter: give e.g. \"dt = '2024-06-01' and price > 10\"")
        p = self.or_()
        if self.i < len(self.toks):
            raise self.fail("expected 'and', 'or' or the end")
        return p

    def or_(self) -> P.Predicate:
        parts = [self.and_()]
        while self.peek("or"):
            self.i += 1
            parts.append(self.and_())
        return parts[0] if len(parts) == 1 else P.Or(tuple(parts))

    def and_(self) -> P.Predicate:
        parts = [self.not_()]
        while self.peek("and"):
            self.i += 1
            parts.append(self.not_())
        return parts[0] if len(parts) == 1 else P.And(tuple(parts))

    def not_(self) -> P.Predicate:
        if self.peek("not"):
            self.i += 1
            return P.negate(self.not_())
        if self.peek("("):
            self.i += 1
            p = self.or_()
            self.take(")", what="')'")
            return p
        return self.leaf()

    def leaf(self) -> P.Predicate:
        name = self.take("name", what="a column name")
        if name not in self.schema.names:
            raise FilterError(f"bad filter {self.text!r}: no column {name!r} "
                              f"(character {self.toks[self.i - 1][2] + 1}); "
                              f"the columns are {', '.join(self.schema.names)}")
        typ = self.schema.field(name).type
        if self.peek("is"):
            self.i += 1
            negated = self.peek("not")
            self.i += negated
            self.take("null", what="'null' after 'is'")
            return P.IsNull(name, negated=negated)
        negated = self.peek("not")
        if negated:
            self.i += 1
            if not self.peek("in"):
                raise self.fail("expected 'in' after 'not'")
        if self.peek("in"):
            self.i += 1
            self.take("(", what="'(' after 'in'")
            values = [self.value(name, typ)]
            while self.peek(","):
                self.i += 1
                values.append(self.value(name, typ))
            self.take(")", what="')' or ','")
            return P.In(name, tuple(values), negated)
        op = self.take("op", what="an operator (=, !=, <, <=, >, >=, in, is null)")
        if self.peek("null"):
            raise self.fail(f"a comparison with null is never true: write '{name} is null' or "
                            f"'{name} is not null'")
        return P.Compare(name, _OP[op], self.value(name, typ))

    def value(self, column: str, typ: pa.DataType) -> Any:
        lit = self.take("lit", what=f"a value for {column!r}")
        try:
            return coerce(lit.value, lit.text, typ)
        except (ValueError, TypeError, InvalidOperation, OverflowError):
            self.i -= 1
            raise self.fail(f"{lit.text!r} is not a value of column {column!r} ({typ})") from None


def coerce(value: Any, text: str, typ: pa.DataType) -> Any:
    """A literal as a value of ``typ`` (ValueError/TypeError when it is not one)."""
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return text
    if pa.types.is_boolean(typ):
        if not isinstance(value, bool):
            raise ValueError(text)
        return value
    if isinstance(value, bool):
        raise TypeError(text)
    if pa.types.is_integer(typ):
        if isinstance(value, (float, str)):
            d = Decimal(text)
            if d != d.to_integral_value():
                raise ValueError(text)
            return int(d)
        return value
    if pa.types.is_floating(typ):
        return float(value) if not isinstance(value, str) else float(text)
    if pa.types.is_decimal(typ):
        return Decimal(text)
    if pa.types.is_date(typ):
        return dt.date.fromisoformat(str(value))
    if pa.types.is_timestamp(typ):
        t = dt.datetime.fromisoformat(str(value))
        if typ.tz is not None and t.tzinfo is None:
            t = t.replace(tzinfo=dt.UTC)
        elif typ.tz is None and t.tzinfo is not None:
            raise ValueError(text)
        return t
    if pa.types.is_time(typ):
        return dt.time.fromisoformat(str(value))
    raise TypeError(f"cannot filter on a {typ} column")


def parse_filter(text: Optional[str], schema: pa.Schema) -> Optional[P.Predicate]:
    """The predicate ``text`` says over ``schema`` (None for no/blank filter); FilterError names
    the filter, the place and what is wrong."""
    if text is None or not text.strip():
        return None
    p = _Parser(text, schema).parse()
    try:
        P.check(p, schema)
    except SchemaError as e:   # a value the column cannot be compared with
        raise FilterError(f"bad filter {text!r}: {e}") from None
    return p


__all__ = ["FilterError", "parse_filter", "coerce"]
