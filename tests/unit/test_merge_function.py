"""Merge engines (lakeformat.mergetree.merge_function): hand-checked examples per engine and
option, and hypothesis checks against a row-by-row model of Paimon's merge functions."""
from decimal import Decimal
from unittest import mock

import numpy as np
import pyarrow as pa
import pyarrow.compute
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from lakeformat.errors import DataError, OptionError
from lakeformat.mergetree import merge_function
from lakeformat.mergetree.merge_function import MergeFunction, sort_for_merge

SEQ, KIND = "_SEQUENCE_NUMBER", "_VALUE_KIND"
I, UB, UA, D = 0, 1, 2, 3  # noqa: E741 -- the row kinds by their Paimon letters


def table(rows, **types):
    """Rows as dicts with their columns plus 'seq' and 'kind' (default: seq = position, +I)."""
    names = [c for c in rows[0] if c not in ("seq", "kind")] if rows else list(types)
    cols = {c: pa.array([r.get(c) for r in rows], types.get(c)) for c in names}
    cols[SEQ] = pa.array([r.get("seq", i) for i, r in enumerate(rows)], pa.int64())
    cols[KIND] = pa.array([r.get("kind", I) for r in rows], pa.int8())
    return pa.table(cols)


def merge(opts, rows, drop=True, keys=("k",), **types):
    data = table(rows, **types)
    fields = [c for c in data.column_names if c not in (SEQ, KIND)]
    return MergeFunction.from_options(opts, fields, list(keys)).merge(data, drop_deletes=drop).to_pylist()


def strip(rows):
    return [{k: v for k, v in r.items() if k != SEQ} for r in rows]


# -- deduplicate -----------------------------------------------------------------------------
def test_deduplicate_keeps_newest_and_sorts_by_key():
    rows = [dict(k=2, v="a", seq=5), dict(k=1, v="b", seq=9), dict(k=2, v="c", seq=7),
            dict(k=1, v=None, seq=3), dict(k=3, v="d", seq=1)]
    assert merge({}, rows) == [dict(k=1, v="b", _SEQUENCE_NUMBER=9, _VALUE_KIND=0),
                               dict(k=2, v="c", _SEQUENCE_NUMBER=7, _VALUE_KIND=0),
                               dict(k=3, v="d", _SEQUENCE_NUMBER=1, _VALUE_KIND=0)]


def test_deduplicate_deletes():
    rows = [dict(k=1, v="a"), dict(k=1, v="a", kind=D), dict(k=2, v="b"), dict(k=2, v="b", kind=UB),
            dict(k=3, v="c", kind=D), dict(k=3, v="c2", kind=UA), dict(k=4, v="x", kind=UA)]
    assert strip(merge({}, rows)) == [dict(k=3, v="c2", _VALUE_KIND=0), dict(k=4, v="x", _VALUE_KIND=0)]
    assert strip(merge({}, rows, drop=False)) == [
        dict(k=1, v="a", _VALUE_KIND=3), dict(k=2, v="b", _VALUE_KIND=3),
        dict(k=3, v="c2", _VALUE_KIND=0), dict(k=4, v="x", _VALUE_KIND=0)]


@pytest.mark.parametrize("key", ["ignore-delete", "deduplicate.ignore-delete", "first-row.ignore-delete"])
def test_deduplicate_ignore_delete(key):
    rows = [dict(k=1, v="a"), dict(k=1, v="a", kind=D), dict(k=2, v="b", kind=D), dict(k=3, v="c"),
            dict(k=3, v="c", kind=UB)]
    assert strip(merge({key: "true"}, rows, drop=False)) == [dict(k=1, v="a", _VALUE_KIND=0),
                                                            dict(k=3, v="c", _VALUE_KIND=0)]


def test_sequence_field_orders_versions_nulls_first():
    rows = [dict(k=1, ts=5, v="five", seq=0), dict(k=1, ts=3, v="three", seq=1),
            dict(k=1, ts=None, v="null", seq=2), dict(k=2, ts=None, v="n1", seq=0),
            dict(k=2, ts=None, v="n2", seq=1), dict(k=3, ts=7, v="x", seq=0), dict(k=3, ts=7, v="y", seq=1)]
    asc = merge({"sequence.field": "ts"}, rows)
    assert [(r["k"], r["v"], r[SEQ]) for r in asc] == [(1, "five", 0), (2, "n2", 1), (3, "y", 1)]
    desc = merge({"sequence.field": "ts", "sequence.field.sort-order": "descending"}, rows)
    assert [(r["k"], r["v"]) for r in desc] == [(1, "three"), (2, "n2"), (3, "y")]


