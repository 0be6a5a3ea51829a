"""Dedicated compaction with real processes: a ``write-only`` writer commits continuously while a
separate compactor compacts the same partitions (and expires snapshots) at the same time.

The writer never meets a conflict (it only adds files; only the compactor removes any), the
sorted runs per bucket stay bounded although the writer never compacts, and the final rows are
exactly the model rebuilt from the writer's acknowledged commits.
"""
import json
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

import lakeformat as lf
from tests.integration.compaction_workers import (APPEND_SCHEMA, PARTITIONS, PK_SCHEMA, appends, pk_deletes,
                                                  pk_upserts)

ROOT = Path(__file__).resolve().parents[2]
COMMITS = 60
OPTIONS = {"bucket": "2", "write-only": "true", "snapshot.num-retained.min": "3",
           "snapshot.num-retained.max": "10", "snapshot.time-retained": "1 min"}
# With the compaction trigger at 5 sorted runs (3 files for appends), a bucket gains one run per
# writer commit; a compactor that keeps up holds it near the trigger. The bound leaves room for the
# commits that land while one compaction round runs on a loaded machine.
MAX_RUNS = 12


def pk_model(commits: int) -> pa.Table:
    state: dict[tuple[str, int], int] = {}
    for i in range(1, commits + 1):
        for dt in PARTITIONS:
            up = pk_upserts(i, dt)
            for k, v in zip(up.column("id").to_pylist(), up.column("v").to_pylist()):
                state[(dt, k)] = v
            for k in pk_deletes(i, dt).column("id").to_pylist():
                state.pop((dt, k), None)
    keys = sorted(state)
    return pa.table({"id": [k for _, k in keys], "v": [state[k] for k in keys], "dt": [d for d, _ in keys]},
                    schema=PK_SCHEMA)


def append_model(commits: int) -> pa.Table:
    return pa.concat_tables([appends(i, dt) for i in range(1, commits + 1) for dt in PARTITIONS])


def run(warehouse: str, table: str, tmp: Path) -> tuple[list[dict], list[dict], float]:
    cmd = [sys.executable, "-m", "tests.integration.compaction_workers"]
    stop = tmp / f"stop-{table}"
    started = time.monotonic()
    compactor = subprocess.Popen(cmd + ["compact", warehouse, table, "--stop", str(stop), "--pause", "0.05"],
                                 cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    writer = subprocess.Popen(cmd + ["write", warehouse, table, "--commits", str(COMMITS), "--pause", "0.05"],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        w_out, w_err = writer.communicate(timeout=120)
        stop.touch()
        c_out, c_err = compactor.communicate(timeout=120)
    finally:
        for p in (writer, compactor):
            if p.poll() is None:
                p.kill()
    assert writer.returncode == 0, f"the writer failed:\n{w_err[-4000:]}"
    assert compactor.returncode == 0, f"the compactor failed:\n{c_err[-4000:]}"
    acks = [json.loads(line) for line in w_out.splitlines() if line.strip()]
    rounds = [json.loads(line) for line in c_out.splitlines() if line.strip()]
    return acks, rounds, time.monotonic() - started


@pytest.mark.parametrize("kind", ["primary-key", "append"])
def test_writer_and_dedicated_compactor_in_parallel(tmp_path, kind):
    wh = str(tmp_path / "wh")
    cat = lf.Catalog(wh)
    cat.create_database("db")
    if kind == "primary-key":
        t = cat.create_table("db.t", PK_SCHEMA, partition_keys=["dt"], primary_keys=["id", "dt"], options=OPTIONS)
        expected = pk_model(COMMITS)
    else:
        t = cat.create_table("db.t", APPEND_SCHEMA, partition_keys=["dt"],
                             options={**OPTIONS, "bucket-key": "id", "compaction.min.file-num": "3"})
        expected = append_model(COMMITS)

    acks, rounds, seconds = run(wh, "db.t", tmp_path)

    # the writer committed every time, without a conflict, and never compacted
    assert [a["commit"] for a in acks] == list(range(1, COMMITS + 1))
    t = cat.get_table("db.t")
    compactions = [r for r in rounds if r["snapshot"] is not None]
    assert len(compactions) >= 3, rounds                      # the compactor really ran alongside
    mid_run = [r for r in compactions if not r["final"]]
    assert mid_run and mid_run[0]["snapshot"] < acks[-1]["snapshot"], "compactions overlapped the writes"
    # sorted runs per bucket stayed bounded, seen by the writer after each of its commits
    peak = max(a["runs"] for a in acks)
    assert peak <= MAX_RUNS, f"sorted runs reached {peak}: {[a['runs'] for a in acks]}"
    final_runs = t.system_table("buckets").column("sorted_runs").to_pylist()
    assert max(final_runs) == 1                                # the last, full compaction
    # the compactor expired snapshots as it went (the writer is write-only and never does)
    snaps = t.snapshots()
    assert snaps[0].id > 1 and len(snaps) <= 10, [s.id for s in snaps]
    assert sum(s.commit_kind == "COMPACT" for s in snaps) >= 1
    # exactly the model
    got = t.read()
    order = [("dt", "ascending"), ("id", "ascending")]
    assert got.num_rows == expected.num_rows
    assert got.sort_by(order).equals(expected.sort_by(order))
    if kind == "append":   # a fixed-bucket append table keeps each bucket's write order
        for split in t.scan().plan():
            ids = t.read_splits([split]).column("id").to_pylist()
            assert ids == sorted(ids)
    print(f"{kind}: {COMMITS} commits, {len(rounds)} compaction rounds ({len(compactions)} committed), "
          f"peak sorted runs {peak}, {seconds:.1f} s")
