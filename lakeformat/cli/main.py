"""The ``lakeformat`` command: inspect tables (system tables) and run maintenance procedures.
Readable tables by default, ``--json`` for machines."""
from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from typing import Any
from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from lakeformat.cli import help_text
from lakeformat.cli import config as cli_config
from lakeformat.cli import procedures as cli_procedures
from lakeformat.cli import submit as cli_submit
from lakeformat.cli import tables as cli_tables
from lakeformat.cli.output import emit, plain
from lakeformat.cli.suggest import SuggestingParser, table_hint
from lakeformat.errors import LakeformatError, NotFoundError
from lakeformat.format.types import type_to_json
from lakeformat.secrets import mask
from lakeformat.table.catalog import Catalog
from lakeformat.table.preview import read_preview
from lakeformat.table.settings import CATALOG_ENV, WAREHOUSE_ENV
from lakeformat.table.settings import resolve as resolve_settings


def cmd_databases(cat: Catalog, args) -> None:
    emit(args, "databases", [{"database": d} for d in cat.list_databases()], ["database"])


def cmd_tables(cat: Catalog, args) -> None:
    dbs = [args.database] if args.database else cat.list_databases()
    rows = [{"table": f"{db}.{t}"} for db in dbs for t in cat.list_tables(db)]
    emit(args, "tables", rows, ["table"])


def cmd_show(cat: Catalog, args) -> None:
    t = cat.get_table(args.table)
    s, snap = t.schema, t.latest_snapshot()
    info: dict[str, Any] = {
        "table": t.name, "path": t.path, "schema_id": s.id,
        "columns": [{"id": f.id, "name": f.name, "type": type_to_json(f.type)} for f in s.fields],
        "partition_keys": list(s.partition_keys), "primary_keys": list(s.primary_keys),
        "options": dict(s.options),
        "latest_snapshot": None if snap is None else {
            "id": snap.id, "kind": snap.commit_kind, "total_record_count": snap.total_record_count,
            "time": dt.datetime.fromtimestamp(snap.time_millis / 1000).isoformat(timespec="seconds")},
    }
    if args.json:
        print(json.dumps(plain(info), indent=2, allow_nan=False))
        return
    c = Console()
    c.print(f"[bold]{escape(t.name)}[/]  {escape(t.path)}  (schema {s.id})")
    emit(args, "columns", info["columns"], ["id", "name", "type"])
    c.print(Text(f"partition keys: {', '.join(s.partition_keys) or '-'}   "
                 f"primary keys: {', '.join(s.primary_keys) or '-'}"))
    if s.options:
        emit(args, "options", [{"key": k, "value": v} for k, v in sorted(s.options.items())], ["key", "value"])
    else:
        c.print("options: -")
    c.print(Text("latest snapshot: " + ("none" if snap is None else
                 f"{snap.id} ({snap.commit_kind}, {snap.total_record_count:,} rows, "
                 f"{info['latest_snapshot']['time'].replace('T', ' ')})")))


def cmd_read(cat: Catalog, args) -> None:
    t = cat.get_table(args.table)
    p = read_preview(t, args.filter, args.columns, args.limit, args.snapshot, args.as_of, args.tag)
    rows = p.rows.to_pylist()
    at = f"snapshot {p.snapshot.id}" if p.snapshot else "no snapshot yet"
    more = "more rows follow: --limit N for more, --limit 0 for all" if p.more else None
    emit(args, f"{args.table} ({len(rows)} rows, {at})", rows, p.rows.column_names, human=False, caption=more)


def column_list(text: str) -> list[str]:
    names = [c.strip() for c in text.split(",") if c.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"--columns needs NAME[,NAME...], got {text!r}")
    return names


def as_of(text: str):
    """Epoch millis, or a time as ISO text (local time), checked by the table."""
    return int(text) if text.strip().isdigit() else text


def _global_flags(p: argparse.ArgumentParser, top: bool) -> None:
    """``--warehouse``, ``--option`` and ``--json`` are accepted before and after the subcommand.
    On the subparsers their defaults are SUPPRESS, so they never reset what was given before the
    subcommand; ``--option`` after it collects into ``sub_option`` and ``main`` merges both."""
    options: Any   # a list, or argparse.SUPPRESS on the subparsers
    flag: Any
    if top:
        warehouse, options, flag = None, [], False   # None: lakeformat.table.settings.resolve decides
    else:
        warehouse = options = flag = argparse.SUPPRESS
    p.add_argument("--warehouse", default=warehouse,
                   help=f"warehouse path or URI (default: ${CATALOG_ENV}'s, ${WAREHOUSE_ENV}, "
                        "else ./warehouse)")
    p.add_argument("--option", action="append", default=options, metavar="KEY=VALUE",
                   dest="option" if top else "sub_option",
                   help="catalog option, e.g. s3.endpoint=http://localhost:9000 (repeatable)")
    p.add_argument("--json", action="store_true", default=flag, help="print JSON instead of tables")


def build_parser() -> argparse.ArgumentParser:
    p = SuggestingParser(prog="lakeformat", description="Inspect and maintain lakeformat (Apache Paimon) "
                                "tables. 'lakeformat VERB --help' explains a verb, with an example.",
                                epilog=help_text.epilog(help_text.TOP_EXAMPLES),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
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
    r = sub.add_parser("read", help="print rows (--filter, --columns, time travel)")
    r.add_argument("table", help="database.table")
    r.add_argument("--filter", metavar="CONDITION", help="rows to print, e.g. \"dt = '2024-06-01' and price > 10\"")
    r.add_argument("--columns", type=column_list, metavar="A,B,...", help="columns to print (default: all)")
    r.add_argument("--limit", type=cli_procedures.non_negative, default=20, help="rows to print (0 = all; default 20)")
    travel = r.add_mutually_exclusive_group()
    travel.add_argument("--snapshot", type=int, help="read this snapshot id")
    travel.add_argument("--tag", help="read the snapshot of this tag")
    travel.add_argument("--as-of", type=as_of, metavar="TIME", help="read the snapshot current at this time "
                        "('2024-06-01 12:00:00', local time, or epoch millis)")
    r.set_defaults(fn=cmd_read)
    cli_procedures.register(sub)    # compact, expire-snapshots, ... (Paimon's procedures)
    cli_config.register(sub)        # validate-config (the pipeline's tables.yaml)
    cli_submit.register(sub)        # submit, jar-path (Spark jobs)
    for sp in sub.choices.values():
        _global_flags(sp, top=False)
    help_text.describe(sub)
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
    cat = None
    try:
        if not getattr(args, "catalog", True):   # validate-config: no warehouse involved
            args.fn(None, args)
            return 0
        settings = resolve_settings(args.warehouse, options)
        cat = settings.catalog()
        if not cat.io.exists(cat.warehouse):   # a typo must not look like an empty warehouse
            raise NotFoundError(f"warehouse {settings.warehouse!r} does not exist")
        args.fn(cat, args)
    except (LakeformatError, OSError) as e:   # OSError: storage unreachable, a file gone
        hint = ""
        if isinstance(e, NotFoundError) and cat is not None and getattr(args, "table", None):
            try:
                hint = table_hint(cat, args.table)
            except (LakeformatError, OSError):   # the hint is a courtesy: the error stands without it
                pass
        print(f"error: {mask(e)}{hint}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
