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
from typing import Optional
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import DataError, OptionError
from lakeformat.format import options as O
from lakeformat.format.commit_message import CommitMessage
from lakeformat.format.index_manifest import IndexFileMeta
from lakeformat.format.manifest import FILE_SOURCE_COMPACT, DataFileMeta
from lakeformat.io.data_file import read_columns
from lakeformat.io.fileio import join
from lakeformat.io.index_files import IndexFiles
from lakeformat.io.table_context import TableContext
from lakeformat.mergetree.changelog import diff
from lakeformat.mergetree.compaction import (
    CompactUnit,
    Rewrite,
    Upgrade,
    needs_stall,
    pick_force_level0,
    pick_full,
    pick_universal,
    plan_rewrite,
    should_drop_delete,
)
from lakeformat.mergetree.deletion_vectors import BucketDeletionVectors
from lakeformat.mergetree.kv_file import KIND, ROW_KINDS, SEQ, KeyValueFileWriter
from lakeformat.mergetree.levels import Levels, SortedRun
from lakeformat.mergetree.lookup import UpperLevels, drop_deletes
from lakeformat.mergetree.merge_function import MergeFunction, sort_for_merge
from lakeformat.mergetree.slices import sliced_sections
from lakeformat.mergetree.spill import MAX_SPILLED_RUNS, SpilledRuns

log = logging.getLogger(__name__)
DV_REWRITE_RATIO = 0.3   # a file this much deleted is rewritten rather than read around


def row_kinds(column: pa.ChunkedArray, name: str) -> np.ndarray:
    """Kinds from a ``rowkind.field`` column of '+I', '-U', '+U', '-D'."""
    codes = pc.index_in(column, pa.array(list(ROW_KINDS)))
    if codes.null_count:
        bad = pc.filter(column, pc.is_null(codes)).unique().to_pylist()[:5]
        raise DataError(f"column {name!r} (rowkind.field) holds {bad}; a row kind is one of {list(ROW_KINDS)}")
    return codes.to_numpy().astype(np.int8)


