"""Paimon's merge engines as vectorised functions over Arrow tables.

Every row version in the merge tree carries ``_SEQUENCE_NUMBER`` (int64, increasing with arrival)
and ``_VALUE_KIND`` (int8: 0 +I, 1 -U, 2 +U, 3 -D). ``MergeFunction.merge`` turns any number of
versions per primary key, in any order, into one row per key, sorted by the key. The same function
serves the write buffer, compaction and merge-on-read.

Versions of a key are ordered by ``sequence.field`` (if set; nulls first, and with
``sequence.field.sort-order=descending`` larger values count as older, nulls still first), then by
``_SEQUENCE_NUMBER``; equal sequence numbers keep input order. The output ``_SEQUENCE_NUMBER`` is the
one of the version that decides the row: the winner's for deduplicate and first-row, the last
version's for partial-update and aggregation (the group's maximum unless ``sequence.field`` is set),
as Paimon does. ``_VALUE_KIND`` is 0 for a live row and 3 for a deleted key.

What each engine does with retractions (-U/-D rows):

* With ``ignore-delete`` (or one of its fallback keys, or ``partial-update.ignore-delete``) every
  engine drops them before merging, as Paimon's writer does; a key with only retractions vanishes.
* ``deduplicate``: the last version wins; if it is -U/-D the key is deleted.
* ``first-row``: the first version wins; -U/-D raise ``DataError``.
* ``partial-update``: per column the last non-null value wins. -U/-D raise ``DataError`` unless
  ``partial-update.remove-record-on-delete`` is set: then a -D discards everything before it (the key
  is deleted unless a later +I/+U starts a fresh row) and -U rows are ignored. Paimon also ignores -U
  there, except that a key whose only versions are -U comes out as -D; here it vanishes, which keeps
  merging associative. Note that no row kind can say "fresh row", so merging [-D, +I] apart from
  older versions and then with them lets old non-null values show through, in Paimon too.
* ``partial-update`` with ``fields.<g>.sequence-group=a,b`` (g may be 'g1,g2', compared in order,
  nulls first): a version whose g fields are all null leaves the group alone; otherwise the version
  with the greatest g (the last such on ties) sets g and a,b, nulls included ("true partial update").
  A -U/-D version takes part in the same contest and, when it wins, sets g to its values and a,b to
  null. Columns in no group follow the plain rule and ignore retractions. A key without any +I/+U
  version comes out as -D (Paimon's "meetInsert"), carrying the state so a later merge still
  applies the retraction. Aggregate functions inside partial-update and
  ``partial-update.remove-record-on-sequence-group`` are not supported.
* ``aggregation``: see ``lakeformat.mergetree.aggregate``; the result is always +I, also for a key
  whose versions are all retractions (Paimon without ``aggregation.remove-record-on-delete``).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import DataError, OptionError
from lakeformat.format import arrays as A
from lakeformat.format import options as o
from lakeformat.mergetree import aggregate as agg

SEQUENCE_NUMBER, VALUE_KIND = "_SEQUENCE_NUMBER", "_VALUE_KIND"
INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3
_LIMIT = 1 << 62   # packed sort codes stay below this


# -- ordering ------------------------------------------------------------------------------------
def _codes(col, descending: bool = False) -> tuple[np.ndarray, int]:
    """Order-preserving int64 codes of a column (null smallest) and an exclusive upper bound."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    t, n = arr.type, len(arr)
    if pa.types.is_dictionary(t):
        arr = arr.dictionary_decode()
        t = arr.type
    isnull = A.is_null(arr) if arr.null_count else None
    codes, card = None, 0
    if pa.types.is_boolean(t):
        t, arr = pa.int8(), arr.cast(pa.int8())
    elif pa.types.is_temporal(t):
        t, arr = (pa.int32() if t.bit_width == 32 else pa.int64()), arr.view(
            pa.int32() if t.bit_width == 32 else pa.int64())
    if pa.types.is_integer(t) and t != pa.uint64() and n:
        lo, hi = pc.min_max(arr).values()
        if lo.is_valid:
            lo, hi = lo.as_py(), hi.as_py()
            if hi - lo < max(4 * n, 1 << 20):   # dense: the value itself, no hashing or sorting
                codes, card = A.to_numpy(arr.fill_null(A.scalar(lo, t))).astype(np.int64) - lo, hi - lo + 1
        else:
            codes, card = np.zeros(n, np.int64), 1
    if codes is None:   # anything else: rank among the distinct values
        enc = pc.dictionary_encode(arr)
        rank = np.empty(len(enc.dictionary), np.int64)
        rank[A.to_numpy(pc.array_sort_indices(enc.dictionary))] = np.arange(len(enc.dictionary))
        codes, card = rank[A.to_numpy(enc.indices.fill_null(A.scalar(0, enc.indices.type))).astype(np.intp)], \
            len(enc.dictionary)
    card = max(card, 1)
    if descending:
        codes = card - 1 - codes
    if isnull is not None:
        codes = codes + 1
        codes[isnull] = 0
        card += 1
    return codes, card