def test_multi_column_key_any_order_and_chunked_input():
    rows = [dict(a=2, b="x", v=1), dict(a=1, b="y", v=2), dict(a=1, b="x", v=3), dict(a=2, b="x", v=4)]
    data = table(rows)
    data = pa.concat_tables([data.slice(0, 2), data.slice(2)])
    out = MergeFunction.from_options({}, ["a", "b", "v"], ["a", "b"]).merge(data, True).to_pylist()
    assert [(r["a"], r["b"], r["v"]) for r in out] == [(1, "x", 3), (1, "y", 2), (2, "x", 4)]


def test_equal_sequence_numbers_keep_input_order():
    rows = [dict(k=1, v="first", seq=4), dict(k=1, v="second", seq=4), dict(k=2, v="only", seq=4)]
    assert [r["v"] for r in merge({}, rows)] == ["second", "only"]
    assert [r["v"] for r in merge({"merge-engine": "first-row"}, rows)] == ["first", "only"]


def test_no_repeated_keys_and_empty_input():
    rows = [dict(k=i, v=str(i), kind=D if i == 3 else UA) for i in (5, 3, 9, 1)]
    assert [(r["k"], r[KIND]) for r in merge({}, rows, drop=False)] == [(1, 0), (3, 3), (5, 0), (9, 0)]
    empty = table([], k=pa.int64(), v=pa.string())
    for engine in ("deduplicate", "first-row", "partial-update", "aggregation"):
        out = MergeFunction.from_options({"merge-engine": engine}, ["k", "v"], ["k"]).merge(empty, True)
        assert out.num_rows == 0 and out.schema == empty.schema


def test_sort_for_merge():
    rows = [dict(k=2, s=None, seq=0), dict(k=1, s=2, seq=1), dict(k=1, s=None, seq=2), dict(k=1, s=1, seq=3)]
    out = sort_for_merge(table(rows), ["k"], ["s"]).to_pylist()
    assert [(r["k"], r["s"]) for r in out] == [(1, None), (1, 1), (1, 2), (2, None)]
    out = sort_for_merge(table(rows), ["k"], ["s"], descending=True).to_pylist()
    assert [(r["k"], r["s"]) for r in out] == [(1, None), (1, 2), (1, 1), (2, None)]


def test_bad_input():
    mf = MergeFunction.from_options({}, ["k", "v"], ["k"])
    with pytest.raises(DataError, match="missing"):
        mf.merge(table([dict(v=1)]), True)
    with pytest.raises(DataError, match="unknown"):
        mf.merge(table([dict(k=1, v=1, w=2)]), True)
    with pytest.raises(DataError, match="VALUE_KIND"):
        mf.merge(table([dict(k=1, v=1, kind=7)]), True)
    with pytest.raises(OptionError, match=r"sequence.field"):
        MergeFunction.from_options({"sequence.field": "nope"}, ["k", "v"], ["k"])


# -- first-row -------------------------------------------------------------------------------
def test_first_row():
    rows = [dict(k=1, v="new", seq=8), dict(k=1, v="old", seq=2), dict(k=2, v="x", seq=5, kind=UA)]
    assert merge({"merge-engine": "first-row"}, rows) == [
        dict(k=1, v="old", _SEQUENCE_NUMBER=2, _VALUE_KIND=0), dict(k=2, v="x", _SEQUENCE_NUMBER=5, _VALUE_KIND=0)]


