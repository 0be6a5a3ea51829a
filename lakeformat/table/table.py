"""A Paimon table: its schema, snapshots, writes, commits and reads, tied together."""
from __future__ import annotations

import copy
import datetime as dt
import uuid
from dataclasses import dataclass
from typing import Optional, Union
from collections.abc import Iterator, Sequence

import pyarrow as pa

from lakeformat.commit.commit import BATCH_IDENTIFIER, Overwrite
from lakeformat.commit.lock import CatalogLock
from lakeformat.errors import DataError, LakeformatError, NotFoundError
from lakeformat.format import options as O
from lakeformat.format import predicate as P
from lakeformat.format import types as T
from lakeformat.format.iceberg.schema import check_table
from lakeformat.format.manifest import ManifestEntry
from lakeformat.format.options import Options, validate
from lakeformat.format.row_tracking import check_schema as check_row_tracking, check_unchanged
from lakeformat.format.schema import TableSchema, apply_changes
from lakeformat.format.snapshot import Snapshot
from lakeformat.io.data_file import read_columns
from lakeformat.io.file_format import check_table_formats
from lakeformat.io.fileio import FileIO, join
from lakeformat.io.iceberg_cache import IcebergCache
from lakeformat.io.table_context import TableContext
from lakeformat.maintenance.compaction import CompactionResult
from lakeformat.mergetree.kv_file import KIND
from lakeformat.read.entries import delta_entries, live_entries
from lakeformat.read.scan import FileScan, Split
from lakeformat.read.split_read import SplitRead
from lakeformat.table.maintenance import TableMaintenance
from lakeformat.table.stream import TableStream, read_incremental
from lakeformat.table.system_tables import system_table
from lakeformat.table.table_commit import TableCommit
from lakeformat.write.conform import as_arrow
from lakeformat.write.table_write import Data, TableWrite
from lakeformat.write.update_columns import update_messages


@dataclass
class TableScan:
    """A planned read: which snapshot, which files, which columns."""

    table: Table
    snapshot: Optional[Snapshot]
    filter: Optional[P.Predicate] = None
    columns: Optional[Sequence[str]] = None

    def plan(self) -> list[Split]:
        if self.snapshot is None:
            return []
        return FileScan(self.table.ctx, self.filter).plan(self.snapshot)


