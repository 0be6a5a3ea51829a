"""The ``lakeformat`` data source: ``spark.read``/``readStream``/``write``/``writeStream``
``.format("lakeformat")``, built on PySpark's Python Data Source API.

In a session with lakeformat's jar, ``format("lakeformat")`` is the jar's provider
(``lakeformat.spark.LakeformatSource``, :mod:`lakeformat.spark.format_native`): Spark refuses a
name that both a JVM provider and a Python data source have, so there this source is registered as
:data:`PYTHON_NAME` only, and the provider hands it the reads Spark's Parquet scan cannot do and
every stream. Without the jar it is ``format("lakeformat")`` too.

Planning (``schema``, ``pushFilters``, ``partitions``, ``commit``) runs in Python processes the
driver starts; ``read`` and ``write`` run in executors' Python workers. Everything handed between
them is pickled, so readers and writers carry parsed options and planned units, never open
tables: each process opens the table itself (once, see ``TableRef.open``).

Column pruning: Python data sources are not told which columns a query uses, so the columns to
read are those of a schema the reader is given (``spark.read.schema("a BIGINT, b STRING")``) or
the ``columns`` option; without either, every column is read.
"""
from __future__ import annotations

import logging
import os
import sys
from typing import Optional

from pyspark.sql.datasource import DataSource, DataSourceReader
from pyspark.sql.types import StructType

from lakeformat.errors import LakeformatError
from lakeformat.format import predicate as P
from lakeformat.spark import jar
from lakeformat.spark import scan as S
from lakeformat.spark.filters import push
from lakeformat.spark.options import SourceOptions, parse
from lakeformat.spark.read import read_partition, requested_columns
from lakeformat.spark.sink import BatchWriter, StreamWriter, stream_commit_user
from lakeformat.spark.stream import StreamReader
from lakeformat.spark.tables import open_or_create
from lakeformat.spark.types import spark_arrow_schema, spark_schema

NAME = "lakeformat"
PYTHON_NAME = "lakeformat_python"   # always this source, with or without the jar
NATIVE_SOURCE = "lakeformat.spark.LakeformatSource"
log = logging.getLogger(__name__)


class BatchReader(DataSourceReader):
    def __init__(self, opts: SourceOptions, table, schema: StructType, parallelism: int):
        self.opts, self.parallelism = opts, parallelism
        self.schema_id = table.schema.id
        self.columns, self.row_kind = requested_columns(table, schema)
        self.target = spark_arrow_schema(schema)
        self.predicate: Optional[P.Predicate] = None

    def pushFilters(self, filters):
        table = self.opts.table.open(self.schema_id)
        predicate, rest = push(filters, table.schema)
        self.predicate = predicate
        return rest

    def partitions(self):
        table = self.opts.table.open(self.schema_id)
        spec = self.opts.read
        if spec.start_snapshot is not None:   # incremental
            end = spec.end_snapshot if spec.end_snapshot is not None else (table.snapshot_manager.latest_id() or 0)
            units = S.change_units(table, spec.start_snapshot, end, self.predicate)
        else:
            units = S.snapshot_units(table, S.resolve_snapshot(table, spec), self.predicate)
        return S.partitions(table, units, self.parallelism)

    def read(self, partition):
        return read_partition(self.opts, self.columns, self.predicate, self.row_kind, partition, self.schema_id,
                              self.target)