def test_first_row_deletes():
    rows = [dict(k=1, v="a"), dict(k=1, v="a", kind=D), dict(k=2, v="b", kind=UB), dict(k=2, v="c")]
    with pytest.raises(DataError, match=r"first-row.*ignore-delete"):
        merge({"merge-engine": "first-row"}, rows)
    assert strip(merge({"merge-engine": "first-row", "ignore-delete": "true"}, rows, drop=False)) == [
        dict(k=1, v="a", _VALUE_KIND=0), dict(k=2, v="c", _VALUE_KIND=0)]
    with pytest.raises(OptionError, match=r"sequence.field"):
        MergeFunction.from_options({"merge-engine": "first-row", "sequence.field": "v"}, ["k", "v"], ["k"])


# -- partial-update --------------------------------------------------------------------------
PU = {"merge-engine": "partial-update"}


def test_partial_update_documented_example():
    rows = [dict(k=1, a=23.0, b=10, c=None), dict(k=1, a=None, b=None, c="This is a book"),
            dict(k=1, a=25.2, b=None, c=None)]
    assert merge(PU, rows) == [dict(k=1, a=25.2, b=10, c="This is a book", _SEQUENCE_NUMBER=2, _VALUE_KIND=0)]


def test_partial_update_rejects_deletes_by_default():
    rows = [dict(k=1, a=1), dict(k=1, a=None, kind=D)]
    with pytest.raises(DataError, match=r"ignore-delete.*remove-record-on-delete.*sequence-group"):
        merge(PU, rows)


@pytest.mark.parametrize("key", ["ignore-delete", "partial-update.ignore-delete"])
def test_partial_update_ignore_delete(key):
    rows = [dict(k=1, a=1, b=None), dict(k=1, a=9, b=9, kind=D), dict(k=1, a=None, b=2), dict(k=2, a=3, b=3, kind=UB)]
    assert strip(merge({**PU, key: "true"}, rows, drop=False)) == [dict(k=1, a=1, b=2, _VALUE_KIND=0)]


def test_partial_update_remove_record_on_delete():
    opts = {**PU, "partial-update.remove-record-on-delete": "true"}
    rows = [dict(k=1, a=1, b=1), dict(k=1, a=None, b=None, kind=D), dict(k=1, a=None, b=2),   # fresh row
            dict(k=2, a=1, b=1), dict(k=2, a=7, b=7, kind=D),                                 # deleted
            dict(k=3, a=1, b=1), dict(k=3, a=5, b=5, kind=UB), dict(k=3, a=None, b=3),        # -U ignored
            dict(k=4, a=4, b=4, kind=UB)]                                                     # only -U: gone
    assert strip(merge(opts, rows, drop=False)) == [
        dict(k=1, a=None, b=2, _VALUE_KIND=0), dict(k=2, a=7, b=7, _VALUE_KIND=3), dict(k=3, a=1, b=3, _VALUE_KIND=0)]
    assert [r["k"] for r in merge(opts, rows)] == [1, 3]


def test_partial_update_option_conflicts():
    fields = ["k", "a", "g"]
    for bad in ({"partial-update.remove-record-on-delete": "true", "ignore-delete": "true"},
                {"partial-update.remove-record-on-delete": "true", "fields.g.sequence-group": "a"},
                {"fields.g.sequence-group": "nope"}, {"fields.g.sequence-group": "k"},
                {"fields.g.sequence-group": "a", "fields.a.sequence-group": "g"},
                {"fields.a.aggregate-function": "sum"}):
        with pytest.raises(OptionError):
            MergeFunction.from_options({**PU, **bad}, fields, ["k"])


def test_sequence_group_documented_example():
    opts = {**PU, "fields.g_1.sequence-group": "a,b", "fields.g_2.sequence-group": "c,d"}
    cols = ["k", "a", "b", "g_1", "c", "d", "g_2"]
    versions = [(1, 1, 1, 1, 1, 1, 1), (1, 2, 2, 2, 2, 2, None)]

    def row(vs):
        return [dict(zip(cols, v)) for v in vs]
    assert [tuple(r[c] for c in cols) for r in merge(opts, row(versions))] == [(1, 2, 2, 2, 1, 1, 1)]
    versions.append((1, 3, 3, 1, 3, 3, 3))
    assert [tuple(r[c] for c in cols) for r in merge(opts, row(versions))] == [(1, 2, 2, 2, 3, 3, 3)]


