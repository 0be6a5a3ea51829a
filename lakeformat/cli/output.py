"""How the ``lakeformat`` command prints: readable tables that fit the terminal by default, JSON
with ``--json`` (unchanged by anything here: machine output stays what it was).

A readable table never folds a column narrower than its header: on a narrow terminal long
values are cut with an ellipsis (``--json`` has them whole) and, when even the headers do not
fit, the last columns are left out and named below the table. Times are never cut. Sizes read ``1.2 MiB`` and
durations ``3 min 20 s`` (format/human.py, shared with the Lakehouse page). Written to a pipe or a
log, the table is as wide as its widest row instead.
"""
from __future__ import annotations

import datetime as dt
import json
import math
from decimal import Decimal
from typing import Any, Optional
from collections.abc import Sequence

from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from lakeformat.format.human import human_duration, human_size

# system-table columns shown in human units ("1.2 MiB"); headers are Paimon's column names, as in
# --json, but a size in human units is no longer "in bytes"
SIZE_COLUMNS = {"file_size_in_bytes", "file_size", "orphan_bytes"}
LABELS = {"file_size_in_bytes": "file_size"}
MIN_WIDTH = 8          # a column is never narrower than this or than its header, whichever is less wide
BYTES_SHOWN = 32       # a longer binary value shows its first bytes in hex and its size (--json: all of it)
BORDER = 3             # rich's box: a separator and one space of padding either side, per column


def plain(v: Any) -> Any:
    """``v`` as JSON can hold it; NaN and infinities (not JSON) as the strings Java prints."""
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    if isinstance(v, (dt.date, dt.datetime, dt.time)):
        return v.isoformat()
    if isinstance(v, dt.timedelta):   # a tag's time_retained: the JSON text it always had
        return str(v)
    if isinstance(v, Decimal):
        return str(v)
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return v


def cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, dt.datetime) and not v.microsecond % 1000:   # millisecond times, as Paimon prints them
        return v.isoformat(sep=" ", timespec="milliseconds")
    if isinstance(v, dt.timedelta):
        return human_duration(v)
    if isinstance(v, bytes) and len(v) > BYTES_SHOWN:   # a BLOB: its first bytes and its size, not MBs of hex
        return f"{v[:BYTES_SHOWN].hex()}… ({human_size(len(v))})"
    return str(plain(v))


def fit_columns(headers: Sequence[str], cells: Sequence[Sequence[str]], width: int,
                whole: Sequence[int] = ()) -> list[int]:
    """The width of each column that fits in ``width`` (the shown ones: a prefix of the columns).
    Each column gets at least its natural width up to MIN_WIDTH or its header's length,
    whichever is more, and the columns numbered in ``whole`` (times: a cut time reads as
    another time) their natural width; columns that would not fit even so are left out from the
    end (the first ones are what people scan first). The room left goes to the columns that
    want more, in their order, each up to its natural width (the rest end in an ellipsis)."""
    natural = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    least = [n if i in whole else min(n, max(MIN_WIDTH, len(h))) for i, (n, h) in enumerate(zip(natural, headers))]
    shown, used = 0, 1
    for w in least:
        if used + w + BORDER > width and shown:
            break
        used += w + BORDER
        shown += 1
    widths = least[:shown]
    spare = max(width - used, 0)
    for i in range(shown):
        give = min(natural[i] - least[i], spare)
        widths[i] += give
        spare -= give
    return widths


def _numeric(values: Sequence[Any]) -> bool:
    seen = [v for v in values if v is not None]
    return bool(seen) and all(isinstance(v, (int, float, Decimal)) and not isinstance(v, bool) for v in seen)


def _times(values: Sequence[Any]) -> bool:
    seen = [v for v in values if v is not None]
    return bool(seen) and all(isinstance(v, (dt.datetime, dt.date, dt.time)) for v in seen)


def emit(args, title: str, rows: list[dict], columns: Sequence[str], human: bool = True,
         caption: Optional[str] = None, console: Optional[Console] = None) -> None:
    """Print ``rows`` (``columns`` of them): JSON with ``--json``, else a table. ``human``: sizes
    and the system tables' short headers (``read`` prints a table's own columns as they are)."""
    if args.json:
        print(json.dumps([plain(r) for r in rows], indent=2, allow_nan=False))
        return
    if human and rows:   # a system-table column empty in every row (min_key of an append table) takes no room
        columns = [c for c in columns if any(r.get(c) not in (None, "") for r in rows)] or list(columns)
    headers = [LABELS.get(c, c) if human else c for c in columns]
    fmt = [(human_size if human and c in SIZE_COLUMNS else cell) for c in columns]
    cells = [[f(r.get(c)) if r.get(c) is not None else "" for f, c in zip(fmt, columns)] for r in rows]
    console = console or Console()
    if not console.is_terminal:   # a log or a pipe: room for the whole table instead of 80 columns
        widest = [max([len(h)] + [len(row[i]) for row in cells]) for i, h in enumerate(headers)]
        console = Console(width=max(80, sum(w + BORDER for w in widest) + 1))
    times = [i for i, c in enumerate(columns) if _times([r.get(c) for r in rows])]
    widths = fit_columns(headers, cells, console.width, whole=times)
    left_out = headers[len(widths):]
    notes = [caption] if caption else []
    if left_out:
        notes.append(f"{len(left_out)} more column(s) not shown: {', '.join(left_out)} "
                     f"({'--columns, ' if not human else ''}a wider terminal or --json)")
    t = RichTable(title=Text(title), caption=Text("\n".join(notes)) if notes else None, caption_justify="left")
    for i, w in enumerate(widths):
        # one line per row: long values end in an ellipsis rather than folding the column
        t.add_column(Text(headers[i]), width=w, no_wrap=True, overflow="ellipsis",
                     justify="right" if _numeric([r.get(columns[i]) for r in rows]) else "left")
    for row in cells:   # Text, not str: values are data, never rich markup ('[/x]' would raise)
        t.add_row(*(Text(row[i]) for i in range(len(widths))))
    console.print(t)
