"""Changelog of a full compaction (``changelog-producer = full-compaction``), and the diff the
lookup producer (``changelog-producer = lookup``, in the writer) uses too.

Between two full compactions the highest level holds the table's complete state, so the change
of a bucket is the difference between its old top-level rows and the new compaction result: a
key only in the new result is +I, only in the old one -D, in both with different values -U (old)
then +U (new). Computed with one Arrow join, no per-row Python.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.mergetree.kv_file import (
    DELETE,
    INSERT,
    KIND,
    SEQ,
    UPDATE_AFTER,
    UPDATE_BEFORE,
)

_OLD, _NEW = "__old", "__new"


def _same(a: pa.ChunkedArray, b: pa.ChunkedArray) -> np.ndarray:
    """Element-wise equality where two nulls are equal."""
    eq = pc.fill_null(pc.equal(a, b), False)
    both_null = pc.and_(pc.is_null(a), pc.is_null(b))
    return pc.or_(eq, both_null).to_numpy(zero_copy_only=False)


def diff(old: pa.Table, new: pa.Table, keys: Sequence[str], compare_values: bool = True) -> pa.Table:
    """Changelog rows (the table's columns plus ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``),
    sorted by key; ``old`` and ``new`` hold one live row per key with those same columns.
    Without ``compare_values`` a key in both is always -U/+U (the lookup producer's rule)."""
    values = [c for c in new.column_names if c not in keys and c not in (SEQ, KIND)]
    tag = lambda t, name: t.append_column(name, pa.array(np.arange(t.num_rows), pa.int64()))  # noqa: E731
    joined = tag(old, _OLD).select([*keys, _OLD]).join(tag(new, _NEW).select([*keys, _NEW]), keys,
                                                     join_type="full outer")
    oi = joined.column(_OLD).to_numpy(zero_copy_only=False)
    ni = joined.column(_NEW).to_numpy(zero_copy_only=False)
    has_old, has_new = ~np.isnan(oi.astype(float)), ~np.isnan(ni.astype(float))
    both = has_old & has_new
    changed = np.zeros(len(joined), dtype=bool)
    if not compare_values:
        changed = both
    elif both.any():
        o_rows = old.take(pa.array(oi[both].astype(np.int64)))
        n_rows = new.take(pa.array(ni[both].astype(np.int64)))
        same = np.ones(int(both.sum()), dtype=bool)
        for c in values:
            same &= _same(o_rows.column(c), n_rows.column(c))
        changed[np.flatnonzero(both)[~same]] = True
    pieces = []   # (row positions in old/new, kind, order within a key)

    def part(source: pa.Table, positions: np.ndarray, kind: int, order: int):
        if len(positions):
            rows = source.take(pa.array(positions.astype(np.int64)))
            pieces.append((rows, kind, order))

    part(new, ni[has_new & ~has_old], INSERT, 1)
    part(old, oi[has_old & ~has_new], DELETE, 0)
    part(old, oi[changed], UPDATE_BEFORE, 0)
    part(new, ni[changed], UPDATE_AFTER, 1)
    if not pieces:
        return new.slice(0, 0)
    cols = [c for c in new.column_names if c not in (SEQ, KIND)]
    tables = []
    for rows, kind, order in pieces:
        t = rows.select(cols).append_column(KIND, pa.array(np.full(rows.num_rows, kind, np.int8)))
        tables.append(t.append_column("__order", pa.array(np.full(rows.num_rows, order, np.int8)))
                      .append_column(SEQ, rows.column(SEQ)))
    out = pa.concat_tables(tables).sort_by([(k, "ascending") for k in keys] + [("__order", "ascending")])
    return out.drop_columns(["__order"]).select([*cols, SEQ, KIND])
