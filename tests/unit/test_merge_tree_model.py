"""Primary-key tables against a plain Python model, one merge engine configuration at a time.

Hypothesis draws a table layout (1 or 2 buckets, tiny write buffers so every write flushes a
sorted run, low compaction triggers, write-only, small target files, with or without
``rowkind.field``) and a sequence of operations: upsert batches (several versions of a key in one
batch, nullable values, -U/-D rows where the engine takes them), deletes by key, two-phase writes
(one writer, several ``write()`` calls, one or two commits), compactions (by the picker and full)
and reads with filters and projections. Each operation is replayed on a real table in a temporary
warehouse and on the model; after every step ``t.read()`` must equal the model, and a filtered
read must equal the model filtered (a row shadowed by a newer version must not come back).

The model keeps, per key, the versions in arrival order (by ``sequence.field`` first where set)
folded by the engine's rule as Paimon documents it
(docs/content/primary-key-table/merge-engine/*.md). Where Paimon's result depends on how versions
happen to be grouped into files, no model can predict it; the replay then adjusts the generated
input so that the outcome no longer depends on the layout (see ``sanitize`` of each model):

* ``sequence.field``: a delete that wins can be dropped by a full compaction, after which a later
  version with a smaller sequence value would win instead of losing. An insert behind a winning
  delete gets the delete's sequence value (it then wins whatever the layout).
* ``partial-update.remove-record-on-delete``: a [-D, +I] merged apart from older versions lets old
  non-null values show through (Paimon too, see merge_function's docstring). After a -D the same
  step writes no insert for that key, and the step ends with a full compaction.
* ``sequence-group``: retractions of a key that has no insert yet may be dropped with the key by a
  compaction and then not retract later inserts; such retractions (with a non-null group sequence)
  are left out.
* ``aggregation``: ``last_non_null_value`` on a retraction depends on grouping ([-D(5), +I(null)]
  merged first yields +I(null), which an older value then shows through); retractions carry a null
  there.

Engines that refuse retractions (first-row, partial-update, aggregation with max/listagg/bool_or,
each without the option that allows them) must raise ``lakeformat.DataError`` and leave the table
as it was.

Runs in ~30-40 s; set ``LAKEFORMAT_MODEL_EXAMPLES`` to scale the number of examples.
"""
from __future__ import annotations

import copy
import operator
import os
import tempfile

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lakeformat as lf

SCHEMA = pa.schema([pa.field("k", pa.int64(), False), pa.field("c", pa.string(), False),
                    ("a", pa.int64()), ("b", pa.int64()), ("g", pa.int64()), ("s", pa.string()),
                    ("f", pa.bool_()), ("op", pa.string())])
PRIMARY_KEY = ["k", "c"]
VALUES = ["a", "b", "g", "s", "f", "op"]
RETRACT = ("-U", "-D")
OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
       ">": operator.gt, ">=": operator.ge}
EXAMPLES = int(os.environ.get("LAKEFORMAT_MODEL_EXAMPLES", "12"))


def null_row(key, kind="-D"):
    """A version as the model sees it: the key columns, the values and the row kind in ``kind``."""
    return {"k": key[0], "c": key[1], **{c: None for c in VALUES}, "kind": kind}


def key_of(r) -> tuple:
    return r["k"], r["c"]


def values_of(r) -> dict:
    return {c: r[c] for c in VALUES}


def _seq(v):   # sequence.field / sequence-group order: null first (values drawn are >= 0)
    return -1 if v is None else v


# -- models --------------------------------------------------------------------------------------
class Model:
    """Per-key state folded from versions in arrival order."""
    accepts_retract = True           # False: -U/-D must raise DataError

    def __init__(self):
        self.state: dict = {}
        self.deleted_in_step: set = set()
        self.compact_after_step = False

    def begin_step(self):
        self.deleted_in_step, self.compact_after_step = set(), False

    def sanitize(self, r):
        """The version to write instead of ``r`` (None: leave it out); see the module doc."""
        return r

    def apply(self, r):
        raise NotImplementedError

    def view(self) -> dict:
        raise NotImplementedError


