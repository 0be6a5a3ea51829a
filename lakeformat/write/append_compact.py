"""Compaction of append tables: small files of a bucket rewritten into files of ``target-file-size``.

An append table has no keys to merge, so compaction only concatenates: the files of one
(partition, bucket) in sequence order (the order their rows were written, which is the order a
reader returns them) are streamed into new files that keep that order and take over the
sequence range of their inputs. Bucket-unaware tables (``bucket = -1``) keep everything in bucket 0.

Picking follows Paimon's append compaction (``AppendOnlyCompactManager``): a window slides over
the bucket's files in sequence order; it is taken once it holds ``compaction.min.file-num`` files
adding up to the target size, or ``compaction.max.file-num`` files whatever their size; files
that already reach the target size are never rewritten. Windows are contiguous in sequence order,
so the rewritten file can take its inputs' place in the order. Full compaction rewrites everything
after the leading full-size files of a bucket, when that is more than one file.

Two callers: ``Table.compact`` (a dedicated compaction, COMPACT snapshot) and the writer of a
fixed-bucket append table (:class:`AppendBucketWriter`), which compacts at ``prepare_commit``
unless ``write-only``, as Paimon's bucketed append writers do.
"""
from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Optional
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import CorruptFileError, StorageError
from lakeformat.format import options as O
from lakeformat.format.arrays import to_numpy
from lakeformat.format.commit_message import CommitMessage
from lakeformat.format.manifest import FILE_SOURCE_COMPACT, DataFileMeta
from lakeformat.format.row_tracking import (
    ROW_ID,
    SEQUENCE_NUMBER,
    SYSTEM_COLUMNS,
    has_row_ids,
    physical_system_columns,
    row_groups,
    system_arrays,
    tracked_file_schema,
)
from lakeformat.format.blob import is_blob, is_blob_file
from lakeformat.io.data_file import RollingFileWriter, iter_columns
from lakeformat.io.fileio import join
from lakeformat.io.table_context import TableContext
from lakeformat.read.split_read import SplitRead

log = logging.getLogger(__name__)

Progress = Callable[[int, int, str], None]
DEFAULT_MAX_FILE_NUM = 50          # Paimon's former default of compaction.max.file-num
COALESCE_ROWS = 1 << 17            # rows gathered from small inputs before one write (row group size)
COALESCE_BYTES = 64 << 20


# ---------------------------------------------------------------- picking (pure)

@dataclass(frozen=True)
class AppendCompactPolicy:
    """The options that decide what an append compaction picks."""

    target_file_size: int
    min_file_num: int = 5
    max_file_num: int = DEFAULT_MAX_FILE_NUM
    by_row_range: bool = False   # data evolution: the files of one row id range merge into one

    @classmethod
    def of(cls, ctx: TableContext) -> AppendCompactPolicy:
        o = ctx.typed_options
        min_num = max(1, o.required(O.COMPACTION_MIN_FILE_NUM))
        max_num = o.get(O.COMPACTION_MAX_FILE_NUM)
        max_num = DEFAULT_MAX_FILE_NUM if max_num is None else max_num
        return cls(ctx.target_file_size, min_num, max(min_num, max_num), bool(o.get(O.DATA_EVOLUTION)))


def sequence_order(files: Sequence[DataFileMeta]) -> list[DataFileMeta]:
    """Files in the order their rows were written: by first sequence number. The sort is stable,
    so files that share a number (bucket-unaware writers all start at 0) keep the order given."""
    return sorted(files, key=lambda f: f.min_sequence_number)


def pick_windows(files: Sequence[DataFileMeta], policy: AppendCompactPolicy) -> list[tuple[DataFileMeta, ...]]:
    """Windows of files to rewrite, each contiguous in ``files`` (given in sequence order).

    A window grows over consecutive small files. Once its files reach the target size it is taken
    if it holds at least ``min_file_num`` files, else its oldest file leaves it (that file is
    big enough among its neighbours). It is also taken at ``max_file_num`` files, and at the end
    of a run of small files (a full-size file or the last file) if it holds ``min_file_num``."""
    target, out = policy.target_file_size, []
    window: list[DataFileMeta] = []
    total = 0

    def close_run() -> None:
        nonlocal window, total
        if len(window) >= max(2, policy.min_file_num):
            out.append(tuple(window))
        window, total = [], 0

    for f in files:
        if f.file_size >= target:
            close_run()
            continue
        window.append(f)
        total += f.file_size
        if (total >= target and len(window) >= policy.min_file_num) or len(window) >= policy.max_file_num:
            out.append(tuple(window))
            window, total = [], 0
            continue
        while total >= target and window:
            total -= window.pop(0).file_size
    close_run()
    return out


def pick_full(files: Sequence[DataFileMeta], policy: AppendCompactPolicy) -> list[tuple[DataFileMeta, ...]]:
    """Everything after the bucket's leading full-size files, if that is more than one file."""
    rest = list(files)
    while rest and rest[0].file_size >= policy.target_file_size:
        rest.pop(0)
    return [tuple(rest)] if len(rest) > 1 else []


