"""Merge-on-read of a primary-key bucket.

The bucket's files are split into sections whose key ranges do not overlap (Paimon's interval
partition); each section is read and merged on its own, so memory is bounded by the largest
section rather than the bucket. A section of one sorted run holds one version per key and needs
no merge, only its deletes dropped. Merging is the merge engine's vectorised Arrow merge.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Optional
from collections.abc import Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.format import options as O
from lakeformat.format.manifest import DataFileMeta
from lakeformat.io.data_file import iter_columns
from lakeformat.io.fileio import join
from lakeformat.io.table_context import TableContext
from lakeformat.mergetree.kv_file import DELETE, KIND, SEQ, UPDATE_BEFORE
from lakeformat.mergetree.levels import interval_partition
from lakeformat.mergetree.merge_function import MergeFunction
from lakeformat.mergetree.slices import sliced_sections

# Engines whose result for a column depends only on that column and the key's order.
_COLUMNWISE = ("deduplicate", "first-row")


def sections(files: Sequence[DataFileMeta], key_of) -> list[list[DataFileMeta]]:
    """Groups of files to read and merge together (sorted runs flattened), in key order."""
    return [[f for run in section for f in run.files] for section in interval_partition(list(files), key_of)]


def merge_columns(ctx: TableContext, needed: Sequence[str]) -> list[str]:
    """The columns a merge needs to produce ``needed``: keys and sequence fields for engines
    that pick whole versions, every column for engines that combine versions."""
    o, schema = ctx.typed_options, ctx.schema
    if o.get(O.MERGE_ENGINE) not in _COLUMNWISE:
        return schema.names
    extra = [*schema.trimmed_primary_keys, *(o.get(O.SEQUENCE_FIELD) or [])]
    want = set(needed) | set(extra)
    return [n for n in schema.names if n in want]


def read_section(ctx: TableContext, bucket_dir: str, files: Sequence[DataFileMeta],
                 columns: Sequence[str], buffer: Optional[int] = None,
                 deletions: Mapping[str, np.ndarray] = MappingProxyType({})) -> Iterator[pa.Table]:
    """The live rows of one section: ``columns`` of the newest merged version of each key, in
    key slices of about ``buffer`` bytes (default ``write-buffer-size``; see
    :mod:`lakeformat.mergetree.slices`). Rows that ``deletions`` (data file name -> deleted
    positions) mark are never read."""
    schema = ctx.schema
    fields = [schema.field(c) for c in columns]
    single_run = len(files) == 1 or all(f.level > 0 and f.level == files[0].level for f in files)
    if single_run:   # one version per key already: stream the files, dropping deletes
        with_deletes = any(f.delete_row_count != 0 for f in files)
        for f in files:
            for data in iter_columns(ctx, join(bucket_dir, f.file_name), f, fields, (SEQ, KIND), 1 << 20,
                                     deletions.get(f.file_name)):
                if with_deletes:
                    kinds = data.column(KIND)
                    data = data.filter(pc.and_(pc.not_equal(kinds, DELETE), pc.not_equal(kinds, UPDATE_BEFORE)))
                yield data.drop_columns([SEQ, KIND])
        return
    merge = MergeFunction.from_options(ctx.typed_options, list(columns), schema.trimmed_primary_keys)
    keys = [schema.field(k) for k in schema.trimmed_primary_keys]
    budget = buffer if buffer is not None else ctx.typed_options.required(O.WRITE_BUFFER_SIZE)
    for data in sliced_sections(ctx, bucket_dir, files, fields, (SEQ, KIND), keys, budget, deletions):
        yield merge.merge(data, drop_deletes=True).drop_columns([SEQ, KIND])
