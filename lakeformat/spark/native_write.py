"""Append writes that move their bytes in the JVM: Spark's own Parquet writer writes the files,
the driver puts them into the table's layout and commits them with statistics from their footers.

For bucket-unaware append tables (``bucket = -1``, no primary key) there is nothing to route:
any row may go into any file of its partition. So the rows are written by Spark's Parquet writer
into a staging directory inside the table, with the table's field ids, compression and timestamp
encoding, each file holding one partition's rows: where the session has lakeformat's jar
(:mod:`lakeformat.spark.jar`) each task routes its rows to a file per partition itself, else
Spark's ``partitionBy`` does, by copies of the partition columns (so the files keep every
column). The driver then reads each new file's footer (row count, per-column min, max and null
count; the partition value from the file's first row), moves the file into
``<partition>/bucket-0/data-<uuid>-<n>.parquet`` and commits them all as one snapshot, through
the same commit as the Python path: ``commit-user`` + ``commit-identifier`` exactly once, overwrite,
stage. If the Spark job or the commit fails, the files are deleted and the table is unchanged.

Types whose Parquet encoding in Spark differs from Paimon's (``TIME``, nested types, timestamps
finer than microseconds) keep the Python path.
"""
from __future__ import annotations

import contextlib
import logging
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Optional
from collections.abc import Mapping, Sequence

import pyarrow.parquet as pq
from pyspark.sql import functions as F

from lakeformat.format import options as O
from lakeformat.format import types as T
from lakeformat.format.binary_row import serialize_row
from lakeformat.format.commit_message import CommitMessage
from lakeformat.format.manifest import DataFileMeta, SimpleStats
from lakeformat.io.data_file import STATS_TRUNCATE, _truncate_max
from lakeformat.io.fileio import join
from lakeformat.spark import catalyst, jar
from lakeformat.spark.options import SourceOptions
from lakeformat.spark.sink import CLOCK_SKEW_MILLIS, TaskCommit, commit_job

log = logging.getLogger(__name__)
STAGING_PREFIX = "_spark-staging-"
_PART = "__lakeformat_p"
_TIMESTAMPS = ("TIMESTAMP", "TIMESTAMP_LTZ")
# Session settings of every native write, whatever the session said before. Paimon's dates and
# timestamps count days and microseconds in the proleptic Gregorian calendar, as Spark 3+ does:
# written as they are (in EXCEPTION mode, Spark 3's default, Spark refused dates before 1582-10-15,
# and LEGACY shifted them into the Julian calendar: a date of 1500 read back ten days late). Field
# ids are written even where the session turned them off: lakeformat maps renamed columns by them.
# Timestamps are Paimon's INT64, never INT96.
WRITE_CONFS = {"spark.sql.parquet.datetimeRebaseModeInWrite": "CORRECTED",
               "spark.sql.parquet.fieldId.write.enabled": "true",
               "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS"}
CONCURRENT_FILES = 64   # open files per task (then the routing closes the least recently used, Spark sorts)
# without the jar: a task keeps one open file per partition instead of Spark sorting all its rows by partition
CONCURRENT_WRITERS = {"spark.sql.optimizer.plannedWrite.enabled": "false",
                      "spark.sql.maxConcurrentOutputFileWriters": str(CONCURRENT_FILES)}


def native_write_refusal(table) -> Optional[str]:
    """None if ``table`` takes native writes, else why not (the Python path is used)."""
    s = table.schema
    if s.primary_keys or s.num_buckets > 0:
        return "rows are routed to buckets"
    if table.typed_options.get(O.FILE_FORMAT) != "parquet":
        return "the table's file format is not Parquet"
    if table.io.scheme != "file":
        return "the table is not on a local or shared file system"
    for f in s.fields:
        t = f.type
        if not isinstance(t, T.AtomicType) or t.root == "TIME":
            return f"column {f.name!r} has type {t}, which Spark encodes differently from Paimon"
        if t.root in _TIMESTAMPS and t.params[0] > 6:
            return f"column {f.name!r} holds nanoseconds, which Spark does not"
    return None


def _to_millis(spark, c, root: str):
    """``c`` truncated to milliseconds (floored, as Paimon's writers do), keeping its type: its
    microseconds since the epoch, reinterpreted as a long, less their remainder modulo 1000. For
    TIMESTAMP (Spark's TIMESTAMP_NTZ, a wall-clock time) the long is the wall-clock reading
    itself, so no time zone enters: converting to an instant to use ``date_trunc`` shifted the
    value into the session's zone and failed in a DST gap, and every public route to the number
    costs a ``LocalDateTime`` per row (twice the CPU of this at 10M rows)."""
    ddl = "timestamp" if root == "TIMESTAMP_LTZ" else "timestamp_ntz"
    micros = catalyst.reinterpret(spark, c, ddl, "bigint")
    return catalyst.reinterpret(spark, micros - F.pmod(micros, F.lit(1000)), "bigint", ddl)


