"""The committer: turns CommitMessages into manifests, manifest lists and ``snapshot-N``.

Shape of one attempt (Paimon's FileStoreCommit): read the latest snapshot, derive the entries,
write delta manifest(s), write the base and delta manifest lists, then create ``snapshot-N``
only if absent. Losing that race (another committer took N) cleans up this attempt's manifest
lists and tries again on the new latest.
"""
from __future__ import annotations

import logging
import random
import time
import uuid
from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

from lakeformat.errors import CommitError
from lakeformat.fileio import join
from lakeformat.manifest import (ADD, DELETE, ManifestEntry, ManifestFile, ManifestFileMeta,
                                 ManifestList)
from lakeformat.snapshot import APPEND, OVERWRITE, Snapshot
from lakeformat.write import CommitMessage

log = logging.getLogger(__name__)
BATCH_IDENTIFIER = 2**63 - 1   # what Paimon uses for one-off batch commits


@dataclass(frozen=True)
class Overwrite:
    """Which partitions an OVERWRITE replaces: ``static`` values or every partition written."""

    static: Optional[dict] = None   # {"dt": "2024-01-01"}; {} means the whole table

    @property
    def dynamic(self) -> bool:
        return self.static is None


def entries_of(messages: Iterable[CommitMessage]) -> list[ManifestEntry]:
    """The data increment of the messages as manifest entries (pure)."""
    out = []
    for m in messages:
        out += [ManifestEntry(ADD, m.partition, m.bucket, m.total_buckets, f) for f in m.new_files]
        out += [ManifestEntry(DELETE, m.partition, m.bucket, m.total_buckets, f) for f in m.deleted_files]
    return out


def overwrite_deletes(live: Iterable[ManifestEntry], partitions: Optional[set[bytes]],
                      matches=None) -> list[ManifestEntry]:
    """DELETE entries for every live file in the partitions an overwrite replaces (pure).
    ``partitions`` None with ``matches`` None means the whole table."""
    out = []
    for e in live:
        hit = (partitions is None or e.partition in partitions) and (matches is None or matches(e.partition))
        if hit:
            out.append(ManifestEntry(DELETE, e.partition, e.bucket, e.total_buckets, e.file))
    return out


class FileStoreCommit:
    """Commits for one ``commit_user``. Not thread-safe; one instance per committing process."""

    def __init__(self, table, commit_user: Optional[str] = None):
        self.table = table
        self.commit_user = commit_user or str(uuid.uuid4())
        opts = table.options
        self.max_retries = int(opts.get("commit.max-retries", "10"))

    def commit(self, messages: Sequence[CommitMessage], identifier: int = BATCH_IDENTIFIER,
               overwrite: Optional[Overwrite] = None) -> Optional[Snapshot]:
        """Commit ``messages`` as one snapshot; returns it (or None for an ignored empty commit)."""
        self._check_messages(messages)
        delta = entries_of(messages)
        if not delta and overwrite is None and self.table.options.get("ignore-empty-commit", "true") == "true":
            return None
        kind = OVERWRITE if overwrite is not None else APPEND
        for attempt in range(self.max_retries + 1):
            latest = self.table.snapshot_manager.latest()
            entries = list(delta)
            if overwrite is not None:
                entries = self._overwrite_entries(latest, overwrite, messages) + entries
            snapshot = self._try_commit_once(latest, entries, kind, identifier)
            if snapshot is not None:
                return snapshot
            wait = min(10.0, 0.01 * 2 ** attempt) * (1 + random.random())
            log.info("snapshot %s was taken by another committer; retrying in %.0f ms",
                     (latest.id + 1) if latest else 1, wait * 1000)
            time.sleep(wait)
        raise CommitError(f"gave up committing to {self.table.name} after {self.max_retries} retries")

    def _check_messages(self, messages: Sequence[CommitMessage]) -> None:
        for m in messages:
            for f in m.all_files():
                path = join(self.table.bucket_dir_of(m.partition, m.bucket), f.file_name)
                if not self.table.io.exists(path):
                    raise CommitError(f"cannot commit: data file {path} does not exist")

    def _overwrite_entries(self, latest: Optional[Snapshot], ow: Overwrite,
                           messages: Sequence[CommitMessage]) -> list[ManifestEntry]:
        if latest is None:
            return []
        live = self.table.live_entries(latest)
        if ow.dynamic:
            return overwrite_deletes(live, {m.partition for m in messages})
        if not ow.static:
            return overwrite_deletes(live, None)
        return overwrite_deletes(live, None, self.table.partition_matcher(ow.static))

    def _try_commit_once(self, latest: Optional[Snapshot], entries: list[ManifestEntry],
                         kind: str, identifier: int) -> Optional[Snapshot]:
        t = self.table
        schema = t.schema
        mfile = ManifestFile(t.io, t.path, [f.type for f in schema.partition_fields], schema.id,
                             t.options.get("manifest.compression", "zstd"))
        mlist = ManifestList(t.io, t.path, t.options.get("manifest.compression", "zstd"))
        written: list[str] = []
        try:
            base_metas: list[ManifestFileMeta] = []
            prev_total = 0
            if latest is not None:
                base_metas = mlist.read(latest.base_manifest_list) + mlist.read(latest.delta_manifest_list)
                prev_total = latest.total_record_count
            delta_metas = mfile.write(entries)
            written += [m.file_name for m in delta_metas]
            base_name, base_size = mlist.write(base_metas)
            written.append(base_name)
            delta_name, delta_size = mlist.write(delta_metas)
            written.append(delta_name)
            added = sum(e.file.row_count for e in entries if e.kind == ADD)
            deleted = sum(e.file.row_count for e in entries if e.kind == DELETE)
            snapshot = Snapshot(
                id=(latest.id + 1) if latest else 1, schema_id=schema.id,
                base_manifest_list=base_name, delta_manifest_list=delta_name,
                commit_user=self.commit_user, commit_identifier=identifier, commit_kind=kind,
                time_millis=int(time.time() * 1000), total_record_count=prev_total + added - deleted,
                delta_record_count=added - deleted, base_manifest_list_size=base_size,
                delta_manifest_list_size=delta_size)
            if not t.snapshot_manager.try_create(snapshot):
                self._cleanup(written)
                return None
        except BaseException:
            self._cleanup(written)
            raise
        sm = t.snapshot_manager
        sm.write_hint(sm.LATEST, snapshot.id)
        if snapshot.id == 1:
            sm.write_hint(sm.EARLIEST, 1)
        log.info("committed snapshot %d of %s (%s, %+d rows)", snapshot.id, t.name, kind, added - deleted)
        return snapshot

    def _cleanup(self, names: list[str]) -> None:
        for n in names:
            self.table.io.delete(join(self.table.path, "manifest", n))

    def abort(self, messages: Sequence[CommitMessage]) -> None:
        """Delete the data files of messages that will never be committed."""
        for m in messages:
            d = self.table.bucket_dir_of(m.partition, m.bucket)
            for f in m.all_files():
                self.table.io.delete(join(d, f.file_name))
