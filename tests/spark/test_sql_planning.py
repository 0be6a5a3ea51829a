"""The SQL catalog's decisions that need no Spark: which files Spark can read as the current
columns, partition values as the text Spark casts, and the planner's answers (JSON) for a table."""
from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pyarrow as pa
import pytest

from lakeformat.format import types as T
from lakeformat.spark import sql
from lakeformat.spark.sql import CatalogPlanner, NotNativeError, plan_answer, spark_reads_as_current

BIG, STR = T.AtomicType("BIGINT"), T.AtomicType("VARCHAR", (T.MAX_LENGTH,))


def fields(*spec) -> list[T.DataField]:
    return [T.DataField(i, n, t) for i, n, t in spec]


def test_spark_reads_older_files_by_name_only_where_names_still_mean_the_same_field():
    old = fields((0, "id", BIG), (1, "v", STR))
    assert spark_reads_as_current(old, old)
    assert spark_reads_as_current(old, fields((0, "id", BIG), (1, "v", STR), (2, "score", T.AtomicType("DOUBLE"))))
    assert spark_reads_as_current(old, fields((0, "id", BIG)))                        # dropped: not read
    assert not spark_reads_as_current(old, fields((0, "id", BIG), (1, "w", STR)))     # renamed
    assert not spark_reads_as_current(old, fields((0, "id", BIG), (1, "v", BIG)))     # retyped
    assert not spark_reads_as_current(old, fields((0, "id", BIG), (2, "V", STR)))     # a new field, an old name


def test_partition_values_as_text():
    assert [sql._text(v) for v in (None, True, 3, dt.date(2024, 6, 1), Decimal("1.50"), "a/b")] == \
        [None, "true", "3", "2024-06-01", "1.50", "a/b"]


def test_planner_answers_for_a_table(catalog):
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string())])
    t = catalog.create_table("db.t", schema, partition_keys=["dt"])
    t.write(pa.table({"id": [1, 2], "dt": ["a", "b"]}, schema=schema))
    opts = json.dumps({"warehouse": catalog.warehouse})
    p = CatalogPlanner(spark=None)
    assert json.loads(p.namespaces(opts)) == ["db"] and json.loads(p.tables(opts, "db")) == ["t"]
    assert p.table(opts, "db", "nope", "", -1) == ""
    meta = json.loads(p.table(opts, "db", "t", "", -1))
    assert meta["partitionKeys"] == ["dt"] and meta["snapshot"] == 1 and meta["schemaId"] == 0
    assert [f["name"] for f in meta["schema"]["fields"]] == ["id", "dt"]
    plan = json.loads(p.plan(opts, "db", "t", 1, 0))
    assert sorted(f["partition"] for f in plan["files"]) == [["a"], ["b"]] and plan["vectors"] == ""
    assert all(f["path"].startswith("file://") and "/dt=" in f["path"] and f["size"] > 0 for f in plan["files"])
    err = json.loads(p.table(opts, "db", "t", "7", -1))
    assert err["kind"] == "NotFoundError" and "snapshot 7" in err["error"]


def test_overlapping_primary_key_runs_are_refused(catalog):
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
    t = catalog.create_table("db.pk", schema, primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1], "v": ["a"]}, schema=schema))
    t.write(pa.table({"id": [1], "v": ["b"]}, schema=schema))
    t = catalog.get_table("db.pk")
    with pytest.raises(NotNativeError, match="merge-on-read"):
        plan_answer(t, t.latest_snapshot(), t.schema.id)
