"""Manifests and manifest lists: Avro files with Paimon's record and field names.

A manifest lists ADD/DELETE entries of data files; a manifest list lists manifests with their
partition statistics so scans can skip whole manifests. Partition values, keys and statistics
stay as serialized BinaryRow bytes here; they are decoded only where a decision needs them.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import io
from dataclasses import dataclass
from itertools import repeat
from typing import Literal, Optional, cast, overload
from collections.abc import Iterable, Iterator

import fastavro
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.format import arrays as A
from lakeformat.format.binary_row import serialize_row
from lakeformat.format.metadata_checks import check_entry_columns, check_entry_record, check_list_record
from lakeformat.format.names import check_file_name, check_file_names
from lakeformat.format.partition import PartitionFilter

ADD, DELETE = 0, 1
FILE_SOURCE_APPEND, FILE_SOURCE_COMPACT = 0, 1
EMPTY_ROW = serialize_row([], [])
_NS = "org.apache.paimon.avro.generated.record"


_SHARED: dict = {}


def shared(value, key=None):
    """One object for equal metadata values decoded again and again (partitions, keys, null
    counts, key statistics; ``key`` if the value itself is not the key): a decoded manifest then
    holds one copy of each. Bounded: the table of shared values starts over when full."""
    key = value if key is None else key
    found = _SHARED.get(key)
    if found is None:
        if len(_SHARED) >= 1 << 16:
            _SHARED.clear()
        _SHARED[key] = found = value
    return found


@dataclass(frozen=True, slots=True)
class SimpleStats:
    """Min and max values as BinaryRows plus null counts, per column of a file or manifest."""

    min_values: bytes = EMPTY_ROW
    max_values: bytes = EMPTY_ROW
    null_counts: Optional[tuple] = ()

    def to_avro(self) -> dict:
        return {"_MIN_VALUES": self.min_values, "_MAX_VALUES": self.max_values,
                "_NULL_COUNTS": None if self.null_counts is None else list(self.null_counts)}

    @classmethod
    def from_avro(cls, d: dict) -> SimpleStats:
        nc = d.get("_NULL_COUNTS")
        return cls(d["_MIN_VALUES"], d["_MAX_VALUES"], None if nc is None else shared(tuple(nc)))

    @classmethod
    def shared_from_avro(cls, d: dict) -> SimpleStats:
        """``from_avro``, one object for equal statistics (those of keys repeat across files)."""
        nc = d.get("_NULL_COUNTS")
        key = (d["_MIN_VALUES"], d["_MAX_VALUES"], None if nc is None else tuple(nc))
        found = _SHARED.get(key)
        return found if found is not None else shared(cls(*key), key)


EMPTY_STATS = SimpleStats()


@dataclass(frozen=True, slots=True)
class DataFileMeta:
    file_name: str
    file_size: int
    row_count: int
    min_key: bytes = EMPTY_ROW
    max_key: bytes = EMPTY_ROW
    key_stats: SimpleStats = EMPTY_STATS
    value_stats: SimpleStats = EMPTY_STATS
    min_sequence_number: int = 0
    max_sequence_number: int = 0
    schema_id: int = 0
    level: int = 0
    extra_files: tuple = ()
    creation_time_millis: Optional[int] = None
    delete_row_count: Optional[int] = 0
    embedded_index: Optional[bytes] = None
    file_source: Optional[int] = FILE_SOURCE_APPEND
    value_stats_cols: Optional[tuple] = None   # None: stats cover every column of the schema
    external_path: Optional[str] = None
    first_row_id: Optional[int] = None
    write_cols: Optional[tuple] = None

    def __post_init__(self):
        # Wherever a file's metadata comes from (a manifest, a stage file, a writer's message),
        # its names are joined to a bucket directory: they must not leave it.
        check_file_name(self.file_name, "data file")
        for extra in self.extra_files:
            check_file_name(extra, "extra file")
        if self.external_path is not None and (not isinstance(self.external_path, str) or not self.external_path):
            raise ValueError(f"data file {self.file_name}: external path {self.external_path!r} is not a path")

    def to_avro(self) -> dict:
        ct = self.creation_time_millis
        return {
            "_FILE_NAME": self.file_name, "_FILE_SIZE": self.file_size, "_ROW_COUNT": self.row_count,
            "_MIN_KEY": self.min_key, "_MAX_KEY": self.max_key,
            "_KEY_STATS": self.key_stats.to_avro(), "_VALUE_STATS": self.value_stats.to_avro(),
            "_MIN_SEQUENCE_NUMBER": self.min_sequence_number,
            "_MAX_SEQUENCE_NUMBER": self.max_sequence_number,
            "_SCHEMA_ID": self.schema_id, "_LEVEL": self.level, "_EXTRA_FILES": list(self.extra_files),
            "_CREATION_TIME": None if ct is None else dt.datetime.fromtimestamp(ct / 1000, dt.UTC),
            "_DELETE_ROW_COUNT": self.delete_row_count, "_EMBEDDED_FILE_INDEX": self.embedded_index,
            "_FILE_SOURCE": self.file_source,
            "_VALUE_STATS_COLS": None if self.value_stats_cols is None else list(self.value_stats_cols),
            "_EXTERNAL_PATH": self.external_path, "_FIRST_ROW_ID": self.first_row_id,
            "_WRITE_COLS": None if self.write_cols is None else list(self.write_cols),
        }

    @classmethod
    def from_avro(cls, d: dict) -> DataFileMeta:
        ct = d.get("_CREATION_TIME")
        if isinstance(ct, dt.datetime):
            ct = int((ct if ct.tzinfo else ct.replace(tzinfo=dt.UTC)).timestamp() * 1000)
        vsc, wc = d.get("_VALUE_STATS_COLS"), d.get("_WRITE_COLS")
        return cls(d["_FILE_NAME"], d["_FILE_SIZE"], d["_ROW_COUNT"], shared(d["_MIN_KEY"]), shared(d["_MAX_KEY"]),
                   SimpleStats.shared_from_avro(d["_KEY_STATS"]), SimpleStats.from_avro(d["_VALUE_STATS"]),
                   d["_MIN_SEQUENCE_NUMBER"], d["_MAX_SEQUENCE_NUMBER"], d["_SCHEMA_ID"], d["_LEVEL"],
                   tuple(d["_EXTRA_FILES"]), ct, d.get("_DELETE_ROW_COUNT"),
                   d.get("_EMBEDDED_FILE_INDEX"), d.get("_FILE_SOURCE"),
                   None if vsc is None else tuple(vsc), d.get("_EXTERNAL_PATH"),
                   d.get("_FIRST_ROW_ID"), None if wc is None else tuple(wc))


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    kind: int
    partition: bytes   # serialized BinaryRow
    bucket: int
    total_buckets: int
    file: DataFileMeta

    @property
    def identifier(self) -> tuple:
        """What makes a file unique in a table: ADD and DELETE of the same identifier cancel."""
        return (self.partition, self.bucket, self.file.level, self.file.file_name)

    @property
    def key(self) -> tuple:
        """``(kind, *identifier)``: all a manifest merge decides on (see ``keys_from_arrow``)."""
        return (self.kind, self.partition, self.bucket, self.file.level, self.file.file_name)

    def to_avro(self) -> dict:
        return {"_VERSION": 2, "_KIND": self.kind, "_PARTITION": self.partition,
                "_BUCKET": self.bucket, "_TOTAL_BUCKETS": self.total_buckets, "_FILE": self.file.to_avro()}

    @classmethod
    def from_avro(cls, d: dict) -> ManifestEntry:
        check_entry_record(d)
        return cls(d["_KIND"], shared(d["_PARTITION"]), d["_BUCKET"], d["_TOTAL_BUCKETS"],
                   DataFileMeta.from_avro(d["_FILE"]))


def _builder(cls):
    """A mutable twin of the frozen, slotted dataclass ``cls`` (the same slots, so the same
    layout): ``twin(...)`` stores the fields as plain slot stores and then becomes a ``cls``
    (``__class__`` assignment). Frozen ``__init__`` stores each field through
    ``object.__setattr__``, about 4 µs for a data file's 20 fields: most of decoding an entry.
    ``__post_init__`` is skipped: the caller checks the values, column by column."""
    return dataclasses.make_dataclass(f"_{cls.__name__}Builder", [f.name for f in dataclasses.fields(cls)],
                                      slots=True, eq=False)


_FILE_BUILDER, _ENTRY_BUILDER = _builder(DataFileMeta), _builder(ManifestEntry)


@overload
def _field(parent, name: str, optional: Literal[False] = False) -> pa.Array: ...
@overload
def _field(parent, name: str, optional: bool) -> Optional[pa.Array]: ...
def _field(parent, name: str, optional: bool = False) -> Optional[pa.Array]:
    """Field ``name`` of a decoded struct or table; None if an optional field is absent (written
    by an older Paimon). KeyError if a required one is."""
    names = parent.schema.names if isinstance(parent, pa.Table) else [f.name for f in parent.type]
    if name not in names:
        if optional:
            return None
        raise KeyError(name)
    values = parent.column(name) if isinstance(parent, pa.Table) else parent.field(name)
    if pa.types.is_timestamp(values.type):   # kept as epoch milliseconds, as written
        values = values.cast(pa.timestamp("ms", values.type.tz)).cast(pa.int64())
    return values


def _values(values: Optional[pa.Array], n: int) -> Iterable:
    return repeat(None, n) if values is None or values.null_count == n else values.to_pylist()


SLICE = 512   # records made into objects at a time: their columns' Python values are transient


def entries_from_arrow(data: pa.Table) -> list[ManifestEntry]:
    """The entries of a manifest decoded into columns (``io/avro_columns.py``): what
    ``ManifestEntry.from_avro`` makes of each record, built column by column, the file names
    checked on the columns. KeyError for a missing field, TypeError or ValueError for values of
    another type or names that would leave the table."""
    check_entry_columns(data)
    file = data.column("_FILE").combine_chunks()
    check_file_names(_field(file, "_FILE_NAME"), "data file")
    check_file_names(pc.list_flatten(_field(file, "_EXTRA_FILES")), "extra file")
    external = _field(file, "_EXTERNAL_PATH", True)
    if external is not None and pc.any(pc.equal(pc.binary_length(external), A.scalar(0, pa.int64()))).as_py():
        raise ValueError("a data file's external path is empty")
    out: list[ManifestEntry] = []
    for start in range(0, data.num_rows, SLICE):
        out += _entries(data.slice(start, SLICE))
    return out


def _entries(data: pa.Table) -> list[ManifestEntry]:
    n = data.num_rows
    file = data.column("_FILE").combine_chunks()
    ks, vs = (file.field(k) for k in ("_KEY_STATS", "_VALUE_STATS"))
    cols = [_values(_field(data, k), n) for k in ("_KIND", "_PARTITION", "_BUCKET", "_TOTAL_BUCKETS")]
    cols += [_values(_field(file, k), n) for k in ("_FILE_NAME", "_FILE_SIZE", "_ROW_COUNT", "_MIN_KEY", "_MAX_KEY")]
    cols += [_values(_field(s, k, k == "_NULL_COUNTS"), n) for s in (ks, vs)
             for k in ("_MIN_VALUES", "_MAX_VALUES", "_NULL_COUNTS")]
    cols += [_values(_field(file, k), n) for k in ("_MIN_SEQUENCE_NUMBER", "_MAX_SEQUENCE_NUMBER", "_SCHEMA_ID",
                                                   "_LEVEL", "_EXTRA_FILES")]
    cols += [_values(_field(file, k, True), n) for k in (
        "_CREATION_TIME", "_DELETE_ROW_COUNT", "_EMBEDDED_FILE_INDEX", "_FILE_SOURCE", "_VALUE_STATS_COLS",
        "_EXTERNAL_PATH", "_FIRST_ROW_ID", "_WRITE_COLS")]
    out = []
    for (kind, part, bucket, total, name, size, rows, min_key, max_key, kmin, kmax, knc, vmin, vmax, vnc,
         min_seq, max_seq, schema_id, level, extra, created, deleted, index, source, vsc, ext, first_row,
         wc) in zip(*cols):
        key_stats = (kmin, kmax, None if knc is None else tuple(knc))
        found = _SHARED.get(key_stats)
        f = _FILE_BUILDER(
            name, size, rows, shared(min_key), shared(max_key),
            found if found is not None else shared(SimpleStats(*key_stats), key_stats),
            SimpleStats(vmin, vmax, None if vnc is None else shared(tuple(vnc))), min_seq, max_seq, schema_id,
            level, tuple(extra), created, deleted, index, source, None if vsc is None else tuple(vsc), ext,
            first_row, None if wc is None else tuple(wc))
        f.__class__ = DataFileMeta
        e = _ENTRY_BUILDER(kind, shared(part), bucket, total, f)
        e.__class__ = ManifestEntry
        out.append(e)
    return out


def keys_from_arrow(data: pa.Table) -> list[tuple]:
    """``ManifestEntry.key`` of each entry of a manifest decoded into columns: what a merge
    folds and sorts by and writes the manifest's statistics from, without building the entries."""
    file = data.column("_FILE").combine_chunks()
    names = _field(file, "_FILE_NAME")
    check_file_names(names, "data file")
    return list(zip(*(c.to_pylist() for c in (_field(data, "_KIND"), _field(data, "_PARTITION"),
                                               _field(data, "_BUCKET"), _field(file, "_LEVEL"), names))))


