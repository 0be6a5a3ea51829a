"""A Paimon table: its schema, snapshots, writes, commits and reads, tied together."""
from __future__ import annotations

import copy
import datetime as dt
import uuid
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional, Union
from collections.abc import Iterator, Sequence

import pyarrow as pa

from lakeformat.commit.commit import BATCH_IDENTIFIER, Overwrite
from lakeformat.commit.lock import CatalogLock
from lakeformat.errors import DataError, LakeformatError, NotFoundError
from lakeformat.format import options as O
from lakeformat.format import predicate as P
from lakeformat.format import types as T
from lakeformat.format.binary_row import deserialize_row
from lakeformat.format.iceberg.schema import check_table
from lakeformat.format.manifest import ManifestEntry
from lakeformat.format.options import Options, target_file_size, validate
from lakeformat.format.partition import partition_path
from lakeformat.format.schema import TableSchema, apply_changes
from lakeformat.format.snapshot import Snapshot
from lakeformat.io.data_file import read_columns
from lakeformat.io.file_format import check_table_formats
from lakeformat.io.fileio import FileIO, join
from lakeformat.io.schemas import SchemaManager
from lakeformat.io.snapshots import SnapshotManager
from lakeformat.maintenance.compaction import CompactionResult, compact_and_expire
from lakeformat.maintenance.consumer import ConsumerManager
from lakeformat.maintenance.expire import expire_snapshots
from lakeformat.maintenance.expire_backlog import expire_backlog
from lakeformat.maintenance.iceberg import iceberg_sync, publish_after_change
from lakeformat.maintenance.orphans import remove_orphan_files
from lakeformat.maintenance.partition_expire import expire_partitions
from lakeformat.maintenance.rollback import rollback_to
from lakeformat.maintenance.tag import TagManager
from lakeformat.mergetree.kv_file import KIND
from lakeformat.read.scan import FileScan, Split
from lakeformat.read.split_read import SplitRead
from lakeformat.table.stream import TableStream, read_incremental
from lakeformat.table.system_tables import system_table
from lakeformat.table.table_commit import TableCommit
from lakeformat.write.conform import as_arrow
from lakeformat.write.table_write import Data, TableWrite


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
        return FileScan(self.table, self.filter).plan(self.snapshot)


