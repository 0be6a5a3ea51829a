"""A committer killed with SIGKILL at random moments never damages the table.

The worker is forked from this already-initialised process (fast: no interpreter start), runs a
write/commit loop and acknowledges each commit after ``commit()`` returns. The parent kills it
at a random moment — while data files are written, between manifests and snapshot, while the
hint is updated — then checks: the latest snapshot is readable, every snapshot's metadata and
the live data files exist, and the rows are exactly the acknowledged commits plus, possibly,
the one in flight. A restarted worker re-commits the in-flight identifier, which must be a
no-op if it had landed (exactly-once).
"""
import os
import random
import signal
import time
from pathlib import Path

import numpy as np

import lakeformat as lf
from lakeformat.io.manifests import ManifestList
from tests.integration.workers import SCHEMA, rows

KILLS = 200
USER = "crash-worker"


def size_of(identifier: int) -> int:
    """Rows of commit ``identifier``: the same on a retry, sometimes big so kills land mid-write."""
    return 5_000 if identifier % 4 == 0 else 5


def worker(warehouse: str, ack_path: str, start: int) -> None:
    t = lf.Catalog(warehouse).get_table("db.t")
    i = start
    while True:
        n = size_of(i)
        w = t.new_write(USER)
        w.write(rows(0, i, n, f"p{i % 3}"))
        t.new_commit(USER).commit(w.prepare_commit(), identifier=i)
        with open(ack_path, "a") as f:
            f.write(f"{i} {n}\n")
            f.flush()
            os.fsync(f.fileno())
        i += 1


def acked(ack_path: Path) -> dict[int, int]:
    if not ack_path.exists():
        return {}
    return {int(a): int(b) for a, b in (line.split() for line in ack_path.read_text().splitlines() if line)}


def check(t: lf.Table, acks: dict[int, int], deep: bool) -> dict[int, int]:
    snaps = t.snapshots()
    committed = [s.commit_identifier for s in snaps]
    assert len(committed) == len(set(committed)), "an identifier was committed twice"
    in_flight = set(committed) - set(acks)
    assert set(acks) <= set(committed), "an acknowledged commit is missing"
    assert len(in_flight) <= 1 and all(x == max(acks, default=0) + 1 for x in in_flight)
    # Exactly the rows of the committed identifiers (acknowledged, plus the in-flight one if its
    # snapshot landed): none missing, none doubled, nothing from an uncommitted attempt.
    got = np.sort(t.read(columns=["id"]).column("id").to_numpy())
    expected = np.sort(np.concatenate([np.arange(b, b + size_of(i)) for i in committed
                                       for b in [rows(0, i, 1, "").column("id")[0].as_py()]] or [[]]))
    assert got.shape == expected.shape and (got == expected).all(), "rows differ from the committed commits"
    for f in t.files():
        assert Path(f["path"]).exists()
    mlist = ManifestList(t.io, t.path)
    for s in (snaps if deep else snaps[-2:]):
        for name in s.manifest_lists():
            for m in mlist.read(name):
                assert Path(t.path, "manifest", m.file_name).exists()
    return {s.commit_identifier: s.id for s in snaps}


def test_two_hundred_kills_leave_a_consistent_table(tmp_path):
    wh = str(tmp_path / "wh")
    cat = lf.Catalog(wh)
    cat.create_database("db")
    cat.create_table("db.t", SCHEMA, partition_keys=["p"])
    ack_path = tmp_path / "acks"
    rng = random.Random(7)
    for k in range(KILLS):
        start = max(acked(ack_path), default=0) + 1
        pid = os.fork()
        if pid == 0:   # child: never returns into pytest
            try:
                worker(wh, str(ack_path), start)
            finally:
                os._exit(1)
        time.sleep(rng.uniform(0.005, 0.08))   # a few commits per life: kills land mid-commit
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        fresh = lf.Catalog(wh).get_table("db.t")
        check(fresh, acked(ack_path), deep=(k % 50 == 49))
    final = lf.Catalog(wh).get_table("db.t")
    ids = check(final, acked(ack_path), deep=True)
    assert len(ids) > KILLS / 2, "the worker should have made progress between kills"
