"""The ``lakeformat`` command: inspect tables (system tables) and run maintenance procedures.
Readable tables by default, ``--json`` for machines."""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from typing import Sequence

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from lakeformat.cli import config as cli_config
from lakeformat.cli import procedures as cli_procedures
from lakeformat.cli import tables as cli_tables
from lakeformat.cli.output import emit
from lakeformat.errors import LakeformatError
from lakeformat.format.types import type_to_json
from lakeformat.table.catalog import Catalog


def cmd_databases(cat: Catalog, args) -> None:
    emit(args, "databases", [{"database": d} for d in cat.list_databases()], ["database"])


def cmd_tables(cat: Catalog, args) -> None:
    dbs = [args.database] if args.database else cat.list_databases()
    rows = [{"table": f"{db}.{t}"} for db in dbs for t in cat.list_tables(db)]
    emit(args, "tables", rows, ["table"])


def cmd_show(cat: Catalog, args) -> None:
    t = cat.get_table(args.table)
    s, snap = t.schema, t.latest_snapshot()
    info = {
        "table": t.name, "path": t.path, "schema_id": s.id,
        "columns": [{"id": f.id, "name": f.name, "type": type_to_json(f.type)} for f in s.fields],
        "partition_keys": list(s.partition_keys), "primary_keys": list(s.primary_keys),
        "options": dict(s.options),
        "latest_snapshot": None if snap is None else {
            "id": snap.id, "kind": snap.commit_kind, "total_record_count": snap.total_record_count,
            "time": dt.datetime.fromtimestamp(snap.time_millis / 1000).isoformat(timespec="seconds")},
    }
    if args.json:
        print(json.dumps(info, indent=2))
        return
    c = Console()
    c.print(f"[bold]{escape(t.name)}[/]  {escape(t.path)}  (schema {s.id})")
    emit(args, "columns", info["columns"], ["id", "name", "type"])
    c.print(Text(f"partition keys: {list(s.partition_keys) or '-'}   primary keys: {list(s.primary_keys) or '-'}"))
    c.print(Text(f"options: {dict(s.options) or '-'}"))
    c.print("latest snapshot: " + ("none" if snap is None else
            f"{snap.id} ({snap.commit_kind}, {snap.total_record_count:,} rows, {info['latest_snapshot']['time']})"))


def cmd_read(cat: Catalog, args) -> None:
    t = cat.get_table(args.table)
    rows, need = [], args.limit
    for batch in t.to_batches(snapshot_id=args.snapshot):
        rows += batch.slice(0, need - len(rows)).to_pylist() if need else batch.to_pylist()
        if need and len(rows) >= need:
            break
    emit(args, f"{args.table} ({len(rows)} rows)", rows, t.schema.names)


def _global_flags(p: argparse.ArgumentParser, top: bool) -> None:
    """``--warehouse``, ``--option`` and ``--json`` are accepted before and after the subcommand.
    On the subparsers their defaults are SUPPRESS, so they never reset what was given before the
    subcommand; ``--option`` after it collects into ``sub_option`` and ``main`` merges both."""
    if top:
        warehouse, options, flag = os.environ.get("LAKEFORMAT_WAREHOUSE", "warehouse"), [], False
    else:
        warehouse = options = flag = argparse.SUPPRESS
    p.add_argument("--warehouse", default=warehouse,
                   help="warehouse path or URI (default: $LAKEFORMAT_WAREHOUSE or ./warehouse)")
    p.add_argument("--option", action="append", default=options, metavar="KEY=VALUE",
                   dest="option" if top else "sub_option",
                   help="catalog option, e.g. s3.endpoint=http://localhost:9000 (repeatable)")
    p.add_argument("--json", action="store_true", default=flag, help="print JSON instead of tables")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lakeformat", description="Inspect and maintain lakeformat (Apache Paimon) tables.")
    _global_flags(p, top=True)
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("databases", help="list databases").set_defaults(fn=cmd_databases)
    t = sub.add_parser("tables", help="list tables")
    t.add_argument("database", nargs="?")
    t.set_defaults(fn=cmd_tables)
    s = sub.add_parser("show", help="schema, options and latest snapshot")
    s.add_argument("table", help="database.table")
    s.set_defaults(fn=cmd_show)
    cli_tables.register(sub)        # snapshots, schemas, options, files, ... (Paimon's system tables)
    r = sub.add_parser("read", help="print rows")
    r.add_argument("table")
    r.add_argument("--limit", type=int, default=20, help="rows to print (0 = all; default 20)")
    r.add_argument("--snapshot", type=int)
    r.set_defaults(fn=cmd_read)
    cli_procedures.register(sub)    # compact, expire-snapshots, ... (Paimon's procedures)
    cli_config.register(sub)        # validate-config (the pipeline's tables.yaml)
    for sp in sub.choices.values():
        _global_flags(sp, top=False)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    options = {}
    for kv in args.option + getattr(args, "sub_option", []):
        k, sep, v = kv.partition("=")
        if not sep:
            print(f"error: --option needs KEY=VALUE, got {kv!r}", file=sys.stderr)
            return 2
        options[k] = v
    try:
        args.fn(Catalog(args.warehouse, **options) if getattr(args, "catalog", True) else None, args)
    except (LakeformatError, OSError) as e:   # OSError: storage unreachable, a file gone
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
