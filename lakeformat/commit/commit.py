"""The committer: turns CommitMessages into manifests, manifest lists and ``snapshot-N``.

One attempt (Paimon's ``tryCommitOnce``): read the latest snapshot, check conflicts against it,
write the delta manifest(s) (once; retries reuse them unless the entries depend on the latest
snapshot, as an overwrite's do), merge the previous manifests into the new base list, write the
base and delta manifest lists, then create ``snapshot-N`` only if absent (by the store's atomic
create-if-absent or, with ``lock.enabled``, under the table's catalog lock). Losing that race
deletes this attempt's lists and merged manifests and retries on the new latest, with
exponential backoff and jitter, bounded by ``commit.max-retries`` and ``commit.timeout``.

The outcome of a publish is decided from the table, never from an error (as Paimon's
``FileStoreCommitImpl`` keeps files "not sure about the situation"): ``snapshot-N`` is read back
whenever its creation failed or was refused, and it is this commit's if it holds this commit's
bytes. If it cannot be read, the commit raises :class:`CommitOutcomeUnknownError` and nothing it
wrote is ever deleted, by it or by ``abort``. Just before publishing, the attempt checks that
every file the snapshot will name exists, so a file removed meanwhile (orphan removal with no
age limit) fails the commit instead of becoming a hole in the table.

A commit of a data increment and a compact increment makes two snapshots. Once the first is in,
a failure of the second is logged and kept on ``skipped_compaction``, never raised: the caller's
rows are committed, and an error saying otherwise would have them written twice.

Exactly-once: a commit carries (commit_user, identifier); if a snapshot with that pair exists,
committing again is a no-op that returns it.

What follows a commit (snapshot and partition expiration) is not the committer's business: it
runs in ``TableCommit`` (lakeformat/table/table_commit.py), one layer up, as Paimon's
``TableCommitImpl`` runs it above ``FileStoreCommit``.
"""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
import logging
import random
import time
import uuid
from dataclasses import dataclass
from typing import Optional
from collections.abc import Iterable, Sequence

from lakeformat.commit.conflict import find_conflicts, needs_check
from lakeformat.commit.manifest_merge import merge_manifests
from lakeformat.errors import (CommitConflictError, CommitError, CommitOutcomeUnknownError, CorruptFileError,
                               DataError, NotFoundError, OutcomeUnknownError)
from lakeformat.format import options as O
from lakeformat.format.commit_message import CommitMessage
from lakeformat.format.index_manifest import HASH, IndexManifestEntry, combine
from lakeformat.format.manifest import ADD, DELETE, ManifestEntry, ManifestFileMeta
from lakeformat.format.metadata_checks import check_writable
from lakeformat.format.row_tracking import assign_row_ids, lost_ranges, updates_of
from lakeformat.format.snapshot import APPEND, COMPACT, OVERWRITE, Snapshot, inherited
from lakeformat.io.data_file import file_path
from lakeformat.io.fileio import join
from lakeformat.io.index_files import IndexFiles
from lakeformat.io.manifests import ManifestFile, ManifestList
from lakeformat.io.table_context import TableContext
from lakeformat.read.entries import delta_entries, live_entries

log = logging.getLogger(__name__)
BATCH_IDENTIFIER = 2**63 - 1   # Paimon's identifier of one-off batch commits (never deduplicated)


@dataclass(frozen=True)
class Overwrite:
    """Which partitions an OVERWRITE replaces: ``static`` values or every partition written."""

    static: Optional[dict] = None   # {"dt": "2024-01-01"}; {} means the whole table

    @property
    def dynamic(self) -> bool:
        return self.static is None


def data_entries(messages: Iterable[CommitMessage]) -> list[ManifestEntry]:
    """The data increment (new and deleted files) of the messages as manifest entries."""
    out = []
    for m in messages:
        out += [ManifestEntry(ADD, m.partition, m.bucket, m.total_buckets, f) for f in m.new_files]
        out += [ManifestEntry(DELETE, m.partition, m.bucket, m.total_buckets, f) for f in m.deleted_files]
    return out