def pick(files: Sequence[DataFileMeta], policy: AppendCompactPolicy, full: bool) -> list[tuple[DataFileMeta, ...]]:
    if policy.by_row_range:   # each row id range held by several files (newest first), on its own
        # blob files are left as they are: they hold a BLOB column of their data file's rows (by
        # row id), which compaction rewrites without it
        return [tuple(g) for g in row_groups([f for f in files if not is_blob_file(f)], "compaction")
                if len(g) > 1]
    ordered = sequence_order(files)
    return pick_full(ordered, policy) if full else pick_windows(ordered, policy)


# ---------------------------------------------------------------- rewriting (IO)

class _CompactFileWriter(RollingFileWriter):
    """Rolling writer whose files are marked as compaction output."""

    def _file_meta(self, name: str, size: int, rows: int) -> DataFileMeta:
        return dataclasses.replace(super()._file_meta(name, size, rows), file_source=FILE_SOURCE_COMPACT)


class _TrackedCompactFileWriter(_CompactFileWriter):
    """Compaction output of a row-tracking table: rows keep their ``_ROW_ID`` and
    ``_SEQUENCE_NUMBER``, stored in the file (Paimon's rule for rows moved to another file; the
    file names them in ``_WRITE_COLS``). Where a file's ids run without a gap it also states its
    first row id, so readers that number rows from metadata alone agree."""

    def _file_schema(self) -> pa.Schema:
        return tracked_file_schema(super()._file_schema())

    def _start_file(self) -> None:
        super()._start_file()
        self._ids: list[np.ndarray] = []
        self._seq_range: Optional[tuple[int, int]] = None

    def _observe(self, part: pa.Table) -> None:
        super()._observe(part)
        self._ids.append(to_numpy(part.column(ROW_ID)))
        seqs = part.column(SEQUENCE_NUMBER)
        lo, hi = pc.min(seqs).as_py(), pc.max(seqs).as_py()
        if lo is not None:
            old = self._seq_range or (lo, hi)
            self._seq_range = (min(old[0], lo), max(old[1], hi))

    def _file_meta(self, name: str, size: int, rows: int) -> DataFileMeta:
        meta = super()._file_meta(name, size, rows)
        ids = np.concatenate(self._ids) if self._ids else np.empty(0, np.int64)
        first = int(ids[0]) if ids.size and bool(np.all(np.diff(ids) == 1)) else None
        lo, hi = self._seq_range or (meta.min_sequence_number, meta.max_sequence_number)
        return dataclasses.replace(meta, first_row_id=first, min_sequence_number=lo, max_sequence_number=hi,
                                   write_cols=tuple(self.schema.names) + SYSTEM_COLUMNS)


def _with_row_ids(f: DataFileMeta, part: pa.Table, start: int, names: Sequence[str]) -> pa.Table:
    """``part`` (rows ``start``.. of ``f``, with the system columns ``f`` stores) as table columns
    plus both system columns, filled as a reader sees them."""
    stored = physical_system_columns(f)
    system = system_arrays(f, start, part.num_rows, {c: part.column(c) for c in stored})
    out = part.select(list(names))
    for c in SYSTEM_COLUMNS:
        out = out.append_column(c, system[c])
    return out