def quoted(name: str) -> str:
    """``name`` as a Spark column reference, whatever characters it holds."""
    return "`" + name.replace("`", "``") + "`"


def _file_columns(df, columns: Sequence, table, partition_copies: bool):
    """``df`` projected once to what the files hold: ``columns`` (the table's columns as Columns
    of ``df``, in its types) named and carrying Paimon's field ids, millisecond timestamps
    truncated like Paimon's writers, plus, if ``partition_copies``, copies of the partition
    columns for Spark's partitioned layout (returned with their names)."""
    cols = []
    for f, c in zip(table.schema.fields, columns):
        if f.type.root in _TIMESTAMPS and f.type.params[0] <= 3:
            c = _to_millis(df.sparkSession, c, f.type.root)
        cols.append(c.alias(f.name, metadata={"parquet.field.id": f.id}))
    keys = table.partition_keys if partition_copies else []
    parts = [_partition_copy(columns[table.schema.names.index(k)], table.schema.field(k).type).alias(f"{_PART}{i}")
             for i, k in enumerate(keys)]
    return df.select(*cols, *parts), [f"{_PART}{i}" for i in range(len(parts))]


def _partition_copy(c, t: T.DataType):
    """A copy of partition column ``c`` that Spark's ``partitionBy`` tells apart exactly as Paimon
    does: Spark puts NULL and '' (or an empty binary) into one directory, and formats an instant in
    the session's time zone, where the two instants of a wall-clock time the clocks go back over
    read alike. The driver takes each file's partition from its first row, so rows that shared a
    directory would have been committed under the first row's partition."""
    root = t.root if isinstance(t, T.AtomicType) else None   # partition columns are atomic
    if root in ("CHAR", "VARCHAR"):
        return F.concat(F.lit("v"), c)
    if root in ("BINARY", "VARBINARY"):
        return F.concat(F.lit("v"), F.hex(c))
    if root == "TIMESTAMP_LTZ":
        return F.unix_micros(c)
    return c


def _spark_write(df, columns: Sequence, table, staging: str) -> None:
    spark = df.sparkSession
    routed = bool(table.partition_keys) and jar.loadable(spark, jar.PARTITION_ROUTING)
    if table.partition_keys and not routed:
        log.info("lakeformat's Spark jar is not on this session's classpath (spark.jars, see "
                 "lakeformat.spark.jar_path()): %s is written through Spark's partitionBy, which is slower", table.name)
    out, part_cols = _file_columns(df, columns, table, partition_copies=not routed)
    codec = table.options.get("file.compression", "zstd")
    w = out.write.mode("errorifexists").option("compression", codec)
    if codec == "zstd":
        w = w.option("parquet.compression.codec.zstd.level", table.options.get("file.compression.zstd-level", "1"))
    path = "file://" + table.io._p(staging)
    if routed:
        ordinals = ",".join(str(table.schema.names.index(k)) for k in table.partition_keys)
        with session_confs(spark, WRITE_CONFS):
            (w.format(jar.PARTITION_ROUTING).option("lakeformat.partition.ordinals", ordinals)
             .option("lakeformat.partition.max-open-files", str(CONCURRENT_FILES)).save(path))
        return
    if part_cols:
        w = w.partitionBy(*part_cols)
    with session_confs(spark, {**WRITE_CONFS, **CONCURRENT_WRITERS}):
        w.parquet(path)


@contextlib.contextmanager
def session_confs(spark, confs: Mapping[str, str]):
    """``confs`` set on the session for the block, then each put back as it was."""
    before = {k: spark.conf.get(k, None) for k in confs}
    for k, v in confs.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def _staged_files(table, staging: str) -> list[str]:
    out, todo = [], [staging]
    while todo:
        for info in table.io.list_dir(todo.pop()):
            if info.is_file and info.base_name.endswith(".parquet"):
                out.append(info.path)
            elif not info.is_file:
                todo.append(info.path)
    return sorted(out)


def _stat(v, t: T.AtomicType):
    """A footer statistic in the form manifests store, or None when it cannot be trusted."""
    r = t.root
    if r in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
        return v
    if r in _TIMESTAMPS:
        if not hasattr(v, "tzinfo"):
            return None
        return v.replace(tzinfo=None) if r == "TIMESTAMP" else v
    if r in ("FLOAT", "DOUBLE") and v != v:
        return None
    return v


