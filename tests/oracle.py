"""Run code in the oracle virtualenv (pypaimon, pypaimon-rust), which pins an older pyarrow.

Data crosses the boundary as Parquet files and JSON, never as pickles, so the two Arrow
versions never meet in one process. A missing oracle venv is a failure, never a skip.
"""
from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ORACLE_PY = ROOT / ".venv-oracle" / "bin" / "python"


def run_oracle(code: str, *args: str, timeout: int = 300) -> dict:
    """Run ``code`` under the oracle interpreter; it must print one JSON document last."""
    if not ORACLE_PY.exists():
        raise AssertionError(f"oracle venv missing at {ORACLE_PY}: run `make setup`")
    proc = subprocess.run([str(ORACLE_PY), "-c", textwrap.dedent(code), *args],
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"oracle failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    return json.loads(lines[-1]) if lines else {}
