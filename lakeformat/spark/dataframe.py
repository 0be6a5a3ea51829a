"""``lakeformat.spark.write(df, "db.table", ...)``: shape a DataFrame for a table, then write it.

The DataFrame's columns are matched to the table's by name and cast to its types in Spark. For a
table with fixed buckets the rows are then shuffled so that every (partition, bucket) is written
by one task: the bucket is computed in Spark by an Arrow UDF that runs lakeformat's own
(Paimon-compatible) bucket hash over the bucket-key columns only. That gives one file per bucket
and task instead of one per bucket in every task, and is required for primary-key tables, whose
buckets are merge trees with one writer each. Bucket-unaware tables (``bucket = -1``) are written
as they are partitioned: every task writes its own files.
"""
from __future__ import annotations

from typing import Optional
from collections.abc import Mapping

import numpy as np
import pyarrow as pa
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType

from lakeformat.errors import DataError, LakeformatError
from lakeformat.format import types as T
from lakeformat.format.bucket import bucket_ids
from lakeformat.spark.native_write import native_write_refusal, quoted, write_native
from lakeformat.spark.options import BUCKETS_BY_TASK, parse
from lakeformat.spark.source import PYTHON_NAME, register
from lakeformat.spark.tables import open_or_create
from lakeformat.spark.types import _timestamp_to_table, spark_type

BUCKET_COLUMN = "__lakeformat_bucket"


def source_options(table: str, warehouse: Optional[str], options: Optional[Mapping[str, str]],
                   catalog_options: Mapping[str, str]) -> dict:
    """The data source options naming ``table`` (``db.name`` under ``warehouse``, or a path)."""
    out = {str(k): str(v) for k, v in catalog_options.items()}
    out.update({str(k): str(v) for k, v in (options or {}).items()})
    if warehouse is not None:
        out.update(warehouse=warehouse, table=table)
    else:
        out["path"] = table
    return out


def aligned_columns(df, table) -> list:
    """The table's columns, in order, as Columns of ``df``: its columns matched by name (ignoring
    case) and cast to the table's types in Spark where they differ. Not yet named."""
    by_lower = {}
    for name in df.columns:
        if name.lower() in by_lower:
            raise DataError(f"the DataFrame has two columns named {name!r} (ignoring case)")
        by_lower[name.lower()] = name
    names = table.schema.names
    missing = [n for n in names if n.lower() not in by_lower]
    extra = [c for c in df.columns if c.lower() not in {n.lower() for n in names}]
    if missing or extra:
        raise DataError(f"the DataFrame does not match {table.name}: missing columns {missing}, "
                        f"unexpected columns {extra} (table columns: {names})")
    types = dict((f.name, f.dataType) for f in df.schema.fields)
    cols = []
    for f in table.schema.fields:
        src = by_lower[f.name.lower()]
        target = spark_type(f.type)
        c = F.col(quoted(src))
        cols.append(c if types[src] == target else c.cast(target))
    return cols


def align(df, table):
    """``df`` with exactly the table's columns, in order, cast to the table's types in Spark."""
    return df.select(*[c.alias(f.name) for c, f in zip(aligned_columns(df, table), table.schema.fields)])


def bucket_function(keys: list[str], types: list[T.DataType], num_buckets: int):
    """The Arrow UDF body: Paimon's bucket of each row from its bucket-key columns."""
    def buckets(*columns: pa.Array) -> pa.Array:
        cols = [_timestamp_to_table(c, t) for c, t in zip(columns, types)]
        cols = [c if c.type.equals(T.to_arrow(t)) else c.cast(T.to_arrow(t)) for c, t in zip(cols, types)]
        return pa.array(np.asarray(bucket_ids(cols, types, num_buckets), dtype=np.int32))
    return buckets