def _pack(parts: list[tuple[np.ndarray, int]]) -> list[tuple[np.ndarray, int]]:
    """Combine code arrays (most significant first) into as few int64 arrays as fit."""
    out: list[tuple[np.ndarray, int]] = []
    for codes, card in parts:
        if out and out[-1][1] * card < _LIMIT:
            prev, pcard = out[-1]
            out[-1] = (prev * card + codes, pcard * card)
        else:
            out.append((codes, card))
    return out


def _argsort(packed: list[tuple[np.ndarray, int]]) -> np.ndarray:
    if len(packed) == 1:
        return np.argsort(packed[0][0], kind="stable")
    return np.lexsort([c for c, _ in reversed(packed)])


def _merge_codes(data: pa.Table, key_fields: Sequence[str], sequence_fields: Sequence[str] = (),
                 descending: bool = False):
    """Packed codes of the key and of the merge order (sequence fields, then sequence number)."""
    keys = _pack([_codes(data[k]) for k in key_fields])
    seqs = [_codes(data[f], descending) for f in sequence_fields] + [_codes(data[SEQUENCE_NUMBER])]
    return keys, _pack(seqs)


def _ordering(data: pa.Table, key_fields: Sequence[str], sequence_fields: Sequence[str] = (),
              descending: bool = False) -> tuple[np.ndarray, list[tuple[np.ndarray, int]]]:
    keys, seqs = _merge_codes(data, key_fields, sequence_fields, descending)
    return _argsort(_pack(keys + seqs)), keys


def _pick(keys, seqs, rows: np.ndarray, last: bool) -> Optional[np.ndarray]:
    """Input rows of the last (or first) version of each key in key order, found without sorting;
    None when the codes are too wide for it or merge orders tie."""
    if len(keys) != 1 or len(seqs) != 1 or keys[0][1] > max(8 * len(rows), 1 << 20):
        return None
    (k, card), m = keys[0], seqs[0][0]
    kr, mr = k[rows], m[rows]
    best = np.full(card, -1 if last else np.iinfo(np.int64).max, np.int64)
    (np.maximum if last else np.minimum).at(best, kr, mr)
    win = rows[mr == best[kr]]
    slot = np.full(card, -1, np.int64)
    slot[k[win]] = win
    out = slot[slot >= 0]
    return out if len(out) == len(win) else None


def sort_for_merge(data: pa.Table, key_fields: Sequence[str], sequence_fields: Sequence[str] = (),
                   descending: bool = False) -> pa.Table:
    """``data`` sorted by key, then by sequence fields (nulls first), then ``_SEQUENCE_NUMBER``."""
    return data.take(A.indices(_ordering(data, key_fields, sequence_fields, descending)[0]))


