"""MkDocs hook: benchmark tables generated from benchmarks/results/*.json at build time.

A page writes ``<!-- benchmark: growth.json -->`` (``... without spark`` leaves out the goals whose
name starts with ``spark``, where another file holds the current ones) and gets the goals as a table, with
the date, machine and load of the run and the file's name, so no figure in the docs is typed
by hand or outlives the results it came from. ``growth.png`` is served from the results folder.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from mkdocs.structure.files import File

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"
MARKER = re.compile(r"<!--\s*benchmark:\s*([\w.-]+\.json)(?:\s+without\s+(\w+))?\s*-->")
IMAGES = ("growth.png",)


def render(name: str, results: Path = RESULTS, without: str | None = None) -> str:
    """The Markdown table of one results file's goals (a missing file or no goals is an error)."""
    path = results / name
    if not path.is_file():
        raise ValueError(f"docs name benchmarks/results/{name}, which does not exist")
    data = json.loads(path.read_text())
    goals = [g for g in data.get("goals") or () if not (without and g["goal"].startswith(without))]
    if not goals:
        raise ValueError(f"benchmarks/results/{name} has no goals to show")
    env = data.get("env", {})
    load = env.get("loadavg_start"), env.get("loadavg_end")
    load_text = (
        f"load {load[0][0]:.1f} → {load[1][0]:.1f}" if all(load) else "load not recorded"
    )
    rows = ["| measurement | goal | result | |", "|---|---|---|---|"]
    for g in goals:
        value = g.get("display") or _number(g["value"], g.get("target", ""))
        status = {"met": "met", "MISSED": "**missed**"}.get(g["status"], "")
        rows.append(f"| {_cell(g['goal'])} | {_cell(g['target'])} | {value} | {status} |")
    caption = (
        f"*From `benchmarks/results/{name}`: run {env.get('date', '?')[:16].replace('T', ' ')} UTC, "
        f"{env.get('cpu_count', '?')} × {env.get('cpu_model', '?')}, {load_text}.*"
    )
    return "\n".join(rows) + "\n\n" + caption + "\n"


def _number(value: float, target: str) -> str:
    return f"{value:.2f}×" if "×" in target or target in ("(none)", "reported") else f"{value:.3g}"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|")


def on_page_markdown(markdown, page, config, files):
    return MARKER.sub(lambda m: render(m.group(1), without=m.group(2)), markdown)


def on_files(files, config):
    for name in IMAGES:
        files.append(File.generated(config, f"benchmarks/{name}", abs_src_path=str(RESULTS / name)))
    return files