def test_sequence_group_with_several_fields_documented_example():
    opts = {**PU, "fields.g_1.sequence-group": "a,b", "fields.g_2,g_3.sequence-group": "c,d"}
    cols = ["k", "a", "b", "g_1", "c", "d", "g_2", "g_3"]
    versions = [(1, 1, 1, 1, 1, 1, 1, 1), (1, 2, 2, 2, 2, 2, 1, None)]

    def row(vs):
        return [dict(zip(cols, v)) for v in vs]
    assert [tuple(r[c] for c in cols) for r in merge(opts, row(versions))] == [(1, 2, 2, 2, 1, 1, 1, 1)]
    versions.append((1, 3, 3, 1, 3, 3, 3, 1))
    assert [tuple(r[c] for c in cols) for r in merge(opts, row(versions))] == [(1, 2, 2, 2, 3, 3, 3, 1)]


def test_sequence_group_nulls_overwrite_and_retractions():
    opts = {**PU, "fields.g.sequence-group": "a"}
    rows = [dict(k=1, a=5, g=1, b="x"), dict(k=1, a=None, g=2, b=None),          # null a wins with g=2
            dict(k=2, a=5, g=3, b="x"), dict(k=2, a=9, g=3, b="y", kind=UB),       # retract: g >= 3
            dict(k=3, a=5, g=3, b="x"), dict(k=3, a=9, g=2, b=None, kind=D),       # older retract: no-op
            dict(k=4, a=5, g=1, b="x", kind=D)]                                    # no insert: -D
    assert strip(merge(opts, rows, drop=False)) == [
        dict(k=1, a=None, g=2, b="x", _VALUE_KIND=0), dict(k=2, a=None, g=3, b="x", _VALUE_KIND=0),
        dict(k=3, a=5, g=3, b="x", _VALUE_KIND=0), dict(k=4, a=None, g=1, b=None, _VALUE_KIND=3)]
    assert [r["k"] for r in merge(opts, rows)] == [1, 2, 3]


# -- aggregation -----------------------------------------------------------------------------
def AGG(**funcs):
    return {"merge-engine": "aggregation", **{f"fields.{f}.aggregate-function": fn for f, fn in funcs.items()}}


def test_aggregation_documented_example():
    rows = [dict(k=1, price=23.0, sales=15), dict(k=1, price=30.2, sales=20)]
    assert merge(AGG(price="max", sales="sum"), rows) == [
        dict(k=1, price=30.2, sales=35, _SEQUENCE_NUMBER=1, _VALUE_KIND=0)]


def test_aggregate_functions():
    rows = [dict(k=1, v=None), dict(k=1, v=3), dict(k=1, v=-2), dict(k=1, v=None), dict(k=2, v=None)]
    expect = {"sum": [1, None], "product": [-6, None], "min": [-2, None], "max": [3, None],
              "count": [2, 0], "last_value": [None, None], "last_non_null_value": [-2, None],
              "first_value": [None, None], "first_non_null_value": [3, None], "first_not_null_value": [3, None]}
    for fn, want in expect.items():
        assert [r["v"] for r in merge(AGG(v=fn), rows)] == want, fn
    assert [r["v"] for r in merge({"merge-engine": "aggregation"}, rows)] == [-2, None]
    assert [r["v"] for r in merge({"merge-engine": "aggregation", "fields.default-aggregate-function": "max"},
                                  rows)] == [3, None]


def test_bool_listagg_decimal_and_wrapping():
    rows = [dict(k=1, b=True, s="a", d=Decimal("1.25"), t=100), dict(k=1, b=None, s=" ", d=None, t=100),
            dict(k=1, b=False, s="b,a", d=Decimal("2.50"), t=100), dict(k=1, b=None, s="c", d=None, t=None),
            dict(k=2, b=None, s=None, d=None, t=None)]
    types = dict(d=pa.decimal128(5, 2), t=pa.int8())
    out = merge(AGG(b="bool_and", s="listagg", d="sum", t="sum"), rows, **types)
    assert [(r["b"], r["s"], r["d"], r["t"]) for r in out] == [(False, "a,b,a,c", Decimal("3.75"), 44),
                                                               (None, None, None, None)]
    # int8 product wraps like Java bytes: 100 * 100 -> 16, 16 * 100 -> 64
    out = merge({**AGG(b="bool_or", s="listagg", d="max", t="product"), "fields.s.distinct": "true"}, rows, **types)
    assert [(r["b"], r["s"], r["d"], r["t"]) for r in out] == [(True, "a,b,c", Decimal("2.50"), 64),
                                                               (None, None, None, None)]
    out = merge({**AGG(s="listagg"), "fields.s.list-agg-delimiter": " | "}, rows, **types)
    assert out[0]["s"] == "a | b,a | c"