def file_names_from_arrow(data: pa.Table) -> list[tuple]:
    """The file names each entry of a manifest decoded into columns names (its data file, then
    its extra files): what the orphan scan needs, without building the entries."""
    check_entry_columns(data)
    file = data.column("_FILE").combine_chunks()
    names, extra = _field(file, "_FILE_NAME"), _field(file, "_EXTRA_FILES")
    check_file_names(names, "data file")
    check_file_names(pc.list_flatten(extra), "extra file")
    if not pc.any(pc.greater(pc.list_value_length(extra), A.scalar(0, pa.int64()))).as_py():
        return [(name,) for name in names.to_pylist()]
    return [(name, *more) for name, more in zip(names.to_pylist(), extra.to_pylist())]


@dataclass(frozen=True, slots=True)
class ManifestFileMeta:
    file_name: str
    file_size: int
    num_added_files: int
    num_deleted_files: int
    partition_stats: SimpleStats
    schema_id: int
    min_bucket: Optional[int] = None
    max_bucket: Optional[int] = None
    min_level: Optional[int] = None
    max_level: Optional[int] = None

    def __post_init__(self):
        check_file_name(self.file_name, "manifest")

    def to_avro(self) -> dict:
        return {"_VERSION": 2, "_FILE_NAME": self.file_name, "_FILE_SIZE": self.file_size,
                "_NUM_ADDED_FILES": self.num_added_files, "_NUM_DELETED_FILES": self.num_deleted_files,
                "_PARTITION_STATS": self.partition_stats.to_avro(), "_SCHEMA_ID": self.schema_id,
                "_MIN_BUCKET": self.min_bucket, "_MAX_BUCKET": self.max_bucket,
                "_MIN_LEVEL": self.min_level, "_MAX_LEVEL": self.max_level,
                "_MIN_ROW_ID": None, "_MAX_ROW_ID": None}

    @classmethod
    def from_avro(cls, d: dict) -> ManifestFileMeta:
        check_list_record(d)
        return cls(d["_FILE_NAME"], d["_FILE_SIZE"], d["_NUM_ADDED_FILES"], d["_NUM_DELETED_FILES"],
                   SimpleStats.from_avro(d["_PARTITION_STATS"]), d["_SCHEMA_ID"], d.get("_MIN_BUCKET"),
                   d.get("_MAX_BUCKET"), d.get("_MIN_LEVEL"), d.get("_MAX_LEVEL"))


