"""Reading planned splits into Arrow, in the schema of the table given: the current one, or a
snapshot's own when a read travels to it (``Table.as_of_schema``).

Files written under an older schema are mapped by field id: a renamed column is found under its
old name, a column added later reads as nulls, a widened column is cast. Files are read in
parallel threads (pyarrow releases the GIL while decoding).
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Optional
from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa

from lakeformat.errors import CorruptFileError, SchemaError, UnsupportedError
from lakeformat.format import arrays as A
from lakeformat.format import options as O
from lakeformat.format import predicate as P
from lakeformat.format.deletion_vector import keep_mask
from lakeformat.format.manifest import DataFileMeta
from lakeformat.format.row_tracking import (
    SYSTEM_COLUMNS,
    SYSTEM_TYPES,
    assign_columns,
    merge_group,
    physical_system_columns,
    row_groups,
    system_arrays,
)
from lakeformat.format.blob import is_blob
from lakeformat.io.data_file import iter_columns, read_columns
from lakeformat.io.fileio import join
from lakeformat.io.index_files import IndexFiles
from lakeformat.io.table_context import TableContext
from lakeformat.mergetree.read import merge_columns, read_section, sections
from lakeformat.read.read_ahead import read_ahead
from lakeformat.read.blob_read import attach_blob_files, blob_column_arrays, split_blob_files, zip_blob_columns
from lakeformat.read.scan import Split

BATCH_ROWS = 65536                # rows per batch of to_batches(), as pyarrow's iter_batches
READ_AHEAD_BYTES = 32 << 20       # batches read ahead of the caller, at most


def raw_readable(files: Sequence[DataFileMeta]) -> bool:
    """Files of a deletion-vector bucket that need no merge (Paimon's raw-convertible split):
    none at level 0 and none holding delete rows, so each key is in one file, once."""
    return all(f.level > 0 and f.delete_row_count == 0 for f in files)


class SplitRead:
    def __init__(self, ctx: TableContext, columns: Optional[Sequence[str]] = None,
                 filter: Optional[P.Predicate] = None, threads: int = 4):
        O.check_supported(ctx.schema.options, O.READ, ctx.name)
        self.ctx = ctx
        self.schema = ctx.schema
        names = self.schema.names
        self.tracking = bool(ctx.typed_options.get(O.ROW_TRACKING))
        self.evolution = bool(ctx.typed_options.get(O.DATA_EVOLUTION))
        selectable = names + list(SYSTEM_COLUMNS) if self.tracking else names
        self.columns = list(columns) if columns is not None else names
        unknown = [c for c in self.columns if c not in selectable]
        unknown += [c for c in sorted(P.columns(filter)) if c not in selectable]
        if unknown:
            raise SchemaError(f"unknown column(s) {unknown}; the table has {selectable}")
        self.filter = filter
        wanted = self.columns + sorted(P.columns(filter))
        self.system = [c for c in SYSTEM_COLUMNS if c in wanted and c not in names]   # selected or filtered on
        table_columns = [c for c in self.columns if c not in self.system]
        self.needed = table_columns + [c for c in sorted(P.columns(filter))
                                       if c not in table_columns and c not in self.system]
        self.threads = threads
        arrow = self.schema.arrow_schema()
        self.out_schema = pa.schema([pa.field(c, SYSTEM_TYPES[c]) if c in self.system else arrow.field(c)
                                     for c in self.columns])
        self.dv_table = ctx.typed_options.get(O.DELETION_VECTORS)
        self._index_files = IndexFiles.of(ctx)
        self._vectors: dict[str, dict[str, np.ndarray]] = {}   # per index file, read once per SplitRead
        self._lock = threading.Lock()

    def deletions(self, split: Split) -> dict[str, np.ndarray]:
        """Deleted positions per data file of the split's bucket (its deletion vectors)."""
        out: dict[str, np.ndarray] = {}
        for meta in split.deletion_files:
            with self._lock:
                vectors = self._vectors.get(meta.file_name)
            if vectors is None:
                vectors = self._index_files.read_deletion_vectors(meta)
                with self._lock:
                    self._vectors[meta.file_name] = vectors
            out.update(vectors)
        return out

    def read_file(self, split: Split, f: DataFileMeta) -> pa.Table:
        """One file on its own: an append file, or a file of a primary-key bucket whose keys
        live in one file each (deletion vectors mark the older versions)."""
        path = join(self.ctx.bucket_dir_of(split.partition_bytes, split.bucket), f.file_name)
        deleted = self.deletions(split).get(f.file_name) if split.deletion_files else None
        return self._finish(read_columns(self.ctx, path, f, [self.schema.field(c) for c in self.needed],
                                         deleted=deleted))

    def read_merged(self, split: Split, files: Sequence[DataFileMeta]) -> pa.Table:
        """One key section of a primary-key bucket, merged; filters apply after the merge."""
        bucket_dir = self.ctx.bucket_dir_of(split.partition_bytes, split.bucket)
        parts = [self._finish(t) for t in read_section(self.ctx, bucket_dir, files, merge_columns(
            self.ctx, self.needed), deletions=self.deletions(split) if split.deletion_files else {})]
        return pa.concat_tables(parts) if parts else A.empty_table(self.out_schema)

    def _finish(self, out: pa.Table) -> pa.Table:
        if self.filter is not None:
            out = out.filter(P.mask(self.filter, out))
        return out.select(self.columns).cast(self.out_schema)

    def _by_row_id(self) -> bool:
        """Append files are read through :meth:`read_group`: data evolution merges files by row
        id, and the system columns of row tracking come from file metadata."""
        return self.evolution or bool(self.tracking and self.system)

    def groups(self, split: Split) -> list[list[DataFileMeta]]:
        if not self.evolution:
            return [[f] for f in split.files]
        if split.deletion_files:
            raise UnsupportedError(f"table {self.ctx.name}: deletion vectors in a data-evolution table are not "
                                   "implemented by lakeformat")
        where = f"table {self.ctx.name}, snapshot {split.snapshot_id}"
        files, blobs = split_blob_files(split.files)   # BLOB values: beside the range's data file
        return attach_blob_files(row_groups(files, where), blobs, where)

    def read_group(self, split: Split, group: Sequence[DataFileMeta]) -> pa.Table:
        """Files of one row id range (newest first; one file unless data evolution): each wanted
        column from the newest file holding it, system columns from the newest file."""
        deleted = self.deletions(split).get(group[0].file_name) if split.deletion_files else None
        return self.read_range(self.ctx.bucket_dir_of(split.partition_bytes, split.bucket), group, deleted)

    def read_range(self, bucket_dir: str, group: Sequence[DataFileMeta],
                   deleted: Optional[np.ndarray] = None) -> pa.Table:
        """:meth:`read_group` of the files ``group`` in ``bucket_dir``, without the rows at the
        ``deleted`` positions."""
        tables = list(self.iter_range(bucket_dir, group, deleted))
        return tables[0] if len(tables) == 1 else pa.concat_tables(tables) if tables else \
            A.empty_table(self.out_schema)

    def iter_range(self, bucket_dir: str, group: Sequence[DataFileMeta],
                   deleted: Optional[np.ndarray] = None) -> Iterator[pa.Table]:
        """:meth:`read_range` as a stream: one table, or with BLOB columns read from blob files,
        slices of the range holding a bounded batch of blob bytes each (read/blob_read.py)."""
        group, blobs = split_blob_files(group)
        wanted = [self.schema.field(c) for c in self.needed]
        assigned = assign_columns(group, wanted, lambda sid: self.ctx.schema_manager.get(sid).fields)
        newest, n = group[0], group[0].row_count
        if self.system and physical_system_columns(newest) and all(f is not newest for f, _ in assigned):
            assigned = [(newest, [])] + assigned   # read for its stored row ids / versions only
        parts: list[pa.Table] = []
        physical: dict[str, pa.ChunkedArray] = {}
        for f, fields in assigned:
            extra = physical_system_columns(f) if self.system and f is newest else []
            part = read_columns(self.ctx, join(bucket_dir, f.file_name), f, fields, extra)
            if part.num_rows != n:
                raise CorruptFileError(f.file_name, f"has {part.num_rows} rows where its row id range has {n}")
            physical = {c: part.column(c) for c in extra} if f is newest else physical
            parts.append(part)
        system = None
        if self.system:
            system = {c: a for c, a in system_arrays(newest, 0, n, physical).items() if c in self.system}
        out = merge_group(n, wanted, parts, system)
        blob_columns = [w.name for w in wanted if is_blob(w.type)]
        if blobs and blob_columns:
            if deleted is not None and deleted.size:
                raise UnsupportedError(f"table {self.ctx.name}: deletion vectors in a BLOB table are not "
                                       "implemented by lakeformat")
            where = f"table {self.ctx.name}, {bucket_dir}"
            streams = {c: blob_column_arrays(self.ctx, bucket_dir, newest, blobs, c, where) for c in blob_columns}
            for part in zip_blob_columns(out, streams):
                yield self._finish(part)
            return
        if deleted is not None and deleted.size:
            out = out.filter(keep_mask(n, deleted))
        yield self._finish(out)

    def _iter_group(self, split: Split, group: Sequence[DataFileMeta]) -> Iterator[pa.Table]:
        """A row id range: a data-evolution range at once (its files are merged by position, and
        a range is one file's rows) or, with BLOB columns, in slices of bounded blob bytes
        (:meth:`iter_range`); a single file batch by batch."""
        if len(group) > 1 or self.evolution:
            deleted = self.deletions(split).get(group[0].file_name) if split.deletion_files else None
            yield from self.iter_range(self.ctx.bucket_dir_of(split.partition_bytes, split.bucket), group, deleted)
            return
        f = group[0]
        path = join(self.ctx.bucket_dir_of(split.partition_bytes, split.bucket), f.file_name)
        deleted = self.deletions(split).get(f.file_name) if split.deletion_files else None
        wanted = [self.schema.field(c) for c in self.needed]
        extra = physical_system_columns(f)
        position = 0
        for part in iter_columns(self.ctx, path, f, wanted, extra, BATCH_ROWS):
            n = part.num_rows
            system = system_arrays(f, position, n, {c: part.column(c) for c in extra})
            out = merge_group(n, wanted, [part], {c: system[c] for c in self.system})
            if deleted is not None and deleted.size:
                out = out.filter(keep_mask(n, deleted, position))
            position += n
            yield self._finish(out)

    def _tasks(self, splits: Sequence[Split]) -> list:
        """Units of parallel work: a file of an append table (a row id range of a data-evolution
        table), a key section of a primary-key bucket."""
        if not self.schema.primary_keys:
            if self._by_row_id():
                return [(self.read_group, s, g) for s in splits for g in self.groups(s)]
            return [(self.read_file, s, f) for s in splits for f in s.files]
        key_of = self.ctx.key_decoder()
        tasks: list = []
        for s in splits:
            if self.dv_table and raw_readable(s.files):
                tasks += [(self.read_file, s, f) for f in s.files]
            else:
                tasks += [(self.read_merged, s, sec) for sec in sections(s.files, key_of)]
        return tasks

    def iter_file(self, split: Split, f: DataFileMeta) -> Iterator[pa.Table]:
        """:meth:`read_file` in batches of at most ``BATCH_ROWS`` rows, in file order."""
        path = join(self.ctx.bucket_dir_of(split.partition_bytes, split.bucket), f.file_name)
        deleted = self.deletions(split).get(f.file_name) if split.deletion_files else None
        for data in iter_columns(self.ctx, path, f, [self.schema.field(c) for c in self.needed], (), BATCH_ROWS,
                                 deleted):
            yield self._finish(data)

    def iter_merged(self, split: Split, files: Sequence[DataFileMeta],
                    buffer: Optional[int] = None) -> Iterator[pa.Table]:
        """:meth:`read_merged` one key slice (at most ``buffer`` bytes of input) at a time."""
        bucket_dir = self.ctx.bucket_dir_of(split.partition_bytes, split.bucket)
        for data in read_section(self.ctx, bucket_dir, files, merge_columns(self.ctx, self.needed), buffer,
                                 self.deletions(split) if split.deletion_files else {}):
            yield self._finish(data)

    def _streams(self, splits: Sequence[Split], buffer: Optional[int]) -> list:
        if not self.schema.primary_keys:
            if self._by_row_id():
                return [partial(self._iter_group, s, g) for s in splits for g in self.groups(s)]
            return [partial(self.iter_file, s, f) for s in splits for f in s.files]
        key_of = self.ctx.key_decoder()
        streams = []
        for s in splits:
            if self.dv_table and raw_readable(s.files):
                streams += [partial(self.iter_file, s, f) for f in s.files]
            else:
                streams += [partial(self.iter_merged, s, sec, buffer) for sec in sections(s.files, key_of)]
        return streams

    def to_batches(self, splits: Sequence[Split], buffer: Optional[int] = None,
                   read_ahead_bytes: int = READ_AHEAD_BYTES) -> Iterator[pa.RecordBatch]:
        """Stream the rows in batches of at most ``BATCH_ROWS``: an append file batch by batch, a
        primary-key section merged in key slices of about ``buffer`` bytes (default
        ``write-buffer-size``). The next file or section is read ahead while the caller works,
        holding at most ``read_ahead_bytes`` of batches (see :mod:`lakeformat.read.read_ahead`)."""
        if not self.columns:
            yield from self._row_count_only(splits).to_batches()
            return
        for table in read_ahead(self._streams(splits, buffer), lambda t: t.nbytes, read_ahead_bytes):
            yield from table.to_batches(max_chunksize=BATCH_ROWS)

    def _row_count_only(self, splits: Sequence[Split]) -> pa.Table:
        """``columns=[]``: no columns, but as many rows as match (read through one column)."""
        return SplitRead(self.ctx, self.schema.names[:1], self.filter, self.threads).read(splits).select([])

    def read(self, splits: Sequence[Split]) -> pa.Table:
        if not self.columns:
            return self._row_count_only(splits)
        tasks = self._tasks(splits)
        if len(tasks) == 1:
            return tasks[0][0](*tasks[0][1:])
        if not tasks:
            return A.empty_table(self.out_schema)
        with ThreadPoolExecutor(min(self.threads, len(tasks))) as pool:
            tables = list(pool.map(lambda t: t[0](*t[1:]), tasks))
        return pa.concat_tables(tables)
