"""lakeformat's Spark SQL catalog, the Python half: answers the jar's ``SparkCatalog`` on the driver.

    spark = (SparkSession.builder.config("spark.jars", lfs.jar_path())
             .config("spark.sql.catalog.lf", "lakeformat.spark.SparkCatalog")
             .config("spark.sql.catalog.lf.warehouse", wh).getOrCreate())
    lfs.register(spark)                      # installs this planner
    spark.sql("SELECT dt, count(*) FROM lf.db.t GROUP BY dt")

The catalog (Java) decides nothing about the format: it asks :class:`CatalogPlanner`, through
PySpark's Py4J callback server (as ``foreachBatch`` calls back), for databases, tables, a table's
Spark schema at a snapshot, and the files a read of that snapshot needs; Spark's own Parquet scan
then reads them (column pruning, filters in row groups, partition pruning on the planned values;
files whose statistics exclude the query's data filters are not listed: :mod:`lakeformat.spark.sql_pruning`).
Planning is lakeformat's own: :func:`~lakeformat.spark.native_read.plan_read`, the same as
``lfs.read_table``. What that read would hand to lakeformat's merge-on-read (overlapping sorted
runs of a primary-key bucket, files that hold delete rows) and what Spark cannot read as the
current schema (files of an older schema whose columns were renamed or retyped, other formats,
object stores: ``warehouse = s3://...`` with the ``s3.*`` options as
:class:`~lakeformat.table.catalog.Catalog` takes them, since PySpark ships no Hadoop S3 connector)
is read by the Python data source instead (the jar's ``LakeformatTable`` hands that snapshot's
read to ``format("lakeformat_python")``, see :mod:`lakeformat.spark.format_native`).

``CREATE TABLE`` (``PARTITIONED BY``, ``TBLPROPERTIES`` for table options and ``primary-key``)
creates the table through the library, and ``INSERT INTO`` hands its rows to ``lfs.write`` on the
driver (Spark's Parquet writer for append tables), one commit per statement. ``INSERT OVERWRITE``
(static and dynamic) and ``ALTER TABLE`` (columns, table options) are :mod:`lakeformat.spark.sql_ddl`'s.
``DROP TABLE``, ``CREATE DATABASE`` and ``DROP DATABASE [CASCADE]`` are the library's too;
procedures (``CALL lf.sys.compact(...)``) and system tables (``lf.db.`t$snapshots```) are
:mod:`lakeformat.spark.sql_system`'s. ``DELETE FROM`` (primary-key tables) is :mod:`lakeformat.spark.sql_delete`'s.
"""
from __future__ import annotations

import datetime as dt
import functools
import json
import logging
from typing import Any, ClassVar, Optional
from collections.abc import Callable, Mapping, Sequence

from lakeformat.errors import LakeformatError
from lakeformat.format import types as T
from lakeformat.io.fileio import join
from lakeformat.secrets import mask
from lakeformat.spark import deleted_rows, jar, source, sql_ddl, sql_delete
from lakeformat.spark.dataframe import write
from lakeformat.spark.native_read import NativeFiles, _vectors, native_available, plan_read, spark_path
from lakeformat.spark.sql_pruning import prune_answer
from lakeformat.spark.tables import catalog_of, create_table
from lakeformat.spark.types import spark_schema, spark_type

log = logging.getLogger(__name__)
CATALOG_CLASS = "lakeformat.spark.SparkCatalog"
# partition types whose directory text Spark casts back to the value (timestamps depend on zones: not yet)
_PARTITION_ROOTS = ("CHAR", "VARCHAR", "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "DATE", "DECIMAL")


class NotNativeError(LakeformatError):
    """A read the SQL catalog would need lakeformat's merge-on-read or casts for."""


def _snapshot(t, version: str, millis: int):
    """The snapshot ``VERSION AS OF`` (a snapshot id or a tag name) or ``TIMESTAMP AS OF`` names,
    else the latest; and whether the read travels in time."""
    if version:
        if version.isdigit():
            return t.snapshot(int(version)), True
        return t.tags.snapshot_of(version), True
    if millis >= 0:
        return t.snapshot_as_of(millis), True
    return t.latest_snapshot(), False


def _text(v: Any) -> Optional[str]:
    """A partition value as Spark casts it from text."""
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dt.date):
        return v.isoformat()
    return str(v)