class Table:
    def __init__(self, io: FileIO, path: str, name: str, schema: Optional[TableSchema] = None,
                 lock: Optional[CatalogLock] = None):
        self.io, self.path, self.name = io, path, name
        self.lock = lock   # the catalog lock commits take to create snapshots; None: conditional create
        self.schema_manager = SchemaManager(io, path)
        self.snapshot_manager = SnapshotManager(io, path)
        self.schema: TableSchema = schema or self._latest_schema()
        O.warn_unknown(self.schema.options, name)
        self._typed_options: tuple[Optional[TableSchema], Optional[Options]] = (None, None)

    # -- metadata ----------------------------------------------------------------------
    @property
    def options(self) -> dict[str, str]:
        return dict(self.schema.options)

    @property
    def typed_options(self) -> Options:
        schema, options = self._typed_options
        if schema is not self.schema or options is None:   # parsed once per schema: read paths ask often
            options = Options(self.schema.options)
            self._typed_options = (self.schema, options)
        return options

    @property
    def target_file_size(self) -> int:
        return target_file_size(self.typed_options, bool(self.schema.primary_keys))

    @property
    def partition_keys(self) -> list[str]:
        return list(self.schema.partition_keys)

    @property
    def primary_keys(self) -> list[str]:
        return list(self.schema.primary_keys)

    def arrow_schema(self) -> pa.Schema:
        return self.schema.arrow_schema()

    def refresh(self) -> Table:
        self.schema = self._latest_schema()
        return self

    def _latest_schema(self) -> TableSchema:
        schema = self.schema_manager.latest()
        if schema is None:
            raise NotFoundError(f"table {self.name} has no schema at {self.path}")
        return schema

    def alter(self, *changes) -> TableSchema:
        """Apply schema changes as a new ``schema-N``; fails if another alter got there first."""
        new = apply_changes(self.schema, changes)
        validate(new.options, columns=new.names)
        check_table(new)
        check_table_formats(new)
        if not self.schema_manager.create(new):
            raise LakeformatError(f"schema {new.id} of {self.name} was created concurrently; reload and retry")
        self.schema = new
        return new

    # -- paths -------------------------------------------------------------------------
    def partition_values(self, partition: bytes) -> tuple:
        return _decode(partition, tuple(f.type for f in self.schema.partition_fields))

    def bucket_dir(self, values: Sequence, bucket: int) -> str:
        fields = self.schema.partition_fields
        if not fields:
            return join(self.path, f"bucket-{bucket}")
        o = self.typed_options
        path = partition_path(values, fields, o.required(O.PARTITION_DEFAULT_NAME), o.required(O.PARTITION_LEGACY_NAME))
        return join(self.path, path, f"bucket-{bucket}")

    def bucket_dir_of(self, partition: bytes, bucket: int) -> str:
        return self.bucket_dir(self.partition_values(partition), bucket)

    def partition_matcher(self, static: dict):
        """Predicate over serialized partitions for a static partition spec like {"dt": "x"}."""
        names = [f.name for f in self.schema.partition_fields]
        unknown = [k for k in static if k not in names]
        if unknown:
            raise LakeformatError(f"{unknown} are not partition keys of {self.name} (partition keys: {names})")
        idx = {k: names.index(k) for k in static}

        def matches(partition: bytes) -> bool:
            values = self.partition_values(partition)
            return all(str(values[i]) == str(static[k]) for k, i in idx.items())
        return matches

    # -- snapshots ---------------------------------------------------------------------
    def snapshots(self) -> list[Snapshot]:
        return list(self.snapshot_manager.snapshots())

    def latest_snapshot(self) -> Optional[Snapshot]:
        return self.snapshot_manager.latest()

    def snapshot(self, snapshot_id: int) -> Snapshot:
        return self.snapshot_manager.get(snapshot_id)

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

    def expire_snapshots(self, **kwargs):
        """Expire old snapshots and the files only they use: retain_min, retain_max, older_than,
        max_deletes (defaults from the table's options), dry_run, progress; see lakeformat/maintenance/expire.py.
        Published Iceberg snapshots expire with their Paimon snapshots."""
        result = expire_snapshots(self, **kwargs)
        if result.begin is not None and not result.dry_run:
            publish_after_change(self)
        return result

    def expire_backlog(self, **kwargs):
        """Expire every snapshot that is due, ``step`` (default ``snapshot.expire.limit``) per
        run until none is left or ``max_deletes`` went: retain_min, retain_max, older_than,
        dry_run, progress. See lakeformat/maintenance/expire.py."""
        result = expire_backlog(self, **kwargs)
        if result.begin is not None and not result.dry_run:
            publish_after_change(self)
        return result

    def expire_partitions(self, **kwargs) -> list[dict]:
        """Drop partitions older than ``partition.expiration-time`` in one commit: expiration_time,
        now, dry_run, progress; returns their values. See lakeformat/maintenance/partition_expire.py."""
        return expire_partitions(self, **kwargs)

    def iceberg_sync(self, rebuild: bool = False):
        """Publish (repair, or with ``rebuild`` rewrite) the table's Iceberg metadata up to its
        latest snapshot; see lakeformat/maintenance/iceberg.py."""
        return iceberg_sync(self, rebuild)

    def remove_orphan_files(self, **kwargs):
        """Delete files nothing reaches that are older than ``older_than`` (default 1 day):
        older_than, dry_run, progress; returns an OrphanResult. See lakeformat/maintenance/orphans.py."""
        return remove_orphan_files(self, **kwargs)

    # -- tags, consumers, rollback (logic in tag.py, consumer.py, rollback.py) --------------
    @property
    def tags(self):
        return TagManager(self)

    @property
    def consumers(self):
        return ConsumerManager(self)

    def create_tag(self, name: str, snapshot_id: Optional[int] = None, time_retained=None):
        """Tag a snapshot; published Iceberg metadata gets the tag as an Iceberg tag ref."""
        tag = self.tags.create(name, snapshot_id, time_retained)
        publish_after_change(self)
        return tag

    def delete_tag(self, name: str, dry_run: bool = False) -> int:
        """Delete a tag (and the Iceberg tag ref of published Iceberg metadata)."""
        deleted = self.tags.delete(name, dry_run)
        if not dry_run:
            publish_after_change(self)
        return deleted

    def rollback_to(self, snapshot_or_tag: Union[int, str], progress=None, dry_run: bool = False):
        """Make a snapshot (id) or tag (name) the latest again; see lakeformat/maintenance/rollback.py.
        Published Iceberg metadata is rebuilt to match."""
        result = rollback_to(self, snapshot_or_tag, progress, dry_run)
        if not dry_run:
            publish_after_change(self)
        return result

    def live_entries(self, snapshot: Snapshot, partitions: Optional[set[bytes]] = None) -> list[ManifestEntry]:
        """Live files of a snapshot; with ``partitions``, only manifests that may hold those
        partitions are read (their partition statistics are checked)."""
        scan = FileScan(self, self._partitions_predicate(partitions) if partitions else None)
        entries = scan.live_entries(snapshot)
        return [e for e in entries if e.partition in partitions] if partitions else entries

    def delta_entries(self, snapshot: Snapshot) -> list[ManifestEntry]:
        return FileScan(self).delta_entries(snapshot)

    def _partitions_predicate(self, partitions: set[bytes]) -> Optional[P.Predicate]:
        names = self.partition_keys
        if not names:
            return None
        terms = []
        for values in {self.partition_values(p) for p in partitions}:
            parts = [P.col(n).is_null() if v is None else P.col(n) == v for n, v in zip(names, values)]
            terms.append(parts[0] if len(parts) == 1 else P.And(tuple(parts)))
        return terms[0] if len(terms) == 1 else P.Or(tuple(terms))

    def key_decoder(self):
        """Decodes min/max keys of this primary-key table into comparable tuples (None for
        append tables, which have no keys)."""
        if not self.schema.primary_keys:
            return None
        types = tuple(self.schema.field(k).type for k in self.schema.trimmed_primary_keys)
        return lambda b: _decode(b, types)

    # -- writing -----------------------------------------------------------------------
    def new_write(self, commit_user: Optional[str] = None, ignore_previous_files: bool = False,
                  sequence_offset: int = 0) -> TableWrite:
        """A writer; ``ignore_previous_files`` (for overwrites) starts primary-key buckets empty
        instead of continuing from their live files; ``sequence_offset`` see TableWrite."""
        return TableWrite(self, commit_user, ignore_previous_files, sequence_offset)

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
        """``compact``, reporting everything it did: the COMPACT snapshot and the snapshot
        expiration after it (or why that failed); ``.summary(name)`` says it in a line."""
        return compact_and_expire(self, full, partitions, commit_user, progress)

    def new_commit(self, commit_user: Optional[str] = None) -> TableCommit:
        return TableCommit(self, commit_user)

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
        view.schema, view._typed_options = self.schema_manager.get(snapshot.schema_id), (None, None)
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
        return SplitRead(self, columns, filter).read(splits)

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
        return SplitRead(scan.table, columns, filter).to_batches(scan.plan(), buffer=read_buffer)

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
            empty = SplitRead(self, columns, filter).out_schema.empty_table()
            return empty.append_column(ROW_KIND, pa.array([], pa.string())) if with_changelog else empty
        snaps = [self.snapshot(i) for i in range(start_snapshot + 1, end + 1)]
        if with_changelog:
            return self._read_changelog(snaps, columns, filter)
        splits = FileScan(self, filter).plan_incremental(snaps)
        return self.read_splits(splits, columns, filter)

    def _read_changelog(self, snaps: Sequence[Snapshot], columns, filter) -> pa.Table:
        reader = SplitRead(self, columns, filter)
        fields = [self.schema.field(c) for c in reader.needed]
        parts = [read_columns(self, join(self.bucket_dir_of(e.partition, e.bucket), e.file.file_name), e.file,
                              fields, (KIND,)) for e in FileScan(self, filter).changelog_entries(snaps)]
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
        for e in FileScan(self).live_entries(snap):
            out.append({"partition": dict(zip(self.partition_keys, self.partition_values(e.partition))),
                        "bucket": e.bucket, "file_name": e.file.file_name, "level": e.file.level,
                        "row_count": e.file.row_count, "file_size": e.file.file_size,
                        "schema_id": e.file.schema_id,
                        "path": join(self.bucket_dir_of(e.partition, e.bucket), e.file.file_name)})
        return sorted(out, key=lambda d: (str(d["partition"]), d["bucket"], d["file_name"]))


@lru_cache(maxsize=65536)
def _decode(partition: bytes, types: tuple) -> tuple:
    return tuple(deserialize_row(partition, list(types)))


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
