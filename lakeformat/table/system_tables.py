"""Paimon's system tables (``my_table$snapshots``, ``$files``, ...) as Arrow tables.

Column names and meanings follow Paimon's "System Tables" page, so a query written against
Paimon reads the same here. Partitions print as Paimon's partitions table does (``dt=x/hr=y``;
empty for an unpartitioned table); times are local wall-clock timestamps in milliseconds, as
Java's LocalDateTime shows them. Everything is read from metadata (snapshots, manifests, schema,
tag and consumer files): no data file is opened. ``buckets`` adds ``sorted_runs``, the count a
reader merges and a compaction bounds (level-0 files plus non-empty levels for a primary-key
bucket; files for an append bucket). A tag's ``time_retained`` is a duration (Arrow's), not
text: each front end prints it its own way (the CLI as ``2 d``).
"""
from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict
from typing import Optional
from collections.abc import Callable, Iterable, Sequence

import pyarrow as pa

from lakeformat.errors import LakeformatError, NotFoundError
from lakeformat.format import arrays as A
from lakeformat.format import options as O
from lakeformat.format import types as T
from lakeformat.format.binary_row import deserialize_row
from lakeformat.format.manifest import ManifestEntry
from lakeformat.format.snapshot import Snapshot
from lakeformat.io.fileio import join
from lakeformat.io.manifests import ManifestList
from lakeformat.maintenance.consumer import ConsumerManager
from lakeformat.maintenance.tag import TagManager
from lakeformat.read.scan import decode_stats

TS = pa.timestamp("ms")


def local_time(millis: Optional[int]) -> Optional[dt.datetime]:
    return None if millis is None else dt.datetime.fromtimestamp(millis / 1000)


def render(v) -> str:
    """A value as Paimon casts it to a string."""
    if v is None:
        return "null"
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, dt.datetime):
        return v.isoformat(sep=" ")
    return str(v)


def partition_string(table, partition: bytes) -> str:
    """``k=v/k2=v2`` (nulls as ``partition.default-name``), as Paimon's partitions table."""
    default = table.typed_options.get(O.PARTITION_DEFAULT_NAME)
    values = table.partition_values(partition)
    return "/".join(f"{k}={default if v is None else render(v)}" for k, v in zip(table.partition_keys, values))


def sorted_runs(files: Iterable, primary_key: bool) -> int:
    """Sorted runs of one bucket: every level-0 file plus each non-empty higher level (primary-key
    tables); every file of an append bucket."""
    files = list(files)
    if not primary_key:
        return len(files)
    return sum(1 for f in files if f.level == 0) + len({f.level for f in files if f.level > 0})


# ---------------------------------------------------------------- the tables

def snapshots(table, snapshot_id: Optional[int] = None) -> pa.Table:
    rows = []
    sm = table.snapshot_manager
    for sid in sm.list_ids():
        try:
            s = sm.get(sid)
        except NotFoundError:   # expired while listing
            continue
        rows.append({"snapshot_id": s.id, "schema_id": s.schema_id, "commit_user": s.commit_user,
                     "commit_identifier": s.commit_identifier, "commit_kind": s.commit_kind,
                     "commit_time": local_time(s.time_millis), "base_manifest_list": s.base_manifest_list,
                     "delta_manifest_list": s.delta_manifest_list,
                     "changelog_manifest_list": s.changelog_manifest_list,
                     "total_record_count": s.total_record_count, "delta_record_count": s.delta_record_count,
                     "changelog_record_count": s.changelog_record_count, "watermark": s.watermark})
    return A.table_from_pylist(rows, pa.schema([
        ("snapshot_id", pa.int64()), ("schema_id", pa.int64()), ("commit_user", pa.string()),
        ("commit_identifier", pa.int64()), ("commit_kind", pa.string()), ("commit_time", TS),
        ("base_manifest_list", pa.string()), ("delta_manifest_list", pa.string()),
        ("changelog_manifest_list", pa.string()), ("total_record_count", pa.int64()),
        ("delta_record_count", pa.int64()), ("changelog_record_count", pa.int64()), ("watermark", pa.int64())]))


def schemas(table, snapshot_id: Optional[int] = None) -> pa.Table:
    sm = table.schema_manager
    rows = []
    for sid in sm.list_ids():
        s = sm.get(sid)
        rows.append({"schema_id": s.id, "fields": json.dumps([T.field_to_json(f) for f in s.fields]),
                     "partition_keys": json.dumps(list(s.partition_keys)),
                     "primary_keys": json.dumps(list(s.primary_keys)), "options": json.dumps(dict(s.options)),
                     "comment": s.comment, "update_time": local_time(s.time_millis)})
    return A.table_from_pylist(rows, pa.schema([
        ("schema_id", pa.int64()), ("fields", pa.string()), ("partition_keys", pa.string()),
        ("primary_keys", pa.string()), ("options", pa.string()), ("comment", pa.string()), ("update_time", TS)]))


