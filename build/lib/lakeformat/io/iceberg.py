"""Iceberg metadata files of a table on storage: ``metadata/vN.metadata.json``,
``version-hint.text``, manifest lists (``snap-N-<uuid>.avro``) and manifests (``<uuid>-m0.avro``).

Where they live follows Paimon: ``table-location`` puts ``metadata/`` in the table's directory;
``hadoop-catalog`` (``catalog-location``) puts it under ``<warehouse>/iceberg/<db>/<table>/``, so
that directory is the warehouse of an Iceberg Hadoop catalog. A version is created only if
absent (link on local disks, conditional PUT on object stores), so a reader never sees half a
version and two publishers never overwrite each other's; the hint is written after it.
"""
from __future__ import annotations

import os
import posixpath
import re
from typing import Optional
from urllib.parse import urlparse

from lakeformat.errors import LakeformatError
from lakeformat.io.fileio import FileIO, join

HINT = "version-hint.text"
_VERSION = re.compile(r"^v(\d+)\.metadata\.json$")


def absolute(io: FileIO, path: str) -> str:
    """A path Iceberg readers resolve the same way from anywhere: absolute on local disks."""
    if io.scheme == "file":
        u = urlparse(path)
        return os.path.abspath(u.path if u.scheme == "file" else path)
    return path


def metadata_dir(io: FileIO, table_path: str, location: str) -> str:
    """``metadata/`` of the table's Iceberg view: ``table-location`` or ``catalog-location``."""
    table_path = absolute(io, table_path).rstrip("/")
    if location == "table-location":
        return join(table_path, "metadata")
    db_path, table = posixpath.split(table_path)
    warehouse, db = posixpath.split(db_path)
    if not db.endswith(".db"):
        raise LakeformatError(f"catalog-location Iceberg metadata needs the table in a warehouse database "
                              f"directory (<warehouse>/<db>.db/<table>), not {table_path}; set "
                              "metadata.iceberg.storage-location = table-location")
    return join(warehouse, "iceberg", db[:-3], table, "metadata")


def version_of(name: str) -> Optional[int]:
    m = _VERSION.match(name)
    return int(m.group(1)) if m else None


class IcebergFiles:
    """The files under one Iceberg ``metadata/`` directory."""

    def __init__(self, io: FileIO, directory: str):
        self.io, self.dir = io, directory

    def path(self, name: str) -> str:
        return join(self.dir, name)

    def version_path(self, version: int) -> str:
        return self.path(f"v{version}.metadata.json")

    def read_hint(self) -> Optional[int]:
        try:
            return int(self.io.read_bytes(self.path(HINT)).decode().strip())
        except (FileNotFoundError, ValueError, UnicodeDecodeError):
            return None

    def write_hint(self, version: int) -> None:
        self.io.write_bytes(self.path(HINT), str(version).encode())

    def versions(self) -> list[int]:
        return sorted(v for v in map(version_of, self.io.list_names(self.dir)) if v is not None)

    def current_version(self) -> Optional[int]:
        """The newest version, as Iceberg's Hadoop tables find it: the hint, then any newer
        version beside it (a publish killed before its hint); without a hint, a listing."""
        v = self.read_hint()
        if v is None or not self.io.exists(self.version_path(v)):
            found = self.versions()
            return found[-1] if found else None
        while self.io.exists(self.version_path(v + 1)):
            v += 1
        return v

    def stat(self, version: int) -> Optional[tuple[int, int]]:
        """(modification time, size) of a version, to tell whether a cached copy is still it."""
        return self.io.stat(self.version_path(version))

    def read_version(self, version: int) -> str:
        return self.io.read_bytes(self.version_path(version)).decode()

    def create_version(self, version: int, text: str) -> bool:
        """Create ``vN.metadata.json`` if absent: False if another publisher made it first."""
        return self.io.try_create(self.version_path(version), text.encode())

    def replace_version(self, version: int, text: str) -> None:
        """Write ``vN.metadata.json`` whole, replacing one that is there (a rebuild, an expiration
        of the current version's snapshots); local writes rename a complete temp file."""
        self.io.write_bytes(self.version_path(version), text.encode())

    def write(self, name: str, data: bytes) -> str:
        path = self.path(name)
        with self.io.open_output(path) as f:
            f.write(data)
        return path

    def read(self, path: str) -> bytes:
        return self.io.read_bytes(path)

    def delete(self, path: str) -> None:
        self.io.delete(path)
