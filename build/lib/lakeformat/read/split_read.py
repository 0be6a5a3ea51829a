"""Reading planned splits into Arrow, in the table's current schema.

Files written under an older schema are mapped by field id: a renamed column is found under its
old name, a column added later reads as nulls, a widened column is cast. Files are read in
parallel threads (pyarrow releases the GIL while decoding).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Iterator, Optional, Sequence

import pyarrow as pa

from lakeformat.errors import SchemaError
from lakeformat.format import predicate as P
from lakeformat.format.manifest import DataFileMeta
from lakeformat.io.data_file import read_columns
from lakeformat.io.fileio import join
from lakeformat.mergetree.read import merge_columns, read_section, sections
from lakeformat.read.scan import Split


class SplitRead:
    def __init__(self, table, columns: Optional[Sequence[str]] = None,
                 filter: Optional[P.Predicate] = None, threads: int = 4):
        self.table = table
        self.schema = table.schema
        names = self.schema.names
        self.columns = list(columns) if columns is not None else names
        unknown = [c for c in self.columns if c not in names]
        unknown += [c for c in sorted(P.columns(filter)) if c not in names]
        if unknown:
            raise SchemaError(f"unknown column(s) {unknown}; the table has {names}")
        self.filter = filter
        self.needed = self.columns + [c for c in sorted(P.columns(filter)) if c not in self.columns]
        self.threads = threads
        self.out_schema = pa.schema([self.schema.arrow_schema().field(c) for c in self.columns])

    def read_file(self, split: Split, f: DataFileMeta) -> pa.Table:
        path = join(self.table.bucket_dir_of(split.partition_bytes, split.bucket), f.file_name)
        return self._finish(read_columns(self.table, path, f, [self.schema.field(c) for c in self.needed]))

    def read_merged(self, split: Split, files: Sequence[DataFileMeta]) -> pa.Table:
        """One key section of a primary-key bucket, merged; filters apply after the merge."""
        bucket_dir = self.table.bucket_dir_of(split.partition_bytes, split.bucket)
        parts = [self._finish(t) for t in
                 read_section(self.table, bucket_dir, files, merge_columns(self.table, self.needed))]
        return pa.concat_tables(parts) if parts else self.out_schema.empty_table()

    def _finish(self, out: pa.Table) -> pa.Table:
        if self.filter is not None:
            out = out.filter(P.to_arrow(self.filter))
        return out.select(self.columns).cast(self.out_schema)

    def _tasks(self, splits: Sequence[Split]) -> list:
        """Units of parallel work: a file of an append table, a key section of a primary-key bucket."""
        if not self.schema.primary_keys:
            return [(self.read_file, s, f) for s in splits for f in s.files]
        key_of = self.table.key_decoder()
        return [(self.read_merged, s, sec) for s in splits for sec in sections(s.files, key_of)]

    def to_batches(self, splits: Sequence[Split]) -> Iterator[pa.RecordBatch]:
        """Stream the rows file by file, reading ahead in a small thread pool."""
        tasks = self._tasks(splits)
        if not tasks:
            return
        with ThreadPoolExecutor(self.threads) as pool:
            for table in pool.map(lambda t: t[0](*t[1:]), tasks):
                yield from table.to_batches()

    def read(self, splits: Sequence[Split]) -> pa.Table:
        tasks = self._tasks(splits)
        if len(tasks) == 1:
            return tasks[0][0](*tasks[0][1:])
        if not tasks:
            return self.out_schema.empty_table()
        with ThreadPoolExecutor(min(self.threads, len(tasks))) as pool:
            tables = list(pool.map(lambda t: t[0](*t[1:]), tasks))
        return pa.concat_tables(tables)
