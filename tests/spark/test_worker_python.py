"""A script run from a plain shell (``.venv/bin/python script.py``, no activated environment,
so ``python3`` on PATH is the system's) reads a lakeformat table through Spark: ``register()``
points Spark's local Python workers at the interpreter that has lakeformat."""
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import lakeformat as lf

pytestmark = pytest.mark.slow   # a SparkSession of its own

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import sys
import lakeformat.spark as lfs
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
lfs.register(spark)
df = spark.read.format("lakeformat").option("warehouse", sys.argv[1]).option("table", "db.t").load()
print("ROWS", sorted(r.a for r in df.collect()))
spark.stop()
"""


def test_script_from_a_plain_shell_reads_through_spark(tmp_path):
    wh = str(tmp_path / "wh")
    cat = lf.Catalog(wh)
    cat.create_database("db")
    cat.create_table("db.t", pa.schema([("a", pa.int64())])).write(pa.table({"a": [3, 1, 2]}))
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": os.environ.get("PYTHONPATH", str(ROOT))}
    proc = subprocess.run([sys.executable, str(script), wh], env=env, capture_output=True, text=True, timeout=600)
    assert "ROWS [1, 2, 3]" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-4000:]
