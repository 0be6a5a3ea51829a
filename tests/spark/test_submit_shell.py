"""The README's two ways to run a job ad hoc, run as written from a plain shell: no venv activated,
no PYSPARK_PYTHON, only ``env -i PATH=/usr/bin:/bin HOME=...`` (the warehouse and the landing
root moved to a temporary directory through their variables), against a real spark-submit on a
local master. Each must load the day's landing rows into its table."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.json as pjson

import lakeformat as lf
from lakeformat.pipeline import landing
from lakeformat.pipeline.config import load_config
from tests.project import CONFIG, ROOT

DAY = "2024-06-07"
SUBMIT_LINE = f".venv/bin/lakeformat submit ingest --table item_price --date {DAY}"
RAW_LINE = ('PYSPARK_PYTHON=.venv/bin/python .venv/bin/spark-submit --jars "$(.venv/bin/lakeformat jar-path)" '
            f"jobs/ingest.py --config config/tables.yaml --table user_behavior --date {DAY}")


def plain_shell(line: str, tmp_path: Path) -> subprocess.CompletedProcess:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home),
           "PYTHONPATH": str(ROOT),   # this checkout's code, where the venv's editable install points elsewhere
           "LAKEFORMAT_WAREHOUSE": str(tmp_path / "wh"), "LAKEFORMAT_LANDING": str(tmp_path / "landing")}
    return subprocess.run(["env", "-i", *(f"{k}={v}" for k, v in env.items()), "bash", "-c", line],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)


def landed_rows(table: str, tmp_path: Path) -> int:
    """Rows the day's landing files hold; for a primary-key table, distinct keys (the last wins)."""
    spec = load_config(str(CONFIG)).table(table)
    read = pjson.read_json if spec.landing_format == "jsonl" else pcsv.read_csv
    rows = pa.concat_tables([read(f) for f in Path(spec.landing_dir(str(tmp_path / "landing"), DAY)).glob("*")])
    keys = [k for k in spec.primary_keys if k in rows.column_names]   # the path gives the others (dt)
    return rows.group_by(keys).aggregate([]).num_rows if keys else rows.num_rows


def test_the_documented_submit_lines_load_a_day_from_a_plain_shell(tmp_path):
    readme = (ROOT / "README.md").read_text()
    assert SUBMIT_LINE in readme and RAW_LINE in readme   # the lines tested are the lines documented
    assert landing.main(["--landing", str(tmp_path / "landing"), "--start", DAY, "--rows-per-day", "2000",
                         "--config", str(CONFIG)]) == 0

    via_cli = plain_shell(SUBMIT_LINE, tmp_path)
    assert via_cli.returncode == 0, via_cli.stderr[-4000:]
    assert f"ingested item_price {DAY}: snapshot 1" in via_cli.stdout, via_cli.stdout + via_cli.stderr[-2000:]

    raw = plain_shell(RAW_LINE, tmp_path)
    assert raw.returncode == 0, raw.stderr[-4000:]
    assert f"ingested user_behavior {DAY}: snapshot 1" in raw.stdout, raw.stdout + raw.stderr[-2000:]

    cat = lf.Catalog(str(tmp_path / "wh"))
    for name in ("item_price", "user_behavior"):
        t = cat.get_table(f"demo.{name}")
        assert t.read().num_rows == landed_rows(name, tmp_path) > 0