def test_listagg_distinct_keeps_first_value_verbatim():
    rows = [dict(k=1, s="x;x;;y"), dict(k=1, s="y;z;;x;w"), dict(k=1, s="w")]
    out = merge({**AGG(s="listagg"), "fields.s.distinct": "true", "fields.s.list-agg-delimiter": ";"}, rows)
    assert out[0]["s"] == "x;x;;y;z;w"


def test_aggregation_retraction():
    rows = [dict(k=1, a=5, b=5, c=5, d=5), dict(k=1, a=2, b=2, c=2, d=None, kind=UB),
            dict(k=2, a=4, b=4, c=4, d=4), dict(k=2, a=None, b=None, c=None, d=None, kind=D),
            dict(k=3, a=7, b=7, c=7, d=7, kind=D)]                     # only a retraction: still +I
    out = merge(AGG(a="sum", b="count", c="last_value", d="last_non_null_value"), rows, drop=False)
    assert strip(out) == [dict(k=1, a=3, b=0, c=None, d=5, _VALUE_KIND=0),
                          dict(k=2, a=4, b=1, c=None, d=4, _VALUE_KIND=0),
                          dict(k=3, a=-7, b=-1, c=None, d=None, _VALUE_KIND=0)]


def test_aggregation_retraction_unsupported_or_ignored():
    rows = [dict(k=1, v=5), dict(k=1, v=9, kind=UB), dict(k=1, v=2)]
    for fn in ("max", "min", "product", "first_value", "first_non_null_value", "listagg", "bool_and"):
        with pytest.raises(DataError, match=rf"'{fn}'.*fields\.v\.ignore-retract"):
            merge(AGG(v=fn), [dict(k=1, v=True if fn == "bool_and" else "a" if fn == "listagg" else 1, kind=UB)])
    assert merge({**AGG(v="max"), "fields.v.ignore-retract": "true"}, rows)[0]["v"] == 5
    assert merge({**AGG(v="first_value"), "fields.v.ignore-retract": "true"},
                 [dict(k=1, v=9, kind=D), dict(k=1, v=3)])[0]["v"] == 3
    assert merge({**AGG(v="sum"), "fields.v.ignore-retract": "true"}, rows)[0]["v"] == 7
    assert merge({**AGG(v="sum"), "ignore-delete": "true"}, rows)[0]["v"] == 7


def test_aggregation_option_errors():
    with pytest.raises(OptionError, match=r"fields\.v\.aggregate-function.*'v'.*'median'"):
        MergeFunction.from_options(AGG(v="median"), ["k", "v"], ["k"])
    with pytest.raises(OptionError, match=r"fields.default-aggregate-function.*not supported by lakeformat"):
        MergeFunction.from_options({"merge-engine": "aggregation", "fields.default-aggregate-function": "collect"},
                                   ["k", "v"], ["k"])
    schema = pa.schema([("k", pa.int64()), ("v", pa.string())])
    with pytest.raises(OptionError, match=r"fields\.v\.aggregate-function.*sum.*'v'.*numbers"):
        MergeFunction.from_options(AGG(v="sum"), ["k", "v"], ["k"], schema=schema)
    mf = MergeFunction.from_options(AGG(v="bool_or"), ["k", "v"], ["k"])
    with pytest.raises(OptionError, match="booleans"):
        mf.merge(table([dict(k=1, v=1)]), True)
    # keys are never aggregated, whatever their option says
    out = merge({**AGG(v="sum"), "fields.k.aggregate-function": "sum"}, [dict(k=1, v=1), dict(k=1, v=2)])
    assert [(r["k"], r["v"]) for r in out] == [(1, 3)]


