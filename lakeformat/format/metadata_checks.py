"""Metadata lakeformat reads but cannot apply: refused, naming it, never ignored into a wrong result.

Two kinds, both pure decisions over decoded metadata:

* **Unknown fields** of a manifest, manifest list or index manifest record (Avro or ORC), or of a
  snapshot's or schema's JSON: a field this code does not know (a newer Paimon wrote it). One
  whose values are all null (or absent) is ignored, as Paimon's own Avro schema resolution ignores
  a writer's field the reader lacks: it says nothing. One with a value is an error naming the
  field ("written by a newer Paimon?"): it may change what the file means. Fields that lakeformat
  knows and deliberately does not apply, because ignoring them never changes a result (pruning
  hints, informational strings), are listed as known, each with the reason.
* **Known fields that change what a data file holds**: ``_WRITE_COLS`` (Paimon's data evolution:
  the file holds only these columns of its rows, the others come from other files of the same row
  ids) is merged by row id in a table with ``data-evolution.enabled`` (``format/row_tracking.py``)
  and refused elsewhere, where read as a whole row it would give nulls, i.e. wrong rows; a
  ``_WRITE_COLS`` naming every column of the file's schema (Paimon's writers normalise that to
  null; a row-tracking compaction adds ``_ROW_ID`` and ``_SEQUENCE_NUMBER``, stored beside them)
  means whole rows and is accepted. ``_WRITE_COLS_SEQUENCES`` (per-column versions of such files)
  is refused. ``_FIRST_ROW_ID`` numbers the rows for the ``_ROW_ID`` system column of a table with
  ``row-tracking.enabled``; in a table without it, a snapshot that assigned row ids can be read
  but not written (``check_writable``), since the committer would not continue them.

* **Index files of a kind lakeformat does not know** (``_INDEX_TYPE`` other than the deletion
  vectors and hash indexes it implements, on an entry that is not a global index): refused where
  the index manifest is decoded, so reads, commits (which would carry the file along unread) and
  maintenance all refuse the table. Global indexes (``_GLOBAL_INDEX``) of any type are carried along.

The checks on manifest entries run on the decoded Arrow columns: whole-column ``null_count`` and
field-name comparisons, nothing per entry unless a rare value is present.
"""
from __future__ import annotations

from typing import Any, Optional
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import UnsupportedError


class UnsupportedMetadataError(UnsupportedError):
    """A metadata file carries a field lakeformat does not know, or one whose meaning it cannot
    apply; the table (at that snapshot) is refused instead of read or written as if it were absent."""


# ---------------------------------------------------------------- what is known

_STATS = frozenset({"_MIN_VALUES", "_MAX_VALUES", "_NULL_COUNTS"})
ENTRY_FIELDS = frozenset({"_VERSION", "_KIND", "_PARTITION", "_BUCKET", "_TOTAL_BUCKETS", "_FILE"})
FILE_FIELDS = frozenset({
    "_FILE_NAME", "_FILE_SIZE", "_ROW_COUNT", "_MIN_KEY", "_MAX_KEY", "_KEY_STATS", "_VALUE_STATS",
    "_MIN_SEQUENCE_NUMBER", "_MAX_SEQUENCE_NUMBER", "_SCHEMA_ID", "_LEVEL", "_EXTRA_FILES", "_CREATION_TIME",
    "_DELETE_ROW_COUNT", "_EMBEDDED_FILE_INDEX", "_FILE_SOURCE", "_VALUE_STATS_COLS", "_EXTERNAL_PATH",
    # row tracking: numbers rows for the _ROW_ID system column (format/row_tracking.py)
    "_FIRST_ROW_ID",
    # data evolution: merged by row id, or checked against the file's schema (check_write_cols)
    "_WRITE_COLS",
})
# known, and refused wherever a value is set: per-column versions of partial files (data evolution)
REFUSED_FILE_FIELDS = {"_WRITE_COLS_SEQUENCES": "per-column sequence numbers of a data-evolution file"}
LIST_FIELDS = frozenset({
    "_VERSION", "_FILE_NAME", "_FILE_SIZE", "_NUM_ADDED_FILES", "_NUM_DELETED_FILES", "_PARTITION_STATS",
    "_SCHEMA_ID", "_MIN_BUCKET", "_MAX_BUCKET", "_MIN_LEVEL", "_MAX_LEVEL",
    # pruning hints only (which manifests may hold a row id range / bucket count): never applied,
    # every entry of the manifest is read whatever they say
    "_MIN_ROW_ID", "_MAX_ROW_ID", "_TOTAL_BUCKETS",
})
# known to name files: a manifest's sidecar files (pypaimon's block index of a manifest). Reading
# ignores them safely, but the orphan scan would delete files the table names: refused when set.
REFUSED_LIST_FIELDS = {"_EXTRA_FILES": "extra files of a manifest (manifest sidecars)"}
INDEX_FIELDS = frozenset({"_VERSION", "_KIND", "_PARTITION", "_BUCKET", "_INDEX_TYPE", "_FILE_NAME",
                          "_FILE_SIZE", "_ROW_COUNT", "_DELETIONS_VECTORS_RANGES", "_DELETION_VECTORS_RANGES",
                          # a global index over row ids (btree, bitmap, vector, full-text): carried
                          # along; plain scans do not depend on it (format/index_manifest.py)
                          "_GLOBAL_INDEX"})
