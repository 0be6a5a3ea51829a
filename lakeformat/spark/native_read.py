"""Reads that move their bytes in the JVM: lakeformat plans, Spark's own Parquet reader reads.

    df = lfs.read_table(spark, "db.t", warehouse=wh, filter=lf.col("dt") == "2024-06-01")

lakeformat picks the snapshot, prunes partitions and files by their statistics and decides, per
file, whether it needs a merge. Files that need none (every file of an append table; a section
of a primary-key bucket that is one sorted run: one version per key, only deletes to drop) are
read by ``spark.read.parquet`` over exactly those files, so Spark's vectorised reader, its filter
pushdown into row groups and its column pruning apply (``explain()`` shows them). Sections whose
sorted runs overlap keep lakeformat's merge-on-read, run in Python workers (``mapInArrow``) and
unioned in. Files written under an older schema are read with that schema's names and types and
mapped to the current columns by field id (renamed, added, widened columns), as lakeformat's
own reader does.

Buckets of a deletion-vector table whose files need no merge (none at level 0, none holding
delete rows: Paimon's raw-convertible split; every file of an append table) are read natively
too: lakeformat's jar reads the files with deleted rows and marks the rows their vectors delete,
or, in a session without it, the scan keeps a row when its bit in a bitmap literal of the
vectors, found by Spark's ``_metadata.file_size`` and ``_metadata.row_index``, is clear (see
:mod:`lakeformat.spark.deleted_rows`). Tables on object stores are read on the Python path: Spark
would need its own connector.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Optional
from collections.abc import Mapping, Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, ByteType, LongType, StructField, StructType

from lakeformat.errors import SchemaError
from lakeformat.format import options as O
from lakeformat.format import predicate as P
from lakeformat.format import types as T
from lakeformat.format.index_manifest import IndexFileMeta
from lakeformat.format.manifest import DataFileMeta
from lakeformat.io.index_files import IndexFiles
from lakeformat.io.fileio import join
from lakeformat.mergetree.kv_file import DELETE, KIND, UPDATE_BEFORE
from lakeformat.mergetree.read import sections
from lakeformat.read.scan import Split
from lakeformat.read.split_read import raw_readable
from lakeformat.spark import catalyst, deleted_rows, jar
from lakeformat.spark import scan as S
from lakeformat.spark.dataframe import source_options
from lakeformat.spark.filters import to_spark_column
from lakeformat.spark.options import parse
from lakeformat.spark.read import read_partition
from lakeformat.spark.types import spark_field, spark_schema, spark_type


# Options of every native scan, whatever the session says. Paimon's dates and timestamps are in the
# proleptic Gregorian calendar: read as they are (a session in LEGACY mode read a date of 1500 nine
# days early: files other engines write carry no Spark version for Spark to tell their calendar by).
# A planned file that is corrupt or gone fails the read (a session ignoring such files returned the
# rest of the table without a word). Page checksums (lakeformat and Paimon Java write them) are
# verified, as lakeformat's own reader does: parquet-mr checks them only when its Hadoop conf asks,
# and a scan's options reach that conf.
SCAN_OPTIONS = {"datetimeRebaseMode": "CORRECTED", "int96RebaseMode": "CORRECTED",
                "ignoreCorruptFiles": "false", "ignoreMissingFiles": "false",
                "parquet.page.verify-checksum.enabled": "true"}


@dataclass(frozen=True)
class NativeFiles:
    """Files one ``spark.read.parquet`` reads: same schema, same layout."""

    schema_id: int
    key_value: bool       # primary-key files that may hold retractions: _VALUE_KIND says which rows are
    paths: tuple[str, ...]
    deletion_files: tuple[IndexFileMeta, ...] = ()   # vectors of these files' buckets, applied by row index
    row_counts: tuple[int, ...] = ()                  # of the files in paths, in their order
    file_sizes: tuple[int, ...] = ()                  # the same


@dataclass(frozen=True)
class ReadPlan:
    native: tuple[NativeFiles, ...]
    merged: tuple[S.ReadUnit, ...]      # sections that need lakeformat's merge-on-read
    reason: Optional[str] = None        # why nothing is read natively, when that is the case

    @property
    def native_files(self) -> int:
        return sum(len(g.paths) for g in self.native)


def _single_run(files: Sequence[DataFileMeta]) -> bool:
    """One version per key: one file, or files of one level above 0 (the merge reader's rule)."""
    return len(files) == 1 or all(f.level > 0 and f.level == files[0].level for f in files)


def _is_parquet(f: DataFileMeta) -> bool:
    return f.file_name.endswith(".parquet")


def _spark_casts_agree(table, schema_id: int) -> bool:
    """Files of ``schema_id`` need no cast beyond a widening, where Spark's cast and Paimon's agree;
    other changed types (STRING to BOOLEAN, DOUBLE to INT, ...) go through lakeformat's reader."""
    old = {f.id: f.type for f in table.schema_manager.get(schema_id).fields}
    return all(T.can_widen(T.with_nullable(old[f.id], True), T.with_nullable(f.type, True))
               for f in table.schema.fields if f.id in old)


def plan_read(table, splits: Sequence[Split]) -> ReadPlan:
    """Which planned files Spark reads natively and which sections lakeformat merges (pure)."""
    O.check_supported(table.schema.options, O.READ, table.name)
    dv_table = bool(table.typed_options.get(O.DELETION_VECTORS))
    native: dict[tuple[int, bool], list[str]] = {}
    row_counts: dict[tuple[int, bool], list[int]] = {}
    file_sizes: dict[tuple[int, bool], list[int]] = {}
    vectors: dict[tuple[int, bool], dict[str, IndexFileMeta]] = {}
    merged: list[S.ReadUnit] = []
    pk = bool(table.schema.primary_keys)
    key_of = table.key_decoder() if pk else None
    agree = functools.lru_cache(maxsize=None)(lambda schema_id: _spark_casts_agree(table, schema_id))
    positions = functools.lru_cache(maxsize=None)(
        lambda schema_id: deleted_rows.reads_row_index(table.schema_manager.get(schema_id).names))

    def retracts(f: DataFileMeta) -> bool:
        """A primary-key file that may hold deletes (its _VALUE_KIND is read and filtered); the
        count is unknown (None) in files of older writers. Files known to hold none skip both."""
        return pk and f.delete_row_count != 0

    def readable(files: Sequence[DataFileMeta]) -> bool:
        return all(_is_parquet(f) and agree(f.schema_id) for f in files)

    def positions_readable(files: Sequence[DataFileMeta]) -> bool:
        return all(positions(f.schema_id) for f in files)

    def add(f: DataFileMeta, bucket_dir: str, deletion_files: Sequence[IndexFileMeta] = ()) -> None:
        key = (f.schema_id, retracts(f))
        native.setdefault(key, []).append(join(bucket_dir, f.file_name))
        row_counts.setdefault(key, []).append(f.row_count)
        file_sizes.setdefault(key, []).append(f.file_size)
        vectors.setdefault(key, {}).update((m.file_name, m) for m in deletion_files)

    if table.typed_options.get(O.DATA_EVOLUTION):   # rows are merged from files of some columns
        return ReadPlan((), tuple(S.split_units(table, splits)))
    for s in splits:
        d = table.bucket_dir_of(s.partition_bytes, s.bucket)
        if dv_table and (not pk or raw_readable(s.files)) and readable(s.files) and positions_readable(s.files):
            for f in s.files:   # each row in one file, once: the vectors say which rows are gone
                add(f, d, s.deletion_files)
            continue
        groups = sections(s.files, key_of) if pk else [[f] for f in s.files]
        for files in groups:
            if not dv_table and _single_run(files) and readable(files):
                for f in files:
                    add(f, d)
            else:
                merged.append(S.ReadUnit(S.SECTION if pk else S.FILE, s, tuple(files)))
    native_groups = tuple(NativeFiles(sid, kv, tuple(paths), tuple(sorted(vectors.get((sid, kv), {}).values(),
                                                                   key=lambda m: m.file_name)),
                               tuple(row_counts.get((sid, kv), ())), tuple(file_sizes.get((sid, kv), ())))
                   for (sid, kv), paths in sorted(native.items()))
    return ReadPlan(native_groups, tuple(merged))


def spark_path(table, path: str) -> str:
    """A table path as the Hadoop path Spark reads."""
    return "file://" + table.io._p(path)


def native_available(table) -> Optional[str]:
    """None if Spark can read the table's files itself, else why not. Object stores would need
    Spark's own connector (hadoop-aws) configured like the catalog: lakeformat reads them."""
    if table.io.scheme == "file":
        return None
    return "the table is not on a local or shared file system"


def _native_frame(spark, table, group: NativeFiles, needed: Sequence[str]) -> DataFrame:
    """The group's files in the current schema's ``needed`` columns, found by field id."""
    file_schema = table.schema_manager.get(group.schema_id)
    by_id = {f.id: f for f in file_schema.fields}
    wanted = [table.schema.field(n) for n in needed]
    read = [spark_field(by_id[w.id]) for w in wanted if w.id in by_id]
    if group.key_value:
        read.append(StructField(KIND, ByteType(), False))

    def scan(paths: Sequence[str], row_index: bool = False, vectors: Optional[str] = None) -> DataFrame:
        files = catalyst.string_array(spark, [spark_path(table, p) for p in paths])
        if vectors is not None:
            reader = (spark.read.schema(StructType([*read, StructField(jar.DELETED_COLUMN, BooleanType(), False)]))
                      .options(**SCAN_OPTIONS).format(jar.DELETION_VECTOR_READER).option(jar.VECTORS_OPTION, vectors))
            return (DataFrame(reader._jreader.load(files), spark).where(~F.col(jar.DELETED_COLUMN))
                    .drop(jar.DELETED_COLUMN))
        fields = [*read, StructField(deleted_rows.ROW_INDEX, LongType(), True)] if row_index else read
        reader = spark.read.schema(StructType(fields)).options(**SCAN_OPTIONS)
        return DataFrame(reader._jreader.parquet(files), spark)
    if group.deletion_files:
        frames = deleted_rows.scans(spark, scan, group.paths, group.row_counts, group.file_sizes,
                                    _vectors(table, group))
        df = functools.reduce(DataFrame.union, frames)
    else:
        df = scan(group.paths)
    if group.key_value:
        df = df.where(~F.col(KIND).isin(DELETE, UPDATE_BEFORE)).drop(KIND)
    if all(w.id in by_id and by_id[w.id].name == w.name
           and spark_type(by_id[w.id].type) == spark_type(w.type) for w in wanted):
        return df   # the files' columns are the wanted ones: a projection would cost a Py4J call per node
    cols = []
    for w in wanted:
        target = spark_type(w.type)
        old = by_id.get(w.id)
        if old is None:
            cols.append(F.lit(None).cast(target).alias(w.name))
        else:
            c = F.col(f"`{old.name}`")
            cols.append((c if spark_type(old.type) == target else c.cast(target)).alias(w.name))
    return df.select(*cols)


def _vectors(table, group: NativeFiles) -> dict:
    """File name to the positions its deletion vector deletes, for the group's files."""
    names = {p.rsplit("/", 1)[-1] for p in group.paths}
    index_files = IndexFiles.of(table.ctx)
    out: dict[str, Any] = {}
    for meta in group.deletion_files:
        out.update((n, d) for n, d in index_files.read_deletion_vectors(meta).items() if n in names)
    return out


def _merged_frame(spark, opts, table, units: Sequence[S.ReadUnit], columns: Sequence[str],
                  predicate: Optional[P.Predicate]) -> DataFrame:
    """Merge-on-read sections in Python workers, one Spark task per packed bin of units."""
    bins = S.partitions(table, units, spark.sparkContext.defaultParallelism)
    schema = spark_schema([table.schema.field(c) for c in columns])
    schema_id = table.schema.id

    def read(batches):
        for b in batches:
            for i in b.column(0).to_pylist():
                yield from read_partition(opts, columns, predicate, False, bins[i], schema_id)
    return spark.range(len(bins), numPartitions=max(1, len(bins))).mapInArrow(read, schema)


def read_table(spark, table: str, *, warehouse: Optional[str] = None, columns: Optional[Sequence[str]] = None,
               filter: Optional[P.Predicate] = None, snapshot_id: Optional[int] = None, as_of=None,
               tag: Optional[str] = None, native: bool = True, options: Optional[Mapping[str, str]] = None,
               **catalog_options: str) -> DataFrame:
    """The rows of ``table`` (``"db.name"`` with ``warehouse``, or a path) as a DataFrame, at the
    latest snapshot or one given by ``snapshot_id``, ``as_of`` or ``tag``. ``filter`` (lakeformat's
    filter language) prunes partitions and files and filters rows; ``columns`` projects.
    ``native=False`` reads everything through lakeformat's own reader (the Python path)."""
    opts = parse(source_options(table, warehouse, options, catalog_options))
    scan = opts.table.open().scan(filter, columns, snapshot_id, as_of, tag)
    t = scan.table   # a snapshot travelled to is read with its own schema
    names = list(columns) if columns is not None else list(t.schema.names)
    known = set(t.schema.names)
    unknown = [c for c in (*names, *sorted(P.columns(filter))) if c not in known]
    if unknown:
        raise SchemaError(f"column(s) {unknown} are not in {t.name} (columns: {t.schema.names})")
    splits = scan.plan()
    plan = plan_read(t, splits)
    why_not = None if native else "native=False"
    why_not = why_not or native_available(t)
    if why_not is not None:
        plan = ReadPlan((), tuple(S.split_units(t, splits)), why_not)
    needed = names + [c for c in sorted(P.columns(filter)) if c not in names]
    frames = []
    for group in plan.native:
        df = _native_frame(spark, t, group, needed)
        if filter is not None:
            df = df.where(to_spark_column(filter, t.schema))
        frames.append(df if needed == names else df.select(*(F.col(f"`{n}`") for n in names)))
    if plan.merged:
        frames.append(_merged_frame(spark, opts, t, plan.merged, names, filter))
    if not frames:
        return spark.createDataFrame([], spark_schema([t.schema.field(c) for c in names]))
    return functools.reduce(DataFrame.union, frames)

