"""The manifest entries of a snapshot: its live files, or the files its own commit changed.

Scan helpers the committer (conflict checks, overwrites), the writers (a bucket's files) and
maintenance use, on the table's context."""
from __future__ import annotations

from typing import Optional

from lakeformat.format import predicate as P
from lakeformat.format.manifest import ManifestEntry
from lakeformat.format.snapshot import Snapshot
from lakeformat.io.table_context import TableContext
from lakeformat.read.scan import FileScan


def live_entries(ctx: TableContext, snapshot: Snapshot, partitions: Optional[set[bytes]] = None
                 ) -> list[ManifestEntry]:
    """Live files of a snapshot; with ``partitions``, only manifests that may hold those
    partitions are read (their partition statistics are checked)."""
    scan = FileScan(ctx, _partitions_predicate(ctx, partitions) if partitions else None)
    entries = scan.live_entries(snapshot)
    return [e for e in entries if e.partition in partitions] if partitions else entries


def delta_entries(ctx: TableContext, snapshot: Snapshot) -> list[ManifestEntry]:
    """The entries (ADD and DELETE) of the snapshot's own commit."""
    return FileScan(ctx).delta_entries(snapshot)


def _partitions_predicate(ctx: TableContext, partitions: set[bytes]) -> Optional[P.Predicate]:
    names = ctx.partition_keys
    if not names:
        return None
    terms: list[P.Predicate] = []
    for values in {ctx.partition_values(p) for p in partitions}:
        parts = [P.col(n).is_null() if v is None else P.col(n) == v for n, v in zip(names, values)]
        terms.append(parts[0] if len(parts) == 1 else P.And(tuple(parts)))
    return terms[0] if len(terms) == 1 else P.Or(tuple(terms))
