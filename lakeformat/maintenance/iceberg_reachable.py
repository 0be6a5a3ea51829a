"""What the Iceberg metadata of a table reaches, for orphan removal: every file a present
version names, directly or through its manifest lists and manifests."""
from __future__ import annotations

from lakeformat.format.iceberg import manifest as M
from lakeformat.format.iceberg.metadata import TableMetadata
from lakeformat.io.table_context import TableContext
from lakeformat.maintenance.iceberg import iceberg_files


def reachable_metadata(ctx: TableContext) -> tuple[str, set[str]]:
    """(Iceberg metadata directory, names of the files in it that a present version reaches):
    the versions themselves, the hint, their manifest lists, manifests and position delete files.
    For orphan removal."""
    files = iceberg_files(ctx)
    names = {"version-hint.text"}
    deletes_read: set[str] = set()
    for v in files.versions():
        names.add(f"v{v}.metadata.json")
        try:
            meta = TableMetadata.from_json(files.read_version(v))
        except FileNotFoundError:
            continue
        for s in meta.snapshots:
            names.add(s.manifest_list.rsplit("/", 1)[-1])
            try:
                records = M.read_records(files.read(s.manifest_list))
            except FileNotFoundError:
                continue
            names |= {r["manifest_path"].rsplit("/", 1)[-1] for r in records}
            for r in records:
                if r["content"] == M.POSITION_DELETES and r["manifest_path"] not in deletes_read:
                    deletes_read.add(r["manifest_path"])
                    try:
                        entries = M.read_records(files.read(r["manifest_path"]))
                    except FileNotFoundError:
                        continue
                    names |= {e["data_file"]["file_path"].rsplit("/", 1)[-1] for e in entries}
    return files.dir, names
