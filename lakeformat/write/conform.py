"""Input checked against the table schema: exactly the table's columns, in its order and Arrow
types, or a ``DataError`` naming the offending column. Nothing is written before this passes."""
from __future__ import annotations

from typing import Any, Union

import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import DataError
from lakeformat.format import types as T
from lakeformat.format.schema import TableSchema


def _compatible(src: pa.DataType, dst: T.DataType) -> bool:
    if pa.types.is_dictionary(src):
        src = src.value_type
    try:
        s = T.from_arrow(src, True)
    except Exception:
        return False
    d = T.with_nullable(dst, True)
    if s == d or T.can_widen(s, d):
        return True
    if isinstance(s, T.AtomicType) and isinstance(d, T.AtomicType):
        same_family = [("CHAR", "VARCHAR"), ("BINARY", "VARBINARY", "BLOB"), ("TIMESTAMP",), ("TIMESTAMP_LTZ",),
                       ("TIME",), ("DECIMAL",)]
        return any(s.root in fam and d.root in fam for fam in same_family)
    return T.to_arrow(d).equals(src) or _nested_castable(src, d)


def _nested_castable(src: pa.DataType, dst: T.DataType) -> bool:
    if isinstance(dst, T.ArrayType) and (pa.types.is_list(src) or pa.types.is_large_list(src)):
        return _compatible(src.value_type, dst.element)
    if isinstance(dst, T.MapType) and pa.types.is_map(src):
        return _compatible(src.key_type, dst.key) and _compatible(src.item_type, dst.value)
    if isinstance(dst, T.RowType) and pa.types.is_struct(src):
        names = [src.field(i).name for i in range(src.num_fields)]
        return names == dst.names and all(
            _compatible(src.field(i).type, f.type) for i, f in enumerate(dst.fields))
    return False


def as_arrow(data: Any) -> Union[pa.Table, pa.RecordBatch, pa.RecordBatchReader]:
    """What a writer accepts, as Arrow: a Table, RecordBatch or RecordBatchReader as is; a pandas
    DataFrame (its index dropped), a dict of columns, a list of row dicts or any object exporting
    an Arrow stream converted. Anything else is a DataError naming its type."""
    if isinstance(data, (pa.Table, pa.RecordBatch, pa.RecordBatchReader)):
        return data
    try:
        if type(data).__module__.split(".")[0] == "pandas" and hasattr(data, "columns"):
            return pa.Table.from_pandas(data, preserve_index=False)
        if isinstance(data, dict):
            return pa.table(data)
        if isinstance(data, list) and all(isinstance(r, dict) for r in data):
            return pa.Table.from_pylist(data)
        if hasattr(data, "__arrow_c_stream__"):
            return pa.table(data)
    except (pa.ArrowException, TypeError, ValueError) as e:
        raise DataError(f"cannot convert the {type(data).__name__} to Arrow columns: {e}") from None
    raise DataError(f"cannot write a {type(data).__module__}.{type(data).__name__}: give a pyarrow Table, "
                    "RecordBatch or RecordBatchReader, a pandas DataFrame, a dict of columns or a list of row dicts")


def conform(data: Union[pa.Table, pa.RecordBatch], schema: TableSchema) -> pa.Table:
    """Return ``data`` with exactly the table's columns, order and Arrow types, or raise
    ``DataError`` naming the offending column. Nothing is written before this passes."""
    table = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
    expected = schema.names
    missing = [n for n in expected if n not in table.column_names]
    extra = [n for n in table.column_names if n not in expected]
    if missing or extra:
        raise DataError(f"data does not match the table's columns: missing {missing}, unexpected {extra}")
    cols = []
    for f in schema.fields:
        arr = table.column(f.name)
        target = T.to_arrow(f.type)
        if not arr.type.equals(target):
            if not _compatible(arr.type, f.type):
                raise DataError(f"column {f.name!r}: expected {T.type_to_json(f.type)}, got Arrow type {arr.type}")
            try:
                arr = pc.cast(arr, target, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise DataError(f"column {f.name!r}: cannot convert {arr.type} to "
                                f"{T.type_to_json(f.type)}: {e}") from None
        if not f.type.nullable and arr.null_count:
            raise DataError(f"column {f.name!r} is NOT NULL but the data has {arr.null_count} null value(s)")
        cols.append(arr)
    return pa.Table.from_arrays(cols, schema=schema.arrow_schema())