class LakeformatDataSource(DataSource):
    """Options: ``warehouse`` + ``table`` (``db.name``) or a path; ``s3.*`` and ``lock.*`` catalog
    options; reads: ``snapshot-id``, ``as-of-timestamp``, ``tag``, ``start-snapshot`` /
    ``end-snapshot``, ``columns``, ``read.changelog``, and for streams ``consumer-id`` and
    ``scan.mode``; writes: ``commit-user``, ``commit-identifier``, ``overwrite-partition``,
    ``stage-id``; any table option for this job only (e.g. ``write-only``); a missing table is
    created from the DataFrame with ``primary-key``, ``partition`` and table options
    (``lakeformat.spark.tables``)."""

    default_parallelism: Optional[int] = None   # the session's, set by register()

    @classmethod
    def name(cls) -> str:
        return NAME

    def _parallelism(self) -> int:
        return self.default_parallelism or os.cpu_count() or 1

    def _parsed(self) -> SourceOptions:
        return parse(self.options)

    def schema(self) -> StructType:
        opts = self._parsed()
        table = opts.table.open()
        names = opts.read.columns or tuple(table.schema.names)
        return spark_schema([table.schema.field(n) for n in names], opts.read.changelog)

    def reader(self, schema: StructType) -> BatchReader:
        opts = self._parsed()
        if opts.read.consumer_id is not None:
            raise LakeformatError("option 'consumer-id' records a stream's progress: use it with spark.readStream")
        return BatchReader(opts, opts.table.open(), schema, self._parallelism())

    def writer(self, schema: StructType, overwrite: bool):
        opts = parse(open_or_create(self.options, schema))   # creates a missing table
        if opts.write.static_partition is not None and not overwrite:
            raise LakeformatError("option 'overwrite-partition' replaces a partition: use it with mode('overwrite')")
        return BatchWriter(opts, opts.table.open().schema.id, overwrite)

    def streamReader(self, schema: StructType):
        opts = self._parsed()
        spec = opts.read
        if spec.snapshot_id is not None or spec.as_of_millis is not None or spec.tag is not None \
                or spec.end_snapshot is not None:
            raise LakeformatError("a stream follows the table from its start: 'snapshot-id', 'as-of-timestamp', "
                                  "'tag' and 'end-snapshot' are for batch reads (use 'start-snapshot')")
        table = opts.table.open()
        columns, row_kind = requested_columns(table, schema)
        return StreamReader(opts, columns, None, row_kind, self._parallelism())

    def streamWriter(self, schema: StructType, overwrite: bool):
        if overwrite:
            raise LakeformatError("a stream into lakeformat appends (or upserts into a primary-key table); "
                                  "complete output mode is not supported")
        opts = self._parsed()
        return StreamWriter(opts, opts.table.open().schema.id, stream_commit_user(opts, self.options))


def _worker_python(spark) -> None:
    """Spark starts its Python workers with ``$PYSPARK_PYTHON``, by default ``python3`` from
    PATH: from a plain shell (``.venv/bin/python script.py``) that is not the interpreter that
    has lakeformat, and every read fails inside a worker. When the user chose no worker Python
    and the workers run on this machine, they use this interpreter (functions registered from
    now on carry it); otherwise nothing is changed."""
    if os.environ.get("PYSPARK_PYTHON"):
        return
    try:
        sc = spark.sparkContext
    except Exception:   # Spark Connect: the server chooses its Python
        return
    if sc.master.startswith("local"):
        sc.pythonExec = sys.executable


def register(spark) -> None:
    """Make this source available in ``spark`` as :data:`PYTHON_NAME`, and as ``lakeformat`` when
    the session has no lakeformat jar (said once in the log), and let Spark push filters into it.
    The registered class carries the session's default parallelism (the planning processes
    cannot ask the session), so reads of a few files still use every core."""
    _worker_python(spark)
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    try:
        parallelism = spark.sparkContext.defaultParallelism
    except Exception:   # Spark Connect: no SparkContext
        parallelism = None
    names = [PYTHON_NAME] if _has_jar(spark) else [PYTHON_NAME, NAME]
    for name in names:
        # a class of its own (pickled by value) so the settings travel with it
        source = type("LakeformatSessionSource", (LakeformatDataSource,),
                      {"default_parallelism": parallelism, "name": classmethod(lambda cls, n=name: n)})
        spark.dataSource.register(source)


_SAID: set = set()


def _has_jar(spark) -> bool:
    """Whether ``format("lakeformat")`` is the jar's provider in ``spark`` (classic Spark only)."""
    try:
        found = jar.loadable(spark, NATIVE_SOURCE)
    except Exception:   # Spark Connect: the driver's JVM is not this process's to ask
        found = False
    if not found and "jar" not in _SAID:
        _SAID.add("jar")
        log.info("lakeformat: the Spark session has no lakeformat jar (lakeformat.spark.jar_path()): "
                 "format('lakeformat') is the Python data source (rows cross into Python workers)")
    return found
