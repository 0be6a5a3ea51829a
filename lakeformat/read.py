"""Reading planned splits into Arrow, in the table's current schema.

Files written under an older schema are mapped by field id: a renamed column is found under its
old name, a column added later reads as nulls, a widened column is cast. Files are read in
parallel threads (pyarrow releases the GIL while decoding).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Iterator, Optional, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from lakeformat import predicate as P
from lakeformat import types as T
from lakeformat.errors import CorruptFileError, SchemaError
from lakeformat.fileio import join
from lakeformat.manifest import DataFileMeta
from lakeformat.scan import Split


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
        file_schema = self.table.schema_manager.get(f.schema_id)
        by_id = {x.id: x for x in file_schema.fields}
        wanted = [self.schema.field(c) for c in self.needed]
        present = [by_id[w.id].name for w in wanted if w.id in by_id]
        try:
            with self.table.io.open_input(path) as src:
                data = pq.ParquetFile(src).read(columns=present, use_threads=True)
        except FileNotFoundError:
            raise CorruptFileError(path, "data file is missing") from None
        except (pa.ArrowInvalid, OSError) as e:
            raise CorruptFileError(path, f"cannot read data file: {e}") from None
        arrays = []
        for w in wanted:
            target = T.to_arrow(w.type)
            if w.id in by_id:
                arr = data.column(by_id[w.id].name)
                if not arr.type.equals(target):
                    arr = arr.cast(target)
            else:
                arr = pa.nulls(data.num_rows, target)
            arrays.append(arr)
        out = pa.Table.from_arrays(arrays, names=[w.name for w in wanted])
        if self.filter is not None:
            out = out.filter(P.to_arrow(self.filter))
        if len(self.needed) != len(self.columns):
            out = out.select(self.columns)
        return out.cast(self.out_schema)

    def _tasks(self, splits: Sequence[Split]):
        return [(s, f) for s in splits for f in s.files]

    def to_batches(self, splits: Sequence[Split]) -> Iterator[pa.RecordBatch]:
        """Stream the rows file by file, reading ahead in a small thread pool."""
        tasks = self._tasks(splits)
        if not tasks:
            return
        with ThreadPoolExecutor(self.threads) as pool:
            for table in pool.map(lambda t: self.read_file(*t), tasks):
                yield from table.to_batches()

    def read(self, splits: Sequence[Split]) -> pa.Table:
        tasks = self._tasks(splits)
        if len(tasks) == 1:
            return self.read_file(*tasks[0])
        if not tasks:
            return self.out_schema.empty_table()
        with ThreadPoolExecutor(min(self.threads, len(tasks))) as pool:
            tables = list(pool.map(lambda t: self.read_file(*t), tasks))
        return pa.concat_tables(tables)
