"""Writers racing maintenance in separate OS processes, for a minute each: a ``Table.write``
that returned has its rows in the table exactly once, one that raised has none of them, and no
retained snapshot ever names a file that is gone."""
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import lakeformat as lf
from tests.integration.workers import SCHEMA

ROOT = Path(__file__).resolve().parents[2]
SECONDS = 60


def race(warehouse: str, maintenance: list[str], writers: int = 2, seconds: float = SECONDS) -> tuple[list, list]:
    """(each write's outcome, each maintenance step's outcome) of the processes racing."""
    cmd = [sys.executable, "-m", "tests.integration.workers"]
    common = [warehouse, "db.t", "--seconds", str(seconds)]
    procs = [subprocess.Popen(cmd + ["table-write", *common, "--worker", str(w), "--rows", "50"], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for w in range(writers)]
    procs += [subprocess.Popen(cmd + [m, *common, "--worker", "0"], cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True) for m in maintenance]
    outcomes = []
    for p in procs:
        out, err = p.communicate(timeout=seconds + 300)
        assert p.returncode == 0, err[-3000:]
        outcomes.append([json.loads(line) for line in out.splitlines() if line.strip()])
    return [o for w in outcomes[:writers] for o in w], [o for m in outcomes[writers:] for o in m]


def rows_per_write(t: lf.Table) -> Counter:
    ids = t.read().column("id").to_pylist()
    assert len(ids) == len(set(ids)), "a row is in the table twice"
    return Counter((i // 100_000 // 100_000, i // 100_000 % 100_000) for i in ids)   # (worker, commit)


def assert_no_snapshot_names_a_missing_file(t: lf.Table) -> None:
    for s in t.snapshots():
        gone = [f["path"] for f in t.files(s.id) if not t.io.exists(f["path"])]
        assert not gone, f"snapshot {s.id} names missing files {gone[:3]}"


def check(t: lf.Table, writes: list[dict]) -> tuple[int, int]:
    found = rows_per_write(t)
    returned = [(w["worker"], w["commit"]) for w in writes if "snapshot" in w]
    raised = [(w["worker"], w["commit"]) for w in writes if "error" in w]
    assert [k for k in returned if found[k] != 50] == [], "a write that returned lacks its rows"
    assert [k for k in raised if found[k]] == [], "a write that raised has rows in the table"
    assert sum(found.values()) == 50 * len(returned)
    assert_no_snapshot_names_a_missing_file(t)
    return len(returned), len(raised)


def test_writers_racing_a_compactor_and_expiration(tmp_path):
    """Each writer's own small-file compaction conflicts with the dedicated compactor over and
    over: the append before it is committed all the same and ``write`` reports it."""
    wh = str(tmp_path / "wh")
    cat = lf.Catalog(wh)
    cat.create_database("db")
    cat.create_table("db.t", SCHEMA, partition_keys=["p"],
                     options={"bucket": "2", "bucket-key": "id", "compaction.min.file-num": "3"})
    writes, steps = race(wh, ["compact", "expire"])
    returned, raised = check(cat.get_table("db.t"), writes)
    print(f"{returned} writes returned, {raised} raised; maintenance steps: "
          f"{Counter(s.get('error', 'ok') for s in steps)}")
    assert returned > 50 and raised == 0, [w for w in writes if "error" in w][:3]   # appends never conflict
    assert sum(s.get("ok", False) for s in steps if s["mode"] == "compact") > 5


def test_writers_racing_orphan_removal_without_an_age_limit(tmp_path):
    """Orphan removal with older_than=0 (its override given) beside writers: some writes lose
    their files and fail, saying so; none publishes a snapshot naming a missing file."""
    wh = str(tmp_path / "wh")
    cat = lf.Catalog(wh)
    cat.create_database("db")
    cat.create_table("db.t", SCHEMA, partition_keys=["p"], options={"bucket": "2", "bucket-key": "id"})
    writes, steps = race(wh, ["orphans"])
    returned, raised = check(cat.get_table("db.t"), writes)
    errors = Counter(w["error"] for w in writes if "error" in w)
    print(f"{returned} writes returned, {raised} raised ({errors}); orphan runs: "
          f"{Counter(s.get('error', 'ok') for s in steps)}")
    assert returned > 20
    # CorruptFileError: a file committed in the instant between orphan removal's last look and
    # its move aside, read while it was aside (it comes back before the removal ends)
    assert set(errors) <= {"CommitError", "StorageError", "CorruptFileError"}, [w for w in writes if "error" in w][:3]
    assert sum(s.get("ok", False) for s in steps) >= 5
