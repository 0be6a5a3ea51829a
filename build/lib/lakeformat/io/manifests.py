"""Manifests and manifest lists of one table on storage (``manifest/``): written in chunks of the
target size, read whole or only the partitions a scan asks for."""
from __future__ import annotations

import io
import uuid
from typing import Iterable, Optional, Sequence

import fastavro

from lakeformat.errors import CorruptFileError
from lakeformat.format.binary_row import deserialize_row, serialize_row
from lakeformat.format.manifest import (
    ADD,
    EMPTY_ROW,
    MANIFEST_ENTRY_SCHEMA,
    MANIFEST_FILE_META_SCHEMA,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
    _avro_codec,
    _filtered_records,
    _write_avro,
    _write_sorted_avro,
)
from lakeformat.format.partition import PartitionFilter, sort_key, sortable
from lakeformat.format.types import DataType
from lakeformat.io.fileio import FileIO, join


def _read_bytes(fio: FileIO, path: str) -> bytes:
    try:
        return fio.read_bytes(path)
    except FileNotFoundError:
        raise CorruptFileError(path, "metadata file is missing") from None


def _read_avro(fio: FileIO, path: str) -> list[dict]:
    data = _read_bytes(fio, path)
    try:
        return list(fastavro.reader(io.BytesIO(data)))
    except Exception as e:  # fastavro raises many kinds on garbage input
        raise CorruptFileError(path, f"cannot read Avro: {e}") from None


def _decode(path: str, from_avro, records) -> list:
    """Records as values; a record of another shape or naming a file outside the table is corrupt."""
    try:
        return [from_avro(r) for r in records]
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise CorruptFileError(path, f"not a Paimon manifest or manifest list: {e}") from None


class ManifestFile:
    """Writes and reads the manifests of one table."""

    def __init__(self, fio: FileIO, table_path: str, partition_types: Sequence[DataType],
                 schema_id: int, compression: str = "zstd", target_size: int = 8 << 20):
        self.io, self.dir = fio, join(table_path, "manifest")
        self.partition_types = list(partition_types)
        self.schema_id, self.codec, self.target_size = schema_id, _avro_codec(compression), target_size

    def path(self, name: str) -> str:
        return join(self.dir, name)

    def read(self, name: str, partitions: Optional[PartitionFilter] = None) -> list[ManifestEntry]:
        """All entries, or with ``partitions`` only those of matching partitions (decoding as
        little as the manifest's layout allows)."""
        path = self.path(name)
        if partitions is None:
            return _decode(path, ManifestEntry.from_avro, _read_avro(self.io, path))
        data = _read_bytes(self.io, path)
        try:
            records = _filtered_records(data, partitions)
        except Exception as e:  # fastavro raises many kinds on garbage input
            raise CorruptFileError(path, f"cannot read Avro: {e}") from None
        return _decode(path, ManifestEntry.from_avro, records)

    def write(self, entries: Sequence[ManifestEntry]) -> list[ManifestFileMeta]:
        """Write entries into as many manifests as ``target_size`` asks for (estimated from the
        first chunk's encoded size)."""
        if not entries:
            return []
        out, prefix = [], f"manifest-{uuid.uuid4()}-"
        ordered = sortable(self.partition_types)
        if ordered:   # stable: an ADD stays before the DELETE of the same file
            keys = {p: sort_key(deserialize_row(p, self.partition_types)) for p in {e.partition for e in entries}}
            entries = sorted(entries, key=lambda e: keys[e.partition])
        records = [e.to_avro() for e in entries]
        probe = records[: min(len(records), 1000)]
        per_record = max(1, len(_write_avro(MANIFEST_ENTRY_SCHEMA, probe, self.codec)) // len(probe))
        chunk = max(1, self.target_size // per_record)
        for n, start in enumerate(range(0, len(records), chunk)):
            part = entries[start:start + chunk]
            chunk_records = records[start:start + chunk]
            data = (_write_sorted_avro(MANIFEST_ENTRY_SCHEMA, chunk_records, [e.partition for e in part], self.codec)
                    if ordered else _write_avro(MANIFEST_ENTRY_SCHEMA, chunk_records, self.codec))
            name = f"{prefix}{n}"
            self.io.write_bytes(self.path(name), data)
            out.append(self._meta(name, len(data), part))
        return out

    def _meta(self, name: str, size: int, entries: Sequence[ManifestEntry]) -> ManifestFileMeta:
        added = sum(1 for e in entries if e.kind == ADD)
        return ManifestFileMeta(
            name, size, added, len(entries) - added, self.partition_stats({e.partition for e in entries}),
            self.schema_id, min(e.bucket for e in entries), max(e.bucket for e in entries),
            min(e.file.level for e in entries), max(e.file.level for e in entries))

    def partition_stats(self, partitions: Iterable[bytes]) -> SimpleStats:
        types = self.partition_types
        if not types:
            return SimpleStats(EMPTY_ROW, EMPTY_ROW, ())
        rows = [deserialize_row(p, types) for p in partitions]
        mins, maxs, nulls = [], [], []
        for i in range(len(types)):
            vals = [r[i] for r in rows if r[i] is not None]
            nulls.append(len(rows) - len(vals))
            mins.append(min(vals) if vals else None)
            maxs.append(max(vals) if vals else None)
        return SimpleStats(serialize_row(mins, types), serialize_row(maxs, types), tuple(nulls))


class ManifestList:
    """Writes and reads manifest lists (``manifest-list-<uuid>-<n>``)."""

    def __init__(self, fio: FileIO, table_path: str, compression: str = "zstd"):
        self.io, self.dir, self.codec = fio, join(table_path, "manifest"), _avro_codec(compression)

    def read(self, name: str) -> list[ManifestFileMeta]:
        path = join(self.dir, name)
        return _decode(path, ManifestFileMeta.from_avro, _read_avro(self.io, path))

    def write(self, metas: Sequence[ManifestFileMeta]) -> tuple[str, int]:
        name = f"manifest-list-{uuid.uuid4()}-0"
        data = _write_avro(MANIFEST_FILE_META_SCHEMA, [m.to_avro() for m in metas], self.codec)
        self.io.write_bytes(join(self.dir, name), data)
        return name, len(data)
