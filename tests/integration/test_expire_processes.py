"""Snapshot expiration with real processes: killed at random moments, racing committers of
several OS processes, and pypaimon reading what is left.

Run as a module it is the expirer worker of the concurrency test:
``python -m tests.integration.test_expire_processes <warehouse> <table> <stop-file>``.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakeformat as lf
from lakeformat.maintenance.expire import INTENT_PREFIX, expire_snapshots
from tests.integration.workers import SCHEMA, rows
from tests.oracle import run_oracle
from tests.unit.test_expire import PK_SCHEMA, files_on_disk, referenced

ROOT = Path(__file__).resolve().parents[2]
ZERO = dt.timedelta(0)


def ids_of(t: pa.Table) -> list:
    return sorted(t.column("id").to_pylist())


def intents(t) -> list[str]:
    return [n for n in os.listdir(Path(t.path, "snapshot")) if n.startswith(INTENT_PREFIX)]


# ---------------------------------------------------------------- kills at random moments

RETAIN = 10
KILLS = 40


PARTITIONS = 4


def spread(worker: int, commit: int) -> pa.Table:
    """Rows of one commit in every partition: many data files, so that deleting them takes a
    good part of an expiration (and kills land there)."""
    return pa.concat_tables([rows(worker, commit * PARTITIONS + j, 2, f"p{j}") for j in range(PARTITIONS)])


def build_history(cat: lf.Catalog, commits: int, **options) -> lf.Table:
    """Appends to every partition and, every 4th commit, an overwrite of the whole table (so
    every data file is deleted by some delta); manifests merged often (so manifests become
    unreferenced); a tag on snapshot 20."""
    t = cat.create_table("db.t", SCHEMA, partition_keys=["p"],
                         options={"manifest.merge-min-count": "3", **options})
    for i in range(1, commits + 1):
        t.write(spread(i % 4, i), overwrite={} if i % 4 == 0 else False)
    t.create_tag("early", 20)
    return t


def expire_and_exit(warehouse: str) -> None:
    """The child: one real expiration run, no instrumentation."""
    try:
        expire_snapshots(lf.Catalog(warehouse).get_table("db.t").ctx, retain_min=RETAIN, older_than=ZERO,
                         max_deletes=100_000)
    finally:
        os._exit(0)


def copy_table(src: str, dst: str) -> None:
    """A copy made of hard links: files are immutable (hints are replaced by rename), so the
    template never changes, and copying is cheap enough for many kills."""
    shutil.copytree(src, dst, copy_function=os.link)


def run_child(warehouse: str) -> int:
    pid = os.fork()
    if pid == 0:
        expire_and_exit(warehouse)
    return pid


def test_expiration_killed_at_random_moments_is_finished_by_the_next_run(tmp_path):
    template = str(tmp_path / "template")
    cat = lf.Catalog(template)
    cat.create_database("db")
    t0 = build_history(cat, 60, **{"write-only": "true"})
    latest = t0.latest_snapshot().id
    end = latest - RETAIN + 1
    expected = {sid: ids_of(t0.read(snapshot_id=sid)) for sid in range(end, latest + 1)}
    tag_rows = ids_of(t0.read(tag="early"))

    # uninterrupted runs, watched from here: when the first file is deleted (the intent file
    # appears just before) and when the run ends
    starts, ends = [], []
    for n in range(3):
        full = str(tmp_path / f"full{n}")
        copy_table(template, full)
        intent = Path(full, "db.db", "t", "snapshot", f"{INTENT_PREFIX}{end}")
        started, seen = time.monotonic(), None
        pid = run_child(full)
        while os.waitpid(pid, os.WNOHANG) == (0, 0):
            if seen is None and intent.exists():
                seen = time.monotonic() - started
            time.sleep(0.0005)
        assert seen is not None, "the run deleted files without recording its plan first"
        starts.append(seen)
        ends.append(time.monotonic() - started)
        done = lf.Catalog(full).get_table("db.t")
        assert [s.id for s in done.snapshots()] == list(range(end, latest + 1))
        assert files_on_disk(done) == referenced(done)
    first_delete, duration = sorted(starts)[1], sorted(ends)[1]

    rng = random.Random(11)
    phases = {"planning": 0, "deleting files": 0, "deleting snapshots": 0, "finished": 0}
    for k in range(KILLS):
        wh = str(tmp_path / f"run{k}")
        copy_table(template, wh)
        intent = Path(wh, "db.db", "t", "snapshot", f"{INTENT_PREFIX}{end}")
        pid, reaped = run_child(wh), False
        if k % 5 == 0:    # anywhere in the run
            time.sleep(rng.uniform(0, 1.05 * duration))
        else:             # at a random moment of its deletions, which begin when its intent appears
            while not intent.exists() and not reaped:
                reaped = os.waitpid(pid, os.WNOHANG) != (0, 0)
                time.sleep(0.0002)
            time.sleep(rng.uniform(0, 0.8 * (duration - first_delete)))   # sleeps overshoot under load
        if not reaped:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)

        t = lf.Catalog(wh).get_table("db.t")
        ids = [s.id for s in t.snapshots()]
        pending = intents(t)
        phase = ("planning" if not pending and ids[0] == 1 else "finished" if not pending else
                 "deleting files" if ids[0] == 1 else "deleting snapshots")
        phases[phase] += 1
        # the killed run left the latest, every snapshot it was keeping and the tag whole
        kept = [t.snapshot(i) for i in range(end, latest + 1)] + [t.tags.get("early").snapshot]
        missing = referenced(t, kept) - files_on_disk(t)
        assert not missing, f"kill {k}: files of kept snapshots are gone: {sorted(missing)[:3]}"
        assert ids_of(t.read()) == expected[latest]
        assert ids_of(t.read(tag="early")) == tag_rows

        # the next run finishes the job, whether it uses the same settings or the table's own
        # (1 h retained: by its own rules it would expire nothing)
        if k % 2 == 0:
            t.expire_snapshots(retain_min=RETAIN, older_than=ZERO, max_deletes=100_000)
            assert [s.id for s in t.snapshots()] == list(range(end, latest + 1))
        else:
            t.expire_snapshots()
            if pending or ids[0] > 1:
                assert [s.id for s in t.snapshots()] == list(range(end, latest + 1))
        assert not intents(t)
        assert files_on_disk(t) == referenced(t), f"kill {k}: disk differs from what is referenced"
        for sid in {latest, end, rng.randint(end, latest)}:
            assert ids_of(t.read(snapshot_id=sid)) == expected[sid]
        assert ids_of(t.read(tag="early")) == tag_rows
        shutil.rmtree(wh)
    print(f"\n{KILLS} kills of a {duration * 1000:.0f} ms expiration (deleting from {first_delete * 1000:.0f} "
          f"ms on): {phases}")
    assert phases["deleting files"] + phases["deleting snapshots"] >= KILLS // 5, phases


# ---------------------------------------------------------------- concurrent committers

APPENDERS, COMMITS, OVERWRITES = 3, 20, 10


def expirer(warehouse: str, table: str, stop_file: str, catalog_options: str = "{}") -> None:
    """Expire by the table's options, again and again, until ``stop_file`` exists."""
    t = lf.Catalog(warehouse, **json.loads(catalog_options)).get_table(table)
    runs = expired = 0
    while not os.path.exists(stop_file):
        r = expire_snapshots(t.ctx)
        runs += 1
        expired += r.snapshots
        time.sleep(0.005)
    print(json.dumps({"runs": runs, "expired": expired}), flush=True)


