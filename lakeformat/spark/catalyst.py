"""JVM objects of the native paths that PySpark has no function for, or builds slowly, made in the
driver's JVM (classic Spark).

Two per-row operations are cheaper as Catalyst's own expressions than through any public function:

- a timestamp's raw microseconds: every public route from ``TIMESTAMP_NTZ`` to a number
  (``cast``, ``unix_micros``, ``second``, ``timestampdiff``) goes through a ``LocalDateTime`` per
  row; ``PreciseTimestampConversion``, which Spark's own ``window`` uses, reinterprets the long;
- a large array literal: ``functions.lit`` of a ``long[]`` boxes every element (see
  :func:`long_array`).

And a list of strings (the files of a scan) crosses Py4J as one string, split in the JVM: PySpark
sends a list element by element, a round trip each (33 ms for 1,000 paths, against 0.4 ms).

The expressions are internal classes of the pinned Spark version; the tests of the native paths
exercise them, so a Spark upgrade that moves them fails there, not in a user's job.
"""
from __future__ import annotations

import functools
import tempfile
from collections.abc import Sequence

import numpy as np
from py4j.java_gateway import JavaClass
from pyspark.sql import Column

_EXPRESSIONS = "org.apache.spark.sql.catalyst.expressions."


def _class(spark, name: str) -> JavaClass:
    """The class ``name`` in the driver's JVM. Reached as ``jvm.org.apache...``, each dot is a Py4J
    round trip to ask the JVM whether the name is a package or a class (a dozen for one
    expression); held per gateway here, a class costs none and a static member one, once."""
    return _held_class(spark._jvm._gateway_client, name)


def static(spark, name: str):
    """The static method or field ``name`` (``package.Class.member``) in the driver's JVM."""
    cls, member = name.rsplit(".", 1)
    return _held_member(spark._jvm._gateway_client, cls, member)


@functools.cache
def _held_class(client, name: str) -> JavaClass:
    return JavaClass(name, client)


@functools.cache
def _held_member(client, cls: str, member: str):
    return getattr(_held_class(client, cls), member)


def _column(spark, expression) -> Column:
    return Column(static(spark, "org.apache.spark.sql.classic.ExpressionUtils.column")(expression))


def _type(spark, ddl: str):
    return static(spark, "org.apache.spark.sql.types.DataType.fromDDL")(ddl)


def reinterpret(spark, c: Column, from_ddl: str, to_ddl: str) -> Column:
    """``c`` of type ``from_ddl`` read as ``to_ddl`` with its bits unchanged: a timestamp (``timestamp``
    or ``timestamp_ntz``) as its ``bigint`` microseconds since the epoch, or back."""
    expression = static(spark, "org.apache.spark.sql.classic.ExpressionUtils.expression")(c._jc)
    conversion = _class(spark, _EXPRESSIONS + "PreciseTimestampConversion")(
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
    longs = spark.sparkContext._gateway.new_array(spark._jvm.long, len(words))
    with tempfile.NamedTemporaryFile(prefix="lakeformat-", suffix=".words") as f:
        f.write(words.astype(">i8").tobytes())
        f.flush()
        file = _class(spark, "java.io.RandomAccessFile")(f.name, "r")
        try:
            read_only = static(spark, "java.nio.channels.FileChannel$MapMode.READ_ONLY")
            file.getChannel().map(read_only, 0, len(words) * 8).asLongBuffer().get(longs)
        finally:
            file.close()
    array_type = static(spark, "org.apache.spark.sql.types.DataTypes.createArrayType")(_type(spark, "bigint"), False)
    unsafe = static(spark, _EXPRESSIONS + "UnsafeArrayData.fromPrimitiveArray")(longs)
    return _column(spark, _class(spark, _EXPRESSIONS + "Literal")(unsafe, array_type))


def string_array(spark, strings: Sequence[str]):
    """``strings`` (none empty) as a Java ``String[]`` in the driver's JVM, in one round trip: joined
    by NUL, which no path or name holds, and split there."""
    split = static(spark, "org.apache.commons.lang3.StringUtils.splitPreserveAllTokens")
    return split("\0".join(strings), "\0")