def rewrite(ctx: TableContext, bucket_dir: str, window: Sequence[DataFileMeta]) -> list[DataFileMeta]:
    """Stream the rows of ``window`` (in order, in the table's current schema) into new files of
    the target size that continue the window's first sequence number. Small inputs are gathered
    before writing, so the output gets proper row groups."""
    tracking = bool(ctx.typed_options.get(O.ROW_TRACKING))
    writer = (_TrackedCompactFileWriter if tracking else _CompactFileWriter)(
        ctx, bucket_dir, ctx.schema, seq_start=window[0].min_sequence_number)
    fields = ctx.schema.fields
    # pieces of about a target file's rows (as the inputs' bytes per row suggest), so that even
    # the first output file rolls near the target size
    stored_rows, stored_bytes = sum(f.row_count for f in window), sum(f.file_size for f in window)
    step = max(256, min(COALESCE_ROWS, ctx.target_file_size * stored_rows // max(1, stored_bytes)))
    pending: list[pa.Table] = []
    rows = nbytes = 0
    try:
        for f in window:
            extra = physical_system_columns(f) if tracking else []
            position = 0
            for part in iter_columns(ctx, join(bucket_dir, f.file_name), f, fields, extra, batch_size=step):
                if tracking:
                    part, position = _with_row_ids(f, part, position, ctx.schema.names), position + part.num_rows
                pending.append(part)
                rows, nbytes = rows + part.num_rows, nbytes + part.nbytes
                if rows >= step or nbytes >= COALESCE_BYTES:
                    writer.write(pa.concat_tables(pending))
                    pending, rows, nbytes = [], 0, 0
        if pending:
            writer.write(pa.concat_tables(pending))
        return writer.close()
    except BaseException:
        writer.abort()
        raise


def rewrite_range(ctx: TableContext, bucket_dir: str, group: Sequence[DataFileMeta]) -> list[DataFileMeta]:
    """The files of one row id range of a data-evolution table (newest first) as one file of whole
    rows: each column as a read merges it, and each row's ``_ROW_ID`` and ``_SEQUENCE_NUMBER`` as a
    read reports them, stored in the file, so reads return the same rows and system columns."""
    # BLOB columns stay in their blob files, which keep naming the range's row ids
    schema = dataclasses.replace(ctx.schema, fields=tuple(f for f in ctx.schema.fields if not is_blob(f.type)))
    data = SplitRead(ctx, [*schema.names, *SYSTEM_COLUMNS]).read_range(bucket_dir, group)
    writer = _TrackedCompactFileWriter(ctx, bucket_dir, schema, seq_start=min(f.min_sequence_number for f in group))
    writer.roll = False   # one range, one file: its first row id names the range
    try:
        writer.write(data)
        return writer.close()
    except BaseException:
        writer.abort()
        raise


def compact_bucket(ctx: TableContext, bucket_dir: str, files: Sequence[DataFileMeta], policy: AppendCompactPolicy,
                   full: bool) -> tuple[list[DataFileMeta], list[DataFileMeta]]:
    """(before, after) of compacting one bucket's ``files``; nothing picked gives ([], [])."""
    before: list[DataFileMeta] = []
    after: list[DataFileMeta] = []
    o = ctx.typed_options
    if o.get(O.ROW_TRACKING):   # files an uncommitted append wrote have no row ids yet: left for later
        files = [f for f in files if has_row_ids(f)]
    windows = pick(files, policy, full)
    try:
        for window in windows:
            after += (rewrite_range if policy.by_row_range else rewrite)(ctx, bucket_dir, window)
            before += window
    except BaseException:
        for f in after:
            ctx.io.delete(join(bucket_dir, f.file_name))
        raise
    return before, after


# ---------------------------------------------------------------- dedicated compaction


# ---------------------------------------------------------------- the writer of a fixed bucket

class AppendBucketWriter:
    """Writer of one (partition, bucket) of a fixed-bucket append table (Paimon's AppendOnlyWriter).

    It continues the bucket's sequence numbers from its restored files, so the order of a bucket's
    rows survives compaction, and unless ``write-only`` compacts at each ``prepare_commit`` what
    the picker chooses among the restored and new files. It lives as long as its ``TableWrite``."""

    def __init__(self, ctx: TableContext, partition: bytes, bucket: int, bucket_dir: str,
                 restored: Sequence[DataFileMeta] = ()):
        self.ctx, self.partition, self.bucket, self.dir = ctx, partition, bucket, bucket_dir
        self.files = sequence_order(restored)          # the bucket's live files as this writer knows them
        self.next_seq = max((f.max_sequence_number for f in restored), default=-1) + 1
        # a data-evolution table is compacted by dedicated compactions only (by row id range)
        self.write_only = ctx.typed_options.get(O.WRITE_ONLY) or ctx.typed_options.get(O.DATA_EVOLUTION)
        self.policy = AppendCompactPolicy.of(ctx)
        self.buffer_bytes = 0                          # nothing buffered: rows go straight to files
        self._writer: Optional[RollingFileWriter] = None

    def write(self, rows: pa.Table, kinds=None) -> None:
        if self._writer is None:
            self._writer = RollingFileWriter(self.ctx, self.dir, self.ctx.schema, seq_start=self.next_seq)
        self._writer.write(rows)

    def release(self) -> None:
        """Nothing to release: an append writer holds no buffer."""

    def prepare_commit(self, total_buckets: int, full_compaction: bool = False) -> CommitMessage:
        """New files as the data increment; a compaction of the picked windows (which may hold new
        files: the APPEND snapshot adds them, the COMPACT snapshot replaces them) as the compact
        increment."""
        new: list[DataFileMeta] = []
        if self._writer is not None:
            new, self.next_seq, self._writer = self._writer.close(), self._writer.seq, None
        self.files = sequence_order(self.files + new)
        before: list[DataFileMeta] = []
        after: list[DataFileMeta] = []
        if not self.write_only:
            try:
                before, after = compact_bucket(self.ctx, self.dir, self.files, self.policy, full_compaction)
            except (CorruptFileError, StorageError) as e:
                # an input another compaction replaced and expiration then deleted, or the store
                # failing: the compaction is an extra, the rows written are what must be committed
                log.warning("%s: the writer's compaction of bucket %d is skipped and left for a later one (%s)",
                            self.ctx.name, self.bucket, e)
            except BaseException:
                self._delete(new)   # never handed over
                raise
        gone = {f.file_name for f in before}
        self.files = sequence_order([f for f in self.files if f.file_name not in gone] + after)
        return CommitMessage(self.partition, self.bucket, total_buckets, tuple(new),
                             compact_before=tuple(before), compact_after=tuple(after))

    def abort(self) -> None:
        if self._writer is not None:
            self._writer.abort()
            self._writer = None

    def _delete(self, files: Sequence[DataFileMeta]) -> None:
        for f in files:
            self.ctx.io.delete(join(self.dir, f.file_name))