# Paimon's (and pypaimon's) index manifest also has this; lakeformat does not implement it
REFUSED_INDEX_FIELDS = {
    "_EXTERNAL_PATH": "an index file stored outside the table's index/ directory (an explicit path)"}
# _SOURCE_META: pypaimon's addition (what the index was built from); carried along byte for byte
GLOBAL_INDEX_FIELDS = frozenset({"_ROW_RANGE_START", "_ROW_RANGE_END", "_INDEX_FIELD_ID", "_EXTRA_FIELD_IDS",
                                 "_INDEX_META", "_SOURCE_META"})
DV_RANGE_FIELDS = frozenset({"f0", "f1", "f2", "_CARDINALITY"})
SNAPSHOT_KEYS_IGNORED = frozenset({
    "writerVersion",   # the writing program's version (pypaimon): informational
    "tagCreateTime", "tagTimeRetained",   # a tag file is a snapshot with these (maintenance/tag.py)
})
SCHEMA_KEYS = frozenset({"version", "id", "fields", "highestFieldId", "partitionKeys", "primaryKeys",
                         "options", "comment", "timeMillis"})
SCHEMA_FIELD_KEYS = frozenset({"id", "name", "type", "description"})
# The keys of a nested type's JSON object, as Paimon Java writes and reads them (the types'
# serializeJson, DataTypeJsonParser). MULTISET and VECTOR are refused as types (format/types.py).
NESTED_TYPE_KEYS = {"ARRAY": frozenset({"type", "element"}), "MAP": frozenset({"type", "key", "value"}),
                    "ROW": frozenset({"type", "fields"})}
# pypaimon also writes "nullable", the type string's NOT NULL again (Paimon Java ignores the key):
# accepted while it agrees with the type string (check_type_json)
NESTED_TYPE_KEYS_IGNORED = frozenset({"nullable"})


def _at(path: str) -> str:
    return f"{path}: " if path else ""


def _unknown(path: str, what: str, field: str, detail: str = "") -> UnsupportedMetadataError:
    return UnsupportedMetadataError(
        f"{_at(path)}{what} field {field!r} is set{detail}; lakeformat does not know it (written by a newer "
        "Paimon?) and refuses to read or write the table rather than ignore it")


def _refused(path: str, what: str, field: str, meaning: str, detail: str = "") -> UnsupportedMetadataError:
    return UnsupportedMetadataError(
        f"{_at(path)}{what} field {field!r} is set{detail}: {meaning}, which lakeformat does not implement; "
        "ignoring it could give wrong rows or lose files the table names, so the table is refused")


# Newest record versions lakeformat reads (Paimon's serializers refuse other versions too): a
# newer version may mean the same fields differently.
ENTRY_VERSION, LIST_VERSION, INDEX_VERSION = 2, 2, 1   # (snapshots and schemas: their modules)


def _newer(path: str, what: str, version, newest: int) -> UnsupportedMetadataError:
    return UnsupportedMetadataError(
        f"{_at(path)}{what} version {version} is newer than lakeformat reads ({newest}; written by a newer "
        "Paimon?)")


def check_version(version, newest: int, what: str, path: str = "") -> None:
    """A record's or JSON file's ``version`` above ``newest`` is refused (absent: an older one)."""
    if isinstance(version, int) and not isinstance(version, bool) and version > newest:
        raise _newer(path, what, version, newest)


# ---------------------------------------------------------------- Avro / ORC records as columns

def _type_names(t: pa.DataType) -> list[str]:
    return [t.field(i).name for i in range(t.num_fields)]


def _set_rows(values) -> int:
    return len(values) - values.null_count