def _tuple_rank(parts: list[tuple[np.ndarray, int]]) -> tuple[np.ndarray, int]:
    """One int64 code per row for a tuple of code arrays, in the same order, below 2**31
    (or a dense rank)."""
    packed = _pack(parts)
    if len(packed) == 1 and packed[0][1] < (1 << 31):
        return packed[0]
    n = len(packed[0][0])
    order = _argsort(packed)
    change = np.zeros(n, bool)
    for c, _ in packed:
        s = c[order]
        change[1:] |= s[1:] != s[:-1]
    rank = np.empty(n, np.int64)
    rank[order] = np.cumsum(change)
    return rank, int(rank.max(initial=0)) + 1


class Groups:
    """Versions sorted by key and merge order (``order`` holds row numbers of the input); groups of
    equal key are ``order[starts[i]:ends[i] + 1]``. Positions below are indices into ``order``."""

    def __init__(self, order: np.ndarray, keys: list[tuple[np.ndarray, int]]):
        n = self.n = len(order)
        self.order = order
        change = np.zeros(n, bool)
        change[:1] = True
        for k, _ in keys:
            s = k[order]
            change[1:] |= s[1:] != s[:-1]
        self.starts = np.flatnonzero(change)
        self.ends = np.append(self.starts[1:], n) - 1 if n else self.starts
        self.size = len(self.starts)
        self._gid: Optional[np.ndarray] = None

    @property
    def gid(self) -> np.ndarray:
        """Group number of each sorted position."""
        if self._gid is None:
            self._gid = np.repeat(np.arange(self.size), self.ends - self.starts + 1)
        return self._gid

    def sorted(self, values: np.ndarray) -> np.ndarray:
        return values[self.order]

    def last_where(self, mask: np.ndarray) -> np.ndarray:
        """Per group, the last position where ``mask`` holds, else -1."""
        acc = np.maximum.accumulate(np.where(mask, np.arange(self.n), -1))[self.ends]
        return np.where(acc >= self.starts, acc, -1)

    def first_where(self, mask: np.ndarray) -> np.ndarray:
        """Per group, the first position where ``mask`` holds, else -1."""
        acc = np.minimum.accumulate(np.where(mask, np.arange(self.n), self.n)[::-1])[::-1][self.starts]
        return np.where(acc <= self.ends, acc, -1)

    def sum(self, values: np.ndarray) -> np.ndarray:
        return np.add.reduceat(values, self.starts) if self.n else values[:0]

    def gather(self, col, pos: np.ndarray):
        """``col`` (input row order) at sorted positions ``pos``; null where ``pos`` is -1."""
        idx = self.order[np.maximum(pos, 0)] if self.n else np.zeros(len(pos), np.int64)
        missing = pos < 0
        return col.take(A.from_numpy(idx, mask=missing) if missing.any() else A.indices(idx))


def take_rows(data: pa.Table, rows: np.ndarray) -> pa.Table:
    """``data.take(rows)`` for distinct ``rows``: read in storage order, then permute the (smaller)
    result, which is much faster than random access into a large table of strings."""
    if len(rows) < (1 << 16) or len(rows) * 8 < data.num_rows or len(rows) == data.num_rows:
        return data.take(A.indices(rows))
    mask = np.zeros(data.num_rows, bool)
    mask[rows] = True
    inv = (np.cumsum(mask) - 1)[rows]
    return data.take(A.indices(np.flatnonzero(mask))).take(A.indices(inv))


def _nulls(col) -> np.ndarray:
    return A.is_null(col) if col.null_count else np.zeros(len(col), bool)