# ---------------------------------------------------------------- Avro schemas

def _opt(t, name):
    return {"name": name, "type": ["null", t], "default": None}


def _stats_schema(name: str) -> dict:
    return {"type": "record", "name": name, "fields": [
        {"name": "_MIN_VALUES", "type": "bytes"}, {"name": "_MAX_VALUES", "type": "bytes"},
        _opt({"type": "array", "items": ["null", "long"]}, "_NULL_COUNTS")]}


_FILE_SCHEMA = {"type": "record", "name": _NS + "__FILE", "fields": [
    {"name": "_FILE_NAME", "type": "string"}, {"name": "_FILE_SIZE", "type": "long"},
    {"name": "_ROW_COUNT", "type": "long"}, {"name": "_MIN_KEY", "type": "bytes"},
    {"name": "_MAX_KEY", "type": "bytes"},
    {"name": "_KEY_STATS", "type": _stats_schema(_NS + "__FILE__KEY_STATS")},
    {"name": "_VALUE_STATS", "type": _stats_schema(_NS + "__FILE__VALUE_STATS")},
    {"name": "_MIN_SEQUENCE_NUMBER", "type": "long"}, {"name": "_MAX_SEQUENCE_NUMBER", "type": "long"},
    {"name": "_SCHEMA_ID", "type": "long"}, {"name": "_LEVEL", "type": "int"},
    {"name": "_EXTRA_FILES", "type": {"type": "array", "items": "string"}},
    _opt({"type": "long", "logicalType": "timestamp-millis"}, "_CREATION_TIME"),
    _opt("long", "_DELETE_ROW_COUNT"), _opt("bytes", "_EMBEDDED_FILE_INDEX"), _opt("int", "_FILE_SOURCE"),
    _opt({"type": "array", "items": "string"}, "_VALUE_STATS_COLS"), _opt("string", "_EXTERNAL_PATH"),
    _opt("long", "_FIRST_ROW_ID"), _opt({"type": "array", "items": "string"}, "_WRITE_COLS"),
]}
MANIFEST_ENTRY_SCHEMA: dict = cast(dict, fastavro.parse_schema({"type": "record", "name": _NS, "fields": [
    {"name": "_VERSION", "type": "int"}, {"name": "_KIND", "type": "int"},
    {"name": "_PARTITION", "type": "bytes"}, {"name": "_BUCKET", "type": "int"},
    {"name": "_TOTAL_BUCKETS", "type": "int"}, {"name": "_FILE", "type": _FILE_SCHEMA}]}))