def table_answer(t, snapshot, travel: bool) -> dict:
    """The table as the catalog describes it at ``snapshot`` (pure over the table's metadata)."""
    view = t.as_of_schema(snapshot) if travel else t
    s = view.schema
    return {"schema": json.loads(spark_schema(s.fields).json()), "schemaId": s.id,
            "partitionKeys": list(s.partition_keys),
            "primaryKeys": list(s.primary_keys), "snapshot": None if snapshot is None else snapshot.id,
            "properties": {**s.options, **({"primary-key": ",".join(s.primary_keys)} if s.primary_keys else {})}}


def spark_reads_as_current(old: Sequence[T.DataField], current: Sequence[T.DataField]) -> bool:
    """Whether Spark, which finds a file's columns by name (ignoring case), reads files of the
    ``old`` fields as the ``current`` ones: every current field is the old one of its id, same
    name and Spark type, or a field added since whose name no old field had (Spark reads it as
    nulls), and no old field of the same name was dropped or renamed away (pure)."""
    by_id = {f.id: f for f in old}
    old_names = {f.name.lower() for f in old}
    for f in current:
        o = by_id.get(f.id)
        if o is None:
            if f.name.lower() in old_names:
                return False
        elif o.name != f.name or spark_type(o.type) != spark_type(f.type):
            return False
    return True


def _check_native(t, plan, groups: Sequence[NativeFiles]) -> None:
    why = plan.reason or native_available(t)
    if why is None and plan.merged:
        why = (f"{len(plan.merged)} section(s) of primary-key buckets have overlapping sorted runs and need "
               "lakeformat's merge-on-read (compact the table, or read it with lfs.read_table)")
    if why is None and any(g.key_value for g in groups):
        why = "files that hold delete rows need their _VALUE_KIND filtered (compact the table, or use lfs.read_table)"
    for g in groups if why is None else ():
        if not spark_reads_as_current(t.schema_manager.get(g.schema_id).fields, t.schema.fields):
            why = (f"files written under schema {g.schema_id} have columns renamed, retyped or dropped since "
                   "(lfs.read_table maps them by field id)")
    bad = [f.name for f in t.schema.fields if f.name in t.schema.partition_keys
           and not (isinstance(f.type, T.AtomicType) and f.type.root in _PARTITION_ROOTS)]
    if why is None and bad:
        why = f"partition column(s) {bad} of this type are not read by the SQL catalog yet"
    if why is not None:
        raise NotNativeError(f"lakeformat's Spark catalog cannot read {t.name} with Spark's Parquet scan: {why}")


def _remembered(plan: Callable[..., dict]) -> Callable[..., dict]:
    """``plan`` answering again from its last answer for the same table, commit and schema (a
    snapshot's files never change; its manifest lists' names are unique per commit):
    ``format("lakeformat")`` plans a read to choose its scan, then Spark's scan asks again."""
    last: dict[tuple, dict] = {}

    @functools.wraps(plan)
    def remembered(t, snapshot, schema_id: int) -> dict:
        key = (t.path, t.branch, snapshot.id, snapshot.base_manifest_list, snapshot.delta_manifest_list,
               snapshot.index_manifest, int(schema_id))
        answer = last.get(key)
        if answer is None or "scan.fallback-branch" in t.schema.options:   # another branch's latest too
            answer = plan(t, snapshot, schema_id)
            last.clear()
            last[key] = answer
        return answer
    return remembered


