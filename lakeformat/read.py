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


def read_columns(table, path: str, f: DataFileMeta, wanted: Sequence[T.DataField],
                 extra: Sequence[str] = ()) -> pa.Table:
    """The ``wanted`` fields of the current schema from one data file, found by field id, plus
    the file's own ``extra`` columns (the merge tree's sequence number and kind)."""
    by_id, columns = _file_columns(table, f, wanted, extra)
    try:
        with table.io.open_input(path) as src:
            data = pq.ParquetFile(src).read(columns=columns, use_threads=True)
    except FileNotFoundError:
        raise CorruptFileError(path, "data file is missing") from None
    except (pa.ArrowInvalid, OSError) as e:
        raise CorruptFileError(path, f"cannot read data file: {e}") from None
    return _project(data, wanted, by_id, extra)


def iter_columns(table, path: str, f: DataFileMeta, wanted: Sequence[T.DataField],
                 extra: Sequence[str] = (), batch_size: int = 65536) -> Iterator[pa.Table]:
    """:func:`read_columns` as a stream of small tables, in file order (bounded memory)."""
    by_id, columns = _file_columns(table, f, wanted, extra)
    try:
        with table.io.open_input(path) as src:
            for batch in pq.ParquetFile(src).iter_batches(batch_size, columns=columns):
                yield _project(pa.Table.from_batches([batch]), wanted, by_id, extra)
    except FileNotFoundError:
        raise CorruptFileError(path, "data file is missing") from None
    except (pa.ArrowInvalid, OSError) as e:
        raise CorruptFileError(path, f"cannot read data file: {e}") from None


def _file_columns(table, f: DataFileMeta, wanted: Sequence[T.DataField], extra: Sequence[str]):
    by_id = {x.id: x for x in table.schema_manager.get(f.schema_id).fields}
    return by_id, [by_id[w.id].name for w in wanted if w.id in by_id] + list(extra)


def _project(data: pa.Table, wanted: Sequence[T.DataField], by_id: dict, extra: Sequence[str]) -> pa.Table:
    arrays = []
    for w in wanted:
        target = T.to_arrow(w.type)
        if w.id in by_id:
            arr = data.column(by_id[w.id].name)
            arrays.append(arr if arr.type.equals(target) else arr.cast(target))
        else:
            arrays.append(pa.nulls(data.num_rows, target))
    arrays += [data.column(x) for x in extra]
    return pa.Table.from_arrays(arrays, names=[w.name for w in wanted] + list(extra))


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
        from lakeformat.mergetree.read import merge_columns, read_section
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
        from lakeformat.mergetree.read import sections
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
