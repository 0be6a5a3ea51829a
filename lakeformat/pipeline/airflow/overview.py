"""What the Lakehouse page shows of a table: snapshots by kind, sorted runs per bucket,
consumers and tags, read through lakeformat's system tables (lakeformat/table/system_tables.py).

Sorted runs follow Paimon's merge tree: in a primary-key bucket every level-0 file is a run of
its own and each higher level is one run; an append bucket has no key order, so each file
counts as a run (what append compaction merges). A read of a bucket merges all its runs, so the
count is the number a user watches to decide on compaction.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Optional
from collections.abc import Iterable, Mapping, Sequence

import lakeformat as lf
from lakeformat.secrets import mask
from lakeformat.table.system_tables import system_table

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


# -- reading a table ----------------------------------------------------------------------
def kinds_count(kinds: Iterable[str]) -> dict[str, int]:
    """Snapshot count per commit kind, in Paimon's kind order (kinds not seen are left out)."""
    c = Counter(kinds)
    return {k: c[k] for k in (*KINDS, *sorted(set(c) - set(KINDS))) if c[k]}


def _rows(table: lf.Table, name: str) -> list[dict]:
    return system_table(table, name).to_pylist()


def bucket_runs(table: lf.Table) -> list[BucketRuns]:
    """Sorted runs per (partition, bucket) of the latest snapshot, by partition then bucket."""
    return [BucketRuns(r["partition"], int(r["bucket"]), int(r["file_count"]), int(r["sorted_runs"]),
                       int(r["record_count"]), int(r["file_size_in_bytes"])) for r in _rows(table, "buckets")]


def _snapshots(table: lf.Table) -> list[SnapshotInfo]:
    return [SnapshotInfo(int(r["snapshot_id"]), r["commit_kind"], r["commit_time"].strftime("%Y-%m-%d %H:%M:%S"),
                         int(r["delta_record_count"] or 0), int(r["total_record_count"] or 0), r["commit_user"] or "")
            for r in _rows(table, "snapshots")]


def _consumers(table: lf.Table) -> dict[str, int]:
    return {r["consumer_id"]: int(r["next_snapshot_id"]) for r in _rows(table, "consumers")}


def _tags(table: lf.Table) -> list[TagInfo]:
    return [TagInfo(r["tag_name"], int(r["snapshot_id"])) for r in _rows(table, "tags")]


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
            tuple(bucket_runs(t)) if latest else (),
            _consumers(t), tuple(_tags(t)))
    except Exception as e:  # shown on the page, the other tables still render
        return TableOverview(name, identifier, True, error=mask(f"{type(e).__name__}: {e}"))


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
