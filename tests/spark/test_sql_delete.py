"""``DELETE FROM`` in lakeformat's Spark SQL catalog, against a real SparkSession: primary-key
tables lose the matching rows by key (one commit per statement, nothing committed when no row
matches, the whole table overwritten with no rows without ``WHERE``), checked with the library and
with pypaimon and paimon-rust reading each snapshot; append tables and predicates with no exact
lakeformat form are refused by name, before anything is written."""
from __future__ import annotations


import pyarrow as pa
import pytest
from py4j.protocol import Py4JJavaError

from tests.interop.helpers import Oracle, assert_same_rows, check_readers

pytestmark = pytest.mark.slow



ROWS = [(1, "a", 10, "x"), (2, "b", 20, "x"), (3, "c", 30, "x"), (4, "d", 40, "x"),
        (5, "e", 50, "y"), (6, "f", 60, "y"), (7, "g", None, "y"), (8, "h", 80, "y")]


def rows(ids) -> pa.Table:
    keep = [r for r in ROWS if r[0] in ids]
    types = {"id": pa.int64(), "v": pa.string(), "n": pa.int32(), "dt": pa.string()}
    return pa.table({name: pa.array([r[i] for r in keep], ty) for i, (name, ty) in enumerate(types.items())})


def pk_table(spark, catalog, lf_sql, name="k"):
    spark.sql(f"CREATE TABLE {lf_sql}.db.{name} (id BIGINT NOT NULL, v STRING, n INT, dt STRING NOT NULL) "
              "PARTITIONED BY (dt) TBLPROPERTIES ('primary-key' = 'dt,id', 'bucket' = '2')")
    values = ", ".join(f"({i}, '{v}', {'NULL' if n is None else n}, '{dt}')" for i, v, n, dt in ROWS)
    spark.sql(f"INSERT INTO {lf_sql}.db.{name} VALUES {values}")
    return catalog.get_table(f"db.{name}")


def test_delete_by_equality_range_in_and_or(spark, catalog, lf_sql, tmp_path):
    pk_table(spark, catalog, lf_sql)
    live = {r[0] for r in ROWS}
    steps = [("id = 1", {1}),
             ("n >= 20 AND n < 40", {2, 3}),                      # range (n NULL for 7: not deleted)
             ("v IN ('d', 'e')", {4, 5}),
             ("dt = 'y' AND (id = 6 OR NOT (n <= 70))", {6, 8})]  # AND/OR/NOT across partition and data
    oracle = Oracle(tmp_path / "oracle")
    reads = []
    for where, gone in steps:
        spark.sql(f"DELETE FROM {lf_sql}.db.k WHERE {where}")
        live -= gone
        t = catalog.get_table("db.k")
        snapshot = t.latest_snapshot()
        assert snapshot.commit_kind == "APPEND" and snapshot.id == len(reads) + 2   # one commit per statement
        assert_same_rows(t.read(), rows(live), ["id"], f"library after WHERE {where}")
        assert_same_rows(spark.table(f"{lf_sql}.db.k").toArrow(), rows(live), ["id"], f"sql after WHERE {where}")
        reads.append((oracle.read(catalog.warehouse, "db.k", ("pypaimon",), snapshot_id=snapshot.id), set(live)))
    latest = oracle.read(catalog.warehouse, "db.k")
    res = oracle.run()
    for i, expected in reads:   # every statement's snapshot (pypaimon travels in time), the latest by both
        check_readers(res, i, rows(expected), ["id"], ("pypaimon",), what=f"snapshot of {sorted(expected)}")
    check_readers(res, latest, rows(live), ["id"], what="latest")
    assert live == {7}

    # a predicate no row matches commits nothing
    spark.sql(f"DELETE FROM {lf_sql}.db.k WHERE id = 999 OR v = 'zz'")
    assert catalog.get_table("db.k").latest_snapshot().id == len(steps) + 1

    # without WHERE: every row, as one OVERWRITE (as Paimon's connector)
    spark.sql(f"DELETE FROM {lf_sql}.db.k")
    t = catalog.get_table("db.k")
    assert t.latest_snapshot().commit_kind == "OVERWRITE" and t.read().num_rows == 0
    oracle = Oracle(tmp_path / "oracle-empty")
    i = oracle.read(catalog.warehouse, "db.k")
    check_readers(oracle.run(), i, rows(set()), ["id"], what="emptied")


def refusal(spark, statement: str) -> str:
    with pytest.raises(Exception) as e:
        spark.sql(statement)
    return str(e.value.java_exception if isinstance(e.value, Py4JJavaError) else e.value)


def test_refused_by_name_before_anything_is_written(spark, catalog, lf_sql):
    t = pk_table(spark, catalog, lf_sql)
    spark.sql(f"ALTER TABLE {lf_sql}.db.k ADD COLUMN score DOUBLE")
    # no exact form: a string prefix (Spark's StringStartsWith), a function, a float comparison
    # (Spark orders NaN above every number, lakeformat's filter does not)
    for where, named in [("v LIKE 'a%'", "StringStartsWith"), ("length(v) = 1", "LENGTH"),
                         ("score > 1.5", "score")]:
        message = refusal(spark, f"DELETE FROM {lf_sql}.db.k WHERE {where}")
        assert "DELETE FROM" in message and "no exact lakeformat form" in message and named in message, message
    # a refused conjunct refuses the whole statement, even beside a convertible one
    message = refusal(spark, f"DELETE FROM {lf_sql}.db.k WHERE id = 1 AND v LIKE 'a%'")
    assert "no exact lakeformat form" in message, message
    t = catalog.get_table("db.k")
    assert t.latest_snapshot().id == 1 and t.read().num_rows == len(ROWS)   # the insert only (ALTER: no snapshot)
    # the same table deletes by what converts exactly (its partition column is no longer last:
    # Spark's scan reorders the columns, see DeleteStrategy)
    spark.sql(f"DELETE FROM {lf_sql}.db.k WHERE score IS NULL AND id <=> 1")
    assert sorted(catalog.get_table("db.k").read()["id"].to_pylist()) == list(range(2, 9))

    spark.sql(f"CREATE TABLE {lf_sql}.db.a (id BIGINT, v STRING)")
    spark.sql(f"INSERT INTO {lf_sql}.db.a VALUES (1, 'a'), (2, 'b')")
    for statement in (f"DELETE FROM {lf_sql}.db.a WHERE id = 1", f"DELETE FROM {lf_sql}.db.a"):
        message = refusal(spark, statement)
        assert "DELETE FROM needs a primary-key table" in message, message
    assert catalog.get_table("db.a").read().num_rows == 2
