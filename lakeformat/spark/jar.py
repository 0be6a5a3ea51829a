"""lakeformat's Spark jar: the JVM half of the native paths (sources in ``jvm/src``, built by
``make setup`` against the pinned Spark).

A session that has it on its classpath writes partitioned append tables through
:data:`PARTITION_ROUTING`, Spark's Parquet writer with each task routing its rows to one file per
partition itself, and reads files with deletion vectors through :data:`DELETION_VECTOR_READER`,
Spark's Parquet reader marking the deleted rows as it reads; it also holds the SQL catalog
``lakeformat.spark.SparkCatalog`` (:mod:`lakeformat.spark.sql`). A session without it writes and
reads the same rows through Spark's ``partitionBy`` and a filter on Spark's row index, more
slowly. Give it to a session with

    SparkSession.builder.config("spark.jars", lakeformat.spark.jar_path())
    spark-submit --jars "$(lakeformat jar-path)" ...
"""
from __future__ import annotations

from pathlib import Path

from py4j.protocol import Py4JJavaError

from lakeformat.errors import LakeformatError
from lakeformat.spark import catalyst

JAR = Path(__file__).with_name("lakeformat-spark.jar")
PARTITION_ROUTING = "lakeformat.spark.PartitionRoutingParquet"
DELETION_VECTOR_READER = "lakeformat.spark.DeletionVectorParquet"
VECTORS_OPTION = "lakeformat.deletion-vectors"
DELETED_COLUMN = "_lakeformat_deleted_row"   # the reader's last column: whether the row is deleted


def jar_path() -> str:
    """The jar's path, for ``spark.jars`` or ``spark-submit --jars``."""
    if not JAR.is_file():
        raise LakeformatError(f"lakeformat's Spark jar is not built ({JAR}): run `make jar` (needs a JDK)")
    return str(JAR)


def loadable(spark, name: str) -> bool:
    """Whether the session's driver loads the class ``name`` where Spark looks up data sources."""
    loader = catalyst.static(spark, "org.apache.spark.util.Utils.getContextOrSparkClassLoader")()
    try:
        catalyst.static(spark, "java.lang.Class.forName")(name, False, loader)
    except Py4JJavaError:
        return False
    return True