def changelog_entries(messages: Iterable[CommitMessage], compact: bool) -> list[ManifestEntry]:
    """Changelog files of the data (or compact) increment: they go to the snapshot's changelog
    manifest list, never into the table's live files."""
    return [ManifestEntry(ADD, m.partition, m.bucket, m.total_buckets, f) for m in messages
            for f in (m.compact_changelog if compact else m.changelog_files)]


def compact_entries(messages: Iterable[CommitMessage]) -> list[ManifestEntry]:
    """The compact increment (files a compaction replaced and produced)."""
    out = []
    for m in messages:
        out += [ManifestEntry(DELETE, m.partition, m.bucket, m.total_buckets, f) for f in m.compact_before]
        out += [ManifestEntry(ADD, m.partition, m.bucket, m.total_buckets, f) for f in m.compact_after]
    return out


def index_changes(messages: Iterable[CommitMessage]) -> list[IndexManifestEntry]:
    """The index files the messages add and remove, as index manifest entries."""
    out = []
    for m in messages:
        out += [IndexManifestEntry(DELETE, m.partition, m.bucket, f) for f in m.index_deleted]
        out += [IndexManifestEntry(ADD, m.partition, m.bucket, f) for f in m.index_added]
    return out


def overwrite_deletes(live: Iterable[ManifestEntry], partitions: Optional[set[bytes]],
                      matches=None) -> list[ManifestEntry]:
    """DELETE entries for every live file in the partitions an overwrite replaces.
    ``partitions`` None with ``matches`` None means the whole table."""
    return [ManifestEntry(DELETE, e.partition, e.bucket, e.total_buckets, e.file) for e in live
            if (partitions is None or e.partition in partitions) and (matches is None or matches(e.partition))]


def backoff(attempt: int, min_wait: float, max_wait: float) -> float:
    """Exponential backoff with full jitter, in seconds."""
    return random.uniform(0, min(max_wait, min_wait * (2 ** attempt))) + min_wait


