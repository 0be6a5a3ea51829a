"""docs/hooks.py: the benchmark tables are the results files' goals, naming the file."""

import importlib.util
import json

import pytest

from tests.docs.blocks import ROOT

spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
hooks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hooks)


def _results(tmp_path, goals):
    (tmp_path / "x.json").write_text(json.dumps({
        "env": {"date": "2026-01-02T03:04:05+00:00", "cpu_count": 2, "cpu_model": "AMD EPYC",
                "loadavg_start": [0.5, 0, 0], "loadavg_end": [1.25, 0, 0]},
        "goals": goals}))
    return tmp_path


def test_a_table_per_results_file(tmp_path):
    res = _results(tmp_path, [
        {"goal": "write: a vs b", "target": "≤ 1.25×", "value": 1.5, "status": "MISSED"},
        {"goal": "plan | per 1k", "target": "≤ 15", "value": 9.06, "status": "met", "display": "9.1 ms"},
        {"goal": "spark read", "target": "≤ 1.50×", "value": 1.2, "status": "met"}])
    md = hooks.render("x.json", res)
    assert "| write: a vs b | ≤ 1.25× | 1.50× | **missed** |" in md
    assert "| plan \\| per 1k | ≤ 15 | 9.1 ms | met |" in md
    assert "`benchmarks/results/x.json`" in md and "2026-01-02 03:04 UTC" in md and "load 0.5 → 1.2" in md
    assert "spark read" not in hooks.render("x.json", res, without="spark")


def test_a_missing_file_or_no_goals_fails_the_build(tmp_path):
    with pytest.raises(ValueError, match=r"gone\.json, which does not exist"):
        hooks.render("gone.json", tmp_path)
    with pytest.raises(ValueError, match="has no goals"):
        hooks.render("x.json", _results(tmp_path, []))


def test_every_marker_on_the_pages_names_a_results_file():
    pages = (ROOT / "docs").rglob("*.md")
    names = [m.group(1) for p in pages for m in hooks.MARKER.finditer(p.read_text())]
    assert len(names) >= 5
    for name in names:
        assert hooks.render(name).startswith("| measurement")
