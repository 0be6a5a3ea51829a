"""Every ```python block of the docs runs: a page's blocks in order, in one namespace, in a fresh
folder (so `lf.Catalog("warehouse")` is a new warehouse), each in a fresh process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.docs.blocks import ROOT, all_blocks

PY_BLOCKS = all_blocks(("python", "py"))
# pages whose blocks start Spark: minutes, not seconds
SLOW_PAGES = {"docs/spark.md"}
RUNNER = """
import sys
ns = {"__name__": "__docs__"}
for i, path in enumerate(sys.argv[1:]):
    code = open(path).read()
    print(f"--- block {i}", flush=True)
    exec(compile(code, path, "exec"), ns)
"""


def _pages():
    by_page = {}
    for b in PY_BLOCKS:
        if b.not_run is None:
            by_page.setdefault(b.page, []).append(b)
    return [pytest.param(page, bs, id=page, marks=[pytest.mark.slow] if page in SLOW_PAGES else [])
            for page, bs in by_page.items()]


def test_there_are_python_blocks():
    assert len(PY_BLOCKS) >= 10


@pytest.mark.parametrize("page,page_blocks", _pages())
def test_python_blocks_run(page, page_blocks, tmp_path):
    files = []
    for i, b in enumerate(page_blocks):
        f = tmp_path / f"block{i}_line{b.line}.py"
        f.write_text(b.code)
        files.append(str(f))
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LAKEFORMAT_", "PYSPARK_"))}
    env["PYTHONPATH"] = str(ROOT)
    env["HOME"] = str(tmp_path)
    r = subprocess.run([sys.executable, "-c", RUNNER, *files], cwd=work, env=env,
                       capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, (
        f"a Python block of {page} failed (blocks from lines {[b.line for b in page_blocks]}):\n"
        f"{r.stdout[-3000:]}\n{r.stderr[-5000:]}")