MANIFEST_FILE_META_SCHEMA: dict = cast(dict, fastavro.parse_schema({"type": "record", "name": _NS, "fields": [
    {"name": "_VERSION", "type": "int"}, {"name": "_FILE_NAME", "type": "string"},
    {"name": "_FILE_SIZE", "type": "long"}, {"name": "_NUM_ADDED_FILES", "type": "long"},
    {"name": "_NUM_DELETED_FILES", "type": "long"},
    {"name": "_PARTITION_STATS", "type": _stats_schema(_NS + "__PARTITION_STATS")},
    {"name": "_SCHEMA_ID", "type": "long"}, _opt("int", "_MIN_BUCKET"), _opt("int", "_MAX_BUCKET"),
    _opt("int", "_MIN_LEVEL"), _opt("int", "_MAX_LEVEL"), _opt("long", "_MIN_ROW_ID"),
    _opt("long", "_MAX_ROW_ID")]}))


def _avro_codec(compression: str) -> str:
    return {"zstd": "zstandard", "none": "null", "snappy": "snappy", "deflate": "deflate",
            "null": "null"}.get(compression, compression)


def _write_avro(schema, records: list[dict], codec: str) -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, schema, records, codec=codec)
    return buf.getvalue()


# Avro header key marking a manifest whose entries are in partition order, one partition run per
# block where runs are large enough: readers that know it skip blocks; others ignore it.
SORTED_BY = "lakeformat.sorted-by"
MIN_BLOCK_RECORDS = 64


