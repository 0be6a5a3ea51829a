"""lakeformat on Spark: the ``lakeformat`` data source and helpers (this subpackage imports
pyspark; the rest of lakeformat never does).

    import lakeformat.spark as lfs
    lfs.register(spark)
    df = spark.read.format("lakeformat").option("warehouse", wh).option("table", "db.t").load()
    lfs.write(df, "db.t", warehouse=wh)              # shuffled by partition and bucket first
"""
from __future__ import annotations

from lakeformat.spark.dataframe import write
from lakeformat.spark.source import NAME, LakeformatDataSource

__all__ = ["register", "write", "LakeformatDataSource", "NAME"]


def register(spark) -> None:
    """Make ``format("lakeformat")`` available in ``spark`` and let Spark push filters into it."""
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(LakeformatDataSource)