def check_columns(data: pa.Table, known: frozenset, what: str, path: str = "",
                  refused: Optional[Mapping[str, str]] = None, at: Sequence[str] = ()) -> None:
    """Fields of a decoded table (or of its struct column at the path ``at``) that are not in
    ``known``: those holding a value in any row are an error (``refused`` ones say what they mean).
    Costs the field names from the schema, and a ``null_count`` per unknown field: nothing per row."""
    t: Any = data.schema.field(at[0]).type if at else None
    for step in at[1:]:
        t = t.field(step).type
    for name in (_type_names(t) if at else data.schema.names):
        if name in known:
            continue
        values = data.column(at[0]) if at else data.column(name)
        for step in (*at[1:], name) if at else ():
            values = pc.struct_field(values, step)
        if _set_rows(values):
            if refused and name in refused:
                raise _refused(path, what, name, refused[name], f" in {_set_rows(values)} record(s)")
            raise _unknown(path, what, name, f" in {_set_rows(values)} record(s)")


def check_entry_columns(data: pa.Table, path: str = "") -> None:
    """A manifest's entries, decoded as columns: unknown or refused fields of the entry, its
    ``_FILE`` and the file's statistics. KeyError (not a manifest) if the entry has no ``_FILE``."""
    file_type = data.schema.field("_FILE").type
    if "_VERSION" in data.schema.names:
        newest = pc.max(data.column("_VERSION")).as_py()
        if newest is not None and newest > ENTRY_VERSION:
            raise _newer(path, "manifest entry", newest, ENTRY_VERSION)
    check_columns(data, ENTRY_FIELDS, "manifest entry", path)
    check_columns(data, FILE_FIELDS, "data file", path, REFUSED_FILE_FIELDS, at=("_FILE",))
    for stats in ("_KEY_STATS", "_VALUE_STATS"):
        if file_type.get_field_index(stats) >= 0:
            check_columns(data, _STATS, f"data file {stats}", path, at=("_FILE", stats))


# ---------------------------------------------------------------- one record (fastavro)

def check_record(d: Mapping, known: frozenset, what: str, path: str = "",
                 refused: Optional[Mapping[str, str]] = None) -> None:
    """The same as ``check_columns`` for one decoded record (a dict): a key comparison."""
    if d.keys() <= known:
        return
    for name in d.keys() - known:
        if d[name] is not None:
            if refused and name in refused:
                raise _refused(path, what, name, refused[name])
            raise _unknown(path, what, name)


def _require(names, required: Sequence[str]) -> None:
    """A record without these fields is not of the kind checked: KeyError (corrupt), not unknown fields."""
    for name in required:
        if name not in names:
            raise KeyError(name)


def check_entry_record(d: Mapping, path: str = "") -> None:
    """``check_record`` of a manifest entry, its ``_FILE`` and statistics, and its version: set
    inclusions of the keys (about 1 µs a record, on paths that decode records at ~10 µs each)."""
    f = d["_FILE"]
    check_version(d.get("_VERSION"), ENTRY_VERSION, "manifest entry", path)
    if not ENTRY_FIELDS.issuperset(d):
        check_record(d, ENTRY_FIELDS, "manifest entry", path)
    if not FILE_FIELDS.issuperset(f):
        check_record(f, FILE_FIELDS, "data file", path, REFUSED_FILE_FIELDS)
    for stats in ("_KEY_STATS", "_VALUE_STATS"):
        s = f.get(stats)
        if isinstance(s, dict) and not _STATS.issuperset(s):
            check_record(s, _STATS, f"data file {stats}", path)


def check_list_record(d: Mapping, path: str = "") -> None:
    _require(d, ("_FILE_NAME", "_NUM_ADDED_FILES"))
    check_version(d.get("_VERSION"), LIST_VERSION, "manifest list entry", path)
    check_record(d, LIST_FIELDS, "manifest list entry", path, REFUSED_LIST_FIELDS)
    if isinstance(d.get("_PARTITION_STATS"), Mapping):
        check_record(d["_PARTITION_STATS"], _STATS, "_PARTITION_STATS", path)


def check_index_record(d: Mapping, types: Collection[str], path: str = "") -> None:
    """``check_record`` of an index manifest entry, its version and its index type (one of
    ``types``: see ``check_index_type``)."""
    _require(d, ("_INDEX_TYPE", "_FILE_NAME"))
    check_version(d.get("_VERSION"), INDEX_VERSION, "index manifest entry", path)
    check_record(d, INDEX_FIELDS, "index manifest entry", path, REFUSED_INDEX_FIELDS)
    g = d.get("_GLOBAL_INDEX")
    if g is not None:   # a global index's type names its kind (bitmap, btree, ...): any is carried along
        _require(g, ("_ROW_RANGE_START", "_ROW_RANGE_END", "_INDEX_FIELD_ID"))
        check_record(g, GLOBAL_INDEX_FIELDS, "global index meta", path)
    else:
        check_index_type(d["_INDEX_TYPE"], d["_FILE_NAME"], types, path)
    for r in d.get("_DELETIONS_VECTORS_RANGES") or d.get("_DELETION_VECTORS_RANGES") or ():
        if r is not None:
            check_record(r, DV_RANGE_FIELDS, "deletion vector range", path)


