"""The snapshots of one table on storage: ``snapshot/snapshot-N`` and the LATEST / EARLIEST hints.

The hints are an optimisation only: a missing, stale or garbled hint falls back to listing the
directory, which is the truth.
"""
from __future__ import annotations

from typing import Optional
from collections.abc import Iterator

from lakeformat.errors import CorruptFileError, NotFoundError
from lakeformat.format.metadata_checks import UnsupportedMetadataError, with_path
from lakeformat.format.snapshot import Snapshot
from lakeformat.io.fileio import FileIO, join


class SnapshotManager:
    """Finds, reads and creates snapshots of one table."""

    LATEST, EARLIEST = "LATEST", "EARLIEST"

    def __init__(self, io: FileIO, table_path: str):
        self.io = io
        self.dir = join(table_path, "snapshot")
        self._cache: dict[int, Snapshot] = {}

    def path(self, snapshot_id: int) -> str:
        return join(self.dir, f"snapshot-{snapshot_id}")

    def list_ids(self) -> list[int]:
        return sorted(int(n[9:]) for n in self.io.list_names(self.dir)
                      if n.startswith("snapshot-") and n[9:].isdigit())

    def newer_exists(self, snapshot_id: int) -> bool:
        """Whether a snapshot after ``snapshot_id`` exists (listed, not hinted). Metadata of a
        snapshot that vanishes while it is read was removed by an expiration only if so, since
        expiration keeps the newest; otherwise the file is really missing."""
        return max(self.list_ids(), default=0) > snapshot_id

    def exists(self, snapshot_id: int) -> bool:
        return snapshot_id in self._cache or self.io.exists(self.path(snapshot_id))

    def get(self, snapshot_id: int) -> Snapshot:
        if snapshot_id not in self._cache:
            path = self.path(snapshot_id)
            try:
                text = self.io.read_bytes(path)
            except FileNotFoundError:
                raise NotFoundError(f"snapshot {snapshot_id} does not exist ({path})") from None
            try:
                self._cache[snapshot_id] = Snapshot.from_json(text.decode())
            except UnsupportedMetadataError as e:
                raise with_path(e, path) from None
            except (ValueError, TypeError, KeyError, AttributeError, OverflowError, UnicodeDecodeError) as e:
                raise CorruptFileError(path, f"cannot parse snapshot: {e}") from None
        return self._cache[snapshot_id]

    def _read_hint(self, name: str) -> Optional[int]:
        try:
            text = self.io.read_bytes(join(self.dir, name)).decode().strip()
            return int(text)
        except (FileNotFoundError, ValueError, UnicodeDecodeError, OSError):
            return None

    def latest_id(self) -> Optional[int]:
        hint = self._read_hint(self.LATEST)
        if hint is not None and self.exists(hint) and not self.exists(hint + 1):
            return hint
        ids = self.list_ids()
        return ids[-1] if ids else None

    def earliest_id(self) -> Optional[int]:
        hint = self._read_hint(self.EARLIEST)
        if hint is not None and self.exists(hint) and not self.exists(hint - 1):
            return hint
        ids = self.list_ids()
        return ids[0] if ids else None

    def latest(self) -> Optional[Snapshot]:
        sid = self.latest_id()
        return self.get(sid) if sid is not None else None

    def snapshots(self) -> Iterator[Snapshot]:
        for sid in self.list_ids():
            yield self.get(sid)

    def at_or_before(self, time_millis: int) -> Optional[Snapshot]:
        """The newest snapshot committed at or before ``time_millis`` (binary search: ids are
        ordered by commit time)."""
        ids = self.list_ids()
        lo, hi, found = 0, len(ids) - 1, None
        while lo <= hi:
            mid = (lo + hi) // 2
            s = self.get(ids[mid])
            if s.time_millis <= time_millis:
                found, lo = s, mid + 1
            else:
                hi = mid - 1
        return found

    def try_create(self, snapshot: Snapshot) -> bool:
        """Atomically create ``snapshot-<id>``; False if another committer took that id."""
        created = self.io.try_create(self.path(snapshot.id), snapshot.to_json().encode())
        if created:
            self._cache[snapshot.id] = snapshot
        return created

    def create_locked(self, snapshot: Snapshot) -> bool:
        """Create ``snapshot-<id>`` with a plain write; False if another committer's is there.
        Check and write are atomic only because the caller holds the table's catalog lock
        (``lock.enabled``). A file holding this snapshot's bytes is this commit's (an earlier
        attempt whose reply was lost)."""
        path, data = self.path(snapshot.id), snapshot.to_json().encode()
        current = self.io.read_back(path)
        if current is None:
            self.io.write_bytes(path, data)
        elif current != data:
            return False
        self._cache[snapshot.id] = snapshot
        return True

    def forget(self, snapshot_id: int) -> None:
        """Drop a deleted snapshot from this manager's cache (expiration, rollback)."""
        self._cache.pop(snapshot_id, None)

    def write_hint(self, name: str, snapshot_id: int) -> None:
        """Best effort: a failed hint write never fails a commit."""
        try:
            self.io.write_bytes(join(self.dir, name), str(snapshot_id).encode())
        except OSError:
            pass
