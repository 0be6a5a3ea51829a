"""One real local SparkSession for the whole test run (JVM start-up is the expensive part):
local[2], two shuffle partitions, no UI, quiet logs, Python workers from this interpreter, lakeformat's
jar on the classpath; and a SQL catalog of its own per test (``lf_sql``)."""
import itertools
import os
import sys

import pytest

_catalog_names = itertools.count()


@pytest.fixture(scope="session")
def spark():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import lakeformat.spark as lfs
    session = (SparkSession.builder.master("local[2]").appName("lakeformat-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2")
               .config("spark.log.level", "ERROR")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.memory", "1g")
               .config("spark.jars", lfs.jar_path())
               .getOrCreate())
    lfs.register(session)
    yield session
    session.stop()


@pytest.fixture
def lf_sql(spark, catalog):
    """The name of a lakeformat SQL catalog over this test's warehouse: a new name per test, since
    Spark keeps a catalog it has loaded for the rest of the session."""
    from lakeformat.spark.sql import catalog_confs
    name = f"lf{next(_catalog_names)}"
    for k, v in catalog_confs(name, catalog.warehouse).items():
        spark.conf.set(k, v)
    return name