class FileStoreCommit:
    """Commits for one ``commit_user``; one instance per committing process or task."""

    def __init__(self, ctx: TableContext, commit_user: Optional[str] = None):
        O.check_supported(ctx.schema.options, O.WRITE, ctx.name)
        self.ctx = ctx
        self.commit_user = commit_user or str(uuid.uuid4())
        o = ctx.typed_options
        self.max_retries = o.required(O.COMMIT_MAX_RETRIES)
        timeout = o.get(O.COMMIT_TIMEOUT)
        self.timeout = timeout.total_seconds() if timeout is not None else None
        self.min_wait = o.required(O.COMMIT_MIN_RETRY_WAIT).total_seconds()
        self.max_wait = o.required(O.COMMIT_MAX_RETRY_WAIT).total_seconds()
        self.ignore_empty = o.get(O.IGNORE_EMPTY_COMMIT)
        self.retries = 0   # lost races so far, for metrics and benchmarks
        self.snapshots_made = 0   # snapshots this committer created (a re-run of a committed identifier makes none)
        self._published: set[str] = set()   # files a snapshot of this committer references: abort keeps them
        self.deltas: dict[int, list[ManifestEntry]] = {}   # snapshot id -> its delta, of the last commit()
        self.skipped_compaction: Optional[Exception] = None   # why the last commit's compact increment failed
        self.outcome_unknown = False   # a publish neither confirmed nor refused: abort deletes nothing
        self._index_checked: Optional[str] = None   # the index manifest last carried along, decoded once

    # -- exactly-once ------------------------------------------------------------------
    def filter_committed(self, identifiers: Iterable[int]) -> list[int]:
        """The identifiers among ``identifiers`` that are not committed yet by this user."""
        wanted = set(identifiers)
        found = self._committed(wanted)
        return sorted(wanted - set(found))

    def committed_snapshot(self, identifier: int) -> Optional[Snapshot]:
        """The retained snapshot this user committed with ``identifier``, if any."""
        return self._committed({identifier}).get(identifier)

    def _committed(self, identifiers: set[int], stop_below: Optional[int] = None) -> dict[int, Snapshot]:
        """Snapshots of this user carrying one of ``identifiers``, scanning back from the latest
        over every retained snapshot. Paimon assumes a user's identifiers grow and stops at the
        first smaller one; identifiers derived from the work (``staging.identifier_for``, a hash
        of table and date) do not grow, and stopping early would commit a re-run twice. Parsed
        snapshots are cached, so a long-lived committer reads each one once."""
        sm = self.ctx.snapshot_manager
        latest, earliest = sm.latest_id(), sm.earliest_id()
        found: dict[int, Snapshot] = {}
        if latest is None or not identifiers:
            return found
        for sid in range(latest, (earliest or 1) - 1, -1):
            if stop_below is not None and sid <= stop_below:
                break
            try:
                s = sm.get(sid)
            except NotFoundError:
                break   # expired while we were scanning: nothing older can be ours
            if s.commit_user != self.commit_user:
                continue
            if s.commit_identifier in identifiers:
                found.setdefault(s.commit_identifier, s)
                if len(found) == len(identifiers):
                    break
        return found

    # -- commit ------------------------------------------------------------------------
    def commit(self, messages: Sequence[CommitMessage], identifier: int = BATCH_IDENTIFIER,
               overwrite: Optional[Overwrite] = None) -> Optional[Snapshot]:
        """Commit ``messages``: an APPEND (or OVERWRITE) snapshot for the data increment, then a
        COMPACT snapshot for the compact increment. Returns the last snapshot made, the one
        already made for this identifier, or None for an ignored empty commit."""
        self._check_messages(messages)
        if overwrite is not None and overwrite.static:
            self._check_static_overwrite(messages, overwrite.static)
        self.deltas = {}
        if identifier != BATCH_IDENTIFIER:
            done = self._committed({identifier})
            if done:
                log.info("identifier %d of %s is already committed as snapshot %d; nothing to do",
                         identifier, self.commit_user, done[identifier].id)
                return done[identifier]
        data, compact = data_entries(messages), compact_entries(messages)
        changelog = changelog_entries(messages, False)
        # hash indexes say where the new keys are: with the data; deletion vectors come with the
        # compaction that made them, in its snapshot
        index = index_changes(messages)
        hashes = [e for e in index if e.file.index_type == HASH]
        index = [e for e in index if e.file.index_type != HASH]
        made = None
        self.skipped_compaction = None
        # changelog files alone (their level-0 file already compacted away) still need a snapshot
        if data or changelog or overwrite is not None or (not compact and (index or not self.ignore_empty)):
            made = self._commit_with_retry(data, OVERWRITE if overwrite else APPEND, identifier,
                                           overwrite, messages, changelog, hashes + ([] if compact else index))
            # if the COMPACT snapshot below fails, these files are live already: abort must keep them
            self._published |= {f.file_name for m in messages for f in (*m.new_files, *m.changelog_files)}
            self._published |= {f.file_name for m in messages if not compact for f in m.index_added}
        if compact and made is None:
            return self._commit_with_retry(compact, COMPACT, identifier, None, messages,
                                           changelog_entries(messages, True), index)
        if compact and made is not None:
            try:
                return self._commit_with_retry(compact, COMPACT, identifier, None, messages,
                                               changelog_entries(messages, True), index)
            except Exception as e:   # the data is in: report it, not the compaction
                self.skipped_compaction = e
                log.warning("committed snapshot %d of %s (%s); the compaction after it was not committed and is "
                            "left for a later one: %s", made.id, self.ctx.name, made.commit_kind, e)
                if not self.outcome_unknown:
                    self._discard_compaction(messages)
        return made

    def _discard_compaction(self, messages: Sequence[CommitMessage]) -> None:
        """Delete the files only a compact increment that was not committed names (the files it
        merely moved up a level, and the data increment's files, are live)."""
        index = IndexFiles.of(self.ctx)
        for m in messages:
            keep = self._published | {f.file_name for f in m.compact_before}
            d = self.ctx.bucket_dir_of(m.partition, m.bucket)
            for f in (*m.compact_after, *m.compact_changelog):
                if f.file_name not in keep:
                    self.ctx.io.delete(file_path(self.ctx, d, f))
            for ix in m.index_added:
                if ix.file_name not in self._published:
                    index.delete_index_file(index.locate(ix, m.partition, m.bucket))

    def _check_static_overwrite(self, messages: Sequence[CommitMessage], static: dict) -> None:
        """A static overwrite replaces the named partition with rows of that partition only: a
        row of another partition would silently land outside what the caller meant to replace."""
        matches = self.ctx.partition_matcher(static)
        for m in messages:
            if (m.new_files or m.changelog_files) and not matches(m.partition):
                values = dict(zip(self.ctx.partition_keys, self.ctx.partition_values(m.partition)))
                raise DataError(f"overwrite of partition {static} of {self.ctx.name}: the data holds rows of "
                                f"partition {values}, which is not the partition being overwritten. Nothing "
                                "was written; filter the rows, or use overwrite=True to replace the "
                                "partitions the data holds")

    def _check_messages(self, messages: Sequence[CommitMessage]) -> None:
        part_types = [f.type for f in self.ctx.schema.partition_fields]
        total = self.ctx.schema.num_buckets
        for m in messages:
            arity = int.from_bytes(m.partition[:4], "big") if len(m.partition) >= 4 else -1
            try:
                if arity != len(part_types):
                    raise ValueError
                self.ctx.partition_values(m.partition)
            except Exception:
                raise CommitError(f"cannot commit: a message's partition ({m.partition.hex()}) is not a "
                                  f"partition of {self.ctx.name} (partition keys "
                                  f"{self.ctx.partition_keys})") from None
            if total > 0 and not 0 <= m.bucket < total:
                raise CommitError(f"cannot commit: bucket {m.bucket} is outside 0..{total - 1} of {self.ctx.name}")

    def _check_files_exist(self, messages: Sequence[CommitMessage], manifests: Sequence[str]) -> None:
        """Every file the snapshot about to be published names and this commit brings must exist:
        data, changelog and index files of the messages, and the manifests the attempt wrote. A
        directory holding several of them is listed once instead of asking per file."""
        t = self.ctx
        index = IndexFiles.of(t)
        by_dir: dict[str, set[str]] = {}
        for m in messages:
            d = t.bucket_dir_of(m.partition, m.bucket)
            for f in m.all_files():
                path = file_path(t, d, f)
                by_dir.setdefault(path.rsplit("/", 1)[0], set()).add(path.rsplit("/", 1)[1])
            for ix in m.index_added:
                ix_path = index.path(index.locate(ix, m.partition, m.bucket))
                by_dir.setdefault(ix_path.rsplit("/", 1)[0], set()).add(ix.file_name)
        if manifests:
            by_dir.setdefault(join(t.path, "manifest"), set()).update(manifests)

        def missing_in(item: tuple[str, set[str]]) -> list[str]:
            d, names = item
            if len(names) > 2:
                return [join(d, n) for n in sorted(names - set(t.io.list_names(d)))]
            return [join(d, n) for n in sorted(names) if not t.io.exists(join(d, n))]

        # one request per directory; on an object store each is a round trip, so they are asked at
        # once (on a local disk a thread costs more than the call)
        if len(by_dir) > 1 and t.io.scheme != "file":
            with ThreadPoolExecutor(min(32, len(by_dir)), thread_name_prefix="lakeformat-check") as pool:
                found = list(pool.map(missing_in, by_dir.items()))
        else:
            found = [missing_in(item) for item in by_dir.items()]
        missing = [path for paths in found for path in paths]
        if missing:
            more = f" (nor do {len(missing) - 1} more files it names)" if len(missing) > 1 else ""
            raise CommitError(f"cannot commit to {t.name}: {missing[0]} does not exist{more}. It was "
                              "removed while the commit was prepared (by an orphan removal with a short "
                              "older_than?), or the messages are of another table. Nothing was committed; "
                              "write the data again.")

    def _commit_with_retry(self, entries: list[ManifestEntry], kind: str, identifier: int,
                           overwrite: Optional[Overwrite], messages,
                           changelog: Sequence[ManifestEntry] = (),
                           index: Sequence[IndexManifestEntry] = ()) -> Snapshot:
        t = self.ctx
        started = time.monotonic()
        tracking = bool(t.typed_options.get(O.ROW_TRACKING))
        mfile = self._manifest_file()
        delta_metas: Optional[list[ManifestFileMeta]] = None
        changelog_metas = mfile.write(changelog) if changelog else []
        seen_latest: Optional[int] = None
        try:
            for attempt in range(self.max_retries + 1):
                latest = t.snapshot_manager.latest()
                if attempt and identifier != BATCH_IDENTIFIER:
                    done = self._committed({identifier}, stop_below=seen_latest)
                    if done:
                        return done[identifier]
                seen_latest = latest.id if latest else 0
                try:
                    attempt_entries, attempt_index = entries, list(index)
                    if overwrite is not None:
                        attempt_entries = self._overwrite_entries(latest, overwrite, messages) + entries
                        attempt_index = self._overwrite_index(latest, attempt_entries) + attempt_index
                    self._check_conflicts(latest, attempt_entries)
                    next_row_id = None
                    if tracking:   # row ids and versions depend on the snapshot this attempt makes
                        self._check_row_ranges(latest, attempt_entries)
                        attempt_entries, next_row_id = assign_row_ids(
                            attempt_entries, (latest.next_row_id or 0) if latest else 0, seen_latest + 1)
                    if delta_metas is None or overwrite is not None or tracking:
                        if delta_metas:
                            self._delete([m.file_name for m in delta_metas])
                        delta_metas = mfile.write(attempt_entries)
                    snapshot = self._try_commit_once(latest, attempt_entries, delta_metas, kind, identifier,
                                                     changelog_metas, sum(e.file.row_count for e in changelog),
                                                     attempt_index, messages, next_row_id)
                except CorruptFileError:
                    # metadata of `latest` vanished while this attempt read it: a concurrent
                    # expiration is removing it, which happens only once newer snapshots exist
                    # (expiration keeps the newest), so this attempt lost the race. Without a
                    # newer snapshot the file is really missing.
                    if latest is None or not t.snapshot_manager.newer_exists(latest.id):
                        raise
                    snapshot = None
                if snapshot is not None:
                    delta_metas, changelog_metas = None, []   # now owned by the snapshot
                    return snapshot
                self.retries += 1
                if self.timeout is not None and time.monotonic() - started > self.timeout:
                    raise CommitError(f"commit to {t.name} timed out after {self.timeout:.0f} s "
                                      f"({attempt + 1} attempts lost the race for a snapshot id)")
                wait = backoff(attempt, self.min_wait, self.max_wait)
                log.info("snapshot %d of %s was taken by another committer; retry %d in %.0f ms",
                         seen_latest + 1, t.name, attempt + 1, wait * 1000)
                time.sleep(wait)
            raise CommitError(f"gave up committing to {t.name}: lost the race for a snapshot id "
                              f"{self.max_retries + 1} times (commit.max-retries={self.max_retries})")
        finally:
            if not self.outcome_unknown:
                self._delete([m.file_name for m in (delta_metas or []) + (changelog_metas or [])])

    def _manifest_file(self) -> ManifestFile:
        t, o = self.ctx, self.ctx.typed_options
        return ManifestFile(t.io, t.path, [f.type for f in t.schema.partition_fields], t.schema.id,
                            o.required(O.MANIFEST_COMPRESSION), o.required(O.MANIFEST_TARGET_FILE_SIZE),
                            o.required(O.MANIFEST_FORMAT))

    def _overwrite_entries(self, latest: Optional[Snapshot], ow: Overwrite,
                           messages: Sequence[CommitMessage]) -> list[ManifestEntry]:
        if latest is None:
            return []
        live = live_entries(self.ctx, latest)
        if ow.dynamic:
            return overwrite_deletes(live, {m.partition for m in messages})
        if not ow.static:
            return overwrite_deletes(live, None)
        return overwrite_deletes(live, None, self.ctx.partition_matcher(ow.static))

    def _overwrite_index(self, latest: Optional[Snapshot],
                         entries: Sequence[ManifestEntry]) -> list[IndexManifestEntry]:
        """An overwrite drops the index files (deletion vectors, hash indexes, global indexes) of
        the partitions whose files it deletes, as Paimon's overwrite does: they describe rows that
        are gone."""
        if latest is None or not latest.index_manifest:
            return []
        gone = {e.partition for e in entries if e.kind == DELETE}
        return [IndexManifestEntry(DELETE, e.partition, e.bucket, e.file) for e in
                IndexFiles.of(self.ctx).read_manifest(latest.index_manifest)
                if e.partition in gone]

    def _index_manifest(self, latest: Optional[Snapshot], changes: Sequence[IndexManifestEntry],
                        written: list[str]) -> Optional[str]:
        """The new snapshot's index manifest: the latest one unchanged (a write never drops
        index files it does not touch), or a new one with ``changes`` applied."""
        previous = latest.index_manifest if latest is not None else None
        files = IndexFiles.of(self.ctx)
        if not changes:
            if previous and previous != self._index_checked:
                # decoded for its checks only: an index file of a kind lakeformat does not know is
                # refused, not named unread by a snapshot whose files it may no longer describe
                files.read_manifest(previous)
                self._index_checked = previous
            return previous
        before = files.read_manifest(previous)
        names = {e.file.file_name for e in before}
        stale = [e.file.file_name for e in changes if e.kind == DELETE and e.file.file_name not in names]
        if stale:
            raise CommitConflictError(
                f"commit to {self.ctx.name} conflicts with snapshot {latest.id if latest else 0}: it replaces "
                f"index files {stale} that are no longer live (another compaction changed the same bucket's "
                "deletion vectors). Nothing was committed; abort this writer's files and retry.", files=stale)
        live = combine(before, changes)
        if not live:
            return None
        name = files.write_manifest(live)
        written.append(name)
        return name

    def _check_conflicts(self, latest: Optional[Snapshot], entries: list[ManifestEntry]) -> None:
        if latest is None or not needs_check(entries):
            return
        touched = {(e.partition, e.bucket) for e in entries}
        live = {e.identifier: e for e in live_entries(self.ctx, latest, partitions={p for p, _ in touched})
                if (e.partition, e.bucket) in touched}
        conflicts = find_conflicts(entries, live, self.ctx.key_decoder())
        if conflicts:
            c = conflicts[0]
            culprit = self._who_removed(c.files, latest.id)
            values = self.ctx.partition_values(c.partition)
            raise CommitConflictError(
                f"commit to {self.ctx.name} conflicts with snapshot {culprit}: it {c.reason}; "
                f"partition {dict(zip(self.ctx.partition_keys, values))}, bucket {c.bucket}, "
                f"files {list(c.files)}. Nothing was committed; abort this writer's files and retry "
                "the work on the latest snapshot.",
                snapshot_id=culprit, files=c.files, partition=values, bucket=c.bucket)

    def _check_row_ranges(self, latest: Optional[Snapshot], entries: list[ManifestEntry]) -> None:
        """Files updating some columns of existing rows (data evolution) need their row id range
        still live in ``latest``."""
        updates = updates_of(entries)
        if not updates:
            return
        touched = {(e.partition, e.bucket) for e in updates}
        live = [] if latest is None else live_entries(self.ctx, latest, partitions={p for p, _ in touched})
        lost = lost_ranges(updates, live)
        if lost:
            f = lost[0].file
            first = f.first_row_id or 0
            raise CommitConflictError(
                f"commit to {self.ctx.name} conflicts with the latest snapshot "
                f"{latest.id if latest else None}: file {f.file_name} updates columns {list(f.write_cols or ())} "
                f"of row ids {first}..{first + f.row_count - 1}, "
                "which no live file holds any more (an overwrite or compaction replaced them). Nothing was "
                "committed; abort this writer's files and retry the update on the latest snapshot.",
                snapshot_id=latest.id if latest else None, files=[x.file.file_name for x in lost],
                partition=self.ctx.partition_values(lost[0].partition), bucket=lost[0].bucket)

    def _who_removed(self, files: Sequence[str], latest_id: int) -> int:
        """The newest snapshot whose delta deleted one of ``files`` (the latest if none found)."""
        names = set(files)
        sm = self.ctx.snapshot_manager
        for sid in range(latest_id, max(0, latest_id - 100), -1):
            try:
                s = sm.get(sid)
                delta = delta_entries(self.ctx, s)
            except Exception:
                break
            if any(e.kind == DELETE and e.file.file_name in names for e in delta) or \
               any(e.kind == ADD and e.file.file_name in names for e in delta):
                return sid
        return latest_id

    def _try_commit_once(self, latest: Optional[Snapshot], entries: list[ManifestEntry],
                         delta_metas: list[ManifestFileMeta], kind: str, identifier: int,
                         changelog_metas: Sequence[ManifestFileMeta] = (),
                         changelog_record_count: int = 0,
                         index: Sequence[IndexManifestEntry] = (),
                         messages: Sequence[CommitMessage] = (),
                         next_row_id: Optional[int] = None) -> Optional[Snapshot]:
        """``next_row_id``: the snapshot's ``nextRowId`` in a row-tracking table, else None."""
        t, o = self.ctx, self.ctx.typed_options
        mlist = ManifestList(t.io, t.path, o.required(O.MANIFEST_COMPRESSION), o.required(O.MANIFEST_FORMAT))
        written: list[str] = []
        try:
            previous: list[ManifestFileMeta] = []
            prev_total = 0
            if latest is not None:
                if next_row_id is None:
                    check_writable(latest.next_row_id, f"table {t.name} ({t.path}), snapshot {latest.id}")
                previous = mlist.read(latest.base_manifest_list) + mlist.read(latest.delta_manifest_list)
                prev_total = latest.total_record_count
            base_metas, merged = merge_manifests(
                self._manifest_file(), previous, o.required(O.MANIFEST_TARGET_FILE_SIZE),
                o.required(O.MANIFEST_MERGE_MIN_COUNT), o.required(O.MANIFEST_FULL_COMPACTION_SIZE))
            written += merged
            base_name, base_size = mlist.write(base_metas)
            written.append(base_name)
            delta_name, delta_size = mlist.write(delta_metas)
            written.append(delta_name)
            changelog_name = changelog_size = changelog_rows = None
            if changelog_metas:
                changelog_name, changelog_size = mlist.write(changelog_metas)
                written.append(changelog_name)
                changelog_rows = changelog_record_count
            index_manifest = self._index_manifest(latest, index, written)
            added = sum(e.file.row_count for e in entries if e.kind == ADD)
            deleted = sum(e.file.row_count for e in entries if e.kind == DELETE)
            snapshot = Snapshot(
                id=(latest.id + 1) if latest else 1, schema_id=t.schema.id,
                base_manifest_list=base_name, delta_manifest_list=delta_name,
                commit_user=self.commit_user, commit_identifier=identifier, commit_kind=kind,
                time_millis=int(time.time() * 1000), total_record_count=prev_total + added - deleted,
                delta_record_count=added - deleted, base_manifest_list_size=base_size,
                delta_manifest_list_size=delta_size, changelog_manifest_list=changelog_name,
                changelog_record_count=changelog_rows, changelog_manifest_list_size=changelog_size,
                index_manifest=index_manifest, next_row_id=next_row_id,
                **inherited(latest, t.schema.id, self._statistics_schema_id(latest)))
            self._check_files_exist(messages, [m.file_name for m in (*delta_metas, *changelog_metas)] + written)
            if not self._create_snapshot(snapshot):
                self._delete(written)
                return None
        except BaseException:
            if not self.outcome_unknown:
                self._delete(written)
            raise
        sm = t.snapshot_manager
        sm.write_hint(sm.LATEST, snapshot.id)
        if snapshot.id == 1:
            sm.write_hint(sm.EARLIEST, 1)
        self.snapshots_made += 1
        self.deltas[snapshot.id] = entries   # what follows the commit (the Iceberg publish) need not read it back
        log.info("committed snapshot %d of %s (%s, %+d rows)", snapshot.id, t.name, kind, added - deleted)
        return snapshot

    def _statistics_schema_id(self, latest: Optional[Snapshot]) -> Optional[int]:
        """The schema id the latest snapshot's statistics file (Paimon's ``statistics/``) says it
        describes; None without one, or when it cannot be read (then it is not carried forward:
        statistics are the optimizer's hints, never needed for a correct result)."""
        if latest is None or latest.statistics is None:
            return None
        path = join(self.ctx.path, "statistics", latest.statistics)
        try:
            return int(json.loads(self.ctx.io.read_bytes(path))["schemaId"])
        except Exception as e:   # missing, not JSON, no schemaId
            log.warning("statistics %s of snapshot %d not carried forward: cannot be read (%s)", path, latest.id, e)
            return None

    def _create_snapshot(self, snapshot: Snapshot) -> bool:
        """Create ``snapshot-N`` if absent. Under the catalog lock a plain write suffices, for
        stores that lack a conditional write; without one, the store's create-if-absent decides."""
        t = self.ctx
        try:
            if t.lock is None:
                return self._base_exists(snapshot) and t.snapshot_manager.try_create(snapshot)
            with t.lock.hold(t.name):
                return self._base_exists(snapshot) and t.snapshot_manager.create_locked(snapshot)
        except OutcomeUnknownError as e:
            self.outcome_unknown = True
            raise CommitOutcomeUnknownError(
                f"the commit to {t.name} may or may not have happened: the store did not confirm snapshot "
                f"{snapshot.id} and it could not be read back ({e.reason}). Nothing was deleted, so the table is "
                f"intact either way. Once the store answers, look for snapshot {snapshot.id} with commit user "
                f"{self.commit_user}: if it is there the data is committed; a retry with the same commit user "
                f"and identifier does this by itself.", snapshot.id, self.commit_user) from None

    def _base_exists(self, snapshot: Snapshot) -> bool:
        """Whether the snapshot this one builds on still exists. If a concurrent expiration
        removed it, newer snapshots exist and ``snapshot-N`` may be free again only because it
        was expired too: creating it would fork history, so this attempt has lost the race."""
        sm = self.ctx.snapshot_manager
        return snapshot.id == 1 or self.ctx.io.exists(sm.path(snapshot.id - 1))

    def _delete(self, names: Sequence[str]) -> None:
        for n in names:
            self.ctx.io.delete(join(self.ctx.path, "manifest", n))

    def abort(self, messages: Sequence[CommitMessage]) -> None:
        """Delete the data files of messages that will never be committed. A file a compaction
        only moved up a level is still live under its old level: it stays, and so do the files of
        a data increment committed before its compact increment failed. After a publish whose
        outcome is unknown nothing is deleted: the snapshot may name these files."""
        if self.outcome_unknown:
            log.warning("not deleting the files of %d commit message(s) of %s: a snapshot naming them may "
                        "have been committed (its outcome is unknown)", len(messages), self.ctx.name)
            return
        index = IndexFiles.of(self.ctx)
        for m in messages:
            d = self.ctx.bucket_dir_of(m.partition, m.bucket)
            moved = {f.file_name for f in m.compact_before} & {f.file_name for f in m.compact_after}
            for f in m.all_files():
                if f.file_name not in moved and f.file_name not in self._published:
                    self.ctx.io.delete(join(d, f.file_name))
            for ix in m.index_added:
                if ix.file_name not in self._published:
                    index.delete_index_file(index.locate(ix, m.partition, m.bucket))