def options(table, snapshot_id: Optional[int] = None) -> pa.Table:
    items = sorted(table.options.items())
    return pa.table({"key": A.from_pylist([k for k, _ in items], pa.string()),
                     "value": A.from_pylist([v for _, v in items], pa.string())})


def _snapshot(table, snapshot_id: Optional[int]) -> Optional[Snapshot]:
    return table.snapshot(snapshot_id) if snapshot_id is not None else table.latest_snapshot()


def _live(table, snapshot_id: Optional[int]) -> list[ManifestEntry]:
    snap = _snapshot(table, snapshot_id)
    return table.live_entries(snap) if snap is not None else []


class _StatsFormatter:
    """Renders a file's key range and value statistics as Paimon's files table does."""

    def __init__(self, table):
        self.table = table
        self.key_of = table.key_decoder()

    def key(self, raw: bytes) -> Optional[str]:
        if self.key_of is None:
            return None
        return "[" + ", ".join(render(v) for v in self.key_of(raw)) + "]"

    def values(self, f) -> tuple[Optional[str], Optional[str], Optional[str]]:
        fields = list(self.table.schema_manager.get(f.schema_id).fields)
        if f.value_stats_cols is not None:
            by_name = {x.name: x for x in fields}
            fields = [by_name[n] for n in f.value_stats_cols if n in by_name]
        stats = decode_stats(f.value_stats, [x.type for x in fields])
        if stats is None or not fields:
            return None, None, None
        mins, maxs, nulls = stats

        def fmt(values) -> str:
            return "{" + ", ".join(f"{x.name}={render(v)}" for x, v in zip(fields, values)) + "}"
        return fmt(nulls or [None] * len(fields)), fmt(mins), fmt(maxs)


def files(table, snapshot_id: Optional[int] = None) -> pa.Table:
    fmt = _StatsFormatter(table)
    rows = []
    for e in _live(table, snapshot_id):
        f = e.file
        nulls, lo, hi = fmt.values(f)
        rows.append({"partition": partition_string(table, e.partition), "bucket": e.bucket,
                     "file_path": join(table.bucket_dir_of(e.partition, e.bucket), f.file_name),
                     "file_format": f.file_name.rsplit(".", 1)[-1] if "." in f.file_name else None,
                     "schema_id": f.schema_id, "level": f.level, "record_count": f.row_count,
                     "file_size_in_bytes": f.file_size, "min_key": fmt.key(f.min_key), "max_key": fmt.key(f.max_key),
                     "null_value_counts": nulls, "min_value_stats": lo, "max_value_stats": hi,
                     "min_sequence_number": f.min_sequence_number, "max_sequence_number": f.max_sequence_number,
                     "creation_time": local_time(f.creation_time_millis),
                     "file_source": None if f.file_source is None else {0: "APPEND", 1: "COMPACT"}.get(f.file_source)})
    rows.sort(key=lambda r: (r["partition"], r["bucket"], r["level"], r["min_sequence_number"], r["file_path"]))
    return A.table_from_pylist(rows, pa.schema([
        ("partition", pa.string()), ("bucket", pa.int32()), ("file_path", pa.string()),
        ("file_format", pa.string()), ("schema_id", pa.int64()), ("level", pa.int32()),
        ("record_count", pa.int64()), ("file_size_in_bytes", pa.int64()), ("min_key", pa.string()),
        ("max_key", pa.string()), ("null_value_counts", pa.string()), ("min_value_stats", pa.string()),
        ("max_value_stats", pa.string()), ("min_sequence_number", pa.int64()),
        ("max_sequence_number", pa.int64()), ("creation_time", TS), ("file_source", pa.string())]))


def manifests(table, snapshot_id: Optional[int] = None) -> pa.Table:
    snap = _snapshot(table, snapshot_id)
    metas = []
    if snap is not None:
        mlist = ManifestList(table.io, table.path)
        metas = mlist.read(snap.base_manifest_list) + mlist.read(snap.delta_manifest_list)
    types = [f.type for f in table.schema.partition_fields]

    def bound(raw: bytes) -> Optional[str]:
        if not types:
            return "{}"
        try:
            return "{" + ", ".join(render(v) for v in deserialize_row(raw, types)) + "}"
        except Exception:   # statistics written under another partition type: unknown
            return None
    rows = [{"file_name": m.file_name, "file_size": m.file_size, "num_added_files": m.num_added_files,
             "num_deleted_files": m.num_deleted_files, "schema_id": m.schema_id,
             "min_partition_stats": bound(m.partition_stats.min_values),
             "max_partition_stats": bound(m.partition_stats.max_values)} for m in metas]
    return A.table_from_pylist(rows, pa.schema([
        ("file_name", pa.string()), ("file_size", pa.int64()), ("num_added_files", pa.int64()),
        ("num_deleted_files", pa.int64()), ("schema_id", pa.int64()), ("min_partition_stats", pa.string()),
        ("max_partition_stats", pa.string())]))


