"""Procedures (``CALL lf.sys.compact(table => 'db.t')``, ...) and system tables
(``lf.db.`t$snapshots```, ...) of lakeformat's Spark SQL catalog, in a real SparkSession: each
CALL's effect checked with the library (snapshots, tags, branches, files) and, where it changes
what a read returns, with pypaimon; each system table's rows against the library's own."""
from __future__ import annotations

import os
import time

import pyarrow as pa
import pytest
from pyspark.errors import AnalysisException

from lakeformat.spark.sql_system import java_duration
from lakeformat.table.system_tables import SYSTEM_TABLES
from tests.interop.helpers import Oracle, assert_same_rows

pytestmark = pytest.mark.slow
SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("dt", pa.string())])



def batch(start: int, n: int, dt: str) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": ids, "name": [f"n{i}" for i in ids], "dt": [dt] * n}, schema=SCHEMA)


def table_with_writes(catalog, writes: int = 3, **kw):
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["dt"], **kw)
    for i in range(writes):
        t.write(batch(i * 10, 10, f"2024-06-0{1 + i % 2}"))
    return catalog.get_table("db.t")


def call(spark, sql: str) -> list[tuple]:
    return [tuple(r) for r in spark.sql(sql).collect()]


def pypaimon_rows(tmp_path, catalog, table: str = "db.t") -> pa.Table:
    oracle = Oracle(tmp_path / "oracle")
    i = oracle.read(catalog.warehouse, table, readers=("pypaimon",))
    return oracle.run().table(i, "pypaimon", SCHEMA)


def library_rows(t, name: str, snapshot_id=None) -> list[tuple]:
    """The library's system table as Spark shows it (durations as Java prints them)."""
    table = t.system_table(name, snapshot_id)
    out = []
    for row in table.to_pylist():
        out.append(tuple(java_duration(v) if f.type.equals(pa.duration("ms")) and v is not None else v
                         for f, v in zip(table.schema, row.values())))
    return out


# ---------------------------------------------------------------- system tables

def test_system_tables_are_the_librarys(spark, catalog, lf_sql):
    t = table_with_writes(catalog)
    t.maintenance.create_tag("first", 1, time_retained="1 d")
    t.maintenance.consumers.reset("reader", 2)
    t = catalog.get_table("db.t")
    for name in SYSTEM_TABLES:
        df = spark.sql(f"SELECT * FROM {lf_sql}.db.`t${name}`")
        assert df.columns == t.system_table(name).column_names, name
        assert call(spark, f"SELECT * FROM {lf_sql}.db.`t${name}`") == library_rows(t, name), name
    tags = spark.sql(f"SELECT tag_name, snapshot_id, time_retained FROM {lf_sql}.db.`t$tags`").collect()
    assert [tuple(r) for r in tags] == [("first", 1, "PT24H")]
    # Spark filters and projects the rows; time travel picks the snapshot of files/partitions/...
    kinds = call(spark, f"SELECT snapshot_id FROM {lf_sql}.db.`t$snapshots` WHERE commit_kind = 'APPEND' "
                        "ORDER BY snapshot_id")
    assert kinds == [(1,), (2,), (3,)]
    at_one = call(spark, f"SELECT * FROM {lf_sql}.db.`t$files` VERSION AS OF 1")
    assert at_one == library_rows(t, "files", 1) and len(at_one) == 1
    assert call(spark, f"SELECT * FROM {lf_sql}.db.`t$partitions` VERSION AS OF 'first'") == \
        library_rows(t, "partitions", 1)


def test_system_tables_of_a_branch_and_the_branch_itself(spark, catalog, lf_sql):
    t = table_with_writes(catalog, writes=2)
    t.maintenance.create_tag("base", 1)
    t.branches.create("b", from_tag="base")
    b = t.branches.table("b")
    b.write(batch(100, 5, "2024-06-03"))
    got = spark.sql(f"SELECT * FROM {lf_sql}.db.`t$branch_b`").toArrow()
    assert_same_rows(got, b.read(), "id", "the branch as a table")
    assert call(spark, f"SELECT * FROM {lf_sql}.db.`t$branch_b$snapshots`") == \
        library_rows(catalog.get_table("db.t$branch_b"), "snapshots")
    assert len(call(spark, f"SELECT * FROM {lf_sql}.db.`t$snapshots`")) == 2   # main's own


def test_unknown_system_tables_are_refused_by_name(spark, catalog, lf_sql):
    table_with_writes(catalog, writes=1)
    for name in ("audit_log", "nope"):
        with pytest.raises(Exception, match=f"no system table '{name}'"):
            spark.sql(f"SELECT * FROM {lf_sql}.db.`t${name}`").collect()
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql(f"SELECT * FROM {lf_sql}.db.`missing$snapshots`")
    with pytest.raises(Exception, match="does not depend on a snapshot"):
        spark.sql(f"SELECT * FROM {lf_sql}.db.`t$snapshots` VERSION AS OF 1").collect()


