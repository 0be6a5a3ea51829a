"""Paimon's row tracking and data evolution: the pure rules, over file metadata and Arrow arrays.

Row tracking numbers every row of an append table: a data file's ``_FIRST_ROW_ID`` is the id of
its first row, the others follow in file order. Two system columns can be selected beside the
table's: ``_ROW_ID`` and ``_SEQUENCE_NUMBER``. A file may hold them physically (a compaction keeps
the ids and versions of the rows it rewrote, and names them in ``_WRITE_COLS``); where it does
not (or a value is null), ``_ROW_ID`` is the first row id plus the row's position and
``_SEQUENCE_NUMBER`` the file's max sequence number (Paimon's rule; Java fills only nulls).
The committer assigns both once the snapshot id is known (``assign_row_ids``): an appended file
takes the snapshot's ``nextRowId`` and the snapshot id as its version.

Data evolution lets a file hold some columns (``_WRITE_COLS``) of a row id range that other files
hold other columns of. Files starting at the same row id form a group and must have the same row
count; each column comes from the newest file of the group holding it (highest max sequence
number), a column no file holds is null, and the system columns come from the newest file. The
merge is by position within the group: whole Arrow columns taken from the files, no per-row work.
A file updating some columns of existing rows names the range it covers; it needs that range
live when it is committed (``lost_ranges``).
"""
from __future__ import annotations

import dataclasses
from typing import Optional
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import CorruptFileError, OptionError, UnsupportedOptionError
from lakeformat.format import types as T
from lakeformat.format.arrays import from_numpy
from lakeformat.format.manifest import ADD, FILE_SOURCE_APPEND, DataFileMeta, ManifestEntry
from lakeformat.format.types import DataField

ROW_ID, SEQUENCE_NUMBER = "_ROW_ID", "_SEQUENCE_NUMBER"
SYSTEM_COLUMNS = (ROW_ID, SEQUENCE_NUMBER)
SYSTEM_TYPES = {ROW_ID: pa.int64(), SEQUENCE_NUMBER: pa.int64()}
SYSTEM_FIELD_IDS = {ROW_ID: 2**31 - 6, SEQUENCE_NUMBER: 2**31 - 2}   # Paimon's ids of the system fields


def physical_system_columns(f: DataFileMeta) -> list[str]:
    """System columns ``f`` holds physically (named in its ``_WRITE_COLS``)."""
    return [c for c in SYSTEM_COLUMNS if f.write_cols is not None and c in f.write_cols]


def system_arrays(f: DataFileMeta, start: int, num_rows: int,
                  physical: Mapping[str, pa.ChunkedArray | pa.Array]) -> dict[str, pa.Array]:
    """``_ROW_ID`` and ``_SEQUENCE_NUMBER`` of rows ``start`` .. ``start + num_rows`` of ``f`` (file
    order): the ``physical`` values where present and not null, else Paimon's defaults."""
    if f.first_row_id is None:
        row_ids: pa.Array = pa.nulls(num_rows, pa.int64())
    else:
        first = f.first_row_id + start
        row_ids = from_numpy(np.arange(first, first + num_rows, dtype=np.int64))
    seqs: pa.Array = from_numpy(np.full(num_rows, f.max_sequence_number, dtype=np.int64))
    out = {ROW_ID: row_ids, SEQUENCE_NUMBER: seqs}
    for name, arr in physical.items():
        col = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
        col = col.cast(pa.int64())
        out[name] = col if col.null_count == 0 else pc.coalesce(col, out[name])
    return out


def has_row_ids(f: DataFileMeta) -> bool:
    """``f``'s rows have ids: a first row id, or the ids stored in the file."""
    return f.first_row_id is not None or ROW_ID in physical_system_columns(f)


