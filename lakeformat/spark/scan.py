"""Planning Spark reads: which files each Spark task reads (pure functions over metadata), and
the executor-side reader that turns one task's files into Arrow batches.

A task reads whole units: a data file of an append table, the files of one row id range of a
data-evolution table (merged by row id), a key section of a primary-key bucket (files whose key
ranges overlap, merged together), or a changelog file. Units are packed into
Spark partitions of about ``source.split.target-size`` bytes, each unit costing at least
``source.split.open-file-cost`` (Paimon's split options), and into no fewer partitions than the
session has cores when there are enough units.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Optional
from collections.abc import Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import InputPartition

from lakeformat.errors import NotFoundError
from lakeformat.format import options as O
from lakeformat.format import predicate as P
from lakeformat.format.manifest import DataFileMeta
from lakeformat.format.snapshot import Snapshot
from lakeformat.io.data_file import iter_columns
from lakeformat.io.fileio import join
from lakeformat.io.index_files import IndexFiles
from lakeformat.mergetree.kv_file import DELETE, KIND, UPDATE_BEFORE
from lakeformat.mergetree.read import merge_columns, read_section, sections
from lakeformat.read.scan import FileScan, Split
from lakeformat.read.split_read import SplitRead
from lakeformat.spark.types import ROW_KIND

FILE, SECTION, CHANGELOG, ROWS = "file", "section", "changelog", "rows"
BATCH_ROWS = 1 << 16
_KINDS = pa.array(["+I", "-U", "+U", "-D"])


@dataclass(frozen=True)
class ReadUnit:
    kind: str                        # FILE, SECTION, CHANGELOG or ROWS
    split: Split
    files: tuple[DataFileMeta, ...]

    @property
    def size(self) -> int:
        return sum(f.file_size for f in self.files)


class TaskPartition(InputPartition):
    """The units one Spark task reads (``value``: a tuple of ReadUnit)."""


def pack(units: Sequence[ReadUnit], target: int, open_cost: int, parallelism: int = 1) -> list[tuple[ReadUnit, ...]]:
    """Units grouped into bins of about ``target`` bytes each (a unit weighs at least
    ``open_cost``), and into at least ``parallelism`` bins when there are that many units, so
    no core idles on a small read. Largest units first, each into the lightest bin; a bin
    keeps its units in planning order (neighbours in a bucket stay in order)."""
    if not units:
        return []
    weights = [max(u.size, open_cost) for u in units]
    count = min(len(units), max(-(-sum(weights) // max(target, 1)), parallelism))
    bins: list[list[int]] = [[] for _ in range(count)]
    lightest = [(0, b) for b in range(count)]   # a heap of (load, bin)
    for i in sorted(range(len(units)), key=lambda i: -weights[i]):
        load, b = heapq.heappop(lightest)
        bins[b].append(i)
        heapq.heappush(lightest, (load + weights[i], b))
    return [tuple(units[i] for i in sorted(b)) for b in bins if b]


def partitions(table, units: Sequence[ReadUnit], parallelism: int = 1) -> list[TaskPartition]:
    o = table.typed_options
    return [TaskPartition(b) for b in pack(units, o.get(O.SOURCE_SPLIT_TARGET_SIZE),
                                           o.get(O.SOURCE_SPLIT_OPEN_FILE_COST), parallelism)]


def split_units(table, splits: Sequence[Split]) -> list[ReadUnit]:
    """Units of planned splits: a file each for append tables, a key section each for
    primary-key tables."""
    if table.typed_options.get(O.DATA_EVOLUTION):   # files of some columns, merged by row id
        return [ReadUnit(ROWS, s, tuple(g)) for s in splits for g in SplitRead(table.ctx, []).groups(s)]
    if not table.schema.primary_keys:
        return [ReadUnit(FILE, s, (f,)) for s in splits for f in s.files]
    key_of = table.key_decoder()
    return [ReadUnit(SECTION, s, tuple(sec)) for s in splits for sec in sections(s.files, key_of)]


def snapshot_units(table, snapshot: Optional[Snapshot], predicate: Optional[P.Predicate]) -> list[ReadUnit]:
    """Everything live in ``snapshot`` that may match ``predicate``."""
    if snapshot is None:
        return []
    return split_units(table, FileScan(table, predicate).plan(snapshot))


def changelog_read(table) -> bool:
    """Whether the table's changes are read from a changelog (primary key + producer)."""
    return bool(table.schema.primary_keys) and table.typed_options.get(O.CHANGELOG_PRODUCER) != "none"