class Table:
    """The façade: what a table's users call. The layers below take its ``ctx`` (a
    ``TableContext``), never the table, so what follows an operation happens here, once."""

    def __init__(self, io: FileIO, path: str, name: str, schema: Optional[TableSchema] = None,
                 lock: Optional[CatalogLock] = None, iceberg_cache: Optional[IcebergCache] = None):
        self.ctx = TableContext(io, path, name, schema, lock, iceberg_cache)
        O.warn_unknown(self.ctx.schema.options, name)

    # -- metadata (the context's) ------------------------------------------------------------
    io = property(lambda self: self.ctx.io)
    path = property(lambda self: self.ctx.path)
    name = property(lambda self: self.ctx.name)
    lock = property(lambda self: self.ctx.lock)
    iceberg_cache = property(lambda self: self.ctx.iceberg_cache)   # the catalog's
    schema_manager = property(lambda self: self.ctx.schema_manager)
    snapshot_manager = property(lambda self: self.ctx.snapshot_manager)

    @property
    def schema(self) -> TableSchema:
        return self.ctx.schema

    @schema.setter
    def schema(self, schema: TableSchema) -> None:
        self.ctx.schema = schema

    @property
    def options(self) -> dict[str, str]:
        return self.ctx.options

    @property
    def typed_options(self) -> Options:
        return self.ctx.typed_options

    @property
    def target_file_size(self) -> int:
        return self.ctx.target_file_size

    @property
    def partition_keys(self) -> list[str]:
        return self.ctx.partition_keys

    @property
    def primary_keys(self) -> list[str]:
        return self.ctx.primary_keys

    def arrow_schema(self) -> pa.Schema:
        return self.ctx.arrow_schema()

    def refresh(self) -> Table:
        self.schema = self.schema_manager.latest()
        return self

    def alter(self, *changes) -> TableSchema:
        """Apply schema changes as a new ``schema-N``; fails if another alter got there first."""
        new = apply_changes(self.schema, changes)
        validate(new.options, columns=new.names)
        check_row_tracking(new.primary_keys, new.options, new.names, f"table {self.name}")
        check_unchanged(self.schema.options, new.options, f"table {self.name}")
        check_table(new)
        check_table_formats(new)
        if not self.schema_manager.create(new):
            raise LakeformatError(f"schema {new.id} of {self.name} was created concurrently; reload and retry")
        self.schema = new
        return new

    # -- paths -------------------------------------------------------------------------
    def partition_values(self, partition: bytes) -> tuple:
        return self.ctx.partition_values(partition)

    def bucket_dir(self, values: Sequence, bucket: int) -> str:
        return self.ctx.bucket_dir(values, bucket)

    def bucket_dir_of(self, partition: bytes, bucket: int) -> str:
        return self.ctx.bucket_dir_of(partition, bucket)

    def partition_matcher(self, static: dict):
        """Predicate over serialized partitions for a static partition spec like {"dt": "x"}."""
        return self.ctx.partition_matcher(static)

    # -- snapshots ---------------------------------------------------------------------
    def snapshots(self) -> list[Snapshot]:
        return list(self.snapshot_manager.snapshots())

    def latest_snapshot(self) -> Optional[Snapshot]:
        return self.snapshot_manager.latest()

    def snapshot(self, snapshot_id: int) -> Snapshot:
        return self.ctx.snapshot(snapshot_id)

    def snapshot_as_of(self, as_of: Union[int, dt.datetime, str]) -> Snapshot:
        """The snapshot current at ``as_of``: a datetime (naive: local time), epoch millis, or
        ISO text like '2024-01-01' or '2024-01-01 12:00:00' (local time, as scan.timestamp)."""
        if isinstance(as_of, str):
            try:
                as_of = dt.datetime.fromisoformat(as_of.strip())
            except ValueError:
                raise LakeformatError(f"as_of {as_of!r} is not a time: give a datetime, epoch millis or ISO "
                                      "text like '2024-01-01 12:00:00'") from None
        if isinstance(as_of, bool) or not isinstance(as_of, (int, dt.datetime)):
            raise LakeformatError(f"as_of must be a datetime, epoch millis or ISO text, not {as_of!r}")
        millis = int(as_of.timestamp() * 1000) if isinstance(as_of, dt.datetime) else int(as_of)
        s = self.snapshot_manager.at_or_before(millis)
        if s is None:
            raise NotFoundError(f"{self.name} has no snapshot at or before {as_of}")
        return s

    # -- maintenance (lakeformat/table/maintenance.py; the names below are the ones users have) --
    @property
    def maintenance(self) -> TableMaintenance:
        """Expire snapshots and partitions, remove orphan files, compact, roll back, tag: each
        followed by the same side effects whichever front end runs it."""
        return TableMaintenance(self)

    def expire_snapshots(self, **kwargs):
        """One run of snapshot expiration (``maintenance.expire_snapshots_step``)."""
        return self.maintenance.expire_snapshots_step(**kwargs)

    def expire_backlog(self, **kwargs):
        """Every snapshot that is due (``maintenance.expire_snapshots``)."""
        return self.maintenance.expire_snapshots(**kwargs)

    def expire_partitions(self, **kwargs) -> list[dict]:
        return self.maintenance.expire_partitions(**kwargs)

    def iceberg_sync(self, rebuild: bool = False):
        return self.maintenance.iceberg_sync(rebuild)

    def remove_orphan_files(self, **kwargs):
        return self.maintenance.remove_orphan_files(**kwargs)

    @property
    def tags(self):
        return self.maintenance.tags

    @property
    def consumers(self):
        return self.maintenance.consumers

    def create_tag(self, name: str, snapshot_id: Optional[int] = None, time_retained=None):
        return self.maintenance.create_tag(name, snapshot_id, time_retained)

    def delete_tag(self, name: str, dry_run: bool = False) -> int:
        return self.maintenance.delete_tag(name, dry_run)

    def rollback_to(self, snapshot_or_tag: Union[int, str], progress=None, dry_run: bool = False):
        return self.maintenance.rollback_to(snapshot_or_tag, progress, dry_run)

    def live_entries(self, snapshot: Snapshot, partitions: Optional[set[bytes]] = None) -> list[ManifestEntry]:
        """Live files of a snapshot (with ``partitions``, of those only); see lakeformat/read/entries.py."""
        return live_entries(self.ctx, snapshot, partitions)

    def delta_entries(self, snapshot: Snapshot) -> list[ManifestEntry]:
        return delta_entries(self.ctx, snapshot)

    def key_decoder(self):
        """Decodes min/max keys of this primary-key table into comparable tuples (None for
        append tables, which have no keys)."""
        return self.ctx.key_decoder()

    # -- writing -----------------------------------------------------------------------
    def new_write(self, commit_user: Optional[str] = None, ignore_previous_files: bool = False,
                  sequence_offset: int = 0) -> TableWrite:
        """A writer; ``ignore_previous_files`` (for overwrites) starts primary-key buckets empty
        instead of continuing from their live files; ``sequence_offset`` see TableWrite."""
        return TableWrite(self.ctx, commit_user, ignore_previous_files, sequence_offset)

    def delete(self, keys: Data, identifier: int = BATCH_IDENTIFIER) -> Optional[Snapshot]:
        """Delete rows of a primary-key table by key: ``keys`` holds the primary key columns
        (other columns may be given and are ignored)."""
        if not self.schema.primary_keys:
            raise LakeformatError(f"{self.name} has no primary key: delete by key needs one")
        return self._write_kind(_delete_rows(keys, self.schema), DELETE_KIND, identifier)

    def compact(self, full: bool = False, partitions: Optional[Sequence[dict]] = None,
                commit_user: Optional[str] = None, progress=None) -> Optional[Snapshot]:
        """Compact the buckets (all, or those of ``partitions`` like ``[{"dt": "x"}]``) as one
        COMPACT snapshot: a primary-key table by the merge tree's picker (everything into the
        highest level with ``full``), an append table by merging small files into files of
        ``target-file-size``. ``progress(done, total, what)`` is called per bucket.

        On a ``write-only`` table the writers never expire snapshots, so this (the dedicated
        compaction, as Paimon's compaction job does) expires them afterwards by the table's options.
        Returns the COMPACT snapshot (None: nothing needed compacting); ``compact_report`` returns
        the expiration it ran too. A failed expiration is logged, never raised: the compaction is
        committed."""
        return self.compact_report(full, partitions, commit_user, progress).snapshot

    def compact_report(self, full: bool = False, partitions: Optional[Sequence[dict]] = None,
                       commit_user: Optional[str] = None, progress=None) -> CompactionResult:
        """``compact``, reporting everything it did (``maintenance.compact``): the COMPACT
        snapshot and the snapshot expiration after it (or why that failed)."""
        return self.maintenance.compact(full, partitions, commit_user, progress)

    def new_commit(self, commit_user: Optional[str] = None) -> TableCommit:
        return TableCommit(self.ctx, commit_user)

    def _write_kind(self, data: Data, row_kind: int, identifier: int) -> Optional[Snapshot]:
        user = str(uuid.uuid4())
        w = self.new_write(user)
        with w:
            w.write(data, row_kind=row_kind)
            messages = w.prepare_commit()
        commit = self.new_commit(user)
        try:
            return commit.commit(messages, identifier)
        except BaseException:
            commit.abort(messages)
            raise

    def write(self, data: Data, overwrite: Union[bool, dict] = False,
              identifier: int = BATCH_IDENTIFIER) -> Optional[Snapshot]:
        """Write and commit in one call. ``overwrite=True`` replaces the partitions present in
        the data (dynamic); ``overwrite={"dt": "x"}`` replaces that partition (static);
        ``overwrite={}`` replaces the whole table."""
        user = str(uuid.uuid4())
        ow = None
        if overwrite is True:   # Paimon's dynamic-partition-overwrite=false replaces the whole table
            dynamic = self.schema.partition_keys and self.typed_options.get(O.DYNAMIC_PARTITION_OVERWRITE)
            ow = Overwrite() if dynamic else Overwrite({})
        elif isinstance(overwrite, dict):
            ow = Overwrite(overwrite)
            self.partition_matcher(overwrite)  # fail early on unknown keys
        w = self.new_write(user, ignore_previous_files=ow is not None)
        with w:
            w.write(data)
            messages = w.prepare_commit()
        commit = self.new_commit(user)
        try:
            return commit.commit(messages, identifier, overwrite=ow)
        except BaseException:
            commit.abort(messages)
            raise

    def update_columns(self, data: Data, identifier: int = BATCH_IDENTIFIER) -> Optional[Snapshot]:
        """Set some columns of existing rows of a data-evolution table (Paimon's update by row id):
        ``data`` holds ``_ROW_ID`` and the columns to set; other columns and rows keep their
        values. Each row id range touched gets one new file of those columns (no rewrite)."""
        snapshot = self.latest_snapshot()
        if snapshot is None:
            raise DataError(f"table {self.name} has no rows to update")
        table = as_arrow(data)
        if isinstance(table, pa.RecordBatchReader):
            table = table.read_all()
        elif isinstance(table, pa.RecordBatch):
            table = pa.Table.from_batches([table])
        messages = update_messages(self.ctx, snapshot, table)
        commit = self.new_commit(str(uuid.uuid4()))
        try:
            return commit.commit(messages, identifier)
        except BaseException:
            commit.abort(messages)
            raise

    # -- reading -----------------------------------------------------------------------
    def _snapshot_for(self, snapshot_id: Optional[int], as_of, tag: Optional[str] = None) -> Optional[Snapshot]:
        if sum(x is not None for x in (snapshot_id, as_of, tag)) > 1:
            raise LakeformatError("give one of snapshot_id, as_of and tag, not several")
        if snapshot_id is None and as_of is None and tag is None:   # time travel by table options
            o = self.typed_options
            tag, snapshot_id, as_of = o.get(O.SCAN_TAG_NAME), o.get(O.SCAN_SNAPSHOT_ID), o.get(O.SCAN_TIMESTAMP_MILLIS)
        if tag is not None:
            return self.tags.snapshot_of(tag)
        if snapshot_id is not None:
            return self.snapshot(snapshot_id)
        if as_of is not None:
            return self.snapshot_as_of(as_of)
        return self.latest_snapshot()

    def _time_travel(self, snapshot_id, as_of, tag) -> bool:
        o = self.typed_options
        return any(x is not None for x in (snapshot_id, as_of, tag, o.get(O.SCAN_TAG_NAME), o.get(O.SCAN_SNAPSHOT_ID),
                                           o.get(O.SCAN_TIMESTAMP_MILLIS)))

    def as_of_schema(self, snapshot: Optional[Snapshot]) -> Table:
        """This table seen with the schema ``snapshot`` was written with, as Paimon reads a snapshot
        it travels to (its columns, names, types and options then); self when that is the current one."""
        if snapshot is None or snapshot.schema_id == self.schema.id:
            return self
        view = copy.copy(self)
        view.ctx = self.ctx.with_schema(self.schema_manager.get(snapshot.schema_id))
        return view

    def scan(self, filter: Optional[P.Predicate] = None, columns: Optional[Sequence[str]] = None,
             snapshot_id: Optional[int] = None, as_of=None, tag: Optional[str] = None) -> TableScan:
        """A planned read of the latest snapshot, or of the one ``snapshot_id``, ``as_of`` or ``tag``
        (or the scan.* options) travel to, which is read with its own schema (``scan.table``)."""
        snapshot = self._snapshot_for(snapshot_id, as_of, tag)
        table = self.as_of_schema(snapshot) if self._time_travel(snapshot_id, as_of, tag) else self
        return TableScan(table, snapshot, filter, columns)

    def read_splits(self, splits: Sequence[Split], columns: Optional[Sequence[str]] = None,
                    filter: Optional[P.Predicate] = None) -> pa.Table:
        return SplitRead(self.ctx, columns, filter).read(splits)

    def read(self, columns: Optional[Sequence[str]] = None, filter: Optional[P.Predicate] = None,
             snapshot_id: Optional[int] = None, as_of=None, tag: Optional[str] = None) -> pa.Table:
        scan = self.scan(filter, columns, snapshot_id, as_of, tag)
        return scan.table.read_splits(scan.plan(), columns, filter)

    def to_batches(self, columns: Optional[Sequence[str]] = None, filter: Optional[P.Predicate] = None,
                   snapshot_id: Optional[int] = None, as_of=None,
                   tag: Optional[str] = None, read_buffer: Optional[int] = None) -> Iterator[pa.RecordBatch]:
        """The rows as a stream of batches of at most 65,536 rows, with bounded memory: append
        files are read batch by batch, primary-key buckets merged in key slices of about
        ``read_buffer`` bytes (default ``write-buffer-size``); see SplitRead.to_batches."""
        scan = self.scan(filter, columns, snapshot_id, as_of, tag)
        return SplitRead(scan.table.ctx, columns, filter).to_batches(scan.plan(), buffer=read_buffer)

    def read_incremental(self, start_snapshot: Optional[int] = None, end_snapshot: Optional[int] = None,
                         columns: Optional[Sequence[str]] = None, filter: Optional[P.Predicate] = None,
                         consumer_id: Optional[str] = None) -> pa.Table:
        """Changes after ``start_snapshot`` up to and including ``end_snapshot``: the rows
        appended, or for a primary-key table with a ``changelog-producer`` its changelog, with a
        ``_row_kind`` column (+I, -U, +U, -D). With ``consumer_id`` (or the ``consumer-id``
        option) and no start, resumes where that consumer stopped and records its progress."""
        return read_incremental(self, start_snapshot, end_snapshot, columns, filter, consumer_id)

    def stream(self, consumer_id: Optional[str] = None, start_snapshot: Optional[int] = None,
               poll_interval: float = 1.0, max_batches: Optional[int] = None, idle_timeout: Optional[float] = None,
               columns: Optional[Sequence[str]] = None, filter: Optional[P.Predicate] = None):
        """(snapshot_id, pa.Table) per new snapshot, following the table; see lakeformat/table/stream.py."""
        return TableStream(self, consumer_id, start_snapshot, poll_interval, max_batches, idle_timeout, columns, filter)

    def _changelog_read(self) -> bool:
        return bool(self.schema.primary_keys) and self.typed_options.get(O.CHANGELOG_PRODUCER) != "none"

    def _read_changes(self, start_snapshot: int, end_snapshot: Optional[int], columns, filter) -> pa.Table:
        end = end_snapshot
        latest = self.snapshot_manager.latest_id()
        if end is not None and latest is not None and start_snapshot < end < latest:   # ends in the past:
            view = self.as_of_schema(self.snapshot(end))                              # that snapshot's schema
            if view is not self:
                return view._read_changes(start_snapshot, end, columns, filter)
        with_changelog = self._changelog_read()
        if end is None or end <= start_snapshot:
            empty = SplitRead(self.ctx, columns, filter).out_schema.empty_table()
            return empty.append_column(ROW_KIND, pa.array([], pa.string())) if with_changelog else empty
        snaps = [self.snapshot(i) for i in range(start_snapshot + 1, end + 1)]
        if with_changelog:
            return self._read_changelog(snaps, columns, filter)
        splits = FileScan(self.ctx, filter).plan_incremental(snaps)
        return self.read_splits(splits, columns, filter)

    def _read_changelog(self, snaps: Sequence[Snapshot], columns, filter) -> pa.Table:
        reader = SplitRead(self.ctx, columns, filter)
        fields = [self.schema.field(c) for c in reader.needed]
        parts = [read_columns(self.ctx, join(self.bucket_dir_of(e.partition, e.bucket), e.file.file_name), e.file,
                              fields, (KIND,)) for e in FileScan(self.ctx, filter).changelog_entries(snaps)]
        if not parts:
            return reader.out_schema.empty_table().append_column(ROW_KIND, pa.array([], pa.string()))
        data = pa.concat_tables(parts)
        if filter is not None:
            data = data.filter(P.mask(filter, data))
        kinds = pa.array(["+I", "-U", "+U", "-D"]).take(data.column(KIND))
        return data.select(reader.columns).cast(reader.out_schema).append_column(ROW_KIND, kinds)

    def system_table(self, name: str, snapshot_id: Optional[int] = None) -> pa.Table:
        """Paimon's system table ``name`` (snapshots, schemas, options, files, manifests,
        partitions, buckets, consumers, tags) as Arrow; see lakeformat/table/system_tables.py."""
        return system_table(self, name, snapshot_id)

    def files(self, snapshot_id: Optional[int] = None) -> list[dict]:
        """Live data files of a snapshot, one dict per file (for listings and the CLI)."""
        snap = self._snapshot_for(snapshot_id, None)
        if snap is None:
            return []
        out = []
        for e in FileScan(self.ctx).live_entries(snap):
            out.append({"partition": dict(zip(self.partition_keys, self.partition_values(e.partition))),
                        "bucket": e.bucket, "file_name": e.file.file_name, "level": e.file.level,
                        "row_count": e.file.row_count, "file_size": e.file.file_size,
                        "schema_id": e.file.schema_id,
                        "path": join(self.bucket_dir_of(e.partition, e.bucket), e.file.file_name)})
        return sorted(out, key=lambda d: (str(d["partition"]), d["bucket"], d["file_name"]))


