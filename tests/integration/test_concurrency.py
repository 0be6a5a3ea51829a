"""Several OS processes committing to one table: nothing lost, nothing doubled."""
import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import lakeformat as lf
from tests.integration.workers import SCHEMA, rows
from tests.oracle import run_oracle

ROOT = Path(__file__).resolve().parents[2]


def run_workers(warehouse: str, options: list[str], appenders: int, commits: int) -> list[dict]:
    opt_args = [a for o in options for a in ("--option", o)]
    cmd = [sys.executable, "-m", "tests.integration.workers"]
    procs = [subprocess.Popen(cmd + ["append", warehouse, "db.t", "--worker", str(w), "--commits", str(commits),
                                     *opt_args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for w in range(appenders)]
    procs.append(subprocess.Popen(cmd + ["overwrite", warehouse, "db.t", "--worker", "99", "--commits", "10",
                                         "--rows", "5", *opt_args], cwd=ROOT, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True))
    acks = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]
        acks += [json.loads(line) for line in out.splitlines() if line.strip()]
    return acks


def check_history(t: lf.Table, acks: list[dict], appenders: int, commits: int) -> pa.Table:
    snaps = t.snapshots()
    assert [s.id for s in snaps] == list(range(1, len(snaps) + 1)), "snapshot ids must be contiguous"
    pairs = [(s.commit_user, s.commit_identifier) for s in snaps if s.commit_kind == "APPEND"]
    assert len(pairs) == len(set(pairs)) == appenders * commits, "every append committed exactly once"
    assert sum(s.commit_kind == "OVERWRITE" for s in snaps) == 10
    assert sorted(a["snapshot"] for a in acks) == [s.id for s in snaps]
    expected = pa.concat_tables([rows(a["worker"], a["commit"], 3, f"p{a['commit'] % 2}")
                                 for a in acks if a["worker"] != 99] + [rows(99, 10, 5, "ow")])
    got = t.read()
    assert got.num_rows == expected.num_rows
    assert got.sort_by("id").equals(expected.sort_by("id"))
    return got


def oracle_ids(warehouse: str, out: Path, options: dict | None = None) -> pa.Table:
    """The ids pypaimon reads from ``db.t``; ``options`` are extra catalog options (e.g. S3's)."""
    run_oracle("""
        import sys, json, pyarrow.parquet as pq
        from pypaimon import CatalogFactory
        t = CatalogFactory.create({"warehouse": sys.argv[1], **json.loads(sys.argv[3])}).get_table("db.t")
        rb = t.new_read_builder()
        pq.write_table(rb.new_read().to_arrow(rb.new_scan().plan().splits()).select(["id"]), sys.argv[2])
        print(json.dumps({}))
    """, warehouse, str(out), json.dumps(options or {}))
    return pq.read_table(out)


def test_eight_processes_commit_into_one_table(tmp_path):
    wh = str(tmp_path / "wh")
    cat = lf.Catalog(wh)
    cat.create_database("db")
    # Nine racing writers on two loaded cores can lose more than Paimon's default ten races in a
    # row; this test is about exactly-once, not about the retry budget.
    cat.create_table("db.t", SCHEMA, partition_keys=["p"], options={"commit.max-retries": "100"})
    acks = run_workers(wh, [], appenders=8, commits=25)
    got = check_history(cat.get_table("db.t"), acks, 8, 25)
    theirs = oracle_ids(wh, tmp_path / "oracle.parquet")
    assert sorted(theirs.column("id").to_pylist()) == sorted(got.column("id").to_pylist())