def _write_sorted_avro(schema, records: list[dict], partitions: list[bytes], codec: str) -> bytes:
    """Start a new Avro block where the partition changes once the block holds enough entries,
    so that most blocks hold one partition and a filtered read decodes only the blocks it needs."""
    buf = io.BytesIO()
    w = fastavro.write.Writer(buf, schema, codec=codec, metadata={SORTED_BY: "partition"},
                              sync_interval=1 << 20)
    previous = None
    for record, partition in zip(records, partitions):
        if partition != previous and w.block_count >= MIN_BLOCK_RECORDS:
            w.dump()
        w.write(record)
        previous = partition
    w.flush()
    return buf.getvalue()


def _records(block: Iterable) -> Iterator[dict]:
    """The records of a block: dicts, as a manifest's schema is a record (fastavro's types allow any Avro value)."""
    return cast(Iterator[dict], iter(block))


def _filtered_records(data: bytes, keep: PartitionFilter) -> list[dict]:
    """Records of the partitions ``keep`` matches. In a sorted manifest a block's partitions lie
    between its first partition and the next block's first, so a block outside the filter is
    skipped after decoding one record."""
    reader = fastavro.block_reader(io.BytesIO(data))
    out: list[dict] = []
    if reader.metadata.get(SORTED_BY) != "partition":
        for block in reader:
            out += [r for r in _records(block) if keep.matches(r["_PARTITION"])]
        return out

    def take(first: dict, rest, upper: Optional[bytes]) -> None:
        if keep.may_match_range(first["_PARTITION"], upper):
            out.extend(r for r in (first, *rest) if keep.matches(r["_PARTITION"]))

    pending = None
    for block in reader:
        records = _records(block)
        first = next(records, None)
        if first is None:
            continue
        if pending is not None:
            take(*pending, first["_PARTITION"])
        pending = (first, records)
    if pending is not None:
        take(*pending, None)
    return out


# ---------------------------------------------------------------- IO


def merge_entries(entries: Iterable[ManifestEntry]) -> dict[tuple, ManifestEntry]:
    """Fold a history of entries into the live files: a DELETE cancels the ADD before it."""
    live: dict[tuple, ManifestEntry] = {}
    for e in entries:
        key = e.identifier
        if e.kind == ADD:
            live[key] = e
        else:
            live.pop(key, None)
    return live
