"""Tables from Spark: a table created from a DataFrame's schema, so a Spark-only user never
needs the Python API.

    lfs.create_table("db.t", df.schema, warehouse=wh, partition_keys=["dt"], primary_keys=["dt", "id"],
                     options={"bucket": "4"})
    df.write.format("lakeformat").option("warehouse", wh).option("table", "db.t")
        .option("primary-key", "dt,id").option("partition", "dt").option("bucket", "4").save()

The writer creates a missing table (and its database) from the DataFrame's schema, with
Paimon's ``primary-key`` and ``partition`` options and any table option, including those fixed at
creation (``bucket``, ``merge-engine``...). When the table exists, such options must agree with
it: a daily job that always passes them keeps working, a job that expects another layout fails.
Spark types map as Paimon's Spark connector maps them: ``TimestampType`` is
``TIMESTAMP_LTZ(6)``, ``TimestampNTZType`` is ``TIMESTAMP(6)``, ``StringType`` is ``STRING``.
"""
from __future__ import annotations

import json
from typing import Optional
from collections.abc import Mapping, Sequence

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from lakeformat.errors import OptionError
from lakeformat.format.names import split_identifier
from lakeformat.spark.options import FIXED_TABLE_KEYS, PATH, TABLE, WAREHOUSE, parse
from lakeformat.table.catalog import Catalog

PRIMARY_KEY, PARTITION = "primary-key", "partition"


def catalog_of(options: str) -> Catalog:
    """The catalog of a Spark SQL catalog's options (JSON: ``warehouse`` and storage options), as
    the jar hands them to every planner call."""
    opts = dict(json.loads(options))
    return Catalog(opts.pop("warehouse"), **opts)
_CREATE_KEYS = (PRIMARY_KEY, PARTITION) + tuple(k for k in FIXED_TABLE_KEYS if k != PATH)   # "path": the source option


def _keys(v: Optional[str]) -> list[str]:
    return [k.strip() for k in (v or "").split(",") if k.strip()]


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema a table is created from (nullability kept; keys made NOT NULL later)."""
    return to_arrow_schema(schema, timezone="UTC")


def _catalog(options: Mapping[str, str]) -> Catalog:
    catalog_options = {k: v for k, v in options.items() if k.startswith(("s3.", "lock."))}
    return Catalog(options[WAREHOUSE], **catalog_options)


def create_table(table: str, schema: StructType, *, warehouse: str, partition_keys: Sequence[str] = (),
                 primary_keys: Sequence[str] = (), options: Optional[Mapping[str, str]] = None,
                 ignore_if_exists: bool = False, **catalog_options: str):
    """Create ``table`` (``db.name``; the database too if missing) with the columns of a Spark
    ``schema`` (e.g. ``df.schema``). Returns the lakeformat Table."""
    cat = Catalog(warehouse, **catalog_options)
    db, _ = split_identifier(table)
    cat.create_database(db, ignore_if_exists=True)
    return cat.create_table(table, arrow_schema(schema), partition_keys=list(partition_keys),
                            primary_keys=list(primary_keys), options=dict(options or {}),
                            ignore_if_exists=ignore_if_exists)


def open_or_create(options: Mapping[str, str], schema: StructType) -> dict[str, str]:
    """Writer options with the creation options taken out: the table is created from ``schema``
    when it is missing, or checked against them when it exists."""
    opts = {k.lower(): str(v) for k, v in options.items()}
    create = {k: opts.pop(k) for k in list(opts) if k in _CREATE_KEYS}
    if not opts.get(TABLE) or not opts.get(WAREHOUSE):
        if create:
            raise OptionError(f"options {sorted(create)} create a table: name it with 'warehouse' and 'table'")
        return opts
    parse(opts)   # bad job options fail before anything is created
    cat = _catalog(opts)
    pks, parts = _keys(create.pop(PRIMARY_KEY, None)), _keys(create.pop(PARTITION, None))
    if not cat.table_exists(opts[TABLE]):
        create_table(opts[TABLE], schema, warehouse=opts[WAREHOUSE], partition_keys=parts, primary_keys=pks,
                     options=create, ignore_if_exists=True,
                     **{k: v for k, v in opts.items() if k.startswith(("s3.", "lock."))})
        return opts
    t = cat.get_table(opts[TABLE])
    differ = []
    if pks and pks != list(t.schema.primary_keys):
        differ.append(f"primary-key {','.join(pks)} (table: {','.join(t.schema.primary_keys) or 'none'})")
    if parts and parts != list(t.schema.partition_keys):
        differ.append(f"partition {','.join(parts)} (table: {','.join(t.schema.partition_keys) or 'none'})")
    differ += [f"{k} {v} (table: {t.options.get(k, 'unset')})" for k, v in create.items() if t.options.get(k) != v]
    if differ:
        raise OptionError(f"{t.name} exists with another layout than this write asks for: {'; '.join(differ)}")
    return opts
