"""Catalyst expressions PySpark has no function for, built in the driver's JVM (classic Spark).

Two per-row operations of the native paths are cheaper as Catalyst's own expressions than
through any public function:

- a timestamp's raw microseconds: every public route from ``TIMESTAMP_NTZ`` to a number
  (``cast``, ``unix_micros``, ``second``, ``timestampdiff``) goes through a ``LocalDateTime`` per
  row; ``PreciseTimestampConversion``, which Spark's own ``window`` uses, reinterprets the long;
- a large array literal: ``functions.lit`` of a ``long[]`` boxes every element (see
  :func:`long_array`).

Both are internal classes of the pinned Spark version; the tests of the native paths exercise
them, so a Spark upgrade that moves them fails there, not in a user's job.
"""
from __future__ import annotations

import tempfile

import numpy as np
from pyspark.sql import Column


def _column(spark, expression) -> Column:
    return Column(spark._jvm.org.apache.spark.sql.classic.ExpressionUtils.column(expression))


def _type(spark, ddl: str):
    return spark._jvm.org.apache.spark.sql.types.DataType.fromDDL(ddl)


def reinterpret(spark, c: Column, from_ddl: str, to_ddl: str) -> Column:
    """``c`` of type ``from_ddl`` read as ``to_ddl`` with its bits unchanged: a timestamp (``timestamp``
    or ``timestamp_ntz``) as its ``bigint`` microseconds since the epoch, or back."""
    jvm = spark._jvm
    expression = jvm.org.apache.spark.sql.classic.ExpressionUtils.expression(c._jc)
    conversion = jvm.org.apache.spark.sql.catalyst.expressions.PreciseTimestampConversion(
        expression, _type(spark, from_ddl), _type(spark, to_ddl))
    return _column(spark, conversion)


def long_array(spark, words: np.ndarray) -> Column:
    """A non-null ``array<bigint>`` literal of ``words``, held in the JVM as one ``UnsafeArrayData``.
    ``functions.lit`` of a ``long[]`` boxes every word into a ``GenericArrayData``: each row's
    lookup then follows a pointer, the task binary carries the words as Java objects, and every
    query's plan description, built on each execution, prints them all (11 MB and 0.3 s for
    10M rows); the unsafe array is contiguous, serialises as bytes and prints as its class.
    The words reach the JVM through a temporary file it maps (the driver's JVM runs beside this
    process): Py4J sends a byte string as base64 text, 13 ms for 1.25 MB against 4 ms."""
    jvm = spark._jvm
    longs = spark.sparkContext._gateway.new_array(jvm.long, len(words))
    with tempfile.NamedTemporaryFile(prefix="lakeformat-", suffix=".words") as f:
        f.write(words.astype(">i8").tobytes())
        f.flush()
        file = jvm.java.io.RandomAccessFile(f.name, "r")
        try:
            read_only = getattr(jvm.java.nio.channels, "FileChannel$MapMode").READ_ONLY
            file.getChannel().map(read_only, 0, len(words) * 8).asLongBuffer().get(longs)
        finally:
            file.close()
    expressions, types = jvm.org.apache.spark.sql.catalyst.expressions, jvm.org.apache.spark.sql.types
    array_type = types.DataTypes.createArrayType(_type(spark, "bigint"), False)
    return _column(spark, expressions.Literal(expressions.UnsafeArrayData.fromPrimitiveArray(longs), array_type))
