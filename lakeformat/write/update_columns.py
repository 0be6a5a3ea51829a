"""Data evolution's column update: new values for some columns of existing rows, found by ``_ROW_ID``.

As Paimon (and pypaimon's update by row id) does it, nothing is rewritten: for each row id range
(a group of files starting at one ``_FIRST_ROW_ID``) that an updated row falls in, one new file
holds the updated columns for the whole range — the new values at the given rows, the current
values elsewhere — and names them in ``_WRITE_COLS`` with the range's ``_FIRST_ROW_ID``. The
commit gives it the snapshot id as its sequence number, so a read takes those columns from it
(the newest file of the range holding them) and the others from the older files.

The merge is vectorised: per range, one ``take`` over the current column and the new values.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from lakeformat.errors import DataError, SchemaError, UnsupportedError
from lakeformat.format import options as O
from lakeformat.format.blob import blob_names
from lakeformat.format.commit_message import CommitMessage
from lakeformat.format.index_manifest import global_indexes_on
from lakeformat.format.manifest import DataFileMeta
from lakeformat.format.row_tracking import ROW_ID, row_groups
from lakeformat.format.snapshot import Snapshot
from lakeformat.io.data_file import RollingFileWriter
from lakeformat.io.index_files import IndexFiles
from lakeformat.io.table_context import TableContext
from lakeformat.read.blob_read import split_blob_files
from lakeformat.read.scan import FileScan, Split
from lakeformat.read.split_read import SplitRead


class _ColumnFileWriter(RollingFileWriter):
    """One file of some columns for one row id range: never rolled (the range is one file)."""

    roll = False

    def __init__(self, ctx: TableContext, bucket_dir: str, columns: Sequence[str], first_row_id: int):
        schema = dataclasses.replace(ctx.schema, fields=tuple(ctx.schema.field(c) for c in columns))
        super().__init__(ctx, bucket_dir, schema)
        self.first_row_id = first_row_id

    def _file_meta(self, name: str, size: int, rows: int) -> DataFileMeta:
        names = tuple(self.schema.names)
        return dataclasses.replace(super()._file_meta(name, size, rows), first_row_id=self.first_row_id,
                                   write_cols=names, value_stats_cols=names)


def check_update(ctx: TableContext, data: pa.Table) -> list[str]:
    """The columns ``data`` updates; what an update cannot do is an error naming it."""
    if not ctx.typed_options.get(O.DATA_EVOLUTION):
        raise UnsupportedError(f"table {ctx.name}: updating some columns by _ROW_ID needs "
                               "'data-evolution.enabled' = true (Paimon's data evolution)")
    if ROW_ID not in data.column_names:
        raise DataError(f"an update of {ctx.name} needs the {ROW_ID} column to find the rows")
    columns = [c for c in data.column_names if c != ROW_ID]
    names = ctx.schema.names
    unknown = [c for c in columns if c not in names]
    if unknown or not columns:
        raise SchemaError(f"an update of {ctx.name} sets columns of the table {names}; got {columns}")
    blobs = [c for c in columns if c in blob_names(ctx.schema.fields)]
    if blobs:
        raise UnsupportedError(f"an update of {ctx.name}: lakeformat does not implement updates of BLOB "
                               f"columns {blobs}")
    if set(columns) & set(ctx.schema.partition_keys):
        raise DataError(f"an update of {ctx.name} cannot change partition columns {ctx.schema.partition_keys}")
    ids = data.column(ROW_ID)
    if ids.null_count:
        raise DataError(f"an update of {ctx.name}: {ROW_ID} must not be null")
    if len(np.unique(ids.to_numpy())) != len(ids):
        raise DataError(f"an update of {ctx.name}: {ROW_ID} values must be unique")
    return columns


def update_messages(ctx: TableContext, snapshot: Snapshot, data: pa.Table) -> list[CommitMessage]:
    """Files for the row id ranges of ``snapshot`` that ``data`` (``_ROW_ID`` + columns) updates."""
    columns = check_update(ctx, data)
    stale = global_indexes_on(IndexFiles.of(ctx).read_manifest(snapshot.index_manifest),
                              [ctx.schema.field(c).id for c in columns])
    if stale:   # Paimon's global-index.column-update-action defaults to refusing as well
        raise UnsupportedError(
            f"an update of {ctx.name} would leave its global indexes stale: "
            + ", ".join(sorted({f"{e.file.index_type} index {e.file.file_name}" for e in stale}))
            + f" cover(s) updated columns {columns}; drop the index first")
    data = data.select([ROW_ID, *columns]).cast(pa.schema(
        [pa.field(ROW_ID, pa.int64())] + [ctx.arrow_schema().field(c) for c in columns]))
    ranges: list[tuple[Split, list[DataFileMeta]]] = []
    for split in FileScan(ctx).plan(snapshot):
        files, _ = split_blob_files(split.files)   # blob files hold BLOB columns, which are not updated
        ranges += [(split, g) for g in row_groups(files, f"table {ctx.name}, snapshot {snapshot.id}")
                   if g[0].first_row_id is not None]
    ranges.sort(key=lambda r: r[1][0].first_row_id or 0)
    starts = np.array([g[0].first_row_id for _, g in ranges], dtype=np.int64)
    ends = starts + np.array([g[0].row_count for _, g in ranges], dtype=np.int64)
    ids = data.column(ROW_ID).to_numpy()
    where = np.searchsorted(starts, ids, side="right") - 1
    found = (where >= 0) & (ids < ends[np.maximum(where, 0)]) if len(starts) else np.zeros(len(ids), bool)
    if not found.all():
        missing = ids[~found][:5].tolist()
        raise DataError(f"an update of {ctx.name}: row ids {missing} are not rows of snapshot {snapshot.id}")
    reader = SplitRead(ctx, columns)
    order = np.argsort(where, kind="stable")
    bounds = np.flatnonzero(np.diff(where[order])) + 1
    messages, written = [], []
    try:
        for chunk in np.split(order, bounds):
            split, group = ranges[int(where[chunk[0]])]
            first, n = int(starts[where[chunk[0]]]), group[0].row_count
            current = reader.read_group(split, group)
            take = np.arange(n, dtype=np.int64)
            take[ids[chunk] - first] = n + np.arange(len(chunk), dtype=np.int64)
            updates = data.take(pa.array(chunk))
            merged = pa.table({c: pa.concat_arrays([current.column(c).combine_chunks(),
                                                    updates.column(c).combine_chunks()]).take(pa.array(take))
                               for c in columns})
            bucket_dir = ctx.bucket_dir_of(split.partition_bytes, split.bucket)
            writer = _ColumnFileWriter(ctx, bucket_dir, columns, first)
            try:
                writer.write(merged)
                files = writer.close()
            except BaseException:
                writer.abort()
                raise
            written += [(bucket_dir, f) for f in files]
            messages.append(CommitMessage(split.partition_bytes, split.bucket, ctx.schema.num_buckets,
                                          tuple(files)))
    except BaseException:
        for bucket_dir, f in written:
            ctx.io.delete(f"{bucket_dir}/{f.file_name}")
        raise
    return messages