class Deduplicate(Model):
    def apply(self, r):
        self.state[key_of(r)] = r

    def view(self):
        return {k: values_of(r) for k, r in self.state.items() if r["kind"] not in RETRACT}


class DeduplicateBySequence(Deduplicate):
    """``sequence.field = g``: the greatest g (null smallest) wins, arrival breaks ties."""

    def sanitize(self, r):
        cur = self.state.get(key_of(r))
        if cur is not None and cur["kind"] in RETRACT and r["kind"] not in RETRACT \
                and _seq(r["g"]) < _seq(cur["g"]):
            return {**r, "g": cur["g"]}
        return r

    def apply(self, r):
        cur = self.state.get(key_of(r))
        if cur is None or _seq(r["g"]) >= _seq(cur["g"]):
            self.state[key_of(r)] = r


class FirstRow(Model):
    """first-row with ignore-delete: the first +I/+U version stays; retractions are dropped."""

    def apply(self, r):
        if r["kind"] not in RETRACT:
            self.state.setdefault(key_of(r), r)

    def view(self):
        return {k: values_of(r) for k, r in self.state.items()}


class FirstRowStrict(FirstRow):
    accepts_retract = False


class PartialUpdate(Model):
    """Per column the last non-null value; retractions ignored (partial-update.ignore-delete)."""

    def merge_insert(self, r):
        cur = self.state.setdefault(key_of(r), {c: None for c in VALUES})
        for c in VALUES:
            if r[c] is not None:
                cur[c] = r[c]

    def apply(self, r):
        if r["kind"] not in RETRACT:
            self.merge_insert(r)

    def view(self):
        return {k: dict(v) for k, v in self.state.items()}


class PartialUpdateStrict(PartialUpdate):
    accepts_retract = False


class PartialUpdateRemoveOnDelete(PartialUpdate):
    """remove-record-on-delete: -D removes the row (a later insert starts afresh), -U is ignored."""

    def sanitize(self, r):
        if r["kind"] not in RETRACT and key_of(r) in self.deleted_in_step:
            return None
        return r

    def apply(self, r):
        if r["kind"] == "-D":
            self.state.pop(key_of(r), None)
            self.deleted_in_step.add(key_of(r))
            self.compact_after_step = True
        elif r["kind"] != "-U":
            self.merge_insert(r)


class PartialUpdateSequenceGroup(Model):
    """``fields.g.sequence-group = a,b``: a version with non-null g that is >= the current g
    (null smallest) sets g, a and b (nulls included; a retraction sets a and b to null); s, f, op
    take the last non-null value of +I/+U versions. A key exists once it had an +I/+U."""

    def sanitize(self, r):
        st_ = self.state.get(key_of(r))
        if r["kind"] in RETRACT and r["g"] is not None and (st_ is None or not st_["exists"]):
            return None
        return r

    def apply(self, r):
        cur = self.state.setdefault(key_of(r), {"exists": False, **{c: None for c in VALUES}})
        retract = r["kind"] in RETRACT
        if r["g"] is not None and _seq(r["g"]) >= _seq(cur["g"]):
            cur["g"] = r["g"]
            cur["a"], cur["b"] = (None, None) if retract else (r["a"], r["b"])
        if not retract:
            cur["exists"] = True
            for c in ("s", "f", "op"):
                if r[c] is not None:
                    cur[c] = r[c]

    def view(self):
        return {k: values_of(v) for k, v in self.state.items() if v["exists"]}


