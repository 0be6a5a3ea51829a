"""The data source's options: which table, what to read, how to commit.

Spark hands options over as a case-insensitive string map. They are parsed once, on the driver,
into frozen records that travel to the executors with the reader or writer; an unknown key is an
error naming it (a typo like ``snapshot_id`` would otherwise silently read the latest snapshot).
Keys that are table options (``write-only``, ``target-file-size``...) apply to this read or write
only, as Paimon's dynamic options do; options that decide where rows live cannot change that way.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import difflib
import os
from dataclasses import dataclass
from typing import Optional
from collections.abc import Mapping

from lakeformat.commit.lock import lock_from_options
from lakeformat.errors import OptionError
from lakeformat.format import options as O
from lakeformat.format.branch import split_branch
from lakeformat.format.names import split_identifier, validate_name, validate_ref_name
from lakeformat.format.partition import parse_partition_spec
from lakeformat.io.fileio import FileIO
from lakeformat.table.catalog import Catalog
from lakeformat.table.catalog import CATALOG_OPTION_KEYS, check_catalog_options
from lakeformat.table.table import Table

WAREHOUSE, TABLE, PATH = "warehouse", "table", "path"
SNAPSHOT_ID, AS_OF, TAG = "snapshot-id", "as-of-timestamp", "tag"
START, END = "start-snapshot", "end-snapshot"
COLUMNS, CHANGELOG, CONSUMER, STREAM_START = "columns", "read.changelog", "consumer-id", "scan.mode"
COMMIT_USER, IDENTIFIER, STATIC_PARTITION, STAGE = "commit-user", "commit-identifier", "overwrite-partition", "stage-id"
# set by lakeformat.spark.write, which shuffles rows so that every bucket is in one Spark task
BUCKETS_BY_TASK = "buckets-by-task"
SOURCE_KEYS = (WAREHOUSE, TABLE, PATH, SNAPSHOT_ID, AS_OF, TAG, START, END, COLUMNS, CHANGELOG, CONSUMER,
               STREAM_START, COMMIT_USER, IDENTIFIER, STATIC_PARTITION, STAGE, BUCKETS_BY_TASK)
# options Spark itself may pass along to a data source
SPARK_KEYS = ("checkpointlocation", "queryname", "__checkpointlocation")
# table options that decide the layout or the meaning of rows: fixed at CREATE TABLE
FIXED_TABLE_KEYS = ("bucket", "bucket-key", "path", "type", "branch", "merge-engine", "sequence.field",
                    "sequence.field.sort-order", "rowkind.field", "changelog-producer", "partition.default-name",
                    "partition.legacy-name", "file.format")
STREAM_MODES = ("latest-full", "latest", "full")


@dataclass(frozen=True)
class TableRef:
    """Where a table lives; ``open()`` loads it."""

    warehouse: Optional[str] = None
    identifier: Optional[str] = None
    path: Optional[str] = None
    catalog_options: tuple[tuple[str, str], ...] = ()
    table_options: tuple[tuple[str, str], ...] = ()   # dynamic options for this job

    @property
    def name(self) -> str:
        return self.identifier or self.path or "?"

    def with_options(self, options: Mapping[str, str]) -> TableRef:
        """The same table with more dynamic table options."""
        return dataclasses.replace(self, table_options=tuple(sorted({**dict(self.table_options), **options}.items())))

    def open(self, schema_id: Optional[int] = None):
        """The table, at ``schema_id`` or its latest schema. Loaded afresh every time (a listing
        and a small JSON file): Python workers live on between Spark jobs, and a cached table
        would keep snapshots of a table dropped and created again at the same place."""
        return self._load(schema_id)

    def _load(self, schema_id: Optional[int]):
        opts = dict(self.catalog_options)
        if self.identifier is not None and self.warehouse is not None:
            t = Catalog(self.warehouse, **opts).get_table(self.identifier)
        elif self.path is None:
            raise OptionError("give option 'table' (with 'warehouse') or a path")
        else:
            opts = check_catalog_options(opts)
            t = Table(FileIO.for_uri(self.path, opts), self.path.rstrip("/"), os.path.basename(self.path.rstrip("/")),
                      lock=lock_from_options(self.path, opts))
        if schema_id is not None and t.schema.id != schema_id:
            t = type(t)(t.io, t.path, t.name, t.schema_manager.get(schema_id), t.lock, branch=t.branch)
        if self.table_options:
            schema = dataclasses.replace(t.schema, options={**t.schema.options, **dict(self.table_options)})
            t = type(t)(t.io, t.path, t.name, schema, t.lock, branch=t.branch)
        return t


@dataclass(frozen=True)
class ReadSpec:
    snapshot_id: Optional[int] = None
    as_of_millis: Optional[int] = None
    tag: Optional[str] = None
    start_snapshot: Optional[int] = None
    end_snapshot: Optional[int] = None
    columns: Optional[tuple[str, ...]] = None
    changelog: bool = False          # add _row_kind, keep -U/-D rows
    consumer_id: Optional[str] = None
    stream_start: str = "latest-full"

    @property
    def incremental(self) -> bool:
        return self.start_snapshot is not None


@dataclass(frozen=True)
class WriteSpec:
    commit_user: Optional[str] = None
    identifier: Optional[int] = None
    static_partition: Optional[tuple[tuple[str, str], ...]] = None
    stage_id: Optional[str] = None
    buckets_by_task: bool = False   # every bucket in one task: primary-key writers may compact


@dataclass(frozen=True)
class SourceOptions:
    table: TableRef
    read: ReadSpec
    write: WriteSpec


def parse(options: Mapping[str, str]) -> SourceOptions:
    opts = {k.lower(): str(v) for k, v in options.items()}
    unknown = [k for k in opts if k not in SOURCE_KEYS and k not in SPARK_KEYS and k not in CATALOG_OPTION_KEYS
               and not _is_table_option(k)]
    if unknown:
        raise OptionError("unknown lakeformat option(s): " + ", ".join(_hint(k) for k in unknown))
    table_opts = {k: v for k, v in opts.items() if k not in SOURCE_KEYS and _is_table_option(k)}
    fixed = [k for k in table_opts if k in FIXED_TABLE_KEYS]
    if fixed:
        raise OptionError(f"option(s) {fixed} are fixed when the table is created and cannot be set per job")
    table_opts = O.validate(table_opts)
    ref = _table_ref(opts, table_opts)
    return SourceOptions(ref, _read_spec(opts), _write_spec(opts))


def _is_table_option(k: str) -> bool:
    if not _TABLE_KEYS:
        _TABLE_KEYS.update(key for o in O.registry() for key in (o.key, *o.fallback_keys))
    return k in _TABLE_KEYS or bool(O.FIELD_OPTION.fullmatch(k))


_TABLE_KEYS: set = set()


def _hint(k: str) -> str:
    close = difflib.get_close_matches(k, SOURCE_KEYS + CATALOG_OPTION_KEYS, n=1)
    return repr(k) + (f" (did you mean {close[0]!r}?)" if close else "")


def _table_ref(opts: dict, table_opts: dict) -> TableRef:
    catalog = tuple(sorted((k, v) for k, v in opts.items() if k in CATALOG_OPTION_KEYS))
    dynamic = tuple(sorted(table_opts.items()))
    if opts.get(TABLE):
        if not opts.get(WAREHOUSE):
            raise OptionError(f"option 'table' ({opts[TABLE]}) needs option 'warehouse' too")
        if opts.get(PATH):
            raise OptionError("give option 'table' (with 'warehouse') or a path, not both")
        split_identifier(split_branch(opts[TABLE])[0])   # db.t, or a branch of it: db.t$branch_b
        return TableRef(opts[WAREHOUSE], opts[TABLE], None, catalog, dynamic)
    if opts.get(PATH):
        return TableRef(None, None, opts[PATH], catalog, dynamic)
    raise OptionError("say which table: .option('warehouse', ...).option('table', 'db.name'), or .load(<table path>)")


def _int(opts: dict, key: str, lo: int = 0) -> Optional[int]:
    v = opts.get(key)
    if v is None or v == "":
        return None
    try:
        n = int(v)
    except ValueError:
        raise OptionError(f"option {key!r} must be an integer, got {v!r}") from None
    if n < lo:
        raise OptionError(f"option {key!r} must be at least {lo}, got {n}")
    return n


def _bool(opts: dict, key: str) -> bool:
    v = opts.get(key)
    return False if v is None else O.parse_bool(v)


def parse_timestamp_millis(v: str) -> int:
    """Epoch milliseconds, or an ISO date-time (local time unless it carries an offset)."""
    v = v.strip()
    if v.lstrip("-").isdigit():
        return int(v)
    try:
        return int(dt.datetime.fromisoformat(v).timestamp() * 1000)
    except ValueError:
        raise OptionError(f"option {AS_OF!r} must be epoch milliseconds or a date-time like "
                          f"2024-06-01T12:00:00, got {v!r}") from None


def _read_spec(opts: dict) -> ReadSpec:
    snapshot_id, start, end = _int(opts, SNAPSHOT_ID, 1), _int(opts, START), _int(opts, END, 1)
    as_of = parse_timestamp_millis(opts[AS_OF]) if opts.get(AS_OF) else None
    tag = opts.get(TAG) or None
    chosen = [k for k, v in ((SNAPSHOT_ID, snapshot_id), (AS_OF, as_of), (TAG, tag), (START, start)) if v is not None]
    if len(chosen) > 1:
        raise OptionError(f"options {chosen} contradict each other: give one of them")
    if end is not None and start is None:
        raise OptionError(f"option {END!r} needs {START!r} (an incremental read between two snapshots)")
    if end is not None and start is not None and end < start:
        raise OptionError(f"{END!r} ({end}) is before {START!r} ({start})")
    cols = tuple(c.strip() for c in opts[COLUMNS].split(",") if c.strip()) if opts.get(COLUMNS) else None
    mode = opts.get(STREAM_START, "latest-full")
    if mode not in STREAM_MODES:
        raise OptionError(f"option {STREAM_START!r} must be one of {list(STREAM_MODES)}, got {mode!r}")
    consumer = opts.get(CONSUMER) or None
    if consumer is not None:
        validate_ref_name(consumer, "consumer")
    return ReadSpec(snapshot_id, as_of, tag, start, end, cols, _bool(opts, CHANGELOG), consumer,
                    "latest-full" if mode == "full" else mode)


def _write_spec(opts: dict) -> WriteSpec:
    static = None
    if opts.get(STATIC_PARTITION) is not None:
        static = tuple(parse_partition_spec(opts[STATIC_PARTITION]).items())
    stage = opts.get(STAGE) or None
    if stage is not None:
        validate_name(stage, "stage")
    user = opts.get(COMMIT_USER) or None
    ident = _int(opts, IDENTIFIER)
    if ident is not None and user is None:
        raise OptionError(f"option {IDENTIFIER!r} needs {COMMIT_USER!r}: exactly-once is per commit user")
    return WriteSpec(user, ident, static, stage, _bool(opts, BUCKETS_BY_TASK))
