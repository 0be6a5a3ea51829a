"""Merging a section of overlapping sorted runs in key slices, with bounded memory.

Level-0 runs usually all span the whole key space, so a section can be a whole bucket. Rather
than loading it, the key columns alone (small) are read to choose boundary keys at quantiles;
every file is sorted by key, so the rows of a file below a boundary are a prefix of it, found by
counting. Each file is then streamed in file order and each slice — the rows of every file
between two boundaries — is merged on its own. Equal keys always fall in the same slice, so
merging slice by slice equals merging the whole section. Memory: one slice plus one read batch
per file.
"""
from __future__ import annotations

import math
from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.format.manifest import DataFileMeta
from lakeformat.io.data_file import iter_columns, read_columns
from lakeformat.io.fileio import join

# Parquet inflates to roughly this many times its size as Arrow columns.
ARROW_INFLATION = 4
SAMPLES_PER_FILE = 256


def slice_count(files: Sequence[DataFileMeta], budget: int) -> int:
    return max(1, math.ceil(sum(f.file_size for f in files) * ARROW_INFLATION / max(budget, 1)))


def _less_than(keys: pa.Table, bound: tuple) -> np.ndarray:
    """Rows of ``keys`` lexicographically below ``bound`` (keys are never null)."""
    result = np.zeros(keys.num_rows, dtype=bool)
    equal_so_far = np.ones(keys.num_rows, dtype=bool)
    for column, value in zip(keys.columns, bound):
        lt = pc.less(column, value).to_numpy(zero_copy_only=False)
        result |= equal_so_far & lt
        equal_so_far &= pc.equal(column, value).to_numpy(zero_copy_only=False)
    return result


def boundaries(key_tables: Sequence[pa.Table], slices: int) -> list[tuple]:
    """Up to ``slices - 1`` distinct boundary keys at quantiles of a sample of every file."""
    samples = []
    for keys in key_tables:
        if keys.num_rows:
            step = max(1, keys.num_rows // SAMPLES_PER_FILE)
            samples.append(keys.take(pa.array(np.arange(0, keys.num_rows, step))))
    if not samples or slices <= 1:
        return []
    sample = pa.concat_tables(samples)
    sample = sample.sort_by([(n, "ascending") for n in sample.column_names])
    picks = np.unique((np.arange(1, slices) * sample.num_rows) // slices)
    rows = sample.take(pa.array(picks)).to_pylist()
    out: list[tuple] = []
    for r in rows:
        key = tuple(r.values())
        if not out or key != out[-1]:
            out.append(key)
    return out


def sliced_sections(table, bucket_dir: str, files: Sequence[DataFileMeta], fields, extra: Sequence[str],
                    key_fields, budget: int) -> Iterator[pa.Table]:
    """The rows of ``files`` (``fields`` + ``extra`` columns) in key slices of about ``budget``
    bytes; each yielded table holds every version of its keys from every file."""
    n = slice_count(files, budget)
    if n == 1:
        yield pa.concat_tables([read_columns(table, join(bucket_dir, f.file_name), f, fields, extra)
                                for f in files])
        return
    key_tables = [read_columns(table, join(bucket_dir, f.file_name), f, key_fields) for f in files]
    bounds = boundaries(key_tables, n)
    # cut[i][j]: rows of file i below boundary j (a prefix, since files are sorted by key)
    cuts = [[int(_less_than(k, b).sum()) for b in bounds] + [k.num_rows] for k in key_tables]
    del key_tables
    streams = [_RowStream(iter_columns(table, join(bucket_dir, f.file_name), f, fields, extra)) for f in files]
    for j in range(len(bounds) + 1):
        parts = [s.take_until(cut[j]) for s, cut in zip(streams, cuts)]
        parts = [p for p in parts if p.num_rows]
        if parts:
            yield pa.concat_tables(parts)


class _RowStream:
    """Hands out a file's rows in order, up to an absolute row position at a time."""

    def __init__(self, batches: Iterator[pa.Table]):
        self.batches, self.pending, self.position = batches, None, 0

    def take_until(self, end: int) -> pa.Table | None:
        out = []
        while self.position < end:
            if self.pending is None or not self.pending.num_rows:
                self.pending = next(self.batches)
            take = min(end - self.position, self.pending.num_rows)
            out.append(self.pending.slice(0, take))
            self.pending = self.pending.slice(take)
            self.position += take
        return pa.concat_tables(out) if out else _EMPTY


_EMPTY = pa.table({})
