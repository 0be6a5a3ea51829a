"""Reading BLOB columns: a data file's rows joined with its blob files' values, streamed.

A BLOB table's write leaves, per row id range, one data file of the other columns and, per BLOB
column, blob files rolled by size that together cover the same row ids (format/blob.py). The
data-evolution merge groups files by their first row id; blob files are set aside first and
attached to the group whose range holds them. A group is then read as a stream: the data file's
columns once, the blob values in batches of bounded bytes (io/blob_file.py), each batch zipped
with the matching slice of rows. Blob values are never all in memory at once.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from typing import Optional

import numpy as np
import pyarrow as pa

from lakeformat.errors import CorruptFileError
from lakeformat.format.blob import blob_slices, blob_versions, is_blob_file
from lakeformat.format.manifest import DataFileMeta
from lakeformat.io.blob_file import BATCH_BYTES, PLACEHOLDER_LENGTH, BlobFileReader
from lakeformat.io.data_file import file_path
from lakeformat.io.table_context import TableContext


def split_blob_files(files: Sequence[DataFileMeta]) -> tuple[list[DataFileMeta], list[DataFileMeta]]:
    """(data files, blob files) of a bucket."""
    return [f for f in files if not is_blob_file(f)], [f for f in files if is_blob_file(f)]


def attach_blob_files(groups: list[list[DataFileMeta]], blobs: Sequence[DataFileMeta],
                      where: str) -> list[list[DataFileMeta]]:
    """Each blob file added to the group (row id range) that holds its first row id."""
    if not blobs:
        return groups
    starts = {g[0].first_row_id: g for g in groups if g[0].first_row_id is not None}
    ranges = sorted((first, first + g[0].row_count, g) for first, g in starts.items() if first is not None)
    out = {id(g): list(g) for g in groups}
    for b in blobs:
        owner = next((g for lo, hi, g in ranges if b.first_row_id is not None and lo <= b.first_row_id < hi), None)
        if owner is None:
            raise CorruptFileError(b.file_name, f"{where}: blob file {b.file_name} (row ids from {b.first_row_id}) "
                                   "lies in no data file's row id range")
        out[id(owner)].append(b)
    return [out[id(g)] for g in groups]


def blob_column_arrays(ctx: TableContext, bucket_dir: str, data_file: DataFileMeta,
                       blob_files: Sequence[DataFileMeta], column: str, where: str,
                       batch_bytes: int = BATCH_BYTES) -> Iterator[pa.Array]:
    """The values of BLOB ``column`` for ``data_file``'s rows, in row order, a batch at a time
    (null where no blob file holds the column: it was added after these rows)."""
    mine = [b for b in blob_files if list(b.write_cols or ()) == [column]]
    if len({b.max_sequence_number for b in mine}) > 1:   # BLOB updates: newer versions over older ones
        yield from _newest_values(ctx, bucket_dir, data_file, blob_versions(data_file, mine, column, where),
                                  batch_bytes)
        return
    files = blob_slices(data_file, mine, column, where)
    if not files:
        yield pa.nulls(data_file.row_count, pa.large_binary())
        return
    for b in files:
        path = file_path(ctx, bucket_dir, b)
        with ctx.io.open_input(path) as f:
            reader = BlobFileReader(f, b.file_size, path)
            if reader.row_count != b.row_count:
                raise CorruptFileError(path, f"blob file holds {reader.row_count} rows where its manifest entry "
                                       f"states {b.row_count}")
            yield from reader.iter_arrays(batch_bytes=batch_bytes)


def _newest_values(ctx: TableContext, bucket_dir: str, data_file: DataFileMeta,
                   versions: Sequence[Sequence[DataFileMeta]], batch_bytes: int) -> Iterator[pa.Array]:
    """Each row's value from the newest version that holds it (not a placeholder; a row no
    version holds is null), found from the files' indexes alone, then read in batches of
    consecutive records, at most ``batch_bytes`` of values per batch."""
    first, n = data_file.first_row_id or 0, data_file.row_count
    src = np.full(n, -1, dtype=np.int64)          # which reader gives each row
    pos = np.zeros(n, dtype=np.int64)             # and at which of its rows
    with ExitStack() as stack:
        readers: list[BlobFileReader] = []
        for version in versions:
            for b in version:
                path = file_path(ctx, bucket_dir, b)
                reader = BlobFileReader(stack.enter_context(ctx.io.open_input(path)), b.file_size, path)
                if reader.row_count != b.row_count:
                    raise CorruptFileError(path, f"blob file holds {reader.row_count} rows where its manifest "
                                           f"entry states {b.row_count}")
                rows = np.arange(b.row_count, dtype=np.int64) + ((b.first_row_id or 0) - first)
                lengths = reader.index.lengths
                take = (src[rows] < 0) & (lengths != PLACEHOLDER_LENGTH)
                src[rows[take]] = len(readers)
                pos[rows[take]] = np.flatnonzero(take)
                readers.append(reader)
        # runs of rows read together: the same reader at consecutive positions, or no reader (null)
        breaks = np.flatnonzero((np.diff(src) != 0) | ((src[1:] >= 0) & (np.diff(pos) != 1))) + 1
        starts = np.concatenate(([0], breaks)).astype(np.int64)
        ends = np.concatenate((breaks, [n])).astype(np.int64)
        window: list[pa.Array] = []
        held = 0
        for a, z in zip(starts.tolist(), ends.tolist()):
            p = int(pos[a])
            run = ([pa.nulls(z - a, pa.large_binary())] if src[a] < 0
                   else readers[int(src[a])].iter_arrays(p, p + z - a, batch_bytes=batch_bytes))
            for arr in run:
                if window and held + arr.nbytes > batch_bytes:
                    yield pa.concat_arrays(window)
                    window, held = [], 0
                window.append(arr)
                held += arr.nbytes
        if window:
            yield pa.concat_arrays(window)


class _Rows:
    """Pulls exactly ``k`` rows at a time from a stream of arrays."""

    def __init__(self, arrays: Iterator[pa.Array]):
        self.arrays, self.left = arrays, None

    def take(self, k: int) -> pa.Array:
        parts, got = [], 0
        while got < k:
            a = self.left if self.left is not None else next(self.arrays)
            self.left = None
            if got + len(a) > k:
                a, self.left = a.slice(0, k - got), a.slice(k - got)
            parts.append(a)
            got += len(a)
        return parts[0] if len(parts) == 1 else pa.concat_arrays(parts)

    def next_len(self) -> Optional[int]:
        if self.left is None:
            self.left = next(self.arrays, None)
        return None if self.left is None else len(self.left)


def zip_blob_columns(base: pa.Table, columns: dict[str, Iterator[pa.Array]]) -> Iterator[pa.Table]:
    """``base`` (a range's rows, its BLOB columns null) in slices, each with its BLOB columns'
    values put in: the first column's batches set the slice sizes, the others follow."""
    streams = {name: _Rows(arrays) for name, arrays in columns.items()}
    lead = next(iter(streams.values()))
    start = 0
    while start < base.num_rows:
        k = lead.next_len()
        if k is None:
            raise CorruptFileError("blob files", f"blob values end at row {start} of {base.num_rows}")
        part = base.slice(start, k)
        for name, rows in streams.items():
            part = part.set_column(part.schema.get_field_index(name), name, rows.take(k))
        yield part
        start += k
