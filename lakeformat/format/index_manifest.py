"""The index manifest (``manifest/index-manifest-<uuid>-0``): every live index file of a snapshot.

Unlike data manifests it is not split into base and delta: each snapshot names one index
manifest holding only ADD entries, and a commit that changes index files writes a new one from
the previous one plus its changes (Paimon's ``IndexManifestFileHandler``). Deletion-vector and
hash index files are kept one per (partition, bucket, index type): a new file for a bucket
replaces the old one (Paimon's ``BucketedCombiner``). Index files live in ``index/``, or, with
``index-file-in-data-file-dir``, deletion-vector and hash index files beside the data files of their
bucket (``io/index_files.py`` resolves where).

Global indexes (``_GLOBAL_INDEX`` set: btree, bitmap, vector and full-text indexes over the row
ids of a row-tracking table) are files in ``index/``, several per type, each covering a row-id
range of one field; they are kept by file name. Plain scans do not depend on them: they are decoded,
carried forward unchanged by every commit and re-encoded field for field, so engines that use them
still find them.
"""
from __future__ import annotations

import io
from dataclasses import dataclass, field
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
class GlobalIndexMeta:
    """What a global index file covers: rows ``row_range_start..row_range_end`` (inclusive) of
    field ``index_field_id``; ``index_meta``/``source_meta`` are the index's own bytes, kept as
    they are."""

    row_range_start: int
    row_range_end: int
    index_field_id: int
    extra_field_ids: Optional[tuple[int, ...]] = None
    index_meta: Optional[bytes] = None
    source_meta: Optional[bytes] = None

    def to_avro(self) -> dict:
        return {"_ROW_RANGE_START": self.row_range_start, "_ROW_RANGE_END": self.row_range_end,
                "_INDEX_FIELD_ID": self.index_field_id,
                "_EXTRA_FIELD_IDS": None if self.extra_field_ids is None else list(self.extra_field_ids),
                "_INDEX_META": self.index_meta, "_SOURCE_META": self.source_meta}

    @classmethod
    def from_avro(cls, g: dict) -> GlobalIndexMeta:
        extra = g.get("_EXTRA_FIELD_IDS")
        return cls(g["_ROW_RANGE_START"], g["_ROW_RANGE_END"], g["_INDEX_FIELD_ID"],
                   None if extra is None else tuple(extra), g.get("_INDEX_META"), g.get("_SOURCE_META"))


@dataclass(frozen=True)
class IndexFileMeta:
    index_type: str
    file_name: str
    file_size: int
    row_count: int
    dv_ranges: Optional[tuple[DeletionVectorRange, ...]] = None
    global_index: Optional[GlobalIndexMeta] = None
    # where the file is when not in index/ (index-file-in-data-file-dir: its bucket's directory);
    # resolved from the table's options by io/index_files.py, never stored in the manifest
    directory: Optional[str] = field(default=None, compare=False)

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
        """A bucket holds one index file of each type; a global index file is its own slot."""
        if self.file.global_index is not None:
            return (self.partition, self.bucket, self.file.index_type, self.file.file_name)
        return (self.partition, self.bucket, self.file.index_type)

    def to_avro(self) -> dict:
        f = self.file
        ranges = None if f.dv_ranges is None else [
            {"f0": r.data_file, "f1": r.offset, "f2": r.length, "_CARDINALITY": r.cardinality} for r in f.dv_ranges]
        return {"_VERSION": 1, "_KIND": self.kind, "_PARTITION": self.partition, "_BUCKET": self.bucket,
                "_INDEX_TYPE": f.index_type, "_FILE_NAME": f.file_name, "_FILE_SIZE": f.file_size,
                "_ROW_COUNT": f.row_count, "_DELETIONS_VECTORS_RANGES": ranges, "_EXTERNAL_PATH": None,
                "_GLOBAL_INDEX": None if f.global_index is None else f.global_index.to_avro()}

    @classmethod
    def from_avro(cls, d: dict) -> IndexManifestEntry:
        check_index_record(d, INDEX_TYPES)
        raw = d.get("_DELETIONS_VECTORS_RANGES", d.get("_DELETION_VECTORS_RANGES"))
        ranges = None if raw is None else tuple(
            DeletionVectorRange(r["f0"], r["f1"], r["f2"], r.get("_CARDINALITY")) for r in raw if r is not None)
        g = d.get("_GLOBAL_INDEX")
        return cls(d["_KIND"], d["_PARTITION"], d["_BUCKET"],
                   IndexFileMeta(d["_INDEX_TYPE"], d["_FILE_NAME"], d["_FILE_SIZE"], d["_ROW_COUNT"], ranges,
                                 None if g is None else GlobalIndexMeta.from_avro(g)))


_RANGE = {"type": "record", "name": _NS + "__DELETIONS_VECTORS_RANGES", "fields": [
    {"name": "f0", "type": "string"}, {"name": "f1", "type": "int"}, {"name": "f2", "type": "int"},
    {"name": "_CARDINALITY", "type": ["null", "long"], "default": None}]}
# Paimon's record for _GLOBAL_INDEX, with pypaimon's _SOURCE_META (readers without it skip it)
_GLOBAL = {"type": "record", "name": _NS + "__GLOBAL_INDEX", "fields": [
    {"name": "_ROW_RANGE_START", "type": "long"}, {"name": "_ROW_RANGE_END", "type": "long"},
    {"name": "_INDEX_FIELD_ID", "type": "int"},
    {"name": "_EXTRA_FIELD_IDS", "type": ["null", {"type": "array", "items": "int"}], "default": None},
    {"name": "_INDEX_META", "type": ["null", "bytes"], "default": None},
    {"name": "_SOURCE_META", "type": ["null", "bytes"], "default": None}]}
INDEX_MANIFEST_SCHEMA: dict = cast(dict, fastavro.parse_schema({"type": "record", "name": _NS, "fields": [
    {"name": "_VERSION", "type": "int"}, {"name": "_KIND", "type": "int"}, {"name": "_PARTITION", "type": "bytes"},
    {"name": "_BUCKET", "type": "int"}, {"name": "_INDEX_TYPE", "type": "string"},
    {"name": "_FILE_NAME", "type": "string"}, {"name": "_FILE_SIZE", "type": "long"},
    {"name": "_ROW_COUNT", "type": "long"},
    {"name": "_DELETIONS_VECTORS_RANGES", "type": ["null", {"type": "array", "items": ["null", _RANGE]}],
     "default": None},
    {"name": "_EXTERNAL_PATH", "type": ["null", "string"], "default": None},
    {"name": "_GLOBAL_INDEX", "type": ["null", _GLOBAL], "default": None}]}))


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


def global_indexes_on(entries: Iterable[IndexManifestEntry], field_ids: Iterable[int]) -> list[IndexManifestEntry]:
    """The live global indexes covering any of ``field_ids`` (as their index field or an extra
    field): a write changing those columns of existing rows (data evolution) would leave them
    stale, so it must refuse or drop them (Paimon's ``global-index.column-update-action``,
    default: refuse)."""
    ids = set(field_ids)
    return [e for e in entries if e.kind == ADD and (g := e.file.global_index) is not None
            and ({g.index_field_id, *(g.extra_field_ids or ())} & ids)]