@_remembered
def plan_answer(t, snapshot, schema_id: int) -> dict:
    """The files of ``snapshot`` Spark reads as the columns of schema ``schema_id`` (the one the
    catalog described the table with: the latest schema, or a snapshot's when travelling; a
    schema may be newer than the latest snapshot's), with partition values and deletion vectors."""
    splits = t.scan(snapshot_id=snapshot.id).plan()
    if t.schema.id != schema_id:
        t = type(t)(t.io, t.path, t.name, t.schema_manager.get(schema_id), t.lock)
    plan = plan_read(t, splits)
    _check_native(t, plan, plan.native)
    values: dict[str, tuple] = {}
    for s in splits:
        d = t.bucket_dir_of(s.partition_bytes, s.bucket)
        v = t.partition_values(s.partition_bytes)
        values.update((join(d, f.file_name), v) for f in s.files)
    files, vectors = [], []
    for g in plan.native:
        files += [{"path": spark_path(t, p), "size": n, "partition": [_text(x) for x in values[p]]}
                  for p, n in zip(g.paths, g.file_sizes)]
        if g.deletion_files:
            deleted = _vectors(t, g)
            for p, rows, size in zip(g.paths, g.row_counts, g.file_sizes):
                name = p.rsplit("/", 1)[-1]
                if len(deleted.get(name, ())):
                    vectors.append((name, size, deleted_rows.bitmap(deleted[name], rows, name)))
    return {"files": files, "vectors": deleted_rows.encoded_vectors(vectors) if vectors else ""}


def _answer(method: Callable[..., Any]) -> Callable[..., str]:
    """JSON of what ``method`` returns; lakeformat's own errors as ``{"error", "kind"}``, which the
    catalog throws with their message (not a Python traceback inside a Py4J error)."""
    @functools.wraps(method)
    def call(*args: Any) -> str:
        try:
            return json.dumps(method(*args))
        except LakeformatError as e:   # masked: the catalog's options hold the storage credentials
            return json.dumps({"error": mask(str(e)), "kind": type(e).__name__})
    return call


class CatalogPlanner:
    """``lakeformat.spark.Planner`` in Python: the catalog's questions answered by the library."""

    class Java:
        implements: ClassVar[list[str]] = ["lakeformat.spark.Planner"]

    def __init__(self, spark) -> None:
        self.spark = spark   # the session whose driver the catalog runs in (INSERT's DataFrames)

    @_answer
    def namespaces(self, catalog: str) -> list[str]:
        return catalog_of(catalog).list_databases()

    @_answer
    def tables(self, catalog: str, database: str) -> list[str]:
        return catalog_of(catalog).list_tables(database)

    def table(self, catalog: str, database: str, name: str, version: str, millis: int) -> str:
        if not catalog_of(catalog).table_exists(f"{database}.{name}"):
            return ""   # the catalog says so as Spark does (TABLE_OR_VIEW_NOT_FOUND)
        return self._table(catalog, database, name, version, millis)

    @_answer
    def _table(self, catalog: str, database: str, name: str, version: str, millis: int) -> dict:
        t = catalog_of(catalog).get_table(f"{database}.{name}")
        snapshot, travel = _snapshot(t, version, int(millis))
        return table_answer(t, snapshot, travel)

    @_answer
    def plan(self, catalog: str, database: str, name: str, snapshot: int, schema_id: int) -> dict:
        t = catalog_of(catalog).get_table(f"{database}.{name}")
        return plan_answer(t, t.snapshot(int(snapshot)), int(schema_id))

    @_answer
    def prune(self, catalog: str, database: str, name: str, snapshot: int, schema_id: int, filters: str) -> dict:
        t = catalog_of(catalog).get_table(f"{database}.{name}")
        return prune_answer(t, t.snapshot(int(snapshot)), int(schema_id), json.loads(filters))

    @_answer
    def create(self, catalog: str, database: str, name: str, schema: str, partition_keys: str,
               properties: str) -> dict:
        from pyspark.sql.types import StructType
        opts = dict(json.loads(catalog))
        props = dict(json.loads(properties))
        keys = [k.strip() for k in props.pop("primary-key", "").split(",") if k.strip()]
        t = create_table(f"{database}.{name}", StructType.fromJson(json.loads(schema)), warehouse=opts.pop("warehouse"),
                         partition_keys=json.loads(partition_keys), primary_keys=keys, options=props, **opts)
        return table_answer(t, t.latest_snapshot(), False)

    @_answer
    def createDatabase(self, catalog: str, database: str) -> dict:   # camelCase: the Java interface names these
        catalog_of(catalog).create_database(database)
        return {}

    @_answer
    def dropDatabase(self, catalog: str, database: str, cascade: bool) -> dict:
        c = catalog_of(catalog)
        if not c.database_exists(database):
            return {"dropped": False}
        c.drop_database(database, cascade=bool(cascade))
        return {"dropped": True}

    @_answer
    def dropTable(self, catalog: str, database: str, name: str) -> dict:
        c = catalog_of(catalog)
        if not c.table_exists(f"{database}.{name}"):
            return {"dropped": False}
        c.drop_table(f"{database}.{name}")
        return {"dropped": True}

    @_answer
    def insert(self, catalog: str, database: str, name: str, data) -> dict:
        from pyspark.sql import DataFrame
        opts = dict(json.loads(catalog))
        write(DataFrame(data, self.spark), f"{database}.{name}", warehouse=opts.pop("warehouse"), **opts)
        return {}

    @_answer
    def overwrite(self, catalog: str, database: str, name: str, data, mode: str) -> dict:
        sql_ddl.overwrite(self.spark, catalog, database, name, data, mode)
        return {}

    @_answer
    def truncate(self, catalog: str, database: str, name: str) -> dict:
        sql_ddl.truncate(catalog, database, name)
        return {}

    @_answer
    def rename(self, catalog: str, database: str, name: str, new_database: str, new_name: str) -> dict:
        catalog_of(catalog).rename_table(f"{database}.{name}", f"{new_database}.{new_name}")
        return {}

    @_answer
    def partitions(self, catalog: str, database: str, name: str, snapshot: int) -> list:
        t = catalog_of(catalog).get_table(f"{database}.{name}")
        return [[_text(v) for v in values] for values in sql_ddl.partitions(t, int(snapshot))]

    @_answer
    def dropPartition(self, catalog: str, database: str, name: str, partition: str) -> dict:
        return {"dropped": sql_ddl.drop_partition(catalog, database, name, partition)}

    @_answer
    def alter(self, catalog: str, database: str, name: str, changes: str) -> dict:
        sql_ddl.alter(catalog, database, name, changes)
        return {}

    @_answer
    def delete(self, catalog: str, database: str, name: str, filters: str) -> dict:
        return {"deleted": sql_delete.delete_where(catalog, database, name, json.loads(filters))}


