"""lakeformat on Spark: the ``lakeformat`` data source and helpers (this subpackage imports
pyspark; the rest of lakeformat never does).

    import lakeformat.spark as lfs
    spark = SparkSession.builder.config("spark.jars", lfs.jar_path()).getOrCreate()   # the JVM half
    lfs.register(spark)       # also the planner of the SQL catalog, when the session configures one:
    # spark.sql.catalog.lf=lakeformat.spark.SparkCatalog, spark.sql.catalog.lf.warehouse=<wh>
    spark.sql("SELECT dt, count(*) FROM lf.db.t GROUP BY dt")      # Spark's own Parquet scan
    df = spark.read.format("lakeformat").option("warehouse", wh).option("table", "db.t").load()
    lfs.write(df, "db.t", warehouse=wh)              # shuffled by partition and bucket first
    lfs.read_table(spark, "db.t", warehouse=wh)      # Spark's own Parquet reader where no merge is needed
    lfs.create_table("db.t", df.schema, warehouse=wh, primary_keys=["id"], options={"bucket": "4"})
    lfs.prepare(stream_df, "db.t", warehouse=wh).writeStream.format("lakeformat")...   # same, for streams
"""
from __future__ import annotations

from lakeformat.spark.dataframe import prepare, write
from lakeformat.spark.jar import jar_path
from lakeformat.spark.native_read import read_table
from lakeformat.spark.source import NAME, LakeformatDataSource
from lakeformat.spark.format_native import register
from lakeformat.spark.tables import create_table

__all__ = ["register", "jar_path", "write", "prepare", "read_table", "create_table", "LakeformatDataSource", "NAME"]