class Aggregation(Model):
    """a sum, b max, g last_non_null_value, s listagg, f bool_or, op last_value; b, s and f
    ignore retractions. Any version, a retraction too, makes the key exist (always +I)."""

    def sanitize(self, r):
        return {**r, "g": None} if r["kind"] in RETRACT and r["g"] is not None else r

    def apply(self, r):
        cur = self.state.setdefault(key_of(r), {c: None for c in VALUES})
        if r["kind"] in RETRACT:
            if r["a"] is not None:
                cur["a"] = (cur["a"] or 0) - r["a"]
            if r["g"] is not None:
                cur["g"] = None
            cur["op"] = None
            return
        if r["a"] is not None:
            cur["a"] = (cur["a"] or 0) + r["a"]
        if r["b"] is not None:
            cur["b"] = r["b"] if cur["b"] is None else max(cur["b"], r["b"])
        if r["g"] is not None:
            cur["g"] = r["g"]
        if r["s"] is not None and r["s"].strip():
            cur["s"] = r["s"] if cur["s"] is None else cur["s"] + "," + r["s"]
        if r["f"] is not None:
            cur["f"] = r["f"] if cur["f"] is None else (cur["f"] or r["f"])
        cur["op"] = r["op"]

    def view(self):
        return {k: dict(v) for k, v in self.state.items()}


class AggregationStrict(Aggregation):
    accepts_retract = False


AGG = {"merge-engine": "aggregation", "fields.a.aggregate-function": "sum",
       "fields.b.aggregate-function": "max", "fields.g.aggregate-function": "last_non_null_value",
       "fields.s.aggregate-function": "listagg", "fields.f.aggregate-function": "bool_or",
       "fields.op.aggregate-function": "last_value"}
CONFIGS = {
    "deduplicate": ({}, Deduplicate),
    "deduplicate-sequence-field": ({"sequence.field": "g"}, DeduplicateBySequence),
    "first-row-ignore-delete": ({"merge-engine": "first-row", "ignore-delete": "true"}, FirstRow),
    "first-row": ({"merge-engine": "first-row"}, FirstRowStrict),
    "partial-update-ignore-delete": ({"merge-engine": "partial-update",
                                      "partial-update.ignore-delete": "true"}, PartialUpdate),
    "partial-update-remove-on-delete": ({"merge-engine": "partial-update",
                                         "partial-update.remove-record-on-delete": "true"},
                                        PartialUpdateRemoveOnDelete),
    "partial-update": ({"merge-engine": "partial-update"}, PartialUpdateStrict),
    "partial-update-sequence-group": ({"merge-engine": "partial-update",
                                       "fields.g.sequence-group": "a,b"}, PartialUpdateSequenceGroup),
    "aggregation": ({**AGG, "fields.b.ignore-retract": "true", "fields.s.ignore-retract": "true",
                     "fields.f.ignore-retract": "true"}, Aggregation),
    "aggregation-no-retract": (AGG, AggregationStrict),
    # merge-on-write: compactions mark older versions in deletion vectors, reads skip level 0
    "deduplicate-deletion-vectors": ({"deletion-vectors.enabled": "true"}, Deduplicate),
    "partial-update-deletion-vectors": ({"merge-engine": "partial-update", "deletion-vectors.enabled": "true"},
                                        PartialUpdateStrict),
    "aggregation-deletion-vectors": ({**AGG, "fields.b.ignore-retract": "true", "fields.s.ignore-retract": "true",
                                      "fields.f.ignore-retract": "true", "deletion-vectors.enabled": "true"},
                                     Aggregation),
}


# -- filters: a tiny AST, turned into lakeformat predicates and evaluated with SQL's 3-valued logic
def to_predicate(p):
    kind = p[0]
    if kind == "cmp":
        return OPS[p[2]](lf.col(p[1]), p[3])
    if kind == "isin":
        return lf.col(p[1]).isin(p[2])
    if kind == "null":
        return lf.col(p[1]).is_not_null() if p[2] else lf.col(p[1]).is_null()
    if kind == "not":
        return ~to_predicate(p[1])
    left, right = to_predicate(p[1]), to_predicate(p[2])
    return left & right if kind == "and" else left | right


