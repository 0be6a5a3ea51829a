"""Key-value data files: the layout Paimon writes for primary-key tables.

Columns: ``_KEY_<k>`` for each primary key column (minus partition keys), ``_SEQUENCE_NUMBER``,
``_VALUE_KIND`` (0 +I, 1 -U, 2 +U, 3 -D), then every column of the table. Field ids follow
Java's ``SpecialFields``: key fields at ``Integer.MAX_VALUE / 2 + id``, the sequence number and
the kind at ``Integer.MAX_VALUE - 1`` and ``- 2``. Rows of a file are sorted by key, so the
first and last rows give the file's key range.
"""
from __future__ import annotations

import time
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.format import types as T
from lakeformat.format import arrays as A
from lakeformat.format.binary_row import serialize_row
from lakeformat.format.manifest import FILE_SOURCE_APPEND, DataFileMeta
from lakeformat.format.schema import KEY_FIELD_ID_START, TableSchema
from lakeformat.io.data_file import RollingFileWriter, StatsCollector
from lakeformat.io.table_context import TableContext

KEY_PREFIX = "_KEY_"
SEQ, KIND = "_SEQUENCE_NUMBER", "_VALUE_KIND"
SEQ_FIELD_ID, KIND_FIELD_ID = 2147483646, 2147483645
INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3
ROW_KINDS = {"+I": INSERT, "-U": UPDATE_BEFORE, "+U": UPDATE_AFTER, "-D": DELETE}


def _id_field(name: str, typ: pa.DataType, field_id: int, nullable: bool = False) -> pa.Field:
    return pa.field(name, typ, nullable=nullable, metadata={b"PARQUET:field_id": str(field_id).encode()})


def kv_arrow_schema(schema: TableSchema) -> pa.Schema:
    keys = [schema.field(k) for k in schema.trimmed_primary_keys]
    fields = [_id_field(KEY_PREFIX + k.name, T.to_arrow(k.type), KEY_FIELD_ID_START + k.id) for k in keys]
    fields += [_id_field(SEQ, pa.int64(), SEQ_FIELD_ID), _id_field(KIND, pa.int8(), KIND_FIELD_ID)]
    for f, af in zip(schema.fields, schema.arrow_schema()):
        fields.append(af.with_metadata({b"PARQUET:field_id": str(f.id).encode()}))
    return pa.schema(fields)


def to_kv(values: pa.Table, schema: TableSchema) -> pa.Table:
    """Values with ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND`` → the file layout (key columns first)."""
    keys = schema.trimmed_primary_keys
    cols = [values.column(k) for k in keys] + [values.column(SEQ), values.column(KIND)]
    cols += [values.column(n) for n in schema.names]
    return pa.Table.from_arrays(cols, names=[KEY_PREFIX + k for k in keys] + [SEQ, KIND] + schema.names)


class KeyValueFileWriter(RollingFileWriter):
    """Writes one sorted run (rows sorted by key, one version per key) into files at ``level``,
    rolling at the target size. Input: values + ``_SEQUENCE_NUMBER`` + ``_VALUE_KIND``."""

    def __init__(self, ctx: TableContext, bucket_dir: str, schema: TableSchema, level: int,
                 file_source: int = FILE_SOURCE_APPEND, prefix: str = "data-"):
        self.level, self.file_source = level, file_source
        self._key_types = [schema.field(k).type for k in schema.trimmed_primary_keys]
        super().__init__(ctx, bucket_dir, schema, prefix=prefix)

    def write(self, data: pa.Table) -> None:
        super().write(to_kv(data, self.schema))

    def _file_schema(self) -> pa.Schema:
        return kv_arrow_schema(self.schema)

    def _start_file(self) -> None:
        nkeys = len(self._key_types)
        self._key_stats = StatsCollector([self.schema.field(k) for k in self.schema.trimmed_primary_keys])
        self._stats = StatsCollector(self.schema.fields)
        self._first_key: Optional[list] = None
        self._last_key: Optional[list] = None
        self._min_seq: Optional[int] = None
        self._max_seq: Optional[int] = None
        self._deletes = 0
        self._nkeys = nkeys

    def _observe(self, part: pa.Table) -> None:
        n = self._nkeys
        keys = part.select(range(n))
        self._key_stats.add(keys)
        self._stats.add(part.select(range(n + 2, part.num_columns)))
        if self._first_key is None:
            self._first_key = [c[0] for c in keys.columns]
        self._last_key = [c[-1] for c in keys.columns]
        mm = pc.min_max(part.column(SEQ))
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        self._min_seq = lo if self._min_seq is None else min(self._min_seq, lo)
        self._max_seq = hi if self._max_seq is None else max(self._max_seq, hi)
        kinds = A.to_numpy(part.column(KIND))
        self._deletes += int(np.count_nonzero((kinds == UPDATE_BEFORE) | (kinds == DELETE)))

    def _file_meta(self, name: str, size: int, rows: int) -> DataFileMeta:
        assert self._first_key is not None and self._last_key is not None and self._min_seq is not None \
            and self._max_seq is not None, "a file is closed after its first rows"
        return DataFileMeta(
            file_name=name, file_size=size, row_count=rows,
            min_key=serialize_row(self._first_key, self._key_types),
            max_key=serialize_row(self._last_key, self._key_types),
            key_stats=self._key_stats.result(), value_stats=self._stats.result(),
            min_sequence_number=self._min_seq, max_sequence_number=self._max_seq,
            schema_id=self.schema.id, level=self.level, creation_time_millis=int(time.time() * 1000),
            delete_row_count=self._deletes, file_source=self.file_source)
