"""Expiration and orphan removal delete through one bounded pool (lakeformat/maintenance/deletes.py):
on a store where every delete takes a while, as a request to an object store does, many are in
flight at once, never more than DELETE_THREADS; snapshot files still go one at a time, in
ascending order, so the table never has a gap."""
from __future__ import annotations

import datetime as dt
import re
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from lakeformat.maintenance.deletes import DELETE_THREADS, WINDOW, delete_files
from tests.iocount import CountingHandler

ZERO = dt.timedelta(0)
SNAPSHOT = re.compile(r"/snapshot/snapshot-(\d+)$")


class SlowDeletes(CountingHandler):
    """Forwards to the real filesystem; each delete takes ``delay`` seconds. Records the most
    deletes in flight at once, and the snapshot files deleted (in order, with what else was in flight)."""

    def __init__(self, fs: pafs.FileSystem, delay: float = 0.01):
        super().__init__(fs)
        self.delay, self.lock = delay, threading.Lock()
        self.in_flight = self.most = 0
        self.snapshots: list[tuple[int, int]] = []   # (snapshot id, deletes in flight with it)

    def delete_file(self, path):
        with self.lock:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
            m = SNAPSHOT.search(path)
            if m:
                self.snapshots.append((int(m.group(1)), self.in_flight))
        try:
            time.sleep(self.delay)
            super().delete_file(path)
        finally:
            with self.lock:
                self.in_flight -= 1


def slow(io, delay: float = 0.01) -> SlowDeletes:
    handler = SlowDeletes(io.fs, delay)
    io.fs = pafs.PyFileSystem(handler)
    return handler


def files_under(root: str, folder: str) -> set[str]:
    return {p.name for p in Path(root).rglob("*") if p.is_file() and p.parent.name.startswith(folder)}


def test_expiration_deletes_many_files_at_once_and_snapshots_in_order(catalog):
    t = catalog.create_table("db.t", pa.schema([("id", pa.int64())]),
                             options={"write-only": "true", "bucket": "-1"})
    for i in range(40):
        t.write(pa.table({"id": [i]}))
    t = catalog.get_table("db.t")
    handler = slow(t.io)
    r = t.expire_snapshots(retain_min=1, retain_max=1, older_than=ZERO, max_deletes=100)
    assert (r.begin, r.end, r.data_files) == (1, 40, 0)   # appends only: every data file is still live
    deletes = handler.calls["delete"]
    assert deletes >= 39 * 3   # a manifest and two manifest lists per snapshot, and the snapshot
    assert 1 < handler.most <= DELETE_THREADS, handler.most
    assert [s for s, _ in handler.snapshots] == list(range(1, 40))
    assert all(n == 1 for _, n in handler.snapshots), handler.snapshots
    assert t.read().num_rows == 40 and [s.id for s in t.snapshots()] == [40]


def test_orphan_removal_deletes_through_the_same_bounded_pool(catalog):
    t = catalog.create_table("db.t", pa.schema([("id", pa.int64())]), options={"bucket": "-1"})
    t.write(pa.table({"id": [1]}))
    bucket = Path(t.path) / "bucket-0"
    for i in range(50):
        (bucket / f"data-orphan-{i}.parquet").write_bytes(b"x")
    handler = slow(t.io)
    r = t.remove_orphan_files(older_than=ZERO, allow_deleting_in_flight_files=True)
    assert len(r.orphans) == 50 and handler.calls["delete"] >= 50
    assert 1 < handler.most <= DELETE_THREADS, handler.most
    assert not any("orphan" in n for n in files_under(t.path, "bucket-")) and t.read().num_rows == 1


def test_delete_files_keeps_a_bounded_window_and_raises_the_first_error(tmp_path):
    """However many paths, at most WINDOW are queued: the paths are consumed as deletes finish."""
    from lakeformat.io.fileio import FileIO

    io = FileIO.for_uri(str(tmp_path))
    handler = slow(io, delay=0.001)
    consumed = []

    def paths():
        for i in range(300):
            p = tmp_path / f"f{i}"
            p.write_bytes(b"")
            consumed.append(i)
            yield str(p)
            # never more than WINDOW submitted and unfinished
            assert len(consumed) - handler.calls["delete"] <= WINDOW + DELETE_THREADS
    progress = []
    assert delete_files(io, paths(), progress.append) == 300
    assert progress == list(range(1, 301)) and not list(tmp_path.iterdir())
    assert 1 < handler.most <= DELETE_THREADS

    class Refuses(FileIO):
        def delete(self, path):
            if path.endswith("f7"):
                raise PermissionError(path)
            super().delete(path)
    with pytest.raises(PermissionError, match="f7"):
        delete_files(Refuses(pafs.LocalFileSystem()), (str(tmp_path / f"f{i}") for i in range(20)))
