"""The first rows of a table for a person to look at: ``lakeformat read`` and the Lakehouse
page's data preview. A filter typed as text (format/filter_text.py), chosen columns, a limit,
and time travel by snapshot, tag or time; the filter is parsed against the columns of the
snapshot read (time travel reads a snapshot in its own schema), so it prunes partitions and
files before any row is read, and rows are streamed only up to the limit.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional
from collections.abc import Sequence

import pyarrow as pa

from lakeformat.errors import DataError
from lakeformat.format import options as O
from lakeformat.format.filter_text import parse_filter
from lakeformat.format.snapshot import Snapshot


@dataclass(frozen=True)
class Preview:
    rows: pa.Table
    snapshot: Optional[Snapshot]   # the snapshot read (None: the table is empty)
    more: bool                     # rows beyond the limit exist


def read_preview(table, filter: Optional[str] = None, columns: Optional[Sequence[str]] = None,
                 limit: Optional[int] = 20, snapshot_id: Optional[int] = None, as_of=None,
                 tag: Optional[str] = None) -> Preview:
    """At most ``limit`` rows (None or 0: all) matching ``filter`` of the chosen snapshot."""
    scan = table.scan(snapshot_id=snapshot_id, as_of=as_of, tag=tag, fallback=False)   # resolves the snapshot only
    view, snap = scan.table, scan.snapshot
    arrow = view.schema.arrow_schema()
    if columns:
        unknown = [c for c in columns if c not in arrow.names]
        if unknown:
            raise DataError(f"no column {', '.join(map(repr, unknown))} in {table.name}; "
                            f"the columns are {', '.join(arrow.names)}")
    predicate = parse_filter(filter, arrow)
    out_schema = pa.schema([arrow.field(c) for c in columns]) if columns else arrow
    fallback = table.typed_options.get(O.SCAN_FALLBACK_BRANCH)
    if snap is None and not fallback:
        return Preview(out_schema.empty_table(), None, False)
    batches, got, more = [], 0, False
    # the snapshot resolved above, pinned; with scan.fallback-branch, as the caller asked (the
    # fallback branch's snapshot follows from it: its latest for a read of the latest)
    travel = dict(snapshot_id=snapshot_id, as_of=as_of, tag=tag) if fallback else dict(snapshot_id=snap.id)
    for batch in (table if fallback else view).to_batches(columns=list(columns) if columns else None,
                                                          filter=predicate, **travel):
        if limit and got >= limit:   # the limit is reached: is there another row?
            more = batch.num_rows > 0
            if more:
                break
            continue
        take = batch.slice(0, limit - got) if limit else batch
        batches.append(take)
        got += take.num_rows
        if take.num_rows < batch.num_rows:
            more = True
            break
    rows = pa.Table.from_batches(batches) if batches else out_schema.empty_table()
    return Preview(rows, snap, more)


__all__ = ["Preview", "read_preview"]