_TRUNCATED = ("CHAR", "VARCHAR", "BINARY", "VARBINARY")   # types whose statistics are cut to STATS_TRUNCATE


def footer_meta(table, path: str, name: str) -> tuple[list, DataFileMeta]:
    """(the file's partition values, its DataFileMeta) from its footer and first row."""
    schema = table.schema
    with table.io.open_input(path) as src:
        pf = pq.ParquetFile(src, page_checksum_verification=True)   # Spark writes page checksums
        md = pf.metadata
        parts = (pf.read_row_group(0, columns=schema.partition_keys).slice(0, 1).to_pylist()[0]
                 if schema.partition_keys and md.num_row_groups else {})
    index = {md.schema.column(j).path: j for j in range(md.num_columns)}
    mins: list = []
    maxs: list = []
    nulls: list[Optional[int]] = []
    for f in schema.fields:
        j = index[f.name]
        lo = hi = None
        count: Optional[int] = 0
        known = True
        for g in range(md.num_row_groups):
            st = md.row_group(g).column(j).statistics
            if st is None or not st.has_null_count:
                known, count = False, None
                break
            count = (count or 0) + st.null_count
            if st.has_min_max:
                a, b = _stat(st.min, f.type), _stat(st.max, f.type)
                if a is None or b is None:
                    known = False
                elif known:
                    lo = a if lo is None else min(lo, a)
                    hi = b if hi is None else max(hi, b)
            elif st.null_count != md.row_group(g).num_rows:
                known = False
        if not known:
            lo = hi = None
        elif lo is not None and hi is not None and getattr(f.type, "root", None) in _TRUNCATED:
            lo = lo[:STATS_TRUNCATE]
            hi = hi if len(hi) <= STATS_TRUNCATE else _truncate_max(hi)
        mins.append(lo)
        maxs.append(hi)
        nulls.append(count)
    types = [f.type for f in schema.fields]
    stats = SimpleStats(serialize_row(mins, types), serialize_row(maxs, types),
                        None if any(n is None for n in nulls) else tuple(nulls))
    rows = md.num_rows
    meta = DataFileMeta(file_name=name, file_size=table.io.file_size(path), row_count=rows, value_stats=stats,
                        min_sequence_number=0, max_sequence_number=max(rows - 1, 0), schema_id=schema.id,
                        level=0, creation_time_millis=int(time.time() * 1000))
    return [parts[k] for k in schema.partition_keys], meta


def _place(table, staged: Sequence[str], threads: int = 8) -> list[CommitMessage]:
    """Move staged files into their bucket directories; one message per partition."""
    prefix = f"data-{uuid.uuid4()}-"
    part_types = [f.type for f in table.schema.partition_fields]

    def place(item):
        i, path = item
        name = f"{prefix}{i}.parquet"
        values, meta = footer_meta(table, path, name)
        d = table.bucket_dir(values, 0)
        table.io.mkdirs(d)
        table.io.move(path, join(d, name))
        return serialize_row(values, part_types), meta

    with ThreadPoolExecutor(max(1, min(threads, len(staged)))) as pool:
        placed = list(pool.map(place, enumerate(staged)))
    by_partition: dict[bytes, list[DataFileMeta]] = {}
    for part, meta in placed:
        if meta.row_count:
            by_partition.setdefault(part, []).append(meta)
    return [CommitMessage(p, 0, table.schema.num_buckets, tuple(files)) for p, files in by_partition.items()]


def write_native(df, columns: Sequence, table, opts: SourceOptions, overwrite: bool) -> None:
    """Write ``columns`` of ``df`` (the table's columns, in order, in its types, e.g.
    :func:`lakeformat.spark.dataframe.aligned_columns`) into ``table`` with Spark's Parquet
    writer and commit them (see the module docstring)."""
    since = int(time.time() * 1000) - CLOCK_SKEW_MILLIS
    commit_user = opts.write.commit_user or f"spark-{uuid.uuid4()}"
    staging = join(table.path, f"{STAGING_PREFIX}{uuid.uuid4()}")
    messages: list[CommitMessage] = []
    try:
        _spark_write(df, columns, table, staging)
        messages = _place(table, _staged_files(table, staging))
    except BaseException:
        table.new_commit().abort(messages)
        raise
    finally:
        table.io.delete_dir(staging)
    rows = sum(f.row_count for m in messages for f in m.new_files)
    commit_job(opts, table.schema.id, commit_user, overwrite, [TaskCommit(tuple(messages), rows)], since)