class MergeTreeWriter:
    def __init__(self, ctx: TableContext, partition: bytes, bucket: int, bucket_dir: str,
                 restored: Sequence[DataFileMeta] = (), restored_index: Sequence[IndexFileMeta] = (),
                 sequence_offset: int = 0):
        self.ctx, self.partition, self.bucket, self.dir = ctx, partition, bucket, bucket_dir
        self.schema = ctx.schema
        o = self.options = ctx.typed_options
        key_of = ctx.key_decoder()
        assert key_of is not None, "merge-tree writers are made for primary-key tables only"
        self.key_of = key_of
        self.merge = MergeFunction.from_options(o, self.schema.names, self.schema.trimmed_primary_keys)
        self.levels = Levels(list(restored), o.num_levels(), self.key_of)
        # several writers of one bucket in one commit take disjoint ranges above the restored maximum
        self.next_seq = max((f.max_sequence_number for f in restored), default=-1) + 1 + sequence_offset
        self.buffer: list[pa.Table] = []
        self.buffer_bytes = 0
        self.buffer_limit = o.required(O.WRITE_BUFFER_SIZE)
        self._key_fields = [self.schema.field(k) for k in self.schema.trimmed_primary_keys]
        spillable = o.get(O.WRITE_BUFFER_SPILLABLE)   # Paimon's default: on for object stores or big files
        self.spillable = spillable if spillable is not None else (
            ctx.io.scheme != "file" or ctx.target_file_size > self.buffer_limit)
        self.spilled = SpilledRuns()
        self.write_only = o.get(O.WRITE_ONLY)
        self.rowkind_field = o.get(O.ROWKIND_FIELD)
        self.target_file_size = ctx.target_file_size
        self.committed = {f.file_name for f in restored}   # live in a snapshot: never deleted here
        self.new_files: dict[str, DataFileMeta] = {}
        self.compact_before: dict[str, DataFileMeta] = {}
        self.compact_after: dict[str, DataFileMeta] = {}
        self.changelog_producer = o.get(O.CHANGELOG_PRODUCER)
        # merge-on-write: older versions of the keys a compaction writes are marked deleted
        self.dv = BucketDeletionVectors(IndexFiles.of(ctx), partition, bucket, restored_index,
                                        o.required(O.DELETION_VECTORS_BITMAP64)) if o.get(O.DELETION_VECTORS) else None
        self.first_row = o.get(O.MERGE_ENGINE) == "first-row"
        if (o.get(O.CHANGELOG_PRODUCER) == "lookup" and self.dv is None
                and self.merge.engine not in ("deduplicate", "first-row")):
            raise OptionError(f"changelog-producer 'lookup' with merge-engine {self.merge.engine!r} needs "
                              "'deletion-vectors.enabled' in lakeformat (the version a lookup finds must be the "
                              "only one above it)")
        # Paimon's lookup mode: compactions look keys up in the levels above their output, and
        # level 0, which batch reads of these tables skip, is compacted away at every flush
        self.lookup = self.dv is not None or self.first_row or o.get(O.CHANGELOG_PRODUCER) == "lookup"
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
            writer = KeyValueFileWriter(self.ctx, self.dir, self.schema, 0)
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
                    else (pick_force_level0 if self.lookup else pick_universal)(
                        self.levels.num_levels, runs, self.options))
            if unit is None:
                return changed
            self._run_unit(unit)
            changed, full = True, False
            if not needs_stall(self.levels, self.options):
                return changed

    def _run_unit(self, unit: CompactUnit) -> None:
        # with deletion vectors the older versions are marked, so deletes can always go
        drop = should_drop_delete(unit.output_level, self.levels) or (self.dv is not None and unit.output_level > 0)
        before, after = [], []
        small = self.target_file_size // 10 * 7   # Paimon's compaction file size: smaller files are rewritten
        upper = UpperLevels(self.ctx, self.dir, self.levels, unit.output_level, {f.file_name for f in unit.files},
                            self.key_of, self._deleted) if self.lookup and not unit.file_rewrite else None
        for step in plan_rewrite(unit, self.key_of, drop, small):
            if isinstance(step, Upgrade) and upper is not None and step.file.level == 0:
                # a level-0 file's keys must be looked up above: it is rewritten, never just moved
                step = Rewrite(step.output_level, ((SortedRun((step.file,)),),), drop)
            if isinstance(step, Upgrade):
                before.append(step.file)
                after.append(dataclasses.replace(step.file, level=step.output_level))
                if self._changelog_at(step.output_level):
                    self._full_changelog([step.file], [])
            else:
                before += [f for section in step.sections for run in section for f in run.files]
                after += self._rewrite(step, upper)
        log.debug("compacted %d file(s) of bucket %d into %d at level %d", len(before), self.bucket,
                  len(after), unit.output_level)
        self._apply(before, after)
        if self.dv is not None and not unit.file_rewrite:
            self._rewrite_mostly_deleted()

    def _rewrite_mostly_deleted(self) -> None:
        """Rewrite, in place, files whose deletion vectors hide at least ``DV_REWRITE_RATIO`` of
        their rows: reads then stop decoding rows nobody sees (lakeformat's policy; the level
        and key range stay, so the tree is what Paimon expects)."""
        dv = self.dv
        assert dv is not None, "called for tables with deletion vectors"
        by_level: dict[int, list[DataFileMeta]] = {}
        for f in self.levels.all_files():
            gone = dv.deleted(f.file_name)
            if f.level > 0 and gone is not None and len(gone) >= DV_REWRITE_RATIO * f.row_count:
                by_level.setdefault(f.level, []).append(f)
        for level, files in sorted(by_level.items()):
            self._run_unit(CompactUnit(level, tuple(files), file_rewrite=True))

    def _rewrite(self, step: Rewrite, upper: Optional[UpperLevels] = None) -> list[DataFileMeta]:
        writer = KeyValueFileWriter(self.ctx, self.dir, self.schema, step.output_level, FILE_SOURCE_COMPACT)
        try:
            for section in step.sections:
                files = [f for run in section for f in run.files]
                if self._changelog_at(step.output_level):   # the diff needs the whole section
                    merged = self.merge.merge(pa.concat_tables([self._read(f) for f in files]), step.drop_delete)
                    writer.write(merged)
                    self._full_changelog(files, [merged])
                    continue
                if upper is not None and self.changelog_producer == "lookup" and any(f.level == 0 for f in files):
                    merged = self._lookup_changelog(files, upper)
                    writer.write(drop_deletes(merged) if step.drop_delete else merged)
                    continue
                for data in sliced_sections(self.ctx, self.dir, files, self.schema.fields, (SEQ, KIND),
                                            self._key_fields, self.buffer_limit, self._deletions()):
                    if upper:
                        merged, _ = self._look_up(self.merge.merge(data, drop_deletes=False), upper)
                        writer.write(drop_deletes(merged) if step.drop_delete else merged)
                    else:
                        writer.write(self.merge.merge(data, drop_deletes=step.drop_delete))
            return writer.close()
        except BaseException:
            writer.abort()
            raise

    def _look_up(self, merged: pa.Table, upper: UpperLevels, with_rows: bool = False) -> tuple[pa.Table, list]:
        """Merge-on-write of merged rows against their older versions above the output level:
        first-row keeps the older version (the new one goes), deletion vectors mark it deleted,
        and engines that combine versions fold it into the new row. Returns the rows to write
        and (when needed or ``with_rows``) the older versions found."""
        found = upper.find(merged)
        if not found:
            return merged, []
        combine = self.dv is not None and self.merge.engine not in ("deduplicate", "first-row")
        old = [upper.rows(hit, self.schema.fields).cast(merged.schema) for hit in found] if combine or with_rows else []
        if self.first_row:
            keep = np.ones(merged.num_rows, dtype=bool)
            for hit in found:
                keep[hit.rows] = False
            return merged.filter(keep), old
        if self.dv is not None:
            for hit in found:
                self.dv.mark(hit.file.file_name, hit.positions)
        if combine:
            merged = self.merge.merge(pa.concat_tables([*old, merged]), drop_deletes=False)
        return merged, old

    def _lookup_changelog(self, files: Sequence[DataFileMeta], upper: UpperLevels) -> pa.Table:
        """``changelog-producer = lookup``: merge a section holding level-0 files, and for the keys
        those files touch, the change from the version visible before (the newest above level
        0: in this section or found above the output) to the merged one. As Paimon's, an update
        to equal values is still -U/+U."""
        level0 = pa.concat_tables([self._read(f) for f in files if f.level == 0])
        above = [self._read(f) for f in files if f.level > 0]
        merged, old = self._look_up(self.merge.merge(pa.concat_tables([level0, *above]), drop_deletes=False),
                                    upper, with_rows=True)
        old = [t.cast(merged.schema) for t in (*old, *above)]
        before = self.merge.merge(pa.concat_tables(old), drop_deletes=True) if old else merged.slice(0, 0)
        after = merged
        if old and self.merge.engine in ("deduplicate", "first-row"):   # the version that stays visible
            after = self.merge.merge(pa.concat_tables([*old, merged]), drop_deletes=False)
        keys = list(self.schema.trimmed_primary_keys)
        touched = level0.select(keys).group_by(keys).aggregate([])
        before = before.join(touched, keys, join_type="left semi").select(merged.column_names)
        after = drop_deletes(after).join(touched, keys, join_type="left semi").select(merged.column_names)
        # first-row: a key found above keeps its first version, so only new keys change (+I)
        self.compact_changelog += self._write_run(diff(before, after, keys, compare_values=self.first_row),
                                                  level=0, compact=True, prefix="changelog-")
        return merged

    def _deleted(self, file_name: str) -> Optional[np.ndarray]:
        return self.dv.deleted(file_name) if self.dv is not None else None

    def _deletions(self) -> dict:
        return self.dv.vectors if self.dv is not None else {}

    def _read(self, f: DataFileMeta) -> pa.Table:
        return read_columns(self.ctx, join(self.dir, f.file_name), f, self.schema.fields, (SEQ, KIND),
                            self._deleted(f.file_name))

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
        writer = KeyValueFileWriter(self.ctx, self.dir, self.schema, level,
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
        it came from. Committed files are never deleted here: older snapshots still use them.
        In lookup mode every flush is compacted at once, so a flushed file stays in the data
        increment (and the compaction replaces it): the APPEND snapshot then shows the rows
        written, for incremental and streaming reads, as Paimon's does."""
        kept = {f.file_name for f in after}
        came_from: dict[str, dict] = {}
        for f in before:
            if self.lookup and f.file_name in self.new_files and f.file_name not in kept:
                self.compact_before[f.file_name] = f
                continue
            for pending in (self.new_files, self.compact_after):
                if pending.pop(f.file_name, None) is not None:
                    came_from[f.file_name] = pending
                    break
            else:
                self.compact_before[f.file_name] = f
            if f.file_name not in kept and f.file_name not in self.committed:
                self.ctx.io.delete(join(self.dir, f.file_name))
        for f in after:
            came_from.get(f.file_name, self.compact_after)[f.file_name] = f
        self.levels = self.levels.update(before, after)
        if self.dv is not None:   # rewritten files take their deletion vectors with them
            self.dv.forget(f.file_name for f in before if f.file_name not in kept)

    # -- hand-over -----------------------------------------------------------------------
    def prepare_commit(self, total_buckets: int, full_compaction: bool = False) -> CommitMessage:
        self.flush()
        self.commits_since_full += 1
        due = self.full_every is not None and self.commits_since_full >= self.full_every
        if (full_compaction or due) and not self.write_only:
            self.compact(full=True)
            self.commits_since_full = 0
        index_added, index_deleted = self.dv.hand_over() if self.dv is not None else ((), ())
        msg = CommitMessage(self.partition, self.bucket, total_buckets, tuple(self.new_files.values()),
                            changelog_files=tuple(self.changelog_files),
                            compact_before=tuple(self.compact_before.values()),
                            compact_after=tuple(self.compact_after.values()),
                            compact_changelog=tuple(self.compact_changelog),
                            index_added=index_added, index_deleted=index_deleted)
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
                self.ctx.io.delete(join(self.dir, f.file_name))
        self.new_files, self.compact_before, self.compact_after = {}, {}, {}
        self.changelog_files, self.compact_changelog = [], []
        self.buffer, self.buffer_bytes = [], 0
        self.spilled.clear()