DELETE_KIND = 3
ROW_KIND = "_row_kind"   # the change's kind in a changelog read


def _delete_rows(keys: Data, schema: TableSchema) -> pa.Table:
    """Full rows for a delete: the key columns as given, every other column null (or a zero
    value where the column is NOT NULL: the values of a deleted row are never read)."""
    keys = as_arrow(keys)
    table = keys.read_all() if isinstance(keys, pa.RecordBatchReader) else (
        pa.Table.from_batches([keys]) if isinstance(keys, pa.RecordBatch) else keys)
    missing = [k for k in schema.primary_keys if k not in table.column_names]
    if missing:
        raise DataError(f"a delete needs the primary key columns {schema.primary_keys}; missing {missing}")
    n = table.num_rows
    cols = [table.column(f.name) if f.name in schema.primary_keys else
            pa.nulls(n, T.to_arrow(f.type)) if f.type.nullable else _zeros(n, T.to_arrow(f.type))
            for f in schema.fields]
    return pa.Table.from_arrays(cols, names=schema.names)


def _zeros(n: int, typ: pa.DataType) -> pa.Array:
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return pa.array([""] * n, typ)
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ) or pa.types.is_fixed_size_binary(typ):
        width = typ.byte_width if pa.types.is_fixed_size_binary(typ) else 0
        return pa.array([b"\0" * width] * n, typ)
    if pa.types.is_boolean(typ):
        return pa.array([False] * n, typ)
    if pa.types.is_nested(typ):
        raise DataError(f"a delete by key cannot fill the NOT NULL nested column of type {typ}; give full rows")
    if pa.types.is_decimal(typ):
        return pa.array([0] * n, typ)
    if pa.types.is_date32(typ) or pa.types.is_time32(typ):
        return pa.array([0] * n, pa.int32()).view(typ)
    if pa.types.is_time64(typ):
        return pa.array([0] * n, pa.int64()).view(typ)
    return pa.array([0] * n, pa.int64()).cast(typ)