def evaluate(p, row):
    kind = p[0]
    if kind == "cmp":
        v = row[p[1]]
        return None if v is None else OPS[p[2]](v, p[3])
    if kind == "isin":
        v = row[p[1]]
        return None if v is None else v in p[2]
    if kind == "null":
        return (row[p[1]] is not None) if p[2] else (row[p[1]] is None)
    if kind == "not":
        v = evaluate(p[1], row)
        return None if v is None else not v
    x, y = evaluate(p[1], row), evaluate(p[2], row)
    if kind == "and":
        return False if False in (x, y) else None if None in (x, y) else True
    return True if True in (x, y) else None if None in (x, y) else False


# -- strategies ----------------------------------------------------------------------------------
KEYS = st.tuples(st.integers(0, 9), st.sampled_from(["p", "q"]))   # 20 keys
INTS = st.none() | st.integers(-5, 5)
STRINGS = ["x", "y", "zz", "", " "]


def row_st(kinds):
    return st.fixed_dictionaries({
        "key": KEYS, "a": INTS, "b": INTS, "g": st.none() | st.integers(0, 6),
        "s": st.none() | st.sampled_from(STRINGS), "f": st.none() | st.booleans(),
        "kind": st.sampled_from(kinds)}).map(
        lambda r: {"k": r["key"][0], "c": r["key"][1], **{c: r[c] for c in VALUES if c != "op"},
                   "op": r["kind"], "kind": r["kind"]})


LEAF = st.one_of(
    st.tuples(st.just("cmp"), st.sampled_from(["a", "b", "g", "k"]), st.sampled_from(sorted(OPS)),
              st.integers(-5, 9)),
    st.tuples(st.just("cmp"), st.sampled_from(["s", "c"]), st.sampled_from(["==", "!=", "<", ">"]),
              st.sampled_from(STRINGS + ["p", "q"])),
    st.tuples(st.just("cmp"), st.just("f"), st.just("=="), st.booleans()),
    st.tuples(st.just("cmp"), st.just("op"), st.just("=="), st.sampled_from(["+I", "+U"])),
    st.tuples(st.just("isin"), st.sampled_from(["a", "k"]),
              st.lists(st.integers(-5, 9), min_size=1, max_size=4).map(tuple)),
    st.tuples(st.just("isin"), st.just("s"), st.lists(st.sampled_from(STRINGS), min_size=1,
                                                      max_size=3).map(tuple)),
    st.tuples(st.just("null"), st.sampled_from(VALUES), st.booleans()),
)
PREDICATE = st.one_of(LEAF, st.tuples(st.just("not"), LEAF),
                      st.tuples(st.sampled_from(["and", "or"]), LEAF, LEAF))
PROJECTION = st.none() | st.lists(st.sampled_from(VALUES), unique=True, max_size=3).map(
    lambda cs: [*PRIMARY_KEY, *cs])

LAYOUT = st.fixed_dictionaries({"bucket": st.sampled_from(["1", "2"])}, optional={
    "write-buffer-size": st.sampled_from(["1 kb", "4 kb"]),
    "write-buffer-spillable": st.sampled_from(["true", "false"]),
    "num-sorted-run.compaction-trigger": st.sampled_from(["2", "3", "4"]),
    "write-only": st.just("true"),
    "target-file-size": st.sampled_from(["4 kb", "16 kb"]),
})


