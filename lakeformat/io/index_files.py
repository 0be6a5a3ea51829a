"""Index files of one table on storage: index manifests in ``manifest/`` and the index files
they name (deletion vectors, dynamic-bucket hashes, global indexes).

Where an index file is: global index files always in ``index/``; deletion-vector and hash index
files in ``index/``, or, when the table sets ``index-file-in-data-file-dir``, in the directory of
their partition and bucket beside the data files (Paimon's per-bucket ``IndexPathFactory``; the
manifest names the file only, so the option decides where every reader and writer looks).

Paimon writes index manifests in the table's ``manifest.format``, as data manifests and manifest
lists (``AbstractFileStore#indexManifestFileFactory`` passes the same manifest ``FileFormat``):
Avro by default, ORC when the table says ``orc``. They are read by the form their bytes have
(``io/manifest_orc.py``), as data manifests are, and written in the table's format.
"""
from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Optional
from collections.abc import Callable, Mapping, Sequence

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
from lakeformat.format import options as O
from lakeformat.format.manifest import _avro_codec
from lakeformat.io.fileio import FileIO, join
from lakeformat.io.manifest_orc import is_orc, read_orc, write_orc
from lakeformat.io.table_context import TableContext

BucketDir = Callable[[bytes, int], str]   # (serialized partition, bucket) -> the bucket's directory


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

    def __init__(self, fio: FileIO, table_path: str, compression: str = "zstd", fmt: str = "avro",
                 bucket_dir: Optional[BucketDir] = None):
        """``compression`` and ``fmt``: the table's ``manifest.compression`` and ``manifest.format``,
        which only writing uses (a manifest is read by the form its bytes have). ``bucket_dir``:
        set when bucket index files live beside the data files (``index-file-in-data-file-dir``);
        ``of(ctx)`` builds all three from the table."""
        self.io, self.table_path, self.codec = fio, table_path, _avro_codec(compression)
        self.orc = fmt == "orc"
        self.manifest_dir, self.index_dir = join(table_path, "manifest"), join(table_path, "index")
        self.bucket_dir = bucket_dir

    @classmethod
    def of(cls, ctx: TableContext) -> IndexFiles:
        """The index files of the table ``ctx`` is, laid out as its options say."""
        o = ctx.typed_options
        return cls(ctx.io, ctx.path, o.required(O.MANIFEST_COMPRESSION), o.required(O.MANIFEST_FORMAT),
                   ctx.bucket_dir_of if o.get(O.INDEX_FILE_IN_DATA_FILE_DIR) else None)

    def locate(self, meta: IndexFileMeta, partition: bytes, bucket: int) -> IndexFileMeta:
        """``meta`` of bucket (partition, bucket), knowing which directory it is in."""
        if self.bucket_dir is None or meta.global_index is not None:
            return meta
        return replace(meta, directory=self.bucket_dir(partition, bucket))

    def _located(self, e: IndexManifestEntry) -> IndexManifestEntry:
        located = self.locate(e.file, e.partition, e.bucket)
        return e if located is e.file else replace(e, file=located)

    def _directory(self, partition: bytes, bucket: int) -> Optional[str]:
        """Where a new bucket index file of (partition, bucket) goes (None: index/)."""
        return None if self.bucket_dir is None else self.bucket_dir(partition, bucket)

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
            return [self._located(e) for e in decode_manifest(data)]
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
    def path(self, meta: IndexFileMeta) -> str:
        """Where the index file is: its bucket's directory when resolved there, else index/."""
        return join(meta.directory or self.index_dir, meta.file_name)

    def read_deletion_vectors(self, meta: IndexFileMeta) -> dict[str, np.ndarray]:
        """Deleted positions per data file of one deletion-vector index file."""
        path = self.path(meta)
        try:
            data = self.io.read_bytes(path)
        except FileNotFoundError:
            raise CorruptFileError(path, "deletion vector index file is missing") from None
        try:
            return {r.data_file: deserialize_bin(read_bin(data, r.offset, r.length)) for r in meta.dv_ranges or ()}
        except DeletionVectorError as e:
            raise CorruptFileError(path, str(e)) from None

    def write_deletion_vectors(self, vectors: Mapping[str, np.ndarray], bitmap64: bool,
                               partition: bytes, bucket: int) -> IndexFileMeta:
        """One index file of bucket (partition, bucket) holding ``vectors`` (data file name ->
        deleted positions)."""
        bins = {name: serialize_bin(pos, bitmap64) for name, pos in sorted(vectors.items())}
        data, ranges = encode_index_file(bins)
        meta = IndexFileMeta(DELETION_VECTORS, f"{IM.INDEX_FILE_PREFIX}{uuid.uuid4()}-0", len(data), len(ranges),
                             tuple(DeletionVectorRange(f, off, length, int(vectors[f].size))
                                   for f, (off, length) in ranges.items()),
                             directory=self._directory(partition, bucket))
        self.io.write_bytes(self.path(meta), data)
        return meta

    # -- dynamic-bucket hash indexes ----------------------------------------------------
    def read_hashes(self, meta: IndexFileMeta) -> np.ndarray:
        path = self.path(meta)
        try:
            return hash_index.decode(self.io.read_bytes(path))
        except FileNotFoundError:
            raise CorruptFileError(path, "hash index file is missing") from None
        except ValueError as e:
            raise CorruptFileError(path, str(e)) from None

    def write_hashes(self, hashes: np.ndarray, partition: bytes, bucket: int) -> IndexFileMeta:
        data = hash_index.encode(hashes)
        meta = IndexFileMeta(HASH, f"{IM.INDEX_FILE_PREFIX}{uuid.uuid4()}-0", len(data), len(data) // 4,
                             directory=self._directory(partition, bucket))
        self.io.write_bytes(self.path(meta), data)
        return meta

    def delete_index_file(self, meta: IndexFileMeta) -> None:
        self.io.delete(self.path(meta))
