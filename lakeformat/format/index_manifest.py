"""The index manifest (``manifest/index-manifest-<uuid>-0``): every live index file of a snapshot.

Unlike data manifests it is not split into base and delta: each snapshot names one index
manifest holding only ADD entries, and a commit that changes index files writes a new one from
the previous one plus its changes (Paimon's ``IndexManifestFileHandler``). Deletion-vector and
hash index files are kept one per (partition, bucket, index type): a new file for a bucket
replaces the old one (Paimon's ``BucketedCombiner``). Index files live in ``index/``.
"""
from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Optional, cast
from collections.abc import Iterable, Sequence

import fastavro

from lakeformat.format.manifest import ADD, DELETE, _NS
from lakeformat.format.metadata_checks import check_index_record
from lakeformat.format.names import check_file_name

DELETION_VECTORS, HASH = "DELETION_VECTORS", "HASH"
INDEX_TYPES = frozenset({DELETION_VECTORS, HASH})   # any other is refused when decoded (metadata_checks)
INDEX_MANIFEST_PREFIX = "index-manifest-"
INDEX_FILE_PREFIX = "index-"


@dataclass(frozen=True)
class DeletionVectorRange:
    """Where a data file's deletion vector is in an index file."""

    data_file: str
    offset: int
    length: int
    cardinality: Optional[int] = None   # deleted rows; written by newer Paimon versions


@dataclass(frozen=True)
class IndexFileMeta:
    index_type: str
    file_name: str
    file_size: int
    row_count: int
    dv_ranges: Optional[tuple[DeletionVectorRange, ...]] = None

    def __post_init__(self):
        # joined to index/ (and data file names matched against a bucket's files): plain names only
        check_file_name(self.file_name, "index file")
        for r in self.dv_ranges or ():
            check_file_name(r.data_file, "data file of a deletion vector")


@dataclass(frozen=True)
class IndexManifestEntry:
    kind: int
    partition: bytes
    bucket: int
    file: IndexFileMeta

    @property
    def slot(self) -> tuple:
        """A bucket holds one index file of each type."""
        return (self.partition, self.bucket, self.file.index_type)

    def to_avro(self) -> dict:
        f = self.file
        ranges = None if f.dv_ranges is None else [
            {"f0": r.data_file, "f1": r.offset, "f2": r.length, "_CARDINALITY": r.cardinality} for r in f.dv_ranges]
        return {"_VERSION": 1, "_KIND": self.kind, "_PARTITION": self.partition, "_BUCKET": self.bucket,
                "_INDEX_TYPE": f.index_type, "_FILE_NAME": f.file_name, "_FILE_SIZE": f.file_size,
                "_ROW_COUNT": f.row_count, "_DELETIONS_VECTORS_RANGES": ranges}

    @classmethod
    def from_avro(cls, d: dict) -> IndexManifestEntry:
        check_index_record(d, INDEX_TYPES)
        raw = d.get("_DELETIONS_VECTORS_RANGES", d.get("_DELETION_VECTORS_RANGES"))
        ranges = None if raw is None else tuple(
            DeletionVectorRange(r["f0"], r["f1"], r["f2"], r.get("_CARDINALITY")) for r in raw if r is not None)
        return cls(d["_KIND"], d["_PARTITION"], d["_BUCKET"],
                   IndexFileMeta(d["_INDEX_TYPE"], d["_FILE_NAME"], d["_FILE_SIZE"], d["_ROW_COUNT"], ranges))


_RANGE = {"type": "record", "name": _NS + "__DELETIONS_VECTORS_RANGES", "fields": [
    {"name": "f0", "type": "string"}, {"name": "f1", "type": "int"}, {"name": "f2", "type": "int"},
    {"name": "_CARDINALITY", "type": ["null", "long"], "default": None}]}
INDEX_MANIFEST_SCHEMA: dict = cast(dict, fastavro.parse_schema({"type": "record", "name": _NS, "fields": [
    {"name": "_VERSION", "type": "int"}, {"name": "_KIND", "type": "int"}, {"name": "_PARTITION", "type": "bytes"},
    {"name": "_BUCKET", "type": "int"}, {"name": "_INDEX_TYPE", "type": "string"},
    {"name": "_FILE_NAME", "type": "string"}, {"name": "_FILE_SIZE", "type": "long"},
    {"name": "_ROW_COUNT", "type": "long"},
    {"name": "_DELETIONS_VECTORS_RANGES", "type": ["null", {"type": "array", "items": ["null", _RANGE]}],
     "default": None}]}))


def encode(entries: Sequence[IndexManifestEntry], codec: str) -> bytes:
    """The Avro form. The ORC form (``manifest.format = orc``) is the same records through
    ``io/manifest_orc.py``, which derives its schema from ``INDEX_MANIFEST_SCHEMA``."""
    buf = io.BytesIO()
    fastavro.writer(buf, INDEX_MANIFEST_SCHEMA, [e.to_avro() for e in entries], codec=codec)
    return buf.getvalue()


def decode(data: bytes) -> list[IndexManifestEntry]:
    """The entries of an Avro index manifest."""
    return from_records(cast(Iterable[dict], fastavro.reader(io.BytesIO(data))))   # a record schema: dicts


def from_records(records: Iterable[dict]) -> list[IndexManifestEntry]:
    """Entries of decoded records (Avro, or ORC in the Avro form's shape): every record goes
    through ``check_index_record`` (unknown fields, version, index type), whichever form it had."""
    return [IndexManifestEntry.from_avro(r) for r in records]


def combine(previous: Iterable[IndexManifestEntry], changes: Iterable[IndexManifestEntry]) -> list[IndexManifestEntry]:
    """The live index files after ``changes``: deletes first, then adds, each replacing the file
    of its (partition, bucket, type) slot (Paimon's ``BucketedCombiner``)."""
    live = {e.slot: e for e in previous if e.kind == ADD}
    changes = list(changes)
    for e in changes:
        if e.kind == DELETE and live.get(e.slot) is not None and live[e.slot].file.file_name == e.file.file_name:
            del live[e.slot]
    for e in changes:
        if e.kind == ADD:
            live[e.slot] = e
    return sorted(live.values(), key=lambda e: (e.file.index_type, e.partition, e.bucket))