# -- a row-by-row model of Paimon's merge functions ------------------------------------------
FIELDS, KEYS = ["k", "k2", "a", "b", "s", "g"], ["k", "k2"]
TYPES = {"k": pa.int64(), "k2": pa.string(), "a": pa.int64(), "b": pa.string(), "s": pa.int32(), "g": pa.int64()}
RETRACT = (UB, D)


def _version_order(v, cfg):
    if cfg.get("sequence.field") != "s":
        return (v["seq"], v["pos"])
    s = v["s"]
    skey = (0,) if s is None else (1, -s if cfg.get("sequence.field.sort-order") == "descending" else s)
    return (skey, v["seq"], v["pos"])


def _fold_field(fn, versions, field, ignore_retract, delimiter=",", distinct=False):
    acc, started = None, False
    for v in versions:
        x, retract = v[field], v["kind"] in RETRACT
        if retract and ignore_retract:
            continue
        if fn == "sum":
            acc = acc if x is None else (-x if retract else x) if acc is None else acc - x if retract else acc + x
        elif fn == "count":
            acc = (0 if x is None else (-1 if retract else 1)) if acc is None else \
                acc if x is None else acc - 1 if retract else acc + 1
        elif fn == "last_value":
            acc = None if retract else x
        elif fn == "last_non_null_value":
            acc = (None if retract else x) if x is not None else acc
        elif fn == "max":
            acc = x if acc is None else acc if x is None else max(acc, x)
        elif fn == "first_non_null_value":
            if not started and x is not None:
                acc, started = x, True
        elif fn == "listagg":
            if x is None or not x.strip():
                continue
            if acc is None:
                acc = x
            elif not distinct:
                acc = acc + delimiter + x
            else:
                seen = set(acc.split(delimiter))
                for tok in x.split(delimiter):
                    if tok.strip() and tok not in seen:
                        seen.add(tok)
                        acc += delimiter + tok
    return acc


def model(cfg, versions):
    engine = cfg.get("merge-engine", "deduplicate")
    ignore = cfg.get("ignore-delete") == "true"
    by_key = {}
    for v in versions:
        by_key.setdefault((v["k"], v["k2"]), []).append(v)
    out = []
    for key in sorted(by_key):
        vs = sorted(by_key[key], key=lambda v: _version_order(v, cfg))
        if ignore:
            vs = [v for v in vs if v["kind"] not in RETRACT]
        if not vs:
            continue
        if engine in ("deduplicate", "first-row"):
            w = vs[-1] if engine == "deduplicate" else vs[0]
            row = {c: w[c] for c in FIELDS} | {SEQ: w["seq"], KIND: D if w["kind"] in RETRACT else I}
        elif engine == "partial-update" and "fields.g.sequence-group" in cfg:
            state = dict.fromkeys(FIELDS)
            meet_insert = False
            for v in vs:
                retract = v["kind"] in RETRACT
                if not retract:
                    meet_insert = True
                    state.update({c: v[c] for c in ("b", "s") if v[c] is not None})
                if v["g"] is not None and (state["g"] is None or v["g"] >= state["g"]):
                    state["g"], state["a"] = v["g"], None if retract else v["a"]
            row = state | {"k": key[0], "k2": key[1], SEQ: vs[-1]["seq"], KIND: I if meet_insert else D}
        elif engine == "partial-update":
            state, deleted = None, False
            for v in vs:
                if v["kind"] == UB:
                    continue
                if v["kind"] == D:
                    state, deleted = dict(v), True
                    continue
                if state is None or deleted:
                    state, deleted = dict.fromkeys(FIELDS), False
                state.update({c: v[c] for c in FIELDS if v[c] is not None})
            if state is None:
                continue
            row = {c: state[c] for c in FIELDS} | {"k": key[0], "k2": key[1], SEQ: vs[-1]["seq"],
                                                   KIND: D if deleted else I}
        else:
            row = {"k": key[0], "k2": key[1], SEQ: vs[-1]["seq"], KIND: I}
            for c in ("a", "b", "s", "g"):
                fn = cfg.get(f"fields.{c}.aggregate-function", "last_non_null_value")
                row[c] = _fold_field(fn, vs, c, cfg.get(f"fields.{c}.ignore-retract") == "true",
                                     cfg.get(f"fields.{c}.list-agg-delimiter", ","),
                                     cfg.get(f"fields.{c}.distinct") == "true")
        out.append(row)
    return out


