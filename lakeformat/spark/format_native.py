"""``format("lakeformat")`` at native speed, the Python half of the jar's ``LakeformatSource``.

In a session with lakeformat's jar, ``spark.read.format("lakeformat")`` is a DataSource V2
provider in the jar; it asks :class:`SourceResolver` (through PySpark's Py4J callback server, as
the SQL catalog asks :class:`~lakeformat.spark.sql.CatalogPlanner`) how to read the options:

- a table named by ``table`` + ``warehouse`` whose snapshot Spark's Parquet scan reads as the SQL
  catalog does (no section needing the merge-on-read, no file Spark cannot read by name) is the
  catalog's own ``LakeformatTable``: the same planner answers, Spark's column pruning and pushed
  filters (``explain()`` shows them);
- everything else (what needs lakeformat's merge, incremental and changelog reads, path-named
  tables, per-job table options, a reader's schema) and every stream is read by the Python data
  source (:mod:`lakeformat.spark.source`), registered as ``lakeformat_python``: the same rows.

``df.write.format("lakeformat")`` comes to :meth:`SourceResolver.write`, which is
:func:`lakeformat.spark.write` with those options (one commit per save).
"""
from __future__ import annotations

import json
import logging
from typing import ClassVar, Optional

from lakeformat.format.names import split_identifier
from lakeformat.spark import jar, scan, sql
from lakeformat.spark.dataframe import write_options
from lakeformat.spark.options import SourceOptions, parse
from lakeformat.spark.source import NATIVE_SOURCE

log = logging.getLogger(__name__)


def python_only(opts: SourceOptions) -> Optional[str]:
    """Why a batch read with these options is the Python data source's whatever the table holds
    (pure over the parsed options), or None."""
    ref, spec = opts.table, opts.read
    if ref.identifier is None or ref.warehouse is None:
        return "a table named by its path"
    if "$" in ref.identifier:
        return "a branch or system table"
    if ref.table_options:
        return "table options for this read"
    if spec.incremental or spec.changelog or spec.columns is not None or spec.consumer_id is not None:
        return "an incremental, changelog, column-list or consumer read"
    return None


def resolve(options: dict) -> dict:
    """The answer to ``SourceResolver.resolve``: the SQL catalog's description of the table when
    Spark's Parquet scan reads it, else why the Python data source does."""
    opts = parse(options)
    why = python_only(opts)
    if why is not None:
        return {"native": False, "reason": why}
    t = opts.table.open()
    snapshot = scan.resolve_snapshot(t, opts.read)
    if snapshot is not None:
        try:
            sql.plan_answer(t, snapshot, t.schema.id)
        except sql.NotNativeError as e:
            log.info("%s; the Python data source reads it", e)
            return {"native": False, "reason": str(e)}
    db, name = split_identifier(opts.table.identifier or "")
    catalog = {"warehouse": opts.table.warehouse, **dict(opts.table.catalog_options)}
    # the latest schema at the chosen snapshot, as the Python data source reads it
    return {"native": True, "catalog": json.dumps(catalog), "database": db, "name": name,
            "table": sql.table_answer(t, snapshot, False)}


class SourceResolver:
    """``lakeformat.spark.SourceResolver`` in Python."""

    class Java:
        implements: ClassVar[list[str]] = ["lakeformat.spark.SourceResolver"]

    def __init__(self, spark) -> None:
        self.spark = spark   # the session whose driver writes

    @sql._answer
    def resolve(self, options: str) -> dict:
        return resolve(json.loads(options))

    @sql._answer
    def write(self, options: str, data, overwrite: bool) -> dict:
        from pyspark.sql import DataFrame
        write_options(DataFrame(data, self.spark), json.loads(options), "overwrite" if overwrite else "append")
        return {}


_INSTALLED: dict[int, SourceResolver] = {}   # one resolver per gateway, kept alive while installed


def install(spark) -> bool:
    """Install :class:`SourceResolver` in the driver's JVM when the session has the jar (False
    otherwise: ``format("lakeformat")`` is then the Python data source, as
    :func:`lakeformat.spark.source.register` logs)."""
    try:
        gateway = spark.sparkContext._gateway
    except Exception:   # Spark Connect
        return False
    if not jar.loadable(spark, NATIVE_SOURCE):
        return False
    from pyspark.java_gateway import ensure_callback_server_started
    ensure_callback_server_started(gateway)
    resolver = _INSTALLED[id(gateway)] = SourceResolver(spark)
    spark._jvm.lakeformat.spark.LakeformatSource.install(resolver)
    return True


def register(spark) -> None:
    """``lfs.register``: the data source, the SQL catalog's planner (:func:`lakeformat.spark.sql.register`)
    and, with the jar, this resolver behind ``format("lakeformat")``."""
    sql.register(spark)
    install(spark)
