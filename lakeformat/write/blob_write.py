"""Writing BLOB tables: the other columns to data files, each BLOB column to ``.blob`` files.

As Paimon lays a BLOB table out (format/blob.py): rows go to a data file of the non-BLOB columns
(``_WRITE_COLS`` naming them) and, in the same order, each BLOB column's values to blob files
(``_WRITE_COLS`` = that column) rolled at ``blob.target-file-size``. When the data file rolls,
the open blob files close with it, so a data file's rows are exactly those of the blob files
listed after it. The committer gives the data file the next row ids and each blob file the ids
continuing from its data file's first (Paimon's rule, format/row_tracking.assign_row_ids), so
files are handed over in that order: a data file, then its blob files column by column.
"""
from __future__ import annotations

import dataclasses
import time
import uuid
from typing import Optional, Union

import pyarrow as pa

from lakeformat.errors import UnsupportedError
from lakeformat.format import options as O
from lakeformat.format.binary_row import serialize_row
from lakeformat.format.blob import BLOB_SUFFIX, is_blob
from lakeformat.format.manifest import DataFileMeta, SimpleStats
from lakeformat.format.schema import TableSchema
from lakeformat.io.blob_file import BlobFileWriter, binary_values
from lakeformat.io.data_file import RollingFileWriter
from lakeformat.io.fileio import join
from lakeformat.io.table_context import TableContext


class _DataPart(RollingFileWriter):
    """The non-BLOB columns, one file at a time (the BLOB writer decides when to roll)."""

    roll = False

    def _file_meta(self, name: str, size: int, rows: int) -> DataFileMeta:
        names = tuple(self.schema.names)
        return dataclasses.replace(super()._file_meta(name, size, rows), write_cols=names, value_stats_cols=names)


class _BlobPart:
    """One BLOB column's blob files, rolled at the target size."""

    def __init__(self, ctx: TableContext, bucket_dir: str, schema: TableSchema, column: str, target: int):
        self.ctx, self.dir, self.schema, self.column, self.target = ctx, bucket_dir, schema, column, target
        self.field = schema.field(column)
        self.prefix = f"data-{uuid.uuid4()}-"
        self.count = 0
        self.writer: Optional[BlobFileWriter] = None
        self.name = ""
        self.closed: list[DataFileMeta] = []
        self.written: list[str] = []

    def write(self, values: Union[pa.Array, pa.ChunkedArray]) -> None:
        """Values in row order; a file rolls once it holds ``target`` bytes (after a whole blob)."""
        for v in binary_values(values):
            if self.writer is None:
                self._open()
            assert self.writer is not None
            self.writer.write(v)
            if self.writer.position >= self.target:
                self.close_file()

    def _open(self) -> None:
        self.name = f"{self.prefix}{self.count}{BLOB_SUFFIX}"
        self.count += 1
        self.written.append(self.name)
        self.writer = BlobFileWriter(self.ctx.io.open_output(join(self.dir, self.name)))

    def close_file(self) -> None:
        if self.writer is None:
            return
        rows = self.writer.row_count
        size = self.writer.close()
        types = [self.field.type]
        self.closed.append(DataFileMeta(
            file_name=self.name, file_size=size, row_count=rows,
            value_stats=SimpleStats(serialize_row([None], types), serialize_row([None], types), (0,)),
            min_sequence_number=0, max_sequence_number=max(rows - 1, 0), schema_id=self.schema.id, level=0,
            creation_time_millis=int(time.time() * 1000), write_cols=(self.column,)))
        self.writer = None

    def take(self) -> list[DataFileMeta]:
        out, self.closed = self.closed, []
        return out

    def abort(self) -> None:
        if self.writer is not None:
            try:
                self.writer.out.close()
            except Exception:   # it is being thrown away
                pass
            self.writer = None
        for name in self.written:
            self.ctx.io.delete(join(self.dir, name))
        self.written, self.closed = [], []


class BlobTableWriter:
    """Rows of one bucket of a BLOB table: a data file of the other columns and blob files per
    BLOB column, rolled together at ``target-file-size`` of the data file."""

    def __init__(self, ctx: TableContext, bucket_dir: str, schema: TableSchema):
        if schema.num_buckets > 0:
            raise UnsupportedError(f"table {ctx.name}: lakeformat writes BLOB tables with 'bucket' = -1 only")
        self.ctx, self.schema = ctx, schema
        self.blob_columns = [f.name for f in schema.fields if is_blob(f.type)]
        self.data_columns = [f.name for f in schema.fields if not is_blob(f.type)]
        rest = dataclasses.replace(schema, fields=tuple(f for f in schema.fields if not is_blob(f.type)))
        self.data = _DataPart(ctx, bucket_dir, rest)
        target = ctx.typed_options.get(O.BLOB_TARGET_FILE_SIZE) or ctx.target_file_size
        self.blobs = [_BlobPart(ctx, bucket_dir, schema, c, target) for c in self.blob_columns]
        self.files: list[DataFileMeta] = []

    def write(self, data: pa.Table) -> None:
        step = 1024
        for start in range(0, data.num_rows, step):   # the data file's size is checked between slices
            part = data.slice(start, step)
            self.data.write(part.select(self.data_columns))
            for b in self.blobs:
                b.write(part.column(b.column))
            stream = self.data._stream
            if stream is not None and stream.tell() >= self.ctx.target_file_size:
                self._roll()

    def _roll(self) -> None:
        """Close the data file and its blob files; keep them in commit order."""
        if self.data._writer is None:
            return
        self.data._close_file()
        self.files += self.data.files
        self.data.files = []
        for b in self.blobs:
            b.close_file()
            self.files += b.take()

    def close(self) -> list[DataFileMeta]:
        self._roll()
        return self.files

    def abort(self) -> None:
        self.data.abort()
        for b in self.blobs:
            b.abort()
        for f in self.files:   # data files already closed (blob files: deleted above)
            if not f.file_name.endswith(BLOB_SUFFIX):
                self.ctx.io.delete(join(self.data.dir, f.file_name))
        self.files = []
