"""What the Lakehouse page shows of a table: snapshots by kind, sorted runs per bucket,
consumers and tags. Pure functions over metadata records, plus ``table_overview`` that reads
them (through lakeformat's system tables when the library has them).

Sorted runs follow Paimon's merge tree: in a primary-key bucket every level-0 file is a run of
its own and each higher level is one run; an append bucket has no key order, so each file
counts as a run (what append compaction merges). A read of a bucket merges all its runs, so the
count is the number a user watches to decide on compaction.
"""
from __future__ import annotations

import datetime as dt
import json
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterable, Mapping, Optional, Sequence

import lakeformat as lf
from lakeformat.fileio import join

KINDS = ("APPEND", "COMPACT", "OVERWRITE", "ANALYZE")
RECENT_SNAPSHOTS = 10


@dataclass(frozen=True)
class BucketRuns:
    partition: str
    bucket: int
    files: int
    sorted_runs: int
    rows: int
    bytes: int


@dataclass(frozen=True)
class SnapshotInfo:
    id: int
    kind: str
    time: str
    delta_rows: int
    total_rows: int
    commit_user: str


@dataclass(frozen=True)
class TagInfo:
    name: str
    snapshot_id: int


@dataclass(frozen=True)
class TableOverview:
    name: str
    identifier: str
    exists: bool
    primary_keys: tuple[str, ...] = ()
    partition_keys: tuple[str, ...] = ()
    latest_snapshot: Optional[int] = None
    rows: int = 0
    snapshots_by_kind: Mapping[str, int] = field(default_factory=dict)
    recent_snapshots: tuple[SnapshotInfo, ...] = ()
    buckets: tuple[BucketRuns, ...] = ()
    consumers: Mapping[str, int] = field(default_factory=dict)
    tags: tuple[TagInfo, ...] = ()
    error: Optional[str] = None

    @property
    def kind(self) -> str:
        return "primary-key" if self.primary_keys else "append"

    @property
    def max_sorted_runs(self) -> int:
        return max((b.sorted_runs for b in self.buckets), default=0)

    def to_dict(self) -> dict:
        d = asdict(self)
        d.update(kind=self.kind, max_sorted_runs=self.max_sorted_runs,
                 snapshots_by_kind=dict(self.snapshots_by_kind), consumers=dict(self.consumers))
        return d


# -- pure functions over metadata ---------------------------------------------------------
def partition_label(values: Mapping[str, object]) -> str:
    return "/".join(f"{k}={v}" for k, v in values.items())


def bucket_runs(files: Iterable[Mapping], primary_key: bool) -> list[BucketRuns]:
    """Sorted runs per (partition, bucket) from live file records (``partition``, ``bucket``,
    ``level``, ``row_count``, ``file_size``), ordered by partition then bucket."""
    groups: dict[tuple[str, int], list[Mapping]] = defaultdict(list)
    for f in files:
        groups[(partition_label(f["partition"]), int(f["bucket"]))].append(f)
    out = []
    for (part, bucket), fs in sorted(groups.items()):
        if primary_key:
            runs = sum(1 for f in fs if f["level"] == 0) + len({f["level"] for f in fs if f["level"] > 0})
        else:
            runs = len(fs)
        out.append(BucketRuns(part, bucket, len(fs), runs, sum(int(f["row_count"]) for f in fs),
                              sum(int(f["file_size"]) for f in fs)))
    return out


def kinds_count(kinds: Iterable[str]) -> dict[str, int]:
    """Snapshot count per commit kind, in Paimon's kind order (kinds not seen are left out)."""
    c = Counter(kinds)
    return {k: c[k] for k in (*KINDS, *sorted(set(c) - set(KINDS))) if c[k]}