@st.composite
def scenario(draw, model_cls):
    layout = draw(LAYOUT)
    rowkind = draw(st.booleans())
    accepts = model_cls.accepts_retract
    kinds = ["+I", "+I", "+I", "+U", "-U", "-D"] if rowkind and accepts else ["+I", "+I", "+U"]
    batch = st.lists(row_st(kinds), max_size=12)
    keys = st.lists(KEYS, min_size=1, max_size=6)
    part = st.tuples(st.just("rows"), batch)
    if accepts:
        part = part | st.tuples(st.just("delete"), keys)
    steps = [
        st.tuples(st.just("write"), batch),
        st.tuples(st.just("write"), batch),
        st.tuples(st.just("bulk"), st.integers(0, 300), st.integers(100, 500), st.integers(1, 7)),
        st.tuples(st.just("two_phase"), st.lists(st.lists(part, min_size=1, max_size=4),
                                                 min_size=1, max_size=2)),
        st.tuples(st.just("aborted"), st.lists(row_st(["+I"]), min_size=1, max_size=6)),
        st.tuples(st.just("compact"), st.booleans()),
    ]
    if accepts:
        steps.append(st.tuples(st.just("delete"), keys))
    else:
        steps.append(st.tuples(st.just("rejected_delete"), keys))
        steps.append(st.tuples(st.just("rejected_two_phase"), st.lists(row_st(["+I"]), max_size=6),
                               keys))
        if rowkind:
            bad_rows = st.lists(row_st(["+I", "-U", "-D"]), min_size=1, max_size=6).filter(
                lambda rs: any(r["kind"] in RETRACT for r in rs))
            steps.append(st.tuples(st.just("rejected_rows"), bad_rows))
    # each step with a filtered (and maybe projected) read to check after it, or none
    ops = draw(st.lists(st.tuples(st.one_of(steps), st.none() | st.tuples(PREDICATE, PROJECTION)),
                        min_size=1, max_size=8))
    return layout, rowkind, ops


# -- replay --------------------------------------------------------------------------------------
def arrow(rows) -> pa.Table:
    return pa.Table.from_pylist([{c: r[c] for c in SCHEMA.names} for r in rows], schema=SCHEMA)


def key_table(keys) -> pa.Table:
    return pa.table({"k": pa.array([k for k, _ in keys], pa.int64()), "c": [c for _, c in keys]})


def bulk_rows(start, count, salt):
    """Inserts of ``count`` consecutive keys: with a small target-file-size, sorted runs of
    several files, key sections and files upgraded rather than rewritten."""
    return [{"k": k, "c": "p", "a": (k * salt) % 11 - 5, "b": None if k % 5 == 0 else k % 7 - salt,
             "g": (k + salt) % 7, "s": STRINGS[(k + salt) % len(STRINGS)],
             "f": None if k % 3 == 0 else k % 2 == 0, "op": "+I", "kind": "+I"}
            for k in range(start, start + count)]


def read_dict(t, **kw) -> dict:
    rows = t.read(**kw).to_pylist()
    keys = [(r["k"], r["c"]) for r in rows]
    assert len(keys) == len(set(keys)), f"a key came back twice: {sorted(keys)}"
    return {(r.pop("k"), r.pop("c")): r for r in rows}


def expected_view(model, predicate=None, columns=None) -> dict:
    out = {}
    for key, v in model.view().items():
        if predicate is not None and evaluate(predicate, {"k": key[0], "c": key[1], **v}) is not True:
            continue
        out[key] = v if columns is None else {c: v[c] for c in columns if c not in PRIMARY_KEY}
    return out


class _Seen:
    """The model as a batch read sees it when batch reads skip level 0 (first-row, deletion
    vectors): as of the last compaction, which moves every level-0 file up."""

    def __init__(self, view: dict):
        self._view = view

    def view(self) -> dict:
        return self._view