def row_groups(files: Sequence[DataFileMeta], where: str) -> list[list[DataFileMeta]]:
    """Files of a data-evolution bucket grouped by row id range (Paimon's split by row id): files
    with the same ``_FIRST_ROW_ID`` form a group, newest (max sequence number) first; a file
    without row ids is a group of its own. Ranges that overlap without starting together, or
    files of one group with different row counts, are refused: no rule merges them."""
    untracked = [[f] for f in files if f.first_row_id is None]
    tracked = sorted((f for f in files if f.first_row_id is not None),
                     key=lambda f: (f.first_row_id, -f.max_sequence_number))
    groups: list[list[DataFileMeta]] = []
    end = None
    for f in tracked:
        first = f.first_row_id
        assert first is not None
        if groups and groups[-1][0].first_row_id == f.first_row_id:
            head = groups[-1][0]
            if f.row_count != head.row_count:
                raise CorruptFileError(f.file_name, f"{where}: data files {head.file_name} and {f.file_name} start "
                                       f"at row id {f.first_row_id} with different row counts ({head.row_count}, "
                                       f"{f.row_count}); lakeformat cannot merge their columns by row id")
            groups[-1].append(f)
            continue
        if end is not None and first < end:
            raise CorruptFileError(f.file_name, f"{where}: data file {f.file_name} (row ids from {f.first_row_id}) "
                                   f"overlaps the row ids of {groups[-1][0].file_name} (up to {end - 1}) without "
                                   "starting with it; lakeformat cannot merge such files by row id")
        groups.append([f])
        end = first + f.row_count
    return untracked + groups


def file_field_ids(f: DataFileMeta, fields_of: Callable[[int], Sequence[DataField]]) -> set[int]:
    """Field ids of the table columns ``f`` holds: those its ``_WRITE_COLS`` names (by its
    schema's names), or every field of its schema."""
    fields = fields_of(f.schema_id)
    if f.write_cols is None:
        return {x.id for x in fields}
    names = set(f.write_cols)
    return {x.id for x in fields if x.name in names}


def assign_columns(group: Sequence[DataFileMeta], wanted: Sequence[DataField],
                   fields_of: Callable[[int], Sequence[DataField]]) -> list[tuple[DataFileMeta, list[DataField]]]:
    """Which file of ``group`` (newest first) gives each ``wanted`` field: the newest holding it.
    Files giving nothing are left out; fields no file holds are in none (they read as nulls)."""
    held = [(f, file_field_ids(f, fields_of)) for f in group]
    taken: dict[str, list[DataField]] = {}
    for w in wanted:
        for f, ids in held:
            if w.id in ids:
                taken.setdefault(f.file_name, []).append(w)
                break
    return [(f, taken[f.file_name]) for f in group if f.file_name in taken]


def merge_group(num_rows: int, wanted: Sequence[DataField], parts: Sequence[pa.Table],
                newest: Optional[dict[str, pa.Array]] = None) -> pa.Table:
    """One table of the ``wanted`` columns (table columns, found in ``parts`` or else null) plus
    the ``newest`` file's system columns, for a group of ``num_rows`` rows."""
    arrays, names = [], []
    for w in wanted:
        col = next((p.column(w.name) for p in parts if w.name in p.column_names), None)
        arrays.append(col if col is not None else pa.nulls(num_rows, T.to_arrow(w.type)))
        names.append(w.name)
    for name, arr in (newest or {}).items():
        arrays.append(arr)
        names.append(name)
    return pa.Table.from_arrays(arrays, names=names)


def check_schema(primary_keys: Sequence[str], options: Mapping[str, str], names: Sequence[str], what: str) -> None:
    """Paimon's rules for the two options: row tracking numbers the rows of append tables only,
    data evolution needs row tracking, and no column may take a system column's name."""
    on = {k for k in ("row-tracking.enabled", "data-evolution.enabled")
          if str(options.get(k, "false")).strip().lower() == "true"}
    if not on:
        return
    if primary_keys:
        raise UnsupportedOptionError(f"{what}: lakeformat does not implement "
                                     f"{', '.join(f'{k}=true' for k in sorted(on))} on a primary-key table "
                                     "(Paimon tracks rows of append tables only)")
    if "data-evolution.enabled" in on and "row-tracking.enabled" not in on:
        raise OptionError(f"{what}: 'data-evolution.enabled' needs 'row-tracking.enabled' = true (Paimon's rule)")
    clash = [c for c in names if c in SYSTEM_COLUMNS]
    if clash:
        raise OptionError(f"{what}: column(s) {clash} clash with row tracking's system columns")


