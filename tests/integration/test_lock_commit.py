"""Commits under the catalog lock (``lock.enabled=true``): OS processes into one table on a local
warehouse (SQLite lock) and on moto's S3 server (PostgreSQL lock), and proof that on S3 the lock,
not the conditional PUT, is what makes snapshot creation atomic."""
import json
import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import psycopg
import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.io.fileio import FileIO
from lakeformat.commit.lock import LOCK_TABLE
from tests.integration.workers import SCHEMA, rows
from tests.pg import postgres_dsn  # noqa: F401 (fixture)
from tests.s3server import BUCKET, CREDS, s3_endpoint  # noqa: F401 (fixture)

ROOT = Path(__file__).resolve().parents[2]
FAST = {"lock.check-max-sleep": "50 ms", "lock.acquire-timeout": "60 s"}


def lock_rows(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        return conn.execute(f"SELECT count(*) FROM {LOCK_TABLE}").fetchone()[0]


def commit_in_processes(warehouse: str, options: dict, appenders: int, commits: int) -> lf.Table:
    """``appenders`` worker processes (workers.py's append mode) commit ``commits`` times each
    into a new table; then the history must be contiguous, each commit in it exactly once, and
    the rows exactly those of the acknowledged commits."""
    cat = lf.Catalog(warehouse, **options)
    cat.create_database("db")
    cat.create_table("db.t", SCHEMA, partition_keys=["p"])
    opt_args = [a for k, v in options.items() for a in ("--option", f"{k}={v}")]
    procs = [subprocess.Popen([sys.executable, "-m", "tests.integration.workers", "append", warehouse, "db.t",
                               "--worker", str(w), "--commits", str(commits), *opt_args],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for w in range(appenders)]
    acks = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        acks += [json.loads(line) for line in out.splitlines() if line.strip()]
    t = cat.get_table("db.t")
    snaps = t.snapshots()
    assert [s.id for s in snaps] == list(range(1, appenders * commits + 1)), "contiguous snapshot ids"
    assert sorted((s.commit_user, s.commit_identifier) for s in snaps) == \
        sorted((f"w{w}", c) for w in range(appenders) for c in range(1, commits + 1)), "each commit exactly once"
    assert sorted(a["snapshot"] for a in acks) == [s.id for s in snaps]
    expected = pa.concat_tables([rows(a["worker"], a["commit"], 3, f"p{a['commit'] % 2}") for a in acks])
    assert t.read().sort_by("id").equals(expected.sort_by("id"))
    return t


def test_processes_commit_under_a_sqlite_lock(tmp_path):
    wh = str(tmp_path / "wh")
    t = commit_in_processes(wh, {"lock.enabled": "true", "lock.uri": str(tmp_path / "lock.sqlite"), **FAST},
                            appenders=4, commits=8)
    assert t.lock.path == str(tmp_path / "lock.sqlite")


def test_processes_commit_on_s3_under_a_postgres_lock(s3_endpoint, postgres_dsn):
    wh = f"s3://{BUCKET}/lock-{uuid.uuid4().hex[:8]}"
    commit_in_processes(wh, {"s3.endpoint": s3_endpoint, **CREDS, "lock.enabled": "true",
                             "lock.uri": postgres_dsn, **FAST}, appenders=3, commits=3)   # small: moto is slow
    assert lock_rows(postgres_dsn) == 0   # the lock table exists (it was used) and every lock was released


def test_locked_commits_on_s3_never_use_the_conditional_put(s3_endpoint, postgres_dsn, monkeypatch):
    wh = f"s3://{BUCKET}/lock-{uuid.uuid4().hex[:8]}"
    opts = {"s3.endpoint": s3_endpoint, **CREDS, "lock.enabled": "true", "lock.uri": postgres_dsn, **FAST}
    cat = lf.Catalog(wh, **opts)
    cat.create_database("db")
    cat.create_table("db.t", SCHEMA, partition_keys=["p"])   # schema-0 is still a conditional PUT

    def no_conditional_put(self, p, data):
        raise AssertionError(f"conditional PUT of {p} while the catalog lock is enabled")

    monkeypatch.setattr(FileIO, "_s3_put_if_absent", no_conditional_put)
    threads, commits, errors = 3, 3, []

    def appender(worker: int) -> None:
        try:
            t = lf.Catalog(wh, **opts).get_table("db.t")
            for i in range(1, commits + 1):
                w = t.new_write(f"w{worker}")
                w.write(rows(worker, i, 3, f"p{i % 2}"))
                t.new_commit(f"w{worker}").commit(w.prepare_commit(), identifier=i)
        except BaseException as e:
            errors.append(e)

    ts = [threading.Thread(target=appender, args=(w,)) for w in range(threads)]
    for th in ts:
        th.start()
    for th in ts:
        th.join(120)
    if errors:
        raise errors[0]
    t = cat.get_table("db.t")
    snaps = t.snapshots()
    assert [s.id for s in snaps] == list(range(1, threads * commits + 1))
    assert len({(s.commit_user, s.commit_identifier) for s in snaps}) == threads * commits
    assert sorted(t.read().column("id").to_pylist()) == sorted(
        i for w in range(threads) for c in range(1, commits + 1) for i in rows(w, c, 3, "").column("id").to_pylist())


def test_lock_timeout_fails_the_commit_and_leaves_no_snapshot(tmp_path):
    uri = str(tmp_path / "lock.sqlite")
    cat = lf.Catalog(str(tmp_path / "wh"), **{"lock.enabled": "true", "lock.uri": uri,
                                              "lock.acquire-timeout": "200 ms", "lock.check-max-sleep": "50 ms"})
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, partition_keys=["p"])
    with cat.lock.hold("db.t"), pytest.raises(lf.CommitError, match=r"catalog lock 'db.t'"):
        t.write(rows(1, 1, 3, "p0"))
    assert t.snapshots() == [] and t.read().num_rows == 0
    assert os.listdir(f"{t.path}/manifest") == []   # the failed attempt's manifests are gone
    assert t.write(rows(1, 1, 3, "p0")).id == 1
