"""The writer of one (partition, bucket) of a primary-key table: Paimon's MergeTreeWriter.

Rows get increasing sequence numbers (continuing from the bucket's restored maximum) and a row
kind, and collect in a write buffer of ``write-buffer-size`` bytes. A full buffer is sorted by
key, same-key versions merged by the merge engine, and written as one level-0 sorted run, so
memory stays bounded by the buffer whatever the input size. After each flush the writer compacts
what the universal picker chooses (unless ``write-only``), and before taking more input it
compacts until the runs are at most ``num-sorted-run.stop-trigger`` (back-pressure).

Files written and then compacted away before the commit never reach a manifest: they are deleted
here. Everything else becomes the CommitMessage's data increment (new files) and compact
increment (before/after).
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import DataError, OptionError
from lakeformat.format import options as O
from lakeformat.format.commit_message import CommitMessage
from lakeformat.format.manifest import FILE_SOURCE_COMPACT, DataFileMeta
from lakeformat.io.data_file import read_columns
from lakeformat.io.fileio import join
from lakeformat.mergetree.changelog import diff
from lakeformat.mergetree.compaction import (
    CompactUnit,
    Rewrite,
    Upgrade,
    needs_stall,
    pick_full,
    pick_universal,
    plan_rewrite,
    should_drop_delete,
)
from lakeformat.mergetree.kv_file import KIND, ROW_KINDS, SEQ, KeyValueFileWriter
from lakeformat.mergetree.levels import Levels
from lakeformat.mergetree.merge_function import MergeFunction, sort_for_merge
from lakeformat.mergetree.slices import sliced_sections
from lakeformat.mergetree.spill import MAX_SPILLED_RUNS, SpilledRuns

log = logging.getLogger(__name__)


def row_kinds(column: pa.ChunkedArray, name: str) -> np.ndarray:
    """Kinds from a ``rowkind.field`` column of '+I', '-U', '+U', '-D'."""
    codes = pc.index_in(column, pa.array(list(ROW_KINDS)))
    if codes.null_count:
        bad = pc.filter(column, pc.is_null(codes)).unique().to_pylist()[:5]
        raise DataError(f"column {name!r} (rowkind.field) holds {bad}; a row kind is one of {list(ROW_KINDS)}")
    return codes.to_numpy().astype(np.int8)


class MergeTreeWriter:
    def __init__(self, table, partition: bytes, bucket: int, bucket_dir: str,
                 restored: Sequence[DataFileMeta] = ()):
        self.table, self.partition, self.bucket, self.dir = table, partition, bucket, bucket_dir
        self.schema = table.schema
        o = self.options = table.typed_options
        self.key_of = table.key_decoder()
        self.merge = MergeFunction.from_options(o, self.schema.names, self.schema.trimmed_primary_keys)
        self.levels = Levels(list(restored), o.num_levels(), self.key_of)
        self.next_seq = max((f.max_sequence_number for f in restored), default=-1) + 1
        self.buffer: list[pa.Table] = []
        self.buffer_bytes = 0
        self.buffer_limit = o.get(O.WRITE_BUFFER_SIZE)
        self._key_fields = [self.schema.field(k) for k in self.schema.trimmed_primary_keys]
        spillable = o.get(O.WRITE_BUFFER_SPILLABLE)   # Paimon's default: on for object stores or big files
        self.spillable = spillable if spillable is not None else (
            table.io.scheme != "file" or table.target_file_size > self.buffer_limit)
        self.spilled = SpilledRuns()
        self.write_only = o.get(O.WRITE_ONLY)
        self.rowkind_field = o.get(O.ROWKIND_FIELD)
        self.target_file_size = table.target_file_size
        self.committed = {f.file_name for f in restored}   # live in a snapshot: never deleted here
        self.new_files: dict[str, DataFileMeta] = {}
        self.compact_before: dict[str, DataFileMeta] = {}
        self.compact_after: dict[str, DataFileMeta] = {}
        self.changelog_producer = o.get(O.CHANGELOG_PRODUCER)
        if self.changelog_producer == "lookup":
            raise OptionError("changelog-producer 'lookup' is not supported; use 'input' or 'full-compaction'")
        self.changelog_files: list[DataFileMeta] = []
        self.compact_changelog: list[DataFileMeta] = []
        self.full_every = o.get(O.FULL_COMPACTION_DELTA_COMMITS)
        self.commits_since_full = 0

    # -- input -------------------------------------------------------------------------
    def write(self, rows: pa.Table, kinds: Optional[np.ndarray] = None) -> None:
        """Buffer ``rows`` (in the table's columns) with their kinds (default +I)."""
        n = rows.num_rows
        if kinds is None and self.rowkind_field:
            kinds = row_kinds(rows.column(self.rowkind_field), self.rowkind_field)
        seq = pa.array(np.arange(self.next_seq, self.next_seq + n, dtype=np.int64))
        kind = pa.array(np.zeros(n, dtype=np.int8) if kinds is None else kinds.astype(np.int8))
        self.next_seq += n
        self.buffer.append(rows.append_column(SEQ, seq).append_column(KIND, kind))
        self.buffer_bytes += rows.nbytes
        if self.buffer_bytes >= self.buffer_limit:
            self.release()

    def release(self) -> None:
        """Empty the buffer: to local disk if spillable, else as a level-0 run."""
        if self.spillable:
            self._spill()
        else:
            self.flush()

    def _take_buffer(self) -> Optional[pa.Table]:
        """The buffer merged into one sorted run (its input changelog written first)."""
        if not self.buffer:
            return None
        data = pa.concat_tables(self.buffer)
        self.buffer, self.buffer_bytes = [], 0
        if self.changelog_producer == "input":   # every input version, as it came, sorted by key
            sequence_fields = self.options.get(O.SEQUENCE_FIELD) or ()
            ordered = sort_for_merge(data, self.schema.trimmed_primary_keys, sequence_fields)
            self.changelog_files += self._write_run(ordered, level=0, compact=False, prefix="changelog-")
        return self.merge.merge(data, drop_deletes=False)

    def _spill(self) -> None:
        self.spilled.add(self._take_buffer())
        if len(self.spilled) >= MAX_SPILLED_RUNS:
            self.flush()

    def flush(self) -> None:
        """Write the buffer (and any spilled runs, merged) as one sorted level-0 run, then
        compact if the picker asks."""
        run = self._take_buffer()
        files: list[DataFileMeta] = []
        if self.spilled:
            writer = KeyValueFileWriter(self.table, self.dir, self.schema, 0)
            try:
                for data in self.spilled.slices([run] if run is not None else [], self.schema.trimmed_primary_keys,
                                                self.buffer_limit):
                    writer.write(self.merge.merge(data, drop_deletes=False))
                files = writer.close()
            except BaseException:
                writer.abort()
                raise
            finally:
                self.spilled.clear()
        elif run is not None:
            files = self._write_run(run, level=0, compact=False)
        for f in files:
            self.new_files[f.file_name] = f
        self.levels = self.levels.update([], files)
        if not self.write_only:
            self.compact(full=False)

    # -- compaction ----------------------------------------------------------------------
    def compact(self, full: bool) -> bool:
        """Compact what the picker chooses (everything with ``full``); then, while the runs
        exceed the stop trigger, keep compacting. Returns whether anything changed."""
        changed = False
        while True:
            runs = self.levels.runs()
            unit = (pick_full(self.levels.num_levels, runs) if full
                    else pick_universal(self.levels.num_levels, runs, self.options))
            if unit is None:
                return changed
            self._run_unit(unit)
            changed, full = True, False
            if not needs_stall(self.levels, self.options):
                return changed

    def _run_unit(self, unit: CompactUnit) -> None:
        drop = should_drop_delete(unit.output_level, self.levels)
        before, after = [], []
        small = self.target_file_size // 10 * 7   # Paimon's compaction file size: smaller files are rewritten
        for step in plan_rewrite(unit, self.key_of, drop, small):
            if isinstance(step, Upgrade):
                before.append(step.file)
                after.append(dataclasses.replace(step.file, level=step.output_level))
                if self._changelog_at(step.output_level):
                    self._full_changelog([step.file], [])
            else:
                before += [f for section in step.sections for run in section for f in run.files]
                after += self._rewrite(step)
        log.debug("compacted %d file(s) of bucket %d into %d at level %d", len(before), self.bucket,
                  len(after), unit.output_level)
        self._apply(before, after)

    def _rewrite(self, step: Rewrite) -> list[DataFileMeta]:
        writer = KeyValueFileWriter(self.table, self.dir, self.schema, step.output_level, FILE_SOURCE_COMPACT)
        try:
            for section in step.sections:
                files = [f for run in section for f in run.files]
                if self._changelog_at(step.output_level):   # the diff needs the whole section
                    merged = self.merge.merge(pa.concat_tables([self._read(f) for f in files]), step.drop_delete)
                    writer.write(merged)
                    self._full_changelog(files, [merged])
                    continue
                for data in sliced_sections(self.table, self.dir, files, self.schema.fields, (SEQ, KIND),
                                            self._key_fields, self.buffer_limit):
                    writer.write(self.merge.merge(data, drop_deletes=step.drop_delete))
            return writer.close()
        except BaseException:
            writer.abort()
            raise

    def _read(self, f: DataFileMeta) -> pa.Table:
        return read_columns(self.table, join(self.dir, f.file_name), f, self.schema.fields, (SEQ, KIND))

    def _changelog_at(self, output_level: int) -> bool:
        return self.changelog_producer == "full-compaction" and output_level == self.levels.max_level

    def _full_changelog(self, inputs: Sequence[DataFileMeta], result: list[pa.Table]) -> None:
        """Changelog of a compaction into the highest level: its old rows there vs the result
        (for an upgraded file, the file's live rows are the result)."""
        max_level = self.levels.max_level
        empty = self.schema.arrow_schema().append(pa.field(SEQ, pa.int64())).append(pa.field(KIND, pa.int8()))
        old_parts = [self._read(f) for f in inputs if f.level == max_level]
        new = pa.concat_tables(result or [self._read(f) for f in inputs if f.level != max_level])
        kinds = new.column(KIND)
        new = new.filter(pc.or_(pc.equal(kinds, 0), pc.equal(kinds, 2)))
        old = pa.concat_tables(old_parts) if old_parts else empty.empty_table()
        changes = diff(old.cast(empty), new.cast(empty), self.schema.trimmed_primary_keys)
        self.compact_changelog += self._write_run(changes, level=0, compact=True, prefix="changelog-")

    def _write_run(self, run: pa.Table, level: int, compact: bool, prefix: str = "data-") -> list[DataFileMeta]:
        if not run.num_rows:
            return []
        writer = KeyValueFileWriter(self.table, self.dir, self.schema, level,
                                    FILE_SOURCE_COMPACT if compact else 0, prefix=prefix)
        try:
            writer.write(run)
            return writer.close()
        except BaseException:
            writer.abort()
            raise

    def _apply(self, before: list[DataFileMeta], after: list[DataFileMeta]) -> None:
        """Record a compaction. A file both made and replaced before the hand-over is deleted
        and never mentioned; an upgraded file keeps its name at its new level, in the increment
        it came from. Committed files are never deleted here: older snapshots still use them."""
        kept = {f.file_name for f in after}
        came_from: dict[str, dict] = {}
        for f in before:
            for pending in (self.new_files, self.compact_after):
                if pending.pop(f.file_name, None) is not None:
                    came_from[f.file_name] = pending
                    break
            else:
                self.compact_before[f.file_name] = f
            if f.file_name not in kept and f.file_name not in self.committed:
                self.table.io.delete(join(self.dir, f.file_name))
        for f in after:
            came_from.get(f.file_name, self.compact_after)[f.file_name] = f
        self.levels = self.levels.update(before, after)

    # -- hand-over -----------------------------------------------------------------------
    def prepare_commit(self, total_buckets: int, full_compaction: bool = False) -> CommitMessage:
        self.flush()
        self.commits_since_full += 1
        due = self.full_every is not None and self.commits_since_full >= self.full_every
        if (full_compaction or due) and not self.write_only:
            self.compact(full=True)
            self.commits_since_full = 0
        msg = CommitMessage(self.partition, self.bucket, total_buckets, tuple(self.new_files.values()),
                            changelog_files=tuple(self.changelog_files),
                            compact_before=tuple(self.compact_before.values()),
                            compact_after=tuple(self.compact_after.values()),
                            compact_changelog=tuple(self.compact_changelog))
        self.committed |= {f.file_name for f in msg.all_files()}
        self.new_files, self.compact_before, self.compact_after = {}, {}, {}
        self.changelog_files, self.compact_changelog = [], []
        return msg

    def abort(self) -> None:
        """Delete every file made since the last hand-over (compaction inputs that are
        committed files stay: they are still live)."""
        for f in [*self.new_files.values(), *self.compact_after.values(), *self.changelog_files,
                  *self.compact_changelog]:
            if f.file_name not in self.committed:
                self.table.io.delete(join(self.dir, f.file_name))
        self.new_files, self.compact_before, self.compact_after = {}, {}, {}
        self.changelog_files, self.compact_changelog = [], []
        self.buffer, self.buffer_bytes = [], 0
        self.spilled.clear()