# ---------------------------------------------------------------- procedures

def test_compact_runs_the_spark_compaction(spark, catalog, lf_sql, tmp_path):
    t = table_with_writes(catalog, writes=4)
    before = t.read()
    files = {p: n for p, n in ((r["partition"], r["file_count"]) for r in t.system_table("partitions").to_pylist())}
    assert files == {"dt=2024-06-01": 2, "dt=2024-06-02": 2}
    assert call(spark, f"CALL {lf_sql}.sys.compact(table => 'db.t', partitions => 'dt=2024-06-01')") == [(True,)]
    t = catalog.get_table("db.t")
    assert t.latest_snapshot().commit_kind == "COMPACT"
    files = {r["partition"]: r["file_count"] for r in t.system_table("partitions").to_pylist()}
    assert files == {"dt=2024-06-01": 1, "dt=2024-06-02": 2}
    snapshot = t.latest_snapshot().id
    assert call(spark, f"CALL {lf_sql}.sys.compact(table => 'db.t', where => 'dt > \\'2024-06-05\\'')") == [(True,)]
    assert catalog.get_table("db.t").latest_snapshot().id == snapshot   # no partition matched
    assert call(spark, f"CALL {lf_sql}.sys.compact(table => 'db.t', where => 'dt >= \\'2024-06-02\\'')") == [(True,)]
    files = {r["partition"]: r["file_count"] for r in catalog.get_table("db.t").system_table("partitions").to_pylist()}
    assert files == {"dt=2024-06-01": 1, "dt=2024-06-02": 1}
    assert call(spark, f"CALL {lf_sql}.sys.compact(table => 'db.t', compact_strategy => 'minor')") == [(True,)]
    assert_same_rows(catalog.get_table("db.t").read(), before, "id", "library after compact")
    assert_same_rows(pypaimon_rows(tmp_path, catalog), before, "id", "pypaimon after compact")


def test_expire_snapshots(spark, catalog, lf_sql, tmp_path):
    t = table_with_writes(catalog, writes=6)
    expected = t.read()
    expire = f"CALL {lf_sql}.sys.expire_snapshots(table => 'db.t', retain_max => 2, retain_min => 1)"
    assert call(spark, expire) == [(4,)]
    assert call(spark, expire) == [(0,)]   # nothing more
    t = catalog.get_table("db.t")
    assert [s.id for s in t.snapshots()] == [5, 6]
    assert_same_rows(pypaimon_rows(tmp_path, catalog), expected, "id", "pypaimon after expiring")


def test_tags_and_rollback(spark, catalog, lf_sql, tmp_path):
    t = table_with_writes(catalog, writes=4)
    at_two = t.read(snapshot_id=2)
    assert call(spark, f"CALL {lf_sql}.sys.create_tag(table => 'db.t', tag => 'two', snapshot => '2', "
                       "time_retained => '1 h')") == [(True,)]
    spark.sql(f"CALL {lf_sql}.sys.create_tag(table => 'db.t', tag => 'latest')")
    spark.sql(f"CALL {lf_sql}.sys.create_tag('db.t', 'a')")   # arguments by position, as Paimon's
    tags = {tag.name: tag for tag in catalog.get_table("db.t").tags.list()}
    assert sorted(tags) == ["a", "latest", "two"]
    assert tags["two"].snapshot.id == 2 and tags["latest"].snapshot.id == 4
    assert str(tags["two"].time_retained) == "1:00:00"
    assert call(spark, f"CALL {lf_sql}.sys.delete_tag(table => 'db.t', tag => 'latest,a')") == [(True,)]
    assert [tag.name for tag in catalog.get_table("db.t").tags.list()] == ["two"]

    assert call(spark, f"CALL {lf_sql}.sys.rollback(table => 'db.t', version => 3)") == [(True,)]
    assert catalog.get_table("db.t").latest_snapshot().id == 3
    spark.sql(f"CALL {lf_sql}.sys.rollback(table => 'db.t', tag => 'two')")
    t = catalog.get_table("db.t")
    assert t.latest_snapshot().id == 2
    assert_same_rows(t.read(), at_two, "id", "library after rollback")
    assert_same_rows(pypaimon_rows(tmp_path, catalog), at_two, "id", "pypaimon after rollback")
    assert_same_rows(spark.table(f"{lf_sql}.db.t").toArrow(), at_two, "id", "SQL after rollback")