@pytest.mark.parametrize("locked", [False, True], ids=["create-if-absent", "catalog-lock"])
def test_concurrent_commits_while_expiring_keep_every_row_once(tmp_path, locked):
    wh = str(tmp_path / "wh")
    catalog_options = {"lock.enabled": "true", "lock.uri": str(tmp_path / "lock.sqlite"),
                       "lock.check-max-sleep": "20 ms"} if locked else {}
    cat = lf.Catalog(wh, **catalog_options)
    cat.create_database("db")
    # Every writer also expires after each commit, down to 3 snapshots, and so does an expirer
    # process in a loop: expirations race each other and the commits. Without a lock, snapshots
    # are kept 300 ms (a committer stalled longer between its last check and its create could
    # re-create an expired id, see lakeformat/maintenance/expire.py); under the catalog lock, 1 ms.
    t = cat.create_table("db.t", SCHEMA, partition_keys=["p"], options={
        "snapshot.num-retained.min": "3", "snapshot.time-retained": "1 ms" if locked else "300 ms",
        "snapshot.expire.limit": "4", "manifest.merge-min-count": "3"})
    t.write(rows(7, 1, 4, "p0"))
    t.create_tag("start", 1)
    stop = tmp_path / "stop"
    py = [sys.executable, "-m"]
    opt_args = [a for k, v in catalog_options.items() for a in ("--option", f"{k}={v}")]
    writers = [subprocess.Popen(py + ["tests.integration.workers", "append", wh, "db.t", "--worker", str(w),
                                      "--commits", str(COMMITS), *opt_args], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for w in range(APPENDERS)]
    writers.append(subprocess.Popen(py + ["tests.integration.workers", "overwrite", wh, "db.t", "--worker", "99",
                                          "--commits", str(OVERWRITES), "--rows", "5", *opt_args], cwd=ROOT,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    exp = subprocess.Popen(py + ["tests.integration.test_expire_processes", wh, "db.t", str(stop),
                                 json.dumps(catalog_options)], cwd=ROOT,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    acks = []
    try:
        for p in writers:
            out, err = p.communicate(timeout=300)
            assert p.returncode == 0, err[-3000:]
            acks += [json.loads(line) for line in out.splitlines() if line.strip()]
    finally:
        stop.touch()
        out, err = exp.communicate(timeout=120)
    assert exp.returncode == 0, err[-3000:]
    report = json.loads(out.splitlines()[-1])

    t = lf.Catalog(wh, **catalog_options).get_table("db.t")
    assert len(acks) == APPENDERS * COMMITS + OVERWRITES
    expected = pa.concat_tables([rows(7, 1, 4, "p0")] + [rows(a["worker"], a["commit"], 3, f"p{a['commit'] % 2}")
                                                         for a in acks if a["worker"] != 99]
                                + [rows(99, OVERWRITES, 5, "ow")])
    got = t.read()
    assert got.num_rows == expected.num_rows and got.sort_by("id").equals(expected.sort_by("id"))
    assert ids_of(t.read(tag="start")) == ids_of(rows(7, 1, 4, "p0"))
    time.sleep(0.3)
    while t.expire_snapshots().begin is not None:   # snapshot.expire.limit per run
        pass
    assert len(t.snapshots()) == 3 and t.snapshots()[0].id > 60
    assert files_on_disk(t) == referenced(t), "expired files left behind, or kept files deleted"
    print(f"\n{len(acks)} commits from {len(writers)} processes; the expirer ran {report['runs']} times "
          f"and expired {report['expired']} snapshots")


# ---------------------------------------------------------------- pypaimon reads what is left

ORACLE_READ = """
import json, sys
import pyarrow.parquet as pq
from pypaimon import CatalogFactory
wh, out = sys.argv[1], sys.argv[2]
reads = json.loads(sys.argv[3])
cat = CatalogFactory.create({"warehouse": wh})
answers = {}
for i, (table, option) in enumerate(reads):
    t = cat.get_table(table)
    if option:
        t = t.copy(option)
    rb = t.new_read_builder()
    data = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    pq.write_table(data, f"{out}-{i}.parquet")
    answers[i] = data.num_rows
print(json.dumps(answers))
"""


def test_pypaimon_reads_the_table_after_expiration(tmp_path):
    wh = str(tmp_path / "wh")
    cat = lf.Catalog(wh)
    cat.create_database("db")
    t = build_history(cat, 30)
    k = cat.create_table("db.k", PK_SCHEMA, primary_keys=["id"], options={
        "bucket": "2", "changelog-producer": "input", "num-sorted-run.compaction-trigger": "2",
        "manifest.merge-min-count": "3"})
    for i in range(30):
        if i % 6 == 5:
            k.delete(pa.table({"id": [i - 3]}))
        else:
            k.write(pa.table({"id": [i % 9, 100 + i], "v": [f"v{i}", "x"]}, schema=PK_SCHEMA))
    k.create_tag("early", 8)
    for table in (t, k):
        r = table.expire_snapshots(retain_min=3, older_than=ZERO, max_deletes=1000)
        assert r.snapshots > 10 and r.data_files > 0
        assert files_on_disk(table) == referenced(table)
    reads = [("db.t", None), ("db.t", {"scan.snapshot-id": str(t.snapshots()[0].id)}),
             ("db.t", {"scan.tag-name": "early"}), ("db.k", None), ("db.k", {"scan.tag-name": "early"})]
    expected = [t.read(), t.read(snapshot_id=t.snapshots()[0].id), t.read(tag="early"), k.read(),
                k.read(tag="early")]
    out = str(tmp_path / "oracle")
    answers = run_oracle(ORACLE_READ, wh, out, json.dumps(reads))
    for i, want in enumerate(expected):
        got = pq.read_table(f"{out}-{i}.parquet").select(want.column_names)
        assert answers[str(i)] == want.num_rows > 0, reads[i]
        assert got.sort_by("id").to_pylist() == want.sort_by("id").to_pylist(), reads[i]


if __name__ == "__main__":
    sys.path.insert(0, os.getcwd())
    expirer(*sys.argv[1:5])
