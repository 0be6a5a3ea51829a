"""Index files of one table on storage: index manifests in ``manifest/`` and the index files
they name in ``index/`` (deletion vectors, dynamic-bucket hashes).

Paimon writes index manifests in the table's ``manifest.format``, as data manifests and manifest
lists (``AbstractFileStore#indexManifestFileFactory`` passes the same manifest ``FileFormat``):
Avro by default, ORC when the table says ``orc``. They are read by the form their bytes have
(``io/manifest_orc.py``), as data manifests are, and written in the table's format.
"""
from __future__ import annotations

import uuid
from typing import Optional
from collections.abc import Mapping, Sequence

import numpy as np

from lakeformat.format.metadata_checks import UnsupportedMetadataError, with_path
from lakeformat.errors import CorruptFileError
from lakeformat.format import hash_index
from lakeformat.format import index_manifest as IM
from lakeformat.format.deletion_vector import (
    DeletionVectorError,
    deserialize_bin,
    encode_index_file,
    read_bin,
    serialize_bin,
)
from lakeformat.format.index_manifest import (
    DELETION_VECTORS,
    HASH,
    DeletionVectorRange,
    IndexFileMeta,
    IndexManifestEntry,
)
from lakeformat.format.manifest import _avro_codec
from lakeformat.io.fileio import FileIO, join
from lakeformat.io.manifest_orc import is_orc, read_orc, write_orc


def decode_manifest(data: bytes) -> list[IndexManifestEntry]:
    """An index manifest's entries, Avro or ORC by its first bytes (a table whose
    ``manifest.format`` changed names index manifests of both forms)."""
    return IM.from_records(read_orc(data)) if is_orc(data) else IM.decode(data)


def encode_manifest(entries: Sequence[IndexManifestEntry], codec: str, orc: bool) -> bytes:
    """``entries`` as an index manifest in ORC (Paimon's schema: the Avro one with ``_KIND`` a
    TINYINT, the ranges an ORC list of structs) or Avro."""
    if orc:
        return write_orc(IM.INDEX_MANIFEST_SCHEMA, [e.to_avro() for e in entries], codec)
    return IM.encode(entries, codec)


class IndexFiles:
    """Reads and writes the index manifests and index files of one table."""

    def __init__(self, fio: FileIO, table_path: str, compression: str = "zstd", fmt: str = "avro"):
        """``compression`` and ``fmt``: the table's ``manifest.compression`` and ``manifest.format``,
        which only writing uses (a manifest is read by the form its bytes have)."""
        self.io, self.table_path, self.codec = fio, table_path, _avro_codec(compression)
        self.orc = fmt == "orc"
        self.manifest_dir, self.index_dir = join(table_path, "manifest"), join(table_path, "index")

    # -- index manifests ---------------------------------------------------------------
    def read_manifest(self, name: Optional[str]) -> list[IndexManifestEntry]:
        if not name:
            return []
        path = join(self.manifest_dir, name)
        try:
            data = self.io.read_bytes(path)
        except FileNotFoundError:
            raise CorruptFileError(path, "index manifest is missing") from None
        try:
            return decode_manifest(data)
        except UnsupportedMetadataError as e:
            raise with_path(e, path) from None
        except Exception as e:  # fastavro and the ORC reader raise many kinds on garbage input
            form = "ORC" if is_orc(data) else "Avro"
            raise CorruptFileError(path, f"cannot read {form} index manifest: {e}") from None

    def write_manifest(self, entries: Sequence[IndexManifestEntry]) -> str:
        name = f"{IM.INDEX_MANIFEST_PREFIX}{uuid.uuid4()}-0"
        self.io.write_bytes(join(self.manifest_dir, name), encode_manifest(entries, self.codec, self.orc))
        return name

    def delete_manifest(self, name: str) -> None:
        self.io.delete(join(self.manifest_dir, name))

    # -- deletion vectors --------------------------------------------------------------
    def path(self, file_name: str) -> str:
        return join(self.index_dir, file_name)

    def read_deletion_vectors(self, meta: IndexFileMeta) -> dict[str, np.ndarray]:
        """Deleted positions per data file of one deletion-vector index file."""
        path = self.path(meta.file_name)
        try:
            data = self.io.read_bytes(path)
        except FileNotFoundError:
            raise CorruptFileError(path, "deletion vector index file is missing") from None
        try:
            return {r.data_file: deserialize_bin(read_bin(data, r.offset, r.length)) for r in meta.dv_ranges or ()}
        except DeletionVectorError as e:
            raise CorruptFileError(path, str(e)) from None

    def write_deletion_vectors(self, vectors: Mapping[str, np.ndarray], bitmap64: bool) -> IndexFileMeta:
        """One index file holding ``vectors`` (data file name -> deleted positions)."""
        bins = {name: serialize_bin(pos, bitmap64) for name, pos in sorted(vectors.items())}
        data, ranges = encode_index_file(bins)
        name = f"{IM.INDEX_FILE_PREFIX}{uuid.uuid4()}-0"
        self.io.write_bytes(self.path(name), data)
        return IndexFileMeta(DELETION_VECTORS, name, len(data), len(ranges), tuple(
            DeletionVectorRange(f, off, length, int(vectors[f].size)) for f, (off, length) in ranges.items()))

    # -- dynamic-bucket hash indexes ----------------------------------------------------
    def read_hashes(self, meta: IndexFileMeta) -> np.ndarray:
        path = self.path(meta.file_name)
        try:
            return hash_index.decode(self.io.read_bytes(path))
        except FileNotFoundError:
            raise CorruptFileError(path, "hash index file is missing") from None
        except ValueError as e:
            raise CorruptFileError(path, str(e)) from None

    def write_hashes(self, hashes: np.ndarray) -> IndexFileMeta:
        data = hash_index.encode(hashes)
        name = f"{IM.INDEX_FILE_PREFIX}{uuid.uuid4()}-0"
        self.io.write_bytes(self.path(name), data)
        return IndexFileMeta(HASH, name, len(data), len(data) // 4)

    def delete_index_file(self, file_name: str) -> None:
        self.io.delete(self.path(file_name))
