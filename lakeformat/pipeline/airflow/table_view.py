"""What the Lakehouse page shows of one table on its own page: the schema, a data preview with
a filter, the snapshot history (rows, files and bytes per snapshot, by commit kind),
partitions, buckets with their sorted runs against the compaction trigger, consumers, tags,
and the staged commits of write-audit-publish with each one's audit.

Reading (``table_detail``) is separate from the pure decisions (``history_points``,
``compaction_trigger``, ``cell_text``) that the unit tests check without a warehouse.
"""
from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Optional
from collections.abc import Mapping, Sequence

import lakeformat as lf
from lakeformat.commit.stage_log import StageRecord, stage_history
from lakeformat.errors import LakeformatError
from lakeformat.format import options as O
from lakeformat.format.manifest import ADD
from lakeformat.format.types import type_to_json
from lakeformat.pipeline.airflow.overview import BucketRuns, TagInfo, bucket_runs
from lakeformat.secrets import mask
from lakeformat.table.preview import read_preview
from lakeformat.table.system_tables import system_table

HISTORY_SNAPSHOTS = 60      # the chart's last snapshots (each costs one delta manifest read)
PREVIEW_LIMIT, PREVIEW_MAX = 50, 500
CELL_CHARS = 200


@dataclass(frozen=True)
class ColumnInfo:
    id: int
    name: str
    type: str
    nullable: bool
    role: str    # "partition key", "primary key", "primary and partition key" or ""


@dataclass(frozen=True)
class HistoryPoint:
    id: int
    kind: str
    time: str
    rows: int
    files: int
    bytes: int


@dataclass(frozen=True)
class SnapshotDelta:
    """One snapshot and the files its delta added and removed (the chart's input)."""
    id: int
    kind: str
    time_millis: int
    total_rows: int
    added_files: int
    removed_files: int
    added_bytes: int
    removed_bytes: int


@dataclass(frozen=True)
class PartitionInfo:
    partition: str
    rows: int
    files: int
    bytes: int
    last_update: str


@dataclass(frozen=True)
class PreviewView:
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    filter: str
    limit: int
    more: bool
    snapshot_id: Optional[int]
    error: Optional[str] = None


@dataclass(frozen=True)
class TableDetail:
    name: str
    identifier: str
    kind: str
    schema_id: int
    columns: tuple[ColumnInfo, ...]
    options: Mapping[str, str]
    history: tuple[HistoryPoint, ...]
    partitions: tuple[PartitionInfo, ...]
    buckets: tuple[BucketRuns, ...]
    trigger_option: str
    trigger: int
    consumers: Mapping[str, int]
    tags: tuple[TagInfo, ...]
    stages: tuple[StageRecord, ...]
    preview: PreviewView

    @property
    def buckets_at_trigger(self) -> int:
        return sum(b.sorted_runs >= self.trigger for b in self.buckets)


# -- pure decisions ------------------------------------------------------------------------
def history_points(base_files: int, base_bytes: int, deltas: Sequence[SnapshotDelta]) -> list[HistoryPoint]:
    """Running totals per snapshot: ``base_*`` are the live files and bytes of the first delta's
    snapshot *before* it (so the first point adds its own delta), each later snapshot adds its
    delta's added files and takes away its removed ones (a compaction removes as many as it
    writes, or more)."""
    files, size, out = base_files, base_bytes, []
    for d in deltas:
        files += d.added_files - d.removed_files
        size += d.added_bytes - d.removed_bytes
        out.append(HistoryPoint(d.id, d.kind, _local(d.time_millis), d.total_rows, files, size))
    return out


def compaction_trigger(primary_keys: Sequence[str], options: O.Options) -> tuple[str, int]:
    """The option that starts a compaction of a bucket and its value: sorted runs for a
    primary-key table (``num-sorted-run.compaction-trigger``), files for an append table
    (``compaction.min.file-num``, each file being a run there)."""
    opt = O.COMPACTION_TRIGGER if primary_keys else O.COMPACTION_MIN_FILE_NUM
    return opt.key, int(options.required(opt))


def cell_text(v: Any) -> str:
    """A value as the preview shows it (long ones cut): null as ∅, bytes as hex."""
    if v is None:
        return "∅"
    if isinstance(v, float) and not math.isfinite(v):
        text = "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    elif isinstance(v, bytes):
        text = v.hex()
    elif isinstance(v, bool):
        text = str(v).lower()
    elif isinstance(v, dt.datetime):   # milliseconds when that is all there is, as Paimon prints them
        text = v.isoformat(sep=" ", timespec="milliseconds" if v.microsecond % 1000 == 0 else "auto")
        text = text[:-4] if text.endswith(".000") else text
    elif isinstance(v, (dt.date, dt.time, Decimal)):
        text = str(v)
    else:
        text = str(v)
    return text if len(text) <= CELL_CHARS else text[:CELL_CHARS - 1] + "…"