def assign_row_ids(entries: Sequence[ManifestEntry], next_row_id: int,
                   snapshot_id: int) -> tuple[list[ManifestEntry], int]:
    """What Paimon's committer does in a row-tracking table, once the snapshot id is known: every
    file an append adds takes the snapshot id as its sequence number (the rows' version), and
    one without row ids takes the next ones, in commit order; files of a compaction (which keep
    their rows' ids) and files of some columns of existing rows (which name their first row id)
    keep theirs. Returns the entries and the snapshot's ``nextRowId``."""
    out = []
    blob_default = next_row_id   # a blob file continues its data file's row ids, per column
    blob_starts: dict[str, int] = {}
    for e in entries:
        f = e.file
        if e.kind == ADD and f.file_source == FILE_SOURCE_APPEND:
            f = dataclasses.replace(f, min_sequence_number=snapshot_id, max_sequence_number=snapshot_id)
            if not has_row_ids(f) and f.file_name.endswith(".blob"):
                column = (f.write_cols or ("",))[0]
                start = blob_starts.get(column, blob_default)
                if start + f.row_count > next_row_id:
                    raise CorruptFileError(f.file_name, "a blob file in a commit holds more rows than the data "
                                           "file before it; blob files follow the data file of their rows")
                f = dataclasses.replace(f, first_row_id=start)
                blob_starts[column] = start + f.row_count
            elif not has_row_ids(f):
                f = dataclasses.replace(f, first_row_id=next_row_id)
                blob_default, blob_starts = next_row_id, {}
                next_row_id += f.row_count
            e = dataclasses.replace(e, file=f)
        out.append(e)
    return out, next_row_id


def tracked_file_schema(schema: pa.Schema) -> pa.Schema:
    """A data file's schema with both system columns appended, under Paimon's field ids."""
    for c in SYSTEM_COLUMNS:
        field = pa.field(c, SYSTEM_TYPES[c], nullable=c == ROW_ID)
        schema = schema.append(field.with_metadata({b"PARQUET:field_id": str(SYSTEM_FIELD_IDS[c]).encode()}))
    return schema


def updates_of(entries: Sequence[ManifestEntry]) -> list[ManifestEntry]:
    """Added files of some columns of existing rows: an append that already names its first row id."""
    return [e for e in entries if e.kind == ADD and e.file.file_source == FILE_SOURCE_APPEND
            and e.file.first_row_id is not None and e.file.write_cols is not None]


def lost_ranges(updates: Sequence[ManifestEntry], live: Sequence[ManifestEntry]) -> list[ManifestEntry]:
    """Those of ``updates`` whose row id range (partition, bucket, first row id, row count) no
    live file starts any more: a concurrent overwrite or compaction replaced the rows they update,
    and committing them would leave columns without rows."""
    ranges = {(e.partition, e.bucket, e.file.first_row_id, e.file.row_count) for e in live}
    return [e for e in updates if (e.partition, e.bucket, e.file.first_row_id, e.file.row_count) not in ranges]


def system_stats(f: DataFileMeta, name: str) -> Optional[tuple[int, int, int, int]]:
    """(min, max, nulls, rows) of a system column over ``f``, from its metadata where that says
    exactly what a read gives (no stored values that could differ); None when unknown."""
    if name in physical_system_columns(f):
        return None
    if name == ROW_ID:
        if f.first_row_id is None:
            return None
        return f.first_row_id, f.first_row_id + f.row_count - 1, 0, f.row_count
    return f.max_sequence_number, f.max_sequence_number, 0, f.row_count


def check_unchanged(old: Mapping[str, str], new: Mapping[str, str], what: str) -> None:
    """Row tracking and data evolution are chosen when a table is created (Paimon's rule): files
    written before would have no row ids, or be read without their column merge."""
    for key in ("row-tracking.enabled", "data-evolution.enabled"):
        before, after = (str(o.get(key, "false")).strip().lower() == "true" for o in (old, new))
        if before != after:
            raise OptionError(f"{what}: {key!r} cannot be changed after the table is created")
