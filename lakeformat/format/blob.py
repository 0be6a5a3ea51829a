"""BLOB columns: where Paimon allows them, and how their files sit beside the data files.

A BLOB column holds large objects (images, video). Paimon keeps its values out of the data files:
a write puts the other columns in a data file and each BLOB column's values in ``.blob`` files
(io/blob_file.py) that name the column in ``_WRITE_COLS`` and cover row id ranges of the data
file (``_FIRST_ROW_ID``); a read joins them by row id. So Paimon allows BLOB columns only at the
top level of append tables with ``row-tracking.enabled`` and ``data-evolution.enabled``, and
never as a partition, primary or bucket key; a table needs at least one other column.
``blob-field`` names columns to store as BLOB (how an Arrow schema asks for one).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from lakeformat.errors import CorruptFileError, SchemaError, UnsupportedTypeError
from lakeformat.format import types as T
from lakeformat.format.manifest import DataFileMeta

BLOB_SUFFIX = ".blob"


def is_blob(t: T.DataType) -> bool:
    return isinstance(t, T.AtomicType) and t.root == "BLOB"


def _nested_blob(t: T.DataType) -> bool:
    if isinstance(t, T.ArrayType):
        return is_blob(t.element) or _nested_blob(t.element)
    if isinstance(t, T.MapType):
        return any(is_blob(x) or _nested_blob(x) for x in (t.key, t.value))
    if isinstance(t, T.RowType):
        return any(is_blob(f.type) or _nested_blob(f.type) for f in t.fields)
    return False


def blob_names(fields: Sequence[T.DataField]) -> list[str]:
    return [f.name for f in fields if is_blob(f.type)]


def is_blob_file(f: DataFileMeta) -> bool:
    return f.file_name.endswith(BLOB_SUFFIX)


def _true(options: Mapping[str, str], key: str) -> bool:
    return str(options.get(key, "false")).strip().lower() == "true"


def blob_field_option(options: Mapping[str, str]) -> list[str]:
    return [c.strip() for c in str(options.get("blob-field", "")).split(",") if c.strip()]


def apply_blob_field(fields: Sequence[T.DataField], options: Mapping[str, str]) -> tuple[T.DataField, ...]:
    """The columns ``blob-field`` names, turned from BYTES into BLOB (a new table's Arrow schema
    has binary columns; the option says which hold large objects)."""
    names = blob_field_option(options)
    known = {f.name: f for f in fields}
    for n in names:
        f = known.get(n)
        if f is None:
            raise SchemaError(f"option 'blob-field' names {n!r}, which is not a column")
        if not (isinstance(f.type, T.AtomicType) and f.type.root in ("VARBINARY", "BINARY", "BLOB")):
            raise SchemaError(f"option 'blob-field' names {n!r}, a {T.type_to_json(f.type)} column; "
                              "a BLOB column is given as binary")
    return tuple(replace(f, type=T.atomic("BLOB", nullable=f.type.nullable)) if f.name in names else f
                 for f in fields)


def check_blob_schema(fields: Sequence[T.DataField], partition_keys: Sequence[str], primary_keys: Sequence[str],
                      options: Mapping[str, str], what: str) -> None:
    """Paimon's rules for BLOB columns (see the module docstring), each refusal naming the column."""
    for f in fields:
        if _nested_blob(f.type):
            raise UnsupportedTypeError(f"{what}: column {f.name!r} ({T.type_to_json(f.type)}) nests BLOB; "
                                       "lakeformat implements top-level BLOB columns only")
    blobs = blob_names(fields)
    for n in blob_field_option(options):
        if n not in blobs:
            raise SchemaError(f"{what}: option 'blob-field' names {n!r}, which is not a BLOB column")
    if not blobs:
        return
    missing = [k for k in ("row-tracking.enabled", "data-evolution.enabled") if not _true(options, k)]
    if missing:
        raise UnsupportedTypeError(f"{what}: BLOB column(s) {blobs} need {' and '.join(f'{k}=true' for k in missing)} "
                                   "(Paimon keeps BLOB values in files of their own, joined to the rows by row id)")
    keys = [("primary key", primary_keys), ("partition key", partition_keys),
            ("bucket key", [k.strip() for k in str(options.get("bucket-key", "")).split(",")])]
    for kind, names in keys:
        bad = [n for n in blobs if n in names]
        if bad:
            raise UnsupportedTypeError(f"{what}: BLOB column(s) {bad} cannot be a {kind}")
    if len(blobs) == len(fields):
        raise SchemaError(f"{what}: a table with BLOB columns needs another column (Paimon's rule)")


def blob_slices(data_file: DataFileMeta, blob_files: Sequence[DataFileMeta],
                column: str, where: str) -> list[DataFileMeta]:
    """The blob files of ``column`` covering ``data_file``'s row ids, in row id order; they must
    cover its range exactly, once (as one write lays them out). Several versions of the same rows
    (blob updates) are refused by name."""
    if not blob_files:
        return []
    first = data_file.first_row_id
    if first is None:
        raise CorruptFileError(data_file.file_name, f"{where}: a data file of a BLOB table has no first row id")
    files = sorted(blob_files, key=lambda b: (b.first_row_id if b.first_row_id is not None else -1))
    at = first
    for b in files:
        if b.first_row_id is None:
            raise CorruptFileError(b.file_name, f"{where}: a blob file has no first row id")
        if b.first_row_id < at:
            raise UnsupportedTypeError(f"{where}: blob files {[x.file_name for x in files]} hold more than one "
                                       f"version of rows of column {column!r} (BLOB updates); lakeformat does "
                                       "not implement them")
        if b.first_row_id > at:
            break
        at += b.row_count
    if at != first + data_file.row_count or (files and files[-1].first_row_id is not None
                                            and files[-1].first_row_id + files[-1].row_count != at):
        raise UnsupportedTypeError(f"{where}: the blob files of column {column!r} do not cover the rows "
                                   f"{first}..{first + data_file.row_count - 1} of {data_file.file_name} exactly "
                                   "once; lakeformat reads only BLOB columns written with their rows")
    return files



def blob_versions(data_file: DataFileMeta, blob_files: Sequence[DataFileMeta], column: str,
                  where: str) -> list[list[DataFileMeta]]:
    """The blob files of ``column`` for ``data_file``'s rows as versions, newest first: files of
    one write (one max sequence number) in row id order. A BLOB update by row id writes a newer
    version whose rows it kept are placeholders; each row's value is the newest version's that is
    not a placeholder (Paimon's fallback). Within a version, files must not overlap and must lie
    inside the data file's row ids."""
    first, n = data_file.first_row_id, data_file.row_count
    if first is None:
        raise CorruptFileError(data_file.file_name, f"{where}: a data file of a BLOB table has no first row id")
    by_seq: dict[int, list[DataFileMeta]] = {}
    for b in blob_files:
        if b.first_row_id is None:
            raise CorruptFileError(b.file_name, f"{where}: a blob file has no first row id")
        by_seq.setdefault(b.max_sequence_number, []).append(b)
    out = []
    for seq in sorted(by_seq, reverse=True):
        files = sorted(by_seq[seq], key=lambda b: b.first_row_id or 0)
        at = first
        for b in files:
            lo = b.first_row_id or 0
            if lo < at or lo + b.row_count > first + n:
                raise UnsupportedTypeError(f"{where}: blob files {[x.file_name for x in files]} of column {column!r} "
                                           f"overlap or leave the rows {first}..{first + n - 1} of "
                                           f"{data_file.file_name}; lakeformat cannot line them up")
            at = lo + b.row_count
        out.append(files)
    return out