def clamp_limit(limit: Optional[int]) -> int:
    return PREVIEW_LIMIT if not limit or limit < 1 else min(int(limit), PREVIEW_MAX)


def _local(millis: int) -> str:
    return dt.datetime.fromtimestamp(millis / 1000).strftime("%Y-%m-%d %H:%M:%S")


# -- reading --------------------------------------------------------------------------------
def type_text(t) -> str:
    """A Paimon type as SQL writes it: ``STRING NOT NULL``, ``ARRAY<INT>``, ``ROW<a INT, b STRING>``."""
    j = type_to_json(t)
    if isinstance(j, str):
        return j
    root, _, nn = j["type"].partition(" ")
    nn = f" {nn}" if nn else ""
    if root == "ARRAY":
        return f"ARRAY<{type_text(t.element)}>{nn}"
    if root == "MAP":
        return f"MAP<{type_text(t.key)}, {type_text(t.value)}>{nn}"
    return f"ROW<{', '.join(f'{f.name} {type_text(f.type)}' for f in t.fields)}>{nn}"


def _columns(t: lf.Table) -> tuple[ColumnInfo, ...]:
    pks, parts = set(t.primary_keys), set(t.partition_keys)
    roles = {(True, True): "primary and partition key", (True, False): "primary key",
             (False, True): "partition key", (False, False): ""}
    return tuple(ColumnInfo(f.id, f.name, type_text(f.type), f.type.nullable,
                            roles[(f.name in pks, f.name in parts)]) for f in t.schema.fields)


def snapshot_deltas(t: lf.Table, snapshots: Sequence) -> tuple[int, int, list[SnapshotDelta]]:
    """(files, bytes) live before the first of ``snapshots`` and each one's delta."""
    deltas = []
    for s in snapshots:
        entries = t.delta_entries(s)
        add = [e.file.file_size for e in entries if e.kind == ADD]
        rem = [e.file.file_size for e in entries if e.kind != ADD]
        deltas.append(SnapshotDelta(s.id, s.commit_kind, s.time_millis, s.total_record_count,
                                    len(add), len(rem), sum(add), sum(rem)))
    if not deltas:
        return 0, 0, []
    live = t.live_entries(snapshots[0])
    first = deltas[0]
    return (len(live) - first.added_files + first.removed_files,
            sum(e.file.file_size for e in live) - first.added_bytes + first.removed_bytes, deltas)


def preview(t: lf.Table, filter_text: str, limit: Optional[int]) -> PreviewView:
    limit = clamp_limit(limit)
    names = tuple(t.schema.names)
    try:
        p = read_preview(t, filter_text or None, limit=limit)
    except LakeformatError as e:
        return PreviewView(names, (), filter_text, limit, False, None, mask(str(e)))
    columns = tuple(p.rows.column_names)
    rows = tuple(tuple(cell_text(v) for v in row.values()) for row in p.rows.to_pylist())
    return PreviewView(columns, rows, filter_text, limit, p.more, p.snapshot.id if p.snapshot else None)


def table_detail(catalog: lf.Catalog, name: str, identifier: str, filter_text: str = "",
                 limit: Optional[int] = None) -> TableDetail:
    t = catalog.get_table(identifier)
    snaps = sorted(t.snapshots(), key=lambda s: s.id)[-HISTORY_SNAPSHOTS:]
    base_files, base_bytes, deltas = snapshot_deltas(t, snaps)
    opt, trigger = compaction_trigger(t.primary_keys, t.typed_options)
    parts = [PartitionInfo(r["partition"], int(r["record_count"]), int(r["file_count"]),
                           int(r["file_size_in_bytes"]), r["last_update_time"].strftime("%Y-%m-%d %H:%M:%S")
                           if r["last_update_time"] else "")
             for r in system_table(t, "partitions").to_pylist()] if snaps else []
    return TableDetail(
        name, identifier, "primary-key" if t.primary_keys else "append", t.schema.id, _columns(t),
        dict(t.schema.options), tuple(history_points(base_files, base_bytes, deltas)), tuple(parts),
        tuple(bucket_runs(t)) if snaps else (), opt, trigger,
        {r["consumer_id"]: int(r["next_snapshot_id"]) for r in system_table(t, "consumers").to_pylist()},
        tuple(TagInfo(r["tag_name"], int(r["snapshot_id"])) for r in system_table(t, "tags").to_pylist()),
        tuple(stage_history(t.ctx)), preview(t, filter_text, limit))
