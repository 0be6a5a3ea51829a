"""Rows handed to Spark in its Arrow layout: a value Spark's type cannot hold is refused by name."""
import pyarrow as pa
import pytest

from lakeformat.errors import UnsupportedTypeError
from lakeformat.spark.types import to_spark


def test_values_that_fit_are_cast():
    data = pa.table({"ts": pa.array([1_000], pa.timestamp("ns"))})
    out = to_spark(data, pa.schema([("ts", pa.timestamp("us"))]))
    assert out.column("ts").to_pylist()[0].microsecond == 1


def test_nanoseconds_spark_cannot_hold_are_refused_by_name():
    data = pa.table({"ts": pa.array([1_001], pa.timestamp("ns"))})
    with pytest.raises(UnsupportedTypeError, match=r"column 'ts'.*without loss"):
        to_spark(data, pa.schema([("ts", pa.timestamp("us"))]))
