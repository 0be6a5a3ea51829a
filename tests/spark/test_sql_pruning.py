"""The SQL catalog skips whole files by a query's data filters: Spark's filters on columns that
are not partition keys reach lakeformat's planner, which drops the files whose min/max
statistics exclude them (counted in the executed plan's scan); the rows are still the library's."""
from __future__ import annotations


import pyarrow as pa
import pytest

import lakeformat as lf
from tests.interop.helpers import assert_same_rows
from tests.spark.test_sql_catalog import scan_files

pytestmark = pytest.mark.slow
FILES, ROWS = 8, 500



def test_data_filters_on_a_sorted_column_read_fewer_files(spark, catalog, lf_sql):
    t = catalog.create_table("db.events", pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())]),
                             partition_keys=["dt"])
    for i in range(FILES):   # one file per write, ids ascending: file i holds [i*ROWS, (i+1)*ROWS)
        ids = list(range(i * ROWS, (i + 1) * ROWS))
        t.write(pa.table({"id": ids, "v": [f"v{x}" for x in ids], "dt": ["d"] * ROWS}))
    t = catalog.get_table("db.events")
    assert len(t.files()) == FILES

    def check(where: str, predicate, files: int) -> None:
        df = spark.sql(f"SELECT id, v FROM {lf_sql}.db.events WHERE {where}")
        assert len(scan_files(df)) == files, (where, scan_files(df))
        expected = t.read(columns=["id", "v"], filter=predicate)
        assert_same_rows(df.toArrow(), expected, ["id"], where)

    check("dt = 'd'", lf.col("dt") == "d", FILES)                                       # nothing to prune by
    check(f"id >= {FILES * ROWS - 10}", lf.col("id") >= FILES * ROWS - 10, 1)
    check(f"id = {ROWS + 3}", lf.col("id") == ROWS + 3, 1)
    check(f"id BETWEEN {ROWS - 1} AND {ROWS}", (lf.col("id") >= ROWS - 1) & (lf.col("id") <= ROWS), 2)
    check(f"id IN (3, {3 * ROWS})", lf.col("id").isin([3, 3 * ROWS]), 2)
    check(f"(id < 10 OR id > {FILES * ROWS - 10}) AND v LIKE 'v%'",
          (lf.col("id") < 10) | (lf.col("id") > FILES * ROWS - 10), 2)                 # LIKE: left to Spark
    check("id < 0", lf.col("id") < 0, 0)
    check(f"NOT (id < {ROWS})", lf.col("id") >= ROWS, FILES - 1)
    check(f"id > {ROWS} OR v = 'v1'", (lf.col("id") > ROWS) | (lf.col("v") == "v1"), FILES)   # v's stats span all