class Replay:
    def __init__(self, table, model, compacted_only: bool = False):
        self.t, self.model, self.ident = table, model, 0
        self.compacted_only = compacted_only   # write-only first-row: rows show once compacted
        self.seen = _Seen({})

    def feed(self, rows):
        """Sanitize and fold ``rows`` into the model one by one; the rows to write."""
        out = []
        for r in rows:
            r = self.model.sanitize(r)
            if r is not None:
                self.model.apply(r)
                out.append(r)
        return out

    def feed_deletes(self, keys):
        kept = self.feed([null_row(k) for k in keys])
        assert all(r == null_row(key_of(r)) for r in kept), "sanitize may not change a delete by key"
        return [key_of(r) for r in kept]

    def check(self, probe=None):
        model = self.seen if self.compacted_only else self.model
        assert read_dict(self.t) == expected_view(model)
        if probe is not None:
            predicate, columns = probe
            got = read_dict(self.t, columns=columns, filter=to_predicate(predicate))
            assert got == expected_view(model, predicate, columns), to_predicate(predicate)

    def expect_unchanged(self, attempt, error=None):
        """``attempt`` (raising ``error`` if given) must leave the table as it was."""
        before = self.t.latest_snapshot()
        if error is None:
            attempt()
        else:
            with pytest.raises(error) as e:
                attempt()
            msg = str(e.value)
            assert "cannot" in msg and any(o in msg for o in ("ignore-delete", "ignore-retract")), msg
        after = self.t.latest_snapshot()
        assert (after and after.id) == (before and before.id), "a refused write made a snapshot"

    def step(self, op, probe=None):
        t, kind = self.t, op[0]
        self.model.begin_step()
        if kind == "write":
            t.write(arrow(self.feed(op[1])))
        elif kind == "bulk":
            t.write(arrow(self.feed(bulk_rows(*op[1:]))))
        elif kind == "delete":
            keys = self.feed_deletes(op[1])
            if keys:
                t.delete(key_table(keys))
        elif kind == "two_phase":
            w, c = t.new_write("model-writer"), t.new_commit("model-writer")
            for commit_round in op[1]:
                for part_kind, payload in commit_round:
                    if part_kind == "rows":
                        w.write(arrow(self.feed(payload)))
                    else:
                        w.write(arrow([null_row(k) for k in self.feed_deletes(payload)]), row_kind=3)
                self.ident += 1
                c.commit(w.prepare_commit(), identifier=self.ident)
        elif kind == "aborted":
            def attempt():
                w = t.new_write("model-aborted")
                w.write(arrow(op[1]))
                t.new_commit("model-aborted").abort(w.prepare_commit())
            self.expect_unchanged(attempt)
        elif kind == "compact":
            t.compact(full=op[1])
        elif kind == "rejected_delete":
            self.expect_unchanged(lambda: t.delete(key_table(op[1])), lf.DataError)
        elif kind == "rejected_rows":
            self.expect_unchanged(lambda: t.write(arrow(op[1])), lf.DataError)
        elif kind == "rejected_two_phase":
            def attempt():
                w = t.new_write("model-rejected")
                try:
                    w.write(arrow(op[1]))
                    w.write(arrow([null_row(k) for k in op[2]]), row_kind=3)
                    w.prepare_commit()
                finally:
                    w.abort()
            self.expect_unchanged(attempt, lf.DataError)
        else:
            raise AssertionError(op)
        if self.model.compact_after_step:
            t.compact(full=True)
        if kind == "compact" or self.model.compact_after_step:
            self.seen = _Seen(copy.deepcopy(self.model.view()))
        self.check(probe)


@pytest.mark.parametrize("config", list(CONFIGS))
@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_primary_key_table_matches_model(config, data):
    engine_options, model_cls = CONFIGS[config]
    layout, rowkind, ops = data.draw(scenario(model_cls), label="layout, rowkind, ops")
    options = {**engine_options, **layout, **({"rowkind.field": "op"} if rowkind else {})}
    with tempfile.TemporaryDirectory() as wh:
        cat = lf.Catalog(wh)
        cat.create_database("db")
        t = cat.create_table("db.t", SCHEMA, primary_keys=PRIMARY_KEY, options=options)
        skips_level0 = engine_options.get("merge-engine") == "first-row" or "deletion-vectors.enabled" in engine_options
        replay = Replay(t, model_cls(), compacted_only=skips_level0 and layout.get("write-only") == "true")
        for op, probe in ops:
            replay.step(op, probe)