def build(versions, order):
    rows = [versions[i] for i in order]
    cols = {c: pa.array([r[c] for r in rows], TYPES[c]) for c in FIELDS}
    cols[SEQ] = pa.array([r["seq"] for r in rows], pa.int64())
    cols[KIND] = pa.array([r["kind"] for r in rows], pa.int8())
    return pa.table(cols)


ALL_KINDS, INSERTS = st.sampled_from([I, I, UA, UB, D]), st.sampled_from([I, UA])


@st.composite
def histories(draw, kinds=ALL_KINDS, max_size=20):
    n = draw(st.integers(0, max_size))
    seqs = draw(st.permutations(range(100, 100 + n)))
    versions = [dict(k=draw(st.integers(0, 3)), k2=draw(st.sampled_from(["x", "y"])),
                     a=draw(st.none() | st.integers(-5, 5)),
                     b=draw(st.none() | st.sampled_from(["p", "q", "p,q", "q,r", " ", ""])),
                     s=draw(st.none() | st.integers(0, 3)), g=draw(st.none() | st.integers(0, 3)),
                     kind=draw(kinds), seq=seqs[i], pos=i) for i in range(n)]
    return versions, draw(st.permutations(range(n)))


PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
AGG_RETRACTABLE = {"merge-engine": "aggregation", "fields.a.aggregate-function": "sum",
                   "fields.s.aggregate-function": "count", "fields.g.aggregate-function": "last_value",
                   "fields.b.aggregate-function": "last_non_null_value"}
AGG_IGNORING = {"merge-engine": "aggregation", "fields.a.aggregate-function": "max", "fields.a.ignore-retract": "true",
                "fields.b.aggregate-function": "listagg", "fields.b.ignore-retract": "true",
                "fields.s.aggregate-function": "first_non_null_value", "fields.s.ignore-retract": "true"}
CONFIGS = [
    ({}, ALL_KINDS),
    ({"ignore-delete": "true"}, ALL_KINDS),
    ({"sequence.field": "s"}, ALL_KINDS),
    ({"sequence.field": "s", "sequence.field.sort-order": "descending"}, ALL_KINDS),
    ({"merge-engine": "first-row", "ignore-delete": "true"}, ALL_KINDS),
    ({"merge-engine": "first-row"}, INSERTS),
    ({"merge-engine": "partial-update"}, INSERTS),
    ({"merge-engine": "partial-update", "ignore-delete": "true"}, ALL_KINDS),
    ({"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"}, ALL_KINDS),
    ({"merge-engine": "partial-update", "fields.g.sequence-group": "a"}, ALL_KINDS),
    ({"merge-engine": "partial-update", "sequence.field": "s", "ignore-delete": "true"}, ALL_KINDS),
    (AGG_RETRACTABLE, ALL_KINDS),
    ({**AGG_RETRACTABLE, "sequence.field": "s"}, ALL_KINDS),
    (AGG_IGNORING, ALL_KINDS),
    ({**AGG_IGNORING, "fields.b.distinct": "true"}, ALL_KINDS),
    ({**AGG_IGNORING, "fields.b.list-agg-delimiter": ",q"}, INSERTS),
]


def _id(cfg):
    if not isinstance(cfg, dict):
        return "inserts" if cfg is INSERTS else "all-kinds"
    return ",".join(f"{k.removeprefix('fields.').replace('.aggregate-function', '')}={v}"
                    for k, v in cfg.items()) or "deduplicate"


@pytest.mark.parametrize("cfg,kinds", CONFIGS, ids=_id)
@PROPS
@given(data=st.data())
def test_matches_row_by_row_model(cfg, kinds, data):
    versions, order = data.draw(histories(kinds))
    mf = MergeFunction.from_options(cfg, FIELDS, KEYS)
    expected = model(cfg, versions)
    for drop in (False, True):
        got = mf.merge(build(versions, order), drop_deletes=drop).to_pylist()
        assert got == [r for r in expected if not (drop and r[KIND] == D)]
    with mock.patch.object(merge_function, "_pick", lambda *a, **kw: None):   # the sort-based path
        assert mf.merge(build(versions, order), drop_deletes=False).to_pylist() == expected