def change_units(table, start: int, end: int, predicate: Optional[P.Predicate]) -> list[ReadUnit]:
    """The changes made by snapshots ``start + 1 .. end``: the changelog files they produced,
    or the files their APPEND commits added."""
    if end <= start:
        return []
    snaps = []
    for i in range(start + 1, end + 1):
        try:
            snaps.append(table.snapshot(i))
        except (NotFoundError, FileNotFoundError):
            earliest = table.snapshot_manager.earliest_id()
            raise NotFoundError(f"the changes of snapshot {i} of {table.name} are needed but it was expired "
                                f"(earliest snapshot now: {earliest}); use a consumer-id so expiration keeps "
                                "what a stream still has to read, or restart from a later snapshot") from None
    scan = FileScan(table, predicate)
    if changelog_read(table):
        units = []
        for s in snaps:
            for e in scan.changelog_entries([s]):
                split = Split(s.id, table.partition_values(e.partition), e.partition, e.bucket, (e.file,))
                units.append(ReadUnit(CHANGELOG, split, (e.file,)))
        return units
    return split_units(table, scan.plan_incremental(snaps))


def resolve_snapshot(table, spec) -> Optional[Snapshot]:
    """The snapshot a batch read sees: a tag's, a snapshot id's, the one current at a time, or
    the latest."""
    if spec.tag is not None:
        return table.tags.get(spec.tag).snapshot
    if spec.snapshot_id is not None:
        try:
            return table.snapshot(spec.snapshot_id)
        except FileNotFoundError:
            raise NotFoundError(f"{table.name} has no snapshot {spec.snapshot_id}") from None
    if spec.as_of_millis is not None:
        return table.snapshot_as_of(spec.as_of_millis)
    return table.latest_snapshot()


class UnitReader:
    """Reads units into Arrow batches of ``columns`` (+ ``_row_kind`` when asked) on an executor."""

    def __init__(self, table, columns: Sequence[str], predicate: Optional[P.Predicate], row_kind: bool,
                 keep_retractions: bool):
        self.table = table
        self.columns = list(columns)
        self.predicate = predicate
        self.row_kind = row_kind
        self.keep_retractions = keep_retractions   # -U/-D rows of a changelog; else only +I/+U
        self.needed = self.columns + [c for c in sorted(P.columns(predicate)) if c not in self.columns]
        self.fields = [table.schema.field(c) for c in self.needed]
        self._expr = P.to_arrow(predicate) if predicate is not None else None

    def read(self, unit: ReadUnit) -> Iterator[pa.Table]:
        d = self.table.bucket_dir_of(unit.split.partition_bytes, unit.split.bucket)
        deletions: dict = {}   # the bucket's deletion vectors, per data file
        for meta in unit.split.deletion_files:
            deletions.update(IndexFiles.of(self.table.ctx).read_deletion_vectors(meta))
        if unit.kind == FILE:
            for f in unit.files:
                for data in iter_columns(self.table, join(d, f.file_name), f, self.fields, (), BATCH_ROWS,
                                         deletions.get(f.file_name)):
                    yield from self._finish(data, None)
        elif unit.kind == ROWS:
            yield from self._finish(SplitRead(self.table.ctx, self.needed).read_group(unit.split, unit.files), None)
        elif unit.kind == SECTION:
            cols = merge_columns(self.table, self.needed)
            for data in read_section(self.table, d, list(unit.files), cols, deletions=deletions):
                yield from self._finish(data, None)
        else:
            for f in unit.files:
                for data in iter_columns(self.table, join(d, f.file_name), f, self.fields, (KIND,), BATCH_ROWS):
                    kinds = data.column(KIND)
                    if not self.keep_retractions:
                        keep = pc.and_(pc.not_equal(kinds, DELETE), pc.not_equal(kinds, UPDATE_BEFORE))
                        data, kinds = data.filter(keep), kinds.filter(keep)
                    yield from self._finish(data.drop_columns([KIND]), kinds)

    def _finish(self, data: pa.Table, kinds) -> Iterator[pa.Table]:
        if self._expr is not None:
            if kinds is not None:
                data = data.append_column("__kind", kinds)
            data = data.filter(self._expr)
            if kinds is not None:
                kinds = data.column("__kind")
        if not data.num_rows:
            return
        out = data.select(self.columns)
        if self.row_kind:
            kind_col = _KINDS.take(kinds) if kinds is not None else pa.array(["+I"] * out.num_rows)
            out = out.append_column(ROW_KIND, kind_col)
        yield out