# -- the merge function --------------------------------------------------------------------------
class MergeFunction:
    """Merges versions of primary keys by a table's ``merge-engine``. Build with ``from_options``."""

    def __init__(self, engine: str, fields: Sequence[str], key_fields: Sequence[str], *,
                 sequence_fields: Sequence[str] = (), descending: bool = False,
                 ignore_delete: bool = False, remove_on_delete: bool = False,
                 sequence_groups: Sequence[tuple[tuple[str, ...], tuple[str, ...]]] = (),
                 aggregators: Optional[Mapping[str, agg.FieldAgg]] = None):
        self.engine, self.fields, self.key_fields = engine, list(fields), list(key_fields)
        self.sequence_fields, self.descending = list(sequence_fields), descending
        self.ignore_delete, self.remove_on_delete = ignore_delete, remove_on_delete
        self.sequence_groups = [(tuple(s), tuple(p)) for s, p in sequence_groups]
        self.aggregators = dict(aggregators or {})
        self._checked: Optional[pa.Schema] = None

    @classmethod
    def from_options(cls, options, fields: Sequence[str], key_fields: Sequence[str],
                     schema: Optional[pa.Schema] = None) -> MergeFunction:
        """The table's merge function; ``schema`` (optional) checks aggregate types right away."""
        opts = options if isinstance(options, o.Options) else o.Options(options)
        fields, key_fields = list(fields), list(key_fields)
        if not key_fields or any(k not in fields for k in key_fields):
            raise OptionError(f"primary key {key_fields} must be non-empty columns of {fields}")
        engine = opts.required(o.MERGE_ENGINE)
        seq = opts.get(o.SEQUENCE_FIELD) or []
        for f in seq:
            if f not in fields:
                raise OptionError(f"option 'sequence.field': {f!r} is not a column of {fields}")
        if engine == "first-row" and seq:
            raise OptionError("option 'sequence.field' cannot be used with merge-engine 'first-row'")
        ignore = bool(opts.get(o.IGNORE_DELETE) or opts.get(o.PARTIAL_UPDATE_IGNORE_DELETE))
        remove = engine == "partial-update" and bool(opts.get(o.PARTIAL_UPDATE_REMOVE_ON_DELETE))
        groups = _sequence_groups(opts, fields, key_fields) if engine in ("partial-update",
                                                                          "aggregation") else []
        if engine == "aggregation" and groups:
            raise OptionError("'fields.<field>.sequence-group' with merge-engine 'aggregation' is not "
                              "supported by lakeformat")
        if remove and ignore:
            raise OptionError("options 'ignore-delete' and 'partial-update.remove-record-on-delete' "
                              "conflict; set only one")
        if remove and groups:
            raise OptionError("option 'partial-update.remove-record-on-delete' conflicts with "
                              "'fields.<field>.sequence-group'; set only one")
        if "partial-update.remove-record-on-sequence-group" in opts.raw:
            raise OptionError("option 'partial-update.remove-record-on-sequence-group' is not "
                              "supported by lakeformat")
        aggregators = {}
        if engine == "aggregation":
            aggregators = {f: agg.FieldAgg.from_options(opts, f) for f in fields if f not in key_fields}
        elif engine == "partial-update":
            for f in fields:
                if f not in key_fields:
                    a = agg.FieldAgg.from_options(opts, f)
                    if a.name != "last_non_null_value":
                        raise OptionError(f"option {a.option_key!r}: aggregate functions in "
                                          "merge-engine 'partial-update' are not supported by lakeformat")
        mf = cls(engine, fields, key_fields, sequence_fields=seq,
                 descending=opts.get(o.SEQUENCE_FIELD_SORT_ORDER) == "descending",
                 ignore_delete=ignore, remove_on_delete=remove, sequence_groups=groups,
                 aggregators=aggregators)
        if schema is not None:
            mf._check_types(schema)
        return mf

    # -- checks ----------------------------------------------------------------------------------
    def _check_schema(self, schema: pa.Schema) -> None:
        if self._checked is not None and self._checked.equals(schema):
            return
        names = schema.names
        unknown = [c for c in names if c not in self.fields and c not in (SEQUENCE_NUMBER, VALUE_KIND)]
        needed = self.key_fields + self.sequence_fields + [c for c in (SEQUENCE_NUMBER, VALUE_KIND)
                                                           if c not in self.fields]
        for s, prot in self.sequence_groups:
            if any(c in names for c in s + prot):
                needed += list(s)
        missing = [c for c in needed if c not in names]
        if unknown or missing or len(set(names)) != len(names):
            raise DataError(f"columns {names} do not fit the merge: unknown {unknown}, missing {missing}")
        if not pa.types.is_integer(schema.field(SEQUENCE_NUMBER).type) or \
                not pa.types.is_integer(schema.field(VALUE_KIND).type):
            raise DataError(f"{SEQUENCE_NUMBER} and {VALUE_KIND} must be integer columns")
        self._check_types(schema)
        self._checked = schema

    def _check_types(self, schema: pa.Schema) -> None:
        for f, a in self.aggregators.items():
            if f in schema.names:
                a.check_type(schema.field(f).type)

    def _kinds(self, data: pa.Table) -> np.ndarray:
        col = data[VALUE_KIND]
        if col.null_count or data[SEQUENCE_NUMBER].null_count:
            raise DataError(f"{VALUE_KIND} and {SEQUENCE_NUMBER} must not be null")
        kind = A.to_numpy(col).astype(np.int8, copy=False)
        if len(kind) and (kind.min() < 0 or kind.max() > 3):
            raise DataError(f"{VALUE_KIND} must be 0 (+I), 1 (-U), 2 (+U) or 3 (-D)")
        return kind

    # -- merge -----------------------------------------------------------------------------------
    def merge(self, data: pa.Table, drop_deletes: bool) -> pa.Table:
        """One row per key, sorted by key; deleted keys as -D rows unless ``drop_deletes``."""
        self._check_schema(data.schema)
        kind = self._kinds(data)
        if not data.num_rows:
            return data
        retract = (kind == UPDATE_BEFORE) | (kind == DELETE)
        if self.engine == "first-row" and retract.any() and not self.ignore_delete:
            raise DataError(self._retract_error(data, int(np.argmax(retract)), "first-row", "'ignore-delete'"))
        keys, seqs = _merge_codes(data, self.key_fields, self.sequence_fields, self.descending)
        considered = np.flatnonzero(~retract) if self.ignore_delete else np.arange(data.num_rows)
        if self.engine in ("deduplicate", "first-row"):
            rows = _pick(keys, seqs, considered, last=self.engine == "deduplicate")
            if rows is None:
                order = _argsort(_pack(keys + seqs))
                g = Groups(order[~retract[order]] if self.ignore_delete else order, keys)
                rows = g.order[g.ends if self.engine == "deduplicate" else g.starts]
            deleted = retract[rows]
            if drop_deletes:
                rows = rows[~deleted]
                deleted = deleted[~deleted]
            out = take_rows(data, rows)
            return out.set_column(out.schema.get_field_index(VALUE_KIND), out.schema.field(VALUE_KIND),
                                  A.from_numpy(np.where(deleted, DELETE, INSERT).astype(np.int8))
                                  .cast(data.schema.field(VALUE_KIND).type))
        order = _argsort(_pack(keys + seqs))
        g = Groups(order[~retract[order]] if self.ignore_delete else order, keys)
        if not g.n:
            return data.slice(0, 0)
        retract_s = retract[g.order]
        if self.engine == "partial-update":
            cols, deleted, keep = self._partial_update(data, g, retract_s)
        else:
            cols = {f: a.aggregate(data[f], g, retract_s)
                    for f, a in self.aggregators.items() if f in data.column_names}
            deleted, keep = np.zeros(g.size, bool), np.ones(g.size, bool)
        return self._assemble(data, g, cols, deleted, keep & ~(deleted & drop_deletes))

    def _assemble(self, data: pa.Table, g: Groups, cols: dict, deleted: np.ndarray,
                  keep: np.ndarray) -> pa.Table:
        sel = None if keep.all() else np.flatnonzero(keep)
        arrays = []
        for field in data.schema:
            name = field.name
            if name == VALUE_KIND:
                col = A.from_numpy(np.where(deleted, DELETE, INSERT).astype(np.int8)).cast(field.type)
            elif name in cols:
                col = cols[name]
                if isinstance(col, np.ndarray):   # positions to gather
                    col = g.gather(data[name], col if sel is None else col[sel])
                    arrays.append(col)
                    continue
            else:   # keys and the sequence number come from the group's last version
                col = g.gather(data[name], g.ends if sel is None else g.ends[sel])
                arrays.append(col)
                continue
            arrays.append(col if sel is None else col.take(A.indices(sel)))
        return pa.Table.from_arrays(arrays, schema=data.schema)

    def _retract_error(self, data: pa.Table, row: int, engine: str, remedy: str) -> str:
        key = data.select(self.key_fields).slice(row, 1).to_pylist()[0]
        return (f"merge-engine '{engine}' cannot accept -U/-D rows (one arrived for key {key}); "
                f"set {remedy} to handle them")

    # -- partial-update --------------------------------------------------------------------------
    def _partial_update(self, data: pa.Table, g: Groups, retract_s: np.ndarray):
        """Per column positions to gather, deleted groups, groups to keep."""
        insert_s = ~retract_s
        value_cols = [f for f in data.column_names if f not in self.key_fields
                      and f not in (SEQUENCE_NUMBER, VALUE_KIND)]
        cols: dict[str, np.ndarray] = {}
        deleted = np.zeros(g.size, bool)
        keep = np.ones(g.size, bool)
        live = insert_s
        if not self.sequence_groups and retract_s.any():
            if not self.remove_on_delete:
                raise DataError(self._retract_error(
                    data, int(g.order[np.argmax(retract_s)]), "partial-update",
                    "'ignore-delete' (drop them), 'partial-update.remove-record-on-delete' (a -D "
                    "deletes the row) or 'fields.<seq>.sequence-group' (retract columns)"))
            last_del = g.last_where(g.sorted(A.to_numpy(data[VALUE_KIND])) == DELETE)
            live = insert_s & (np.arange(g.n) > last_del[g.gid])
            alive = g.last_where(live) >= 0
            deleted = (last_del >= 0) & ~alive
            keep = alive | deleted
        grouped: set[str] = set()
        for seq, protected in self.sequence_groups:
            grouped.update(seq + protected)
            present = [c for c in seq + protected if c in value_cols]
            if not present:
                continue
            parts = [_codes(data[s]) for s in seq]
            allnull = np.logical_and.reduce([_nulls(data[s]) for s in seq])
            rank, _card = _tuple_rank(parts)
            cand = ~g.sorted(allnull)
            score = np.where(cand, g.sorted(rank) * max(g.n, 1) + np.arange(g.n), -1)
            best = np.maximum.reduceat(score, g.starts) if g.n else score
            win = np.where(best >= 0, best % max(g.n, 1), -1)
            win_retract = (win >= 0) & retract_s[np.maximum(win, 0)]
            for c in present:
                cols[c] = win if c in seq else np.where(win_retract, -1, win)
        for c in value_cols:
            if c not in grouped:
                cols[c] = g.last_where(live & ~g.sorted(_nulls(data[c])))
        if self.sequence_groups:
            deleted = g.last_where(insert_s) < 0
        elif deleted.any():   # a deleted key carries its -D row
            for c in cols:
                cols[c] = np.where(deleted, last_del, cols[c])
        return cols, deleted, keep


def _sequence_groups(opts: o.Options, fields: list[str], key_fields: list[str]):
    groups: list = []
    seen: dict = {}
    for key in sorted(opts.raw):
        m = o.FIELD_OPTION.fullmatch(key)
        if not m or m.group(2) != "sequence-group":
            continue
        seq = tuple(o.parse_list(m.group(1)))
        protected = tuple(opts.field_option(m.group(1), "sequence-group") or ())
        for f in seq + protected:
            if f not in fields:
                raise OptionError(f"option {key!r}: {f!r} is not a column of {fields}")
            if f in key_fields:
                raise OptionError(f"option {key!r}: {f!r} is a primary key column")
            if f in seen and seen[f] != key:
                raise OptionError(f"option {key!r}: {f!r} is already in {seen[f]!r}")
            seen[f] = key
        if not seq:
            raise OptionError(f"option {key!r} names no sequence field")
        groups.append((seq, protected))
    return groups
