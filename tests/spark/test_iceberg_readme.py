"""Iceberg readers over a table written by Spark through lakeformat (docs/compatibility.md), queried with
PyIceberg (and DuckDB) as Iceberg."""
import pyarrow as pa
from pyiceberg.table import StaticTable

import lakeformat as lf
import lakeformat.spark as lfs
from tests.iceberg.readers import duckdb_rows, lakeformat_rows, pyiceberg_rows


def test_spark_written_table_read_by_pyiceberg(spark, tmp_path):
    wh = str(tmp_path / "wh")
    cat = lf.Catalog(wh)
    cat.create_database("db")
    t = cat.create_table("db.orders", pa.schema([("id", pa.int64()), ("status", pa.string()), ("dt", pa.string())]),
                         partition_keys=["dt"], options={"metadata.iceberg.storage": "table-location"})
    lfs.write(spark.createDataFrame([(1, "SUBMITTED", "2024-06-01"), (2, "COMPLETED", "2024-06-01")],
                                    "id bigint, status string, dt string"), "db.orders", warehouse=wh)
    ice = StaticTable.from_metadata(f"{t.path}/metadata/v1.metadata.json")
    assert ice.scan(row_filter="status = 'COMPLETED'").to_arrow().to_pylist() == [
        {"id": 2, "status": "COMPLETED", "dt": "2024-06-01"}]
    df = spark.createDataFrame([(3, "COMPLETED", "2024-06-02")], "id bigint, status string, dt string")
    df.write.format("lakeformat").option("warehouse", wh).option("table", "db.orders").mode("append").save()
    assert pyiceberg_rows(t) == lakeformat_rows(t) == duckdb_rows(t, location=t.path)
    assert len(pyiceberg_rows(t, 1)) == 2
