"""Every ```sh/```bash/```shell block of README.md and docs/ works as written from a plain shell.

The blocks run in the reading order (README, then the site's nav), each with
``env -i PATH=/usr/bin:/bin HOME=<tmp>`` — no venv activated, no PYSPARK_PYTHON, no LAKEFORMAT_* —
in a copy of the project root whose entries are links to this checkout's, except the folders the
commands write (warehouse, landing, dist, ...), which start empty. A block marked
``<!-- not-run: reason -->`` is skipped only if NOT_RUN below justifies its command.
"""

from __future__ import annotations

import subprocess

import pytest

from tests.docs.blocks import ROOT, SHELL, all_blocks

BLOCKS = all_blocks(SHELL)

# Commands the docs show but this test does not run, and why. Keep it short: everything else runs.
NOT_RUN = {
    "make setup": "installs the venvs; every run block needs them, so it ran already",
    "make demo": "minutes of Airflow and Spark; its steps run one by one in docs/quickstart.md",
    "make airflow": "starts Airflow's servers until Ctrl-C",
    "make bench": "minutes of benchmarks",
    "curl -X POST http://127.0.0.1:8080": "needs a running Airflow (tests/airflow_ui does this)",
    ".venv/bin/python -m lakeformat.pipeline.airflow.page": "starts a web server until Ctrl-C",
    "docker compose": "needs a Docker engine (tests/integration/test_compose_topology.py rehearses it)",
}
# Entries a fresh checkout lacks or that the commands write: fresh in the copy.
WRITTEN = {"warehouse", "landing", "dist", "build", ".airflow", "test-artefacts", ".git"}


def _justification(block):
    return next((why for cmd, why in NOT_RUN.items() if block.first_line.startswith(cmd)), None)


def test_not_run_markers_are_justified():
    marked = [b for b in BLOCKS if b.not_run is not None]
    unjustified = [f"{b.where}: {b.first_line!r}" for b in marked if _justification(b) is None]
    assert not unjustified, f"not-run markers on commands NOT_RUN does not list: {unjustified}"
    unused = set(NOT_RUN) - {cmd for b in marked for cmd in NOT_RUN if b.first_line.startswith(cmd)}
    assert not unused, f"NOT_RUN lists commands no marked block shows (remove them): {sorted(unused)}"
    # a marker on a block NOT_RUN would allow but that runs fine is caught by reading it: every
    # marked block's commands are in NOT_RUN, so nothing else hides behind a marker
    assert len(marked) <= 12


def test_run_blocks_use_no_activated_environment():
    """A plain shell has no lakeformat, spark-submit or venv python on PATH."""
    bare = ("lakeformat ", "spark-submit ", "python ", "python3 ", "pip ", "airflow ", "mkdocs ")
    found = [f"{b.where}: {ln.strip()}" for b in BLOCKS if b.not_run is None
             for ln in b.code.splitlines() if ln.strip().startswith(bare)]
    assert not found, f"commands that need an activated venv: {found}"


@pytest.fixture(scope="module")
def project_copy(tmp_path_factory):
    copy = tmp_path_factory.mktemp("project")
    for entry in ROOT.iterdir():
        if entry.name not in WRITTEN and entry.name != "__pycache__":
            (copy / entry.name).symlink_to(entry)
    (copy / "home").mkdir()
    return copy


@pytest.mark.slow
def test_shell_blocks_run_from_a_plain_shell(project_copy):
    ran = 0
    for b in BLOCKS:
        if b.not_run is not None:
            continue
        env = {"PATH": "/usr/bin:/bin", "HOME": str(project_copy / "home")}
        r = subprocess.run(["/bin/bash", "-e", "-o", "pipefail", "-c", b.code], cwd=project_copy,
                           env=env, capture_output=True, text=True, timeout=1500)
        assert r.returncode == 0, (
            f"the documented command at {b.where} failed (rc {r.returncode}) from a plain shell:\n"
            f"{b.code}\n--- stdout\n{r.stdout[-3000:]}\n--- stderr\n{r.stderr[-5000:]}")
        ran += 1
    assert ran >= 10
