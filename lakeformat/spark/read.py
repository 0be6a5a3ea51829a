"""What a Spark task runs to read: the columns a query asks for, and the rows of one planned
partition in Spark's Arrow layout. Shared by batch and streaming reads."""
from __future__ import annotations

from typing import Optional
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.types import StructType

from lakeformat.errors import SchemaError
from lakeformat.spark import scan as S
from lakeformat.spark.options import SourceOptions
from lakeformat.spark.types import ROW_KIND, spark_arrow_schema, spark_schema, to_spark


def requested_columns(table, schema: StructType) -> tuple[list[str], bool]:
    """(table columns to read, whether ``_row_kind`` is wanted) for the schema Spark asks for;
    names match case-insensitively, as Spark's do."""
    by_lower = {n.lower(): n for n in table.schema.names}
    cols, row_kind = [], False
    for f in schema.fields:
        if f.name == ROW_KIND:
            row_kind = True
        elif f.name.lower() in by_lower:
            cols.append(by_lower[f.name.lower()])
        else:
            raise SchemaError(f"column {f.name!r} is not in {table.name} (columns: {table.schema.names})")
    return cols, row_kind


def read_partition(opts: SourceOptions, columns, predicate, row_kind: bool, partition,
                   schema_id: Optional[int], target: Optional[pa.Schema] = None) -> Iterator[pa.RecordBatch]:
    units = getattr(partition, "value", None)
    if not units:
        return
    table = opts.table.open(schema_id)
    if target is None:
        target = spark_arrow_schema(spark_schema([table.schema.field(c) for c in columns], row_kind))
    reader = S.UnitReader(table, columns, predicate, row_kind, keep_retractions=row_kind)
    for unit in units:
        for data in reader.read(unit):
            yield from to_spark(data, target).to_batches()
