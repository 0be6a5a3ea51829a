"""The benchmark regression guard (``make bench-compare``, ``benchmarks/compare.py``) catches a
deliberate slowdown: a temporary worktree of HEAD whose ``Table.read`` sleeps 25 ms is measured
against HEAD itself; the guard must exit 1 and name the read benchmark. Small sizes, two of the
five benchmarks (the others take the same path): about a minute on 2 cores."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def _git(*args, cwd=ROOT):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def test_guard_names_a_slowed_down_read(tmp_path):
    tree = tmp_path / "slow"
    _git("worktree", "add", "--detach", "--quiet", str(tree), "HEAD")
    try:
        table_py = tree / "lakeformat" / "table" / "table.py"
        src = table_py.read_text()
        line = ("        scan = self.scan(filter, columns, snapshot_id, as_of, tag)\n"
                "        return scan.table.read_splits(")
        assert src.count(line) == 1, "Table.read changed: update the slowdown patch"
        table_py.write_text(src.replace(line, "        __import__('time').sleep(0.025)   # the deliberate slowdown\n"
                                              + line))
        p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "compare.py"), "--quick", "--base", "HEAD",
                            "--current", str(tree), "--only", "test_read_append,test_commit_many_messages",
                            "--out", str(tmp_path / "compare.json")],
                           cwd=ROOT, capture_output=True, text=True, timeout=600, env={**os.environ})
        out = p.stdout + p.stderr
        assert p.returncode == 1, out
        assert "REGRESSION: test_read_append" in out, out
        res = json.loads((tmp_path / "compare.json").read_text())
        assert res["benchmarks"]["test_read_append"]["median_pair_ratio"] > 2   # 25 ms on a read of ~10
        # the commit path was not touched: whatever the noise, it is not the one that slowed down
        assert res["benchmarks"]["test_commit_many_messages"]["median_pair_ratio"] < 2
        assert f"lakeformat.__file__ = {tree}/lakeformat/__init__.py" in out, out
        assert "/base/lakeformat/__init__.py" in out, out
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True)
