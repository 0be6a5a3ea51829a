"""How the ``lakeformat`` command prints: readable tables by default, JSON with ``--json``."""
from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any, Sequence

from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text


def plain(v: Any) -> Any:
    if isinstance(v, (dt.date, dt.datetime, dt.time)):
        return v.isoformat()
    if isinstance(v, Decimal):
        return str(v)
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return v


def emit(args, title: str, rows: list[dict], columns: Sequence[str]) -> None:
    if args.json:
        print(json.dumps([plain(r) for r in rows], indent=2))
        return
    t = RichTable(title=Text(title))
    for c in columns:   # long values wrap inside their cell rather than being cut
        t.add_column(Text(c), overflow="fold")
    cells = [[cell(r.get(c)) for c in columns] for r in rows]
    for row in cells:   # Text, not str: values are data, never rich markup ('[/x]' would raise)
        t.add_row(*(Text(v) for v in row))
    console = Console()
    if not console.is_terminal:   # a log or a pipe: room for the whole table instead of 80 columns
        widest = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
        console = Console(width=max(80, sum(w + 3 for w in widest) + 1))
    console.print(t)


def cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, dt.datetime) and not v.microsecond % 1000:   # millisecond times, as Paimon prints them
        return v.isoformat(sep=" ", timespec="milliseconds")
    return str(plain(v))
