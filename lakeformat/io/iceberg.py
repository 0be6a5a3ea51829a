"""Iceberg metadata files of a table on storage: ``metadata/vN.metadata.json``,
``version-hint.text``, manifest lists (``snap-N-<uuid>.avro``), manifests (``<uuid>-m0.avro``)
and the position delete files of deletion vectors (``<uuid>-<index file>.parquet``).

Where they live follows Paimon: ``table-location`` puts ``metadata/`` in the table's directory;
``hadoop-catalog`` (``catalog-location``) puts it under ``<warehouse>/iceberg/<db>/<table>/``, so
that directory is the warehouse of an Iceberg Hadoop catalog. A version is created only if
version is written whole (a renamed temp file on local disks, one PUT on object stores), so a
reader never sees half of one; the hint is written after it.
"""
from __future__ import annotations

import os
import posixpath
import re
from typing import Optional
from collections.abc import Mapping, Sequence
from urllib.parse import urlparse

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lakeformat.errors import LakeformatError
from lakeformat.io.fileio import FileIO, join

HINT = "version-hint.text"
_VERSION = re.compile(r"^v(\d+)\.metadata\.json$")
# Iceberg's reserved field ids of a position delete file's columns
_POSITION_DELETES = pa.schema([
    pa.field("file_path", pa.string(), False, {b"PARQUET:field_id": b"2147483546"}),
    pa.field("pos", pa.int64(), False, {b"PARQUET:field_id": b"2147483545"})])
_DELETES_SUFFIX = ".parquet"
_UUID_LENGTH = 36


def position_deletes(vectors: Mapping[str, np.ndarray]) -> bytes:
    """A Parquet position delete file of deletion ``vectors`` (data file path -> sorted deleted
    positions), its rows ordered by path and position as Iceberg's spec asks; its pages carry
    checksums, as the table's data files do."""
    paths = sorted(vectors)
    counts = np.fromiter((len(vectors[p]) for p in paths), dtype=np.int64, count=len(paths))
    file_path = pa.DictionaryArray.from_arrays(pa.array(np.repeat(np.arange(len(paths), dtype=np.int32), counts)),
                                               pa.array(paths, pa.string())).cast(pa.string())
    pos = pa.array(np.concatenate([np.asarray(vectors[p], dtype=np.int64) for p in paths])
                   if paths else np.empty(0, dtype=np.int64))
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table([file_path, pos], schema=_POSITION_DELETES), sink, write_page_checksum=True)
    return sink.getvalue().to_pybytes()


def position_deletes_name(index_file: str, unique: str) -> str:
    """The name of the position delete file of a Paimon deletion-vector ``index_file``."""
    return f"{unique}-{index_file}{_DELETES_SUFFIX}"


def index_file_of(path: str) -> Optional[str]:
    """The Paimon index file a position delete file (by :func:`position_deletes_name`) was made of."""
    name = posixpath.basename(path)
    if not name.endswith(_DELETES_SUFFIX) or len(name) <= _UUID_LENGTH + 1 + len(_DELETES_SUFFIX):
        return None
    return name[_UUID_LENGTH + 1:-len(_DELETES_SUFFIX)]


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
        """Point ``version-hint.text`` at ``version``. On local disks, when the old hint is no
        longer than the new one (versions only grow, but for a rebuild), its bytes are
        overwritten in place: no file is created, renamed or truncated (renaming over the old
        hint or truncating it would make ext4 flush it, milliseconds per commit), and a reader
        sees the old number or the new one. Else the old hint is deleted first, as Iceberg's own
        Hadoop tables do, and a new one written (a reader in between finds none, and Iceberg's
        Hadoop tables and this module then fall back to the newest version listed). Object
        stores replace it in one PUT."""
        data = str(version).encode()
        path = self.path(HINT)
        if self.io.scheme == "file":
            if self.io.write_over(path, data):
                return
            self.io.delete(path)
        self.io.write_new(path, data)
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

    def write_version(self, version: int, parts: Sequence) -> None:
        """Write ``vN.metadata.json`` whole from its bytes-like ``parts``. Two publishers of one
        Paimon snapshot write the same Iceberg view (their manifests differ by name only), so the
        later one may replace it."""
        self.io.write_parts(self.version_path(version), parts)

    def write(self, name: str, data: bytes) -> str:
        path = self.path(name)
        self.io.write_new(path, data)
        return path

    def read(self, path: str) -> bytes:
        return self.io.read_bytes(path)

    def delete(self, path: str) -> None:
        self.io.delete(path)