def test_remove_orphan_files(spark, catalog, lf_sql):
    t = table_with_writes(catalog, writes=1)
    orphan = os.path.join(t.path, "dt=2024-06-01", "bucket-0", "data-orphan.parquet")
    with open(orphan, "wb") as f:
        f.write(b"not reachable")
    old = time.time() - 3 * 86400
    os.utime(orphan, (old, old))
    dry = call(spark, f"CALL {lf_sql}.sys.remove_orphan_files(table => 'db.t', dry_run => true)")
    assert [p.rsplit("/", 1)[-1] for (p,) in dry] == ["data-orphan.parquet"] and os.path.exists(orphan)
    got = call(spark, f"CALL {lf_sql}.sys.remove_orphan_files(table => 'db.t', "
                      "older_than => '2000-01-01 00:00:00')")
    assert got == [] and os.path.exists(orphan)   # older than 2000: none
    got = call(spark, f"CALL {lf_sql}.sys.remove_orphan_files(table => 'db.t')")
    assert [p.rsplit("/", 1)[-1] for (p,) in got] == ["data-orphan.parquet"] and not os.path.exists(orphan)
    assert catalog.get_table("db.t").read().num_rows == 10


def test_branches(spark, catalog, lf_sql, tmp_path):
    t = table_with_writes(catalog, writes=2)
    t.maintenance.create_tag("base", 1)
    assert call(spark, f"CALL {lf_sql}.sys.create_branch(table => 'db.t', branch => 'b', tag => 'base')") == [(True,)]
    spark.sql(f"CALL {lf_sql}.sys.create_branch(table => 'db.t', branch => 'empty')")
    spark.sql(f"CALL {lf_sql}.sys.create_branch(table => 'db.t', branch => 'b', tag => 'base', "
              "ignoreIfExists => 'true')")
    t = catalog.get_table("db.t")
    assert t.branches.list() == ["b", "empty"]
    assert t.branches.table("empty").latest_snapshot() is None
    b = t.branches.table("b")
    assert b.latest_snapshot().id == 1
    b.write(batch(100, 3, "2024-06-03"))
    expected = catalog.get_table("db.t$branch_b").read()
    assert call(spark, f"CALL {lf_sql}.sys.fast_forward(table => 'db.t', branch => 'b')") == [(True,)]
    assert_same_rows(catalog.get_table("db.t").read(), expected, "id", "main after fast_forward")
    assert_same_rows(pypaimon_rows(tmp_path, catalog), expected, "id", "pypaimon after fast_forward")
    assert call(spark, f"CALL {lf_sql}.sys.delete_branch(table => 'db.t', branch => 'b,empty')") == [(True,)]
    assert catalog.get_table("db.t").branches.list() == []


def test_what_is_refused_by_name(spark, catalog, lf_sql):
    table_with_writes(catalog, writes=1)
    cases = {
        f"CALL {lf_sql}.sys.compact(table => 'db.t', where => 'id > 1')": "predicate over the partition columns",
        f"CALL {lf_sql}.sys.compact(table => 'db.t', where => 'dt >', partitions => 'dt=x')":
            "partitions or where, not both",
        f"CALL {lf_sql}.sys.compact(table => 'db.t', order_strategy => 'zorder', order_by => 'id')":
            "does not take argument 'order_by'",
        f"CALL {lf_sql}.sys.compact(table => 'db.t', order_strategy => 'zorder')": "does not sort",
        f"CALL {lf_sql}.sys.expire_snapshots(table => 'db.t', options => 'a=b')": "does not take argument 'options'",
        f"CALL {lf_sql}.sys.create_tag(table => 't', tag => 'x')": "must be 'database.table'",
        f"CALL {lf_sql}.sys.remove_orphan_files(table => 'db.*')": "must be 'database.table'",
        f"CALL {lf_sql}.sys.rollback(table => 'db.t')": "exactly one of version, snapshot, tag",
        f"CALL {lf_sql}.sys.delete_tag(table => 'db.t', tag => 'kept,nope')": "nope",
        f"CALL {lf_sql}.sys.expire_snapshots(table => 'db.t', older_than => 'yesterday')": "is a timestamp",
        f"CALL {lf_sql}.sys.remove_orphan_files(table => 'db.t', older_than => '2999-01-01 00:00:00')":
            "refusing to remove orphan files",
    }
    catalog.get_table("db.t").maintenance.create_tag("kept")
    for sql, message in cases.items():
        with pytest.raises(Exception, match=message):
            spark.sql(sql).collect()
    with pytest.raises(AnalysisException):
        spark.sql(f"CALL {lf_sql}.sys.compact()")   # table is required
    with pytest.raises(AnalysisException, match="FAILED_TO_LOAD_ROUTINE") as refused:
        spark.sql(f"CALL {lf_sql}.sys.expire_partitions(table => 'db.t')")
    # Spark names the routine; why (lakeformat's own words) is the JVM cause
    assert "lakeformat has no procedure sys.expire_partitions; it has" in refused.value._stackTrace
    t = catalog.get_table("db.t")
    assert t.latest_snapshot().id == 1 and [tag.name for tag in t.tags.list()] == ["kept"]   # nothing changed
