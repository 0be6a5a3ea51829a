"""``INSERT OVERWRITE`` and ``ALTER TABLE`` of the Spark SQL catalog, answered by the library.

The jar's ``OverwriteWriteBuilder`` decides what an overwrite replaces, as Paimon's Spark connector
does: ``INSERT OVERWRITE t SELECT ...`` (static mode, Spark's default) the whole table;
``INSERT OVERWRITE t PARTITION (dt='x') ...`` or ``df.writeTo(t).overwrite(col("dt") == "x")``
that partition; dynamic mode (``spark.sql.sources.partitionOverwriteMode=dynamic``,
``df.writeTo(t).overwritePartitions()``) the partitions the rows hold. :func:`overwrite` hands the
rows to ``lfs.write(mode="overwrite")`` on the driver, one commit per statement. ``TRUNCATE TABLE``
is ``Table.write`` of no rows over the whole table; ``ALTER TABLE ... DROP PARTITION`` and ``TRUNCATE
TABLE ... PARTITION`` the same over one partition; ``SHOW PARTITIONS`` lists the live ones.

``ALTER TABLE`` changes (the jar's ``TableChanges`` JSON) become the library's schema changes
(:class:`~lakeformat.format.schema.AddColumn` ...), applied by ``Table.alter`` as one new schema:
what the library refuses (a NOT NULL new column, renaming a key, a cast Paimon has not, an option
fixed at creation) fails with its own named error.
"""
from __future__ import annotations

import json
from typing import Any, Optional
from collections.abc import Mapping, Sequence

from lakeformat.errors import DataError, UnsupportedError, UnsupportedOptionError
from lakeformat.format import schema as S
from lakeformat.format import types as T
from lakeformat.spark.dataframe import write
from lakeformat.spark.tables import catalog_of
from lakeformat.table.catalog import Catalog

# partition types whose value text (Spark's cast to string) compares as the library's matcher does
_STATIC_ROOTS = ("CHAR", "VARCHAR", "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "DATE", "DECIMAL")
# table properties that are not table options: keys are fixed at CREATE TABLE; Spark's own properties
_NOT_OPTIONS = ("primary-key", "partition", "comment", "owner", "location", "provider", "external")


def static_partition(t, spec: Mapping[str, str]) -> dict[str, str]:
    """A static overwrite's partition (Spark's value text) as the library's partition matcher
    compares it (``str`` of the partition value); types whose text would not compare are refused."""
    out = {}
    for key, text in spec.items():
        f = t.schema.field(key)
        if not (isinstance(f.type, T.AtomicType) and f.type.root in _STATIC_ROOTS):
            raise UnsupportedError(f"overwrite of {t.name} by a value of partition column {key!r} "
                                   f"({T.type_to_json(f.type)}) is not supported by the SQL catalog yet")
        if "," in text or "=" in text:
            raise DataError(f"overwrite of {t.name}: partition value {text!r} holds ',' or '='")
        out[key] = {"true": "True", "false": "False"}.get(text, text) if f.type.root == "BOOLEAN" else text
    return out


def overwrite(spark, catalog: str, database: str, name: str, data, mode: str) -> None:
    """Replace with ``data`` (a Java Dataset): ``mode`` "dynamic" (the partitions written), else a
    static partition as JSON (``{}``: the whole table)."""
    from pyspark.sql import DataFrame
    opts = dict(json.loads(catalog))
    warehouse = opts.pop("warehouse")
    identifier = f"{database}.{name}"
    partition: Optional[dict[str, str]] = None
    if mode != "dynamic":
        partition = static_partition(Catalog(warehouse, **opts).get_table(identifier), json.loads(mode))
    write(DataFrame(data, spark), identifier, warehouse=warehouse, mode="overwrite", overwrite_partition=partition,
          **opts)


def truncate(catalog: str, database: str, name: str) -> None:
    """``TRUNCATE TABLE``: the whole table overwritten with no rows (an OVERWRITE snapshot)."""
    t = catalog_of(catalog).get_table(f"{database}.{name}")
    t.write(t.arrow_schema().empty_table(), overwrite={})


def partitions(t, snapshot_id: int) -> list[tuple]:
    """The values of the partitions that hold live files at ``snapshot_id``, sorted."""
    live = {e.partition for e in t.live_entries(t.snapshot(snapshot_id))}
    return sorted((t.partition_values(p) for p in live), key=lambda v: tuple((x is None, str(x)) for x in v))


def drop_partition(catalog: str, database: str, name: str, partition: str) -> bool:
    """``ALTER TABLE ... DROP PARTITION``: the partition overwritten with no rows; False when no
    live file is in it (nothing is committed)."""
    t = catalog_of(catalog).get_table(f"{database}.{name}")
    spec = static_partition(t, json.loads(partition))
    snapshot = t.latest_snapshot()
    matches = t.partition_matcher(spec)
    if snapshot is None or not any(matches(e.partition) for e in t.live_entries(snapshot)):
        return False
    t.write(t.arrow_schema().empty_table(), overwrite=spec)
    return True


def _arrow_type(spark_json: str, nullable: bool = True):
    from pyspark.sql.types import StructField, StructType, _parse_datatype_json_string

    from lakeformat.spark.tables import arrow_schema
    field = StructField("c", _parse_datatype_json_string(spark_json), nullable)
    return arrow_schema(StructType([field])).field(0).type


def schema_changes(t, changes: Sequence[Mapping[str, Any]]) -> list:
    """The library's schema changes for ``ALTER TABLE``'s (pure over the table's schema)."""
    out: list = []
    for c in changes:
        op = c["op"]
        if op == "add":
            out.append(S.AddColumn(c["name"], _arrow_type(c["type"]), bool(c["nullable"]), c.get("comment")))
        elif op == "rename":
            out.append(S.RenameColumn(c["name"], c["newName"]))
        elif op == "drop":
            if not (c.get("ifExists") and c["name"] not in t.schema.names):
                out.append(S.DropColumn(c["name"]))
        elif op == "type":
            out.append(S.UpdateColumnType(c["name"], _arrow_type(c["type"])))
        elif op in ("set", "unset"):
            if c["key"].lower() in _NOT_OPTIONS:
                raise UnsupportedOptionError(f"ALTER TABLE {t.name}: {c['key']!r} is not a table option the "
                                             "catalog can change (keys are fixed when the table is created)")
            out.append(S.SetOption(c["key"], c["value"]) if op == "set" else S.RemoveOption(c["key"]))
        else:
            raise UnsupportedError(f"ALTER TABLE {t.name}: unknown change {op!r}")
    return out


def alter(catalog: str, database: str, name: str, changes: str) -> None:
    """Apply ``ALTER TABLE``'s changes (JSON) to the table as one new schema."""
    t = catalog_of(catalog).get_table(f"{database}.{name}")
    todo = schema_changes(t, json.loads(changes))
    if todo:
        t.alter(*todo)