ASSOCIATIVE = [
    ({}, ALL_KINDS), ({"ignore-delete": "true"}, ALL_KINDS), ({"sequence.field": "s"}, ALL_KINDS),
    ({"merge-engine": "first-row"}, INSERTS), ({"merge-engine": "first-row", "ignore-delete": "true"}, ALL_KINDS),
    ({"merge-engine": "partial-update"}, INSERTS),
    ({"merge-engine": "partial-update", "ignore-delete": "true"}, ALL_KINDS),
    ({"merge-engine": "partial-update", "fields.g.sequence-group": "a"}, ALL_KINDS),
    ({"merge-engine": "aggregation", "fields.a.aggregate-function": "sum", "fields.g.aggregate-function": "max",
      "fields.s.aggregate-function": "last_non_null_value"}, INSERTS),
    ({"merge-engine": "aggregation", "fields.a.aggregate-function": "sum", "fields.g.aggregate-function": "max",
      "fields.g.ignore-retract": "true", "fields.s.aggregate-function": "last_non_null_value",
      "fields.s.ignore-retract": "true", "fields.b.ignore-retract": "true"}, ALL_KINDS),
]


@pytest.mark.parametrize("cfg,kinds", ASSOCIATIVE, ids=_id)
@settings(PROPS, max_examples=40)
@given(data=st.data())
def test_merging_runs_separately_then_together_is_the_same(cfg, kinds, data):
    """What compaction relies on: merge consecutive runs (by sequence number) on their own,
    keeping deletes, then merge the results; the outcome equals one merge of everything."""
    versions, order = data.draw(histories(kinds, max_size=24))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(versions)), max_size=3)))
    by_seq = sorted(range(len(versions)), key=lambda i: versions[i]["seq"])
    mf = MergeFunction.from_options(cfg, FIELDS, KEYS)
    runs = [by_seq[a:b] for a, b in zip([0, *cuts], [*cuts, len(versions)])]
    merged = [mf.merge(build(versions, data.draw(st.permutations(run))), drop_deletes=False) for run in runs]
    shuffle = data.draw(st.permutations(range(sum(m.num_rows for m in merged))))
    together = pa.concat_tables(merged).take(pa.array(shuffle, pa.int64()))
    for drop in (False, True):
        assert mf.merge(together, drop).to_pylist() == mf.merge(build(versions, order), drop).to_pylist()


def test_large_input_fast_and_sorted_paths_agree():
    rng = np.random.default_rng(7)
    n = 200_000
    k = rng.integers(0, 50_000, n)
    data = pa.table({"k": pa.array(k * 1_000_003), "k2": pa.array(np.char.add("u", (k % 7).astype(str))),
                     "v": pa.array(rng.integers(0, 9, n)), SEQ: pa.array(rng.permutation(n).astype(np.int64)),
                     KIND: pa.array(rng.choice(np.array([0, 2, 3], np.int8), n))})
    for engine, pick in (("deduplicate", -1), ("first-row", 0)):
        opts = {"merge-engine": engine, "ignore-delete": "true"}
        mf = MergeFunction.from_options(opts, ["k", "v", "k2"], ["k", "k2"])
        fast = mf.merge(data, drop_deletes=False)
        with mock.patch.object(merge_function, "_pick", lambda *a, **kw: None):
            assert mf.merge(data, drop_deletes=False).equals(fast)
        live = data.filter(pa.compute.not_equal(data[KIND], 3))
        key, seq = live["k"].to_numpy(), live[SEQ].to_numpy()
        rows = np.lexsort((seq, live["k2"].to_numpy().astype(str), key))
        order = live.take(rows)
        last = np.ones(len(rows), bool)
        same = (order["k"].to_numpy()[1:] == order["k"].to_numpy()[:-1]) & \
            (order["k2"].to_numpy()[1:] == order["k2"].to_numpy()[:-1])
        if pick == -1:
            last[:-1] = ~same
        else:
            last[1:] = ~same
        assert fast.drop_columns([KIND]).equals(order.filter(pa.array(last)).drop_columns([KIND]))