def install(spark) -> bool:
    """Install :class:`CatalogPlanner` in the driver's JVM for ``spark.sql.catalog.<name>`` =
    ``lakeformat.spark.SparkCatalog`` (a callback, served by PySpark's callback server). False,
    said once in the log, when the session has no lakeformat jar (classic Spark only)."""
    try:
        gateway = spark.sparkContext._gateway
    except Exception:   # Spark Connect: the driver's JVM is not this process's to call back from
        return False
    if not jar.loadable(spark, CATALOG_CLASS):
        log.info("lakeformat: the Spark session has no lakeformat jar (lakeformat.spark.jar_path()): "
                 "the SQL catalog %s is not available", CATALOG_CLASS)
        return False
    from pyspark.java_gateway import ensure_callback_server_started
    ensure_callback_server_started(gateway)
    planner = _INSTALLED[id(gateway)] = CatalogPlanner(spark)
    spark._jvm.lakeformat.spark.SparkCatalog.install(planner)
    spark._jvm.lakeformat.spark.DeleteStrategy.install(spark._jsparkSession)   # DELETE FROM: see DeleteStrategy
    from lakeformat.spark import sql_system   # CALL lf.sys.<procedure>, lf.db.`t$snapshots`
    sql_system.install(spark)
    return True


_INSTALLED: dict[int, CatalogPlanner] = {}   # one planner per gateway, kept alive while it is installed


def catalog_confs(name: str, warehouse: str, **options: str) -> Mapping[str, str]:
    """The Spark settings of a lakeformat catalog ``name`` over ``warehouse``."""
    prefix = f"spark.sql.catalog.{name}"
    return {prefix: CATALOG_CLASS, f"{prefix}.warehouse": warehouse,
            **{f"{prefix}.{k}": v for k, v in options.items()}}


def register(spark) -> None:
    """``lfs.register``: the ``lakeformat`` data source (:func:`lakeformat.spark.source.register`)
    and, for the jar's SQL catalog, this process as its planner (:func:`install`)."""
    source.register(spark)
    install(spark)