def check_index_type(index_type, file_name, types: Collection[str], path: str = "") -> None:
    """An index file of a type not in ``types`` (a newer Paimon's kind of index) is refused, not
    carried along: what it says about the rows would go unread, and a compaction or overwrite of
    its bucket would leave it describing files that are gone, for the engines that do read it."""
    if index_type not in types:
        raise UnsupportedMetadataError(
            f"{_at(path)}index file {file_name!r} has index type {index_type!r}, which lakeformat does not know "
            f"(it knows {', '.join(sorted(types))}; written by a newer Paimon?); reading or writing the table "
            "could ignore what that index says or leave it stale, so the table is refused")


# ---------------------------------------------------------------- JSON

def check_json_keys(d: Mapping, known: Iterable[str], what: str, path: str = "",
                    ignored: frozenset = frozenset()) -> None:
    """Keys of a snapshot's or schema's JSON object not in ``known``: set (not null) is an error."""
    known = set(known) | ignored
    for k, v in d.items():
        if k not in known and v is not None:
            raise _unknown(path, what, k, f" (to {v!r})" if isinstance(v, (str, int, float, bool)) else "")


def check_type_json(d: Mapping, kind: str, nullable: bool, path: str = "") -> None:
    """A nested type's JSON object (``kind`` ARRAY, MAP or ROW; ``nullable`` as its type string
    says): a key Paimon does not write, set, is an error naming it (a newer Paimon's attribute of
    the type may change what the column holds), and so is a ``nullable`` that contradicts the
    type string (readers differ on which one wins: pypaimon's MAP takes the key)."""
    flag = d.get("nullable")
    if flag is not None and flag is not nullable:
        raise UnsupportedMetadataError(
            f"{_at(path)}{kind} type {d.get('type')!r} has 'nullable' {flag!r}, which contradicts its type string; "
            "lakeformat cannot tell whether the values may be null, so the table is refused")
    check_json_keys(d, NESTED_TYPE_KEYS[kind], f"{kind} type", path, ignored=NESTED_TYPE_KEYS_IGNORED)


def with_path(e: UnsupportedMetadataError, path: str) -> UnsupportedMetadataError:
    """``e`` naming the file it is about (the pure checks do not know it)."""
    return UnsupportedMetadataError(f"{path}: {e}")


# ---------------------------------------------------------------- _WRITE_COLS

SYSTEM_COLUMNS = ("_ROW_ID", "_SEQUENCE_NUMBER")   # row tracking's system columns (read/row_ids.py)


def check_write_cols(files: Sequence, columns_of: Callable[[int], Sequence[str]], where: str,
                     partial_ok: bool = False) -> None:
    """``files`` (``DataFileMeta`` whose ``write_cols`` is set) hold every column of their schema
    (``columns_of(schema_id)``), or the table is refused: such a file holds some columns of rows
    whose other columns are in other files, which only a data-evolution read (``partial_ok``) merges.
    The row-tracking system columns (``_ROW_ID``, ``_SEQUENCE_NUMBER``) may be named beside them:
    a compaction of a row-tracking table keeps its rows' ids and versions in the file."""
    for f in files:
        if f.write_cols is None:
            continue
        columns = list(columns_of(f.schema_id))
        named = [c for c in f.write_cols if c not in SYSTEM_COLUMNS]
        unknown = [c for c in named if c not in columns]
        if unknown or (not partial_ok and set(named) != set(columns)):
            raise UnsupportedMetadataError(
                f"{where}: data file {f.file_name} has '_WRITE_COLS' {list(f.write_cols)}, not every column of "
                f"its schema {f.schema_id} ({columns}): it holds only those columns of its rows (Paimon's data "
                "evolution), which lakeformat reads only in a table with 'data-evolution.enabled'; reading it as "
                "whole rows would give wrong rows, so the table is refused")


def check_writable(next_row_id: Optional[int], where: str) -> None:
    """A snapshot whose ``nextRowId`` is above 0 has assigned row ids (row tracking) in a table
    without ``row-tracking.enabled``: files lakeformat writes there would carry none, and a
    compaction would drop the ones rows have."""
    if next_row_id:
        raise UnsupportedMetadataError(
            f"{where}: the snapshot's 'nextRowId' is {next_row_id}: the table tracks row ids (Paimon's row "
            "tracking), which lakeformat does not implement; its writes would carry no row ids, so writing is "
            "refused (reading is not affected)")
