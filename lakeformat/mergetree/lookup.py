"""Looking keys up in the levels above a compaction's output (Paimon's ``LookupLevels``), the
ground of merge-on-write: tables with deletion vectors mark the older version of each key they
rewrite as deleted, first-row tables keep the first version found there, and the lookup
changelog producer compares the new version with the one found.

The files of those levels are searched from the lowest level (newest) up; each level is one
sorted run, so a key is in at most one of its files. Rows that deletion vectors already delete
are not candidates. Everything is a hash join of key columns on Arrow, one per file whose key
range overlaps the keys looked up; each file's keys are read once per compaction.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.format.deletion_vector import keep_mask
from lakeformat.format.manifest import DataFileMeta
from lakeformat.io.data_file import read_columns
from lakeformat.io.fileio import join
from lakeformat.io.table_context import TableContext
from lakeformat.mergetree.kv_file import KIND, SEQ
from lakeformat.mergetree.levels import KeyOf, Levels

_POS, _ROW = "__lookup_pos", "__lookup_row"


@dataclass(frozen=True)
class Found:
    """Keys found in one file: ``rows`` index the looked-up table, ``positions`` the file."""

    file: DataFileMeta
    rows: np.ndarray
    positions: np.ndarray


class UpperLevels:
    """The live rows of the files above ``output_level`` that a compaction does not rewrite."""

    def __init__(self, ctx: TableContext, bucket_dir: str, levels: Levels, output_level: int, rewritten: set[str],
                 key_of: KeyOf, deleted: Callable[[str], Optional[np.ndarray]]):
        self.ctx, self.dir, self.key_of, self.deleted = ctx, bucket_dir, key_of, deleted
        schema = ctx.schema
        self.key_names = list(schema.trimmed_primary_keys)
        self.key_fields = [schema.field(k) for k in self.key_names]
        self.files = [f for level in range(output_level + 1, levels.max_level + 1)
                      for f in levels.run_of_level(level).files if f.file_name not in rewritten]
        self._keys: dict[str, pa.Table] = {}

    def __bool__(self) -> bool:
        return bool(self.files)

    def _file_keys(self, f: DataFileMeta) -> pa.Table:
        """Key columns and row positions of the live rows of ``f``."""
        if f.file_name not in self._keys:
            keys = read_columns(self.ctx, join(self.dir, f.file_name), f, self.key_fields)
            keys = keys.append_column(_POS, pa.array(np.arange(keys.num_rows, dtype=np.int64)))
            gone = self.deleted(f.file_name)
            if gone is not None and gone.size:
                keys = keys.filter(keep_mask(keys.num_rows, gone))
            self._keys[f.file_name] = keys
        return self._keys[f.file_name]

    def find(self, keys: pa.Table) -> list[Found]:
        """Where the keys of ``keys`` (one row per key) live above the output level."""
        if not self.files or not keys.num_rows:
            return []
        probe = keys.select(self.key_names).append_column(_ROW, pa.array(np.arange(keys.num_rows, dtype=np.int64)))
        ordered = probe.sort_by([(k, "ascending") for k in self.key_names])
        lo = tuple(c[0].as_py() for c in ordered.select(self.key_names).columns)
        hi = tuple(c[-1].as_py() for c in ordered.select(self.key_names).columns)
        out: list[Found] = []
        for f in self.files:
            if self._outside(f, lo, hi):
                continue
            hits = probe.join(self._file_keys(f), keys=self.key_names, join_type="inner")
            if hits.num_rows:
                out.append(Found(f, hits.column(_ROW).to_numpy(), hits.column(_POS).to_numpy()))
        return out

    def _outside(self, f: DataFileMeta, lo: tuple, hi: tuple) -> bool:
        try:
            return self.key_of(f.max_key) < lo or self.key_of(f.min_key) > hi
        except TypeError:   # decoded keys and Arrow's values not comparable (e.g. time zones): look inside
            return False

    def rows(self, found: Found, fields, extra: Sequence[str] = (SEQ, KIND)) -> pa.Table:
        """The full rows that ``found`` points at, in ``found.rows`` order."""
        data = read_columns(self.ctx, join(self.dir, found.file.file_name), found.file, fields, extra)
        return data.take(pa.array(found.positions))


def drop_deletes(data: pa.Table) -> pa.Table:
    """Merged rows without the deleted keys (-D, -U)."""
    kinds = data.column(KIND)
    return data.filter(pc.and_(pc.not_equal(kinds, 3), pc.not_equal(kinds, 1)))