def _grouped(table, snapshot_id, key: Callable[[ManifestEntry], tuple]) -> dict[tuple, list]:
    groups: dict[tuple, list] = defaultdict(list)
    for e in _live(table, snapshot_id):
        groups[key(e)].append(e.file)
    return groups


def _totals(fs: Sequence) -> dict:
    times = [f.creation_time_millis for f in fs if f.creation_time_millis is not None]
    return {"record_count": sum(f.row_count for f in fs), "file_size_in_bytes": sum(f.file_size for f in fs),
            "file_count": len(fs), "last_update_time": local_time(max(times)) if times else None}


def partitions(table, snapshot_id: Optional[int] = None) -> pa.Table:
    groups = _grouped(table, snapshot_id, lambda e: (e.partition,))
    rows = sorted(({"partition": partition_string(table, p), **_totals(fs)} for (p,), fs in groups.items()),
                  key=lambda r: r["partition"])
    return A.table_from_pylist(rows, pa.schema([
        ("partition", pa.string()), ("record_count", pa.int64()), ("file_size_in_bytes", pa.int64()),
        ("file_count", pa.int64()), ("last_update_time", TS)]))


def buckets(table, snapshot_id: Optional[int] = None) -> pa.Table:
    pk = bool(table.schema.primary_keys)
    groups = _grouped(table, snapshot_id, lambda e: (e.partition, e.bucket))
    rows = sorted(({"partition": partition_string(table, p), "bucket": b, **_totals(fs),
                    "sorted_runs": sorted_runs(fs, pk)} for (p, b), fs in groups.items()),
                  key=lambda r: (r["partition"], r["bucket"]))
    return A.table_from_pylist(rows, pa.schema([
        ("partition", pa.string()), ("bucket", pa.int32()), ("record_count", pa.int64()),
        ("file_size_in_bytes", pa.int64()), ("file_count", pa.int64()), ("last_update_time", TS),
        ("sorted_runs", pa.int64())]))


def consumers(table, snapshot_id: Optional[int] = None) -> pa.Table:
    items = sorted(ConsumerManager(table.ctx).list().items())
    return pa.table({"consumer_id": A.from_pylist([k for k, _ in items], pa.string()),
                     "next_snapshot_id": A.from_pylist([v for _, v in items], pa.int64())})


def tags(table, snapshot_id: Optional[int] = None) -> pa.Table:
    rows = [{"tag_name": t.name, "snapshot_id": t.snapshot.id, "schema_id": t.snapshot.schema_id,
             "commit_time": local_time(t.snapshot.time_millis), "record_count": t.snapshot.total_record_count,
             "create_time": t.create_time,
             "time_retained": t.time_retained}
            for t in TagManager(table.ctx).list()]
    return A.table_from_pylist(rows, pa.schema([
        ("tag_name", pa.string()), ("snapshot_id", pa.int64()), ("schema_id", pa.int64()),
        ("commit_time", TS), ("record_count", pa.int64()), ("create_time", TS), ("time_retained", pa.duration("ms"))]))


SYSTEM_TABLES: dict[str, Callable[..., pa.Table]] = {
    "snapshots": snapshots, "schemas": schemas, "options": options, "files": files,
    "manifests": manifests, "partitions": partitions, "buckets": buckets, "consumers": consumers,
    "tags": tags,
}
AT_SNAPSHOT = ("files", "manifests", "partitions", "buckets")   # accept a snapshot id (time travel)


def system_table(table, name: str, snapshot_id: Optional[int] = None) -> pa.Table:
    """Paimon's system table ``name`` of ``table``; ``snapshot_id`` picks the snapshot for
    files, manifests, partitions and buckets (default: the latest)."""
    fn = SYSTEM_TABLES.get(name)
    if fn is None:
        raise LakeformatError(f"unknown system table {name!r}; system tables are {sorted(SYSTEM_TABLES)}")
    if snapshot_id is not None and name not in AT_SNAPSHOT:
        raise LakeformatError(f"system table {name!r} does not depend on a snapshot; "
                              f"only {list(AT_SNAPSHOT)} take one")
    return fn(table, snapshot_id)
