"""``lakeformat <system table> TABLE``: Paimon's system tables as CLI listings.

``--json`` prints every column of the system table; the readable table shows the columns a
person scans first (the full set is too wide for a terminal), ``schema_id`` only when the
table has had more than one schema.
"""
from __future__ import annotations

import argparse
from pathlib import PurePosixPath

from lakeformat.cli.output import emit
from lakeformat.table.system_tables import AT_SNAPSHOT, SYSTEM_TABLES

READABLE = {
    "snapshots": ["snapshot_id", "commit_kind", "schema_id", "commit_time", "delta_record_count",
                  "total_record_count", "commit_user", "commit_identifier"],
    "schemas": ["schema_id", "fields", "partition_keys", "primary_keys", "options", "update_time"],
    "options": ["key", "value"],
    "files": ["partition", "bucket", "file", "level", "record_count", "file_size_in_bytes", "min_key",
              "max_key", "min_sequence_number", "max_sequence_number", "creation_time"],
    "manifests": ["file_name", "file_size", "num_added_files", "num_deleted_files", "schema_id",
                  "min_partition_stats", "max_partition_stats"],
    "partitions": ["partition", "record_count", "file_size_in_bytes", "file_count", "last_update_time"],
    "buckets": ["partition", "bucket", "record_count", "file_size_in_bytes", "file_count", "sorted_runs",
                "last_update_time"],
    "consumers": ["consumer_id", "next_snapshot_id"],
    "tags": ["tag_name", "snapshot_id", "schema_id", "commit_time", "record_count", "create_time", "time_retained"],
}
HELP = {
    "snapshots": "snapshots (Paimon's $snapshots)", "schemas": "schema versions ($schemas)",
    "options": "table options ($options)", "files": "live data files of a snapshot ($files)",
    "manifests": "manifests of a snapshot ($manifests)", "partitions": "partitions: rows, files, size ($partitions)",
    "buckets": "buckets: rows, files, sorted runs ($buckets)",
    "consumers": "consumers and their next snapshot ($consumers)",
    "tags": "tags ($tags)",
}


def cmd_system_table(cat, args) -> None:
    t = cat.get_table(args.table)
    rows = t.system_table(args.command, getattr(args, "snapshot", None)).to_pylist()
    if not args.json and args.command == "files":   # the directory is in every path: show the name
        for r in rows:
            r["file"] = PurePosixPath(r["file_path"]).name
    at = f" at snapshot {args.snapshot}" if getattr(args, "snapshot", None) is not None else ""
    columns = READABLE[args.command]
    if args.command != "schemas" and len(t.schema_manager.list_ids()) < 2:   # always the one schema
        columns = [c for c in columns if c != "schema_id"]
    emit(args, f"{args.command} of {args.table}{at}", rows, columns)


def register(sub: argparse._SubParsersAction) -> None:
    for name in SYSTEM_TABLES:
        p = sub.add_parser(name, help=HELP[name])
        p.add_argument("table", help="database.table")
        if name in AT_SNAPSHOT:
            p.add_argument("--snapshot", type=int, help="snapshot id (default: the latest)")
        p.set_defaults(fn=cmd_system_table)