def _time(millis) -> str:
    if isinstance(millis, dt.datetime):
        return millis.strftime("%Y-%m-%d %H:%M:%S")
    return dt.datetime.fromtimestamp(int(millis) / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


# -- reading a table ----------------------------------------------------------------------
def _system_table(table: lf.Table, name: str):
    """Rows of a lakeformat system table as dicts, or None when the library has none."""
    try:
        from lakeformat.system_tables import system_table
    except ImportError:
        return None
    return system_table(table, name).to_pylist()


def _snapshots(table: lf.Table) -> list[SnapshotInfo]:
    rows = _system_table(table, "snapshots")
    if rows is not None:
        return [SnapshotInfo(int(r["snapshot_id"]), r["commit_kind"], _time(r["commit_time"]),
                             int(r.get("delta_record_count") or 0), int(r.get("total_record_count") or 0),
                             r.get("commit_user") or "") for r in rows]
    return [SnapshotInfo(s.id, s.commit_kind, _time(s.time_millis), s.delta_record_count or 0,
                         s.total_record_count or 0, s.commit_user) for s in table.snapshots()]


def _consumers(table: lf.Table) -> dict[str, int]:
    rows = _system_table(table, "consumers")
    if rows is not None:
        return {r["consumer_id"]: int(r["next_snapshot_id"]) for r in rows}
    out = {}   # Paimon's layout: consumer/consumer-<id> holding {"nextSnapshot": n}
    for info in table.io.list_dir(join(table.path, "consumer")):
        if info.base_name.startswith("consumer-"):
            doc = json.loads(table.io.read_bytes(join(table.path, "consumer", info.base_name)))
            out[info.base_name[len("consumer-"):]] = int(doc["nextSnapshot"])
    return dict(sorted(out.items()))


def _tags(table: lf.Table) -> list[TagInfo]:
    rows = _system_table(table, "tags")
    if rows is not None:
        return [TagInfo(r["tag_name"], int(r["snapshot_id"])) for r in rows]
    out = []   # Paimon's layout: tag/tag-<name> holding the tagged snapshot's JSON
    for info in table.io.list_dir(join(table.path, "tag")):
        if info.base_name.startswith("tag-"):
            doc = json.loads(table.io.read_bytes(join(table.path, "tag", info.base_name)))
            out.append(TagInfo(info.base_name[len("tag-"):], int(doc["id"])))
    return sorted(out, key=lambda t: (t.snapshot_id, t.name))


def table_overview(catalog: lf.Catalog, name: str, identifier: str) -> TableOverview:
    """Everything the page shows of one table; a table that cannot be read is reported with
    its error instead of failing the whole page."""
    if not catalog.table_exists(identifier):
        return TableOverview(name, identifier, exists=False)
    try:
        t = catalog.get_table(identifier)
        snaps = _snapshots(t)
        latest = max(snaps, key=lambda s: s.id) if snaps else None
        return TableOverview(
            name, identifier, True, tuple(t.primary_keys), tuple(t.partition_keys),
            latest.id if latest else None, latest.total_rows if latest else 0,
            kinds_count(s.kind for s in snaps),
            tuple(sorted(snaps, key=lambda s: -s.id)[:RECENT_SNAPSHOTS]),
            tuple(bucket_runs(t.files(), bool(t.primary_keys))) if latest else (),
            _consumers(t), tuple(_tags(t)))
    except Exception as e:  # noqa: BLE001 - shown on the page, the other tables still render
        return TableOverview(name, identifier, True, error=f"{type(e).__name__}: {e}")


def table_list(catalog: lf.Catalog, configured: Mapping[str, str]) -> list[tuple[str, str]]:
    """(name, identifier) of the configured tables first, then every other catalog table."""
    out = list(configured.items())
    seen = set(configured.values())
    for db in catalog.list_databases():
        for tbl in catalog.list_tables(db):
            ident = f"{db}.{tbl}"
            if ident not in seen:
                out.append((ident, ident))
                seen.add(ident)
    return out


def overview(catalog: lf.Catalog, configured: Mapping[str, str],
             only: Optional[Sequence[str]] = None) -> list[TableOverview]:
    pairs = table_list(catalog, configured)
    if only is not None:
        pairs = [(n, i) for n, i in pairs if n in only or i in only]
    return [table_overview(catalog, n, i) for n, i in pairs]
