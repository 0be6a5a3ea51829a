"""Merging a section of overlapping sorted runs in key slices, with bounded memory.

Level-0 runs usually all span the whole key space, so a section can be a whole bucket. Rather
than loading it, the key columns alone (small) are read to choose boundary keys at quantiles;
every file is sorted by key, so the rows of a file below a boundary are a prefix of it, found by
counting (both passes stream the key columns). Each file is then streamed in file order and each slice — the rows of
every file between two boundaries — is merged on its own. Equal keys always fall in the same slice, so
merging slice by slice equals merging the whole section. Memory: one slice plus one read batch
per file.
"""
from __future__ import annotations

import math
from types import MappingProxyType
from collections.abc import Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.format import arrays as A
from lakeformat.format.manifest import DataFileMeta
from lakeformat.io.data_file import iter_columns, read_columns
from lakeformat.io.fileio import join
from lakeformat.io.table_context import TableContext

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
        value = A.scalar(value, column.type)
        lt = A.to_numpy(pc.less(column, value))
        result |= equal_so_far & lt
        equal_so_far &= A.to_numpy(pc.equal(column, value))
    return result


def boundaries(key_tables: Sequence[pa.Table], slices: int) -> list[tuple]:
    """Up to ``slices - 1`` distinct boundary keys at quantiles of a sample of every table."""
    samples = []
    for keys in key_tables:
        if keys.num_rows:
            step = max(1, keys.num_rows // SAMPLES_PER_FILE)
            samples.append(keys.take(A.indices(np.arange(0, keys.num_rows, step))))
    if not samples or slices <= 1:
        return []
    sample = pa.concat_tables(samples)
    sample = sample.sort_by([(n, "ascending") for n in sample.column_names])
    picks = np.unique((np.arange(1, slices) * sample.num_rows) // slices)
    rows = sample.take(A.indices(picks)).to_pylist()
    out: list[tuple] = []
    for r in rows:
        key = tuple(r.values())
        if not out or key != out[-1]:
            out.append(key)
    return out


def _key_sample(keys: Iterator[pa.Table], rows: int) -> pa.Table | None:
    """Every ``rows / SAMPLES_PER_FILE``-th key of a file, streamed (``rows`` from its metadata)."""
    step, position, parts = max(1, rows // SAMPLES_PER_FILE), 0, []
    for batch in keys:
        first = (-position) % step
        if first < batch.num_rows:
            parts.append(batch.take(A.indices(np.arange(first, batch.num_rows, step))))
        position += batch.num_rows
    return pa.concat_tables(parts) if parts else None


def _cuts(keys: Iterator[pa.Table], bounds: Sequence[tuple]) -> list[int]:
    """Rows of a file below each boundary (a prefix: the file is sorted by key), then its rows."""
    below, total = [0] * len(bounds), 0
    for batch in keys:
        total += batch.num_rows
        for j, b in enumerate(bounds):
            below[j] += int(_less_than(batch, b).sum())
    return below + [total]


def sliced_sections(ctx: TableContext, bucket_dir: str, files: Sequence[DataFileMeta], fields, extra: Sequence[str],
                    key_fields, budget: int, deletions: Mapping[str, np.ndarray] = MappingProxyType({})
                    ) -> Iterator[pa.Table]:
    """The rows of ``files`` (``fields`` + ``extra`` columns) in key slices of about ``budget``
    bytes; each yielded table holds every version of its keys from every file. The key columns
    are streamed twice (a sample for the boundaries, then counts below them), so memory stays at
    one slice plus a batch per file however large the section is. Rows that ``deletions`` (data
    file name -> deleted positions) mark are left out."""
    n = slice_count(files, budget)
    if n == 1:
        yield pa.concat_tables([read_columns(ctx, join(bucket_dir, f.file_name), f, fields, extra,
                                             deletions.get(f.file_name)) for f in files])
        return

    def keys(f: DataFileMeta) -> Iterator[pa.Table]:
        return iter_columns(ctx, join(bucket_dir, f.file_name), f, key_fields, deleted=deletions.get(f.file_name))
    samples = [s for f in files if (s := _key_sample(keys(f), f.row_count)) is not None]
    bounds = boundaries(samples, n)
    del samples
    cuts = [_cuts(keys(f), bounds) for f in files]
    streams = [_RowStream(iter_columns(ctx, join(bucket_dir, f.file_name), f, fields, extra,
                                       deleted=deletions.get(f.file_name))) for f in files]
    for j in range(len(bounds) + 1):
        parts = [s.take_until(cut[j]) for s, cut in zip(streams, cuts)]
        parts = [p for p in parts if p.num_rows]
        if parts:
            yield pa.concat_tables(parts)


class _RowStream:
    """Hands out a file's rows in order, up to an absolute row position at a time."""

    def __init__(self, batches: Iterator[pa.Table]):
        self.batches, self.pending, self.position = batches, None, 0

    def take_until(self, end: int) -> pa.Table:
        out = []
        while self.position < end:
            pending = self.pending
            if pending is None or not pending.num_rows:
                pending = next(self.batches)
            take = min(end - self.position, pending.num_rows)
            out.append(pending.slice(0, take))
            self.pending = pending.slice(take)
            self.position += take
        return pa.concat_tables(out) if out else _EMPTY


_EMPTY = pa.table({})