def with_buckets(df, table):
    """``df`` shuffled so that each (partition, bucket) of ``table`` lands in one Spark partition."""
    schema = table.schema
    keys = schema.bucket_keys
    types = [schema.field(k).type for k in keys]
    # pyspark's stubs want functionType spelled out; the default (a scalar UDF) is what this is
    udf = F.arrow_udf(bucket_function(keys, types, schema.num_buckets), IntegerType())  # type: ignore[call-overload]
    tagged = df.withColumn(BUCKET_COLUMN, udf(*[F.col(f"`{k}`") for k in keys]))
    by = [F.col(f"`{k}`") for k in schema.partition_keys] + [F.col(BUCKET_COLUMN)]
    return tagged.repartition(*by).drop(BUCKET_COLUMN)


def shape(df, table):
    """``df`` ready for ``table``: its columns and types, and for fixed buckets shuffled so each
    (partition, bucket) is in one Spark partition. Works on streaming DataFrames too, which is
    how a stream goes into a primary-key table: ``prepare(df, ...).writeStream.format(...)``."""
    shaped = align(df, table)
    if table.schema.num_buckets > 0:
        return with_buckets(shaped, table)
    if table.schema.primary_keys:
        raise LakeformatError(f"{table.name} is a primary-key table with dynamic buckets (bucket = -1), which "
                              "the Spark writer does not write (one bucket assigner must see every key); write "
                              "it with Table.write, or create it with a fixed 'bucket'")
    return shaped


def prepare(df, table: str, *, warehouse: Optional[str] = None, **catalog_options: str):
    """:func:`shape` for a table named as :func:`write` names it."""
    return shape(df, parse(source_options(table, warehouse, None, catalog_options)).table.open())


def write(df, table: str, *, warehouse: Optional[str] = None, mode: str = "append",
          overwrite_partition: Optional[Mapping[str, str]] = None, options: Optional[Mapping[str, str]] = None,
          native: bool = True, **catalog_options: str) -> None:
    """Write ``df`` into ``table`` (``"db.name"`` with ``warehouse``, or the table's path).

    ``mode``: "append", or "overwrite" to replace the partitions the data holds (the whole table
    if it has no partitions); ``overwrite_partition={"dt": "2024-06-01"}`` replaces that partition
    instead. ``options``: more data source options (``commit-user``, ``commit-identifier``,
    ``stage-id``, table options for this write; ``primary-key``, ``partition`` and fixed table
    options create a missing table). ``catalog_options``: ``s3.*``, ``lock.*``.

    Bucket-unaware append tables are written by Spark's own Parquet writer and committed by the
    driver (:mod:`lakeformat.spark.native_write`); ``native=False`` writes them through the
    Python data source instead, as every other table kind is.
    """
    opts = source_options(table, warehouse, options, catalog_options)
    if overwrite_partition is not None:
        opts["overwrite-partition"] = ",".join(f"{k}={v}" for k, v in overwrite_partition.items())
    write_options(df, opts, mode, native=native)


def write_options(df, options: Mapping[str, str], mode: str = "append", *, native: bool = True) -> None:
    """:func:`write` with the data source's options (``df.write.format("lakeformat")`` in a
    session with lakeformat's jar comes here: :mod:`lakeformat.spark.format_native`)."""
    if mode not in ("append", "overwrite"):
        raise LakeformatError(f"mode must be 'append' or 'overwrite', not {mode!r}")
    opts = open_or_create(dict(options), df.schema)
    parsed = parse(opts)
    static = parsed.write.static_partition
    if static is not None and mode != "overwrite":
        raise LakeformatError("option 'overwrite-partition' replaces a partition: use it with mode('overwrite')")
    t = parsed.table.open()
    if static is not None:
        t.partition_matcher(dict(static))   # unknown keys fail before any work
    if native and native_write_refusal(t) is None:
        # one projection: the table's columns, field ids, truncated timestamps, partition copies
        write_native(df, aligned_columns(df, t), t, parsed, mode == "overwrite")
        return
    shaped = shape(df, t)
    if t.schema.num_buckets > 0:
        opts[BUCKETS_BY_TASK] = "true"   # shaped: each bucket's rows in one task
    register(df.sparkSession)
    # static overwrite: the rows go in as an append-shaped write, the option names the partition;
    # the Python data source by the name it has with or without the jar
    shaped.write.format(PYTHON_NAME).options(**opts).mode(mode).save()
