"""lakeformat on Spark: the ``lakeformat`` data source and helpers (this subpackage imports
pyspark; the rest of lakeformat never does).

    import lakeformat.spark as lfs
    lfs.register(spark)
    df = spark.read.format("lakeformat").option("warehouse", wh).option("table", "db.t").load()
    lfs.write(df, "db.t", warehouse=wh)              # shuffled by partition and bucket first
    lfs.prepare(stream_df, "db.t", warehouse=wh).writeStream.format("lakeformat")...   # same, for streams
"""
from __future__ import annotations

from lakeformat.spark.dataframe import prepare, write
from lakeformat.spark.source import NAME, LakeformatDataSource

__all__ = ["register", "write", "prepare", "LakeformatDataSource", "NAME"]


def register(spark) -> None:
    """Make ``format("lakeformat")`` available in ``spark`` and let Spark push filters into it.
    The registered class carries the session's default parallelism (the planning processes
    cannot ask the session), so reads of a few files still use every core."""
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    try:
        parallelism = spark.sparkContext.defaultParallelism
    except Exception:   # Spark Connect: no SparkContext
        parallelism = None
    # a class of its own (pickled by value) so the setting travels with it
    source = type("LakeformatSessionSource", (LakeformatDataSource,), {"default_parallelism": parallelism})
    spark.dataSource.register(source)
