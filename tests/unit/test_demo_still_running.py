"""The demo's long steps are not silent: while a step's output goes to the task log, the
screen gets "still running (N s)" with the log's latest progress line."""
import argparse
import os
import time

from rich.console import Console

from lakeformat.format.progress import ProgressReporter
from lakeformat.pipeline.local import demo
from lakeformat.pipeline.local.airflow_home import output_to


def test_a_long_step_prints_still_running_with_the_latest_progress(tmp_path, monkeypatch):
    monkeypatch.setattr(demo, "STILL_RUNNING_EVERY", 0.3)
    with open(tmp_path / "screen.txt", "w") as screen:
        d = demo.Demo(Console(file=screen, width=120), argparse.Namespace())
        try:
            report = ProgressReporter("ingest demo.t 2024-06-01", every=0,
                                      emit=lambda line: os.write(2, f"INFO lakeformat.progress: {line}\n".encode()))
            with d.still_running(), output_to(str(d.log)):   # as Demo.run: fds 1 and 2 (spark-submit's) to the log
                report(1, 4, "tasks of stage 2 (save) done, 3 running")
                time.sleep(1.0)
            screen.flush()
            shown = (tmp_path / "screen.txt").read_text()
            logged = d.log.read_text()
        finally:
            for f in d.work.iterdir():
                os.remove(f)
            d.work.rmdir()
    assert "still running (" in shown
    assert "ingest demo.t 2024-06-01: 1 of 4 tasks of stage 2 (save) done, 3 running" in shown
    assert "still running" not in logged and "1 of 4 tasks" in logged


def test_a_step_shows_only_its_own_progress_lines(tmp_path):
    log = tmp_path / "airflow-tasks.log"
    log.write_text("INFO lakeformat.progress: ingest demo.t 2024-06-01: 4 of 4 tasks of stage 2 (save) done, "
                   "0 running\n"
                   "- expect_column_values_to_be_between(column='price'): 25 of 4,770 rows unexpected\n")
    since = log.stat().st_size
    assert demo._latest_progress(log, 0) == "ingest demo.t 2024-06-01: 4 of 4 tasks of stage 2 (save) done, 0 running"
    assert demo._latest_progress(log, since) == ""   # the earlier step's line is not this step's
    with open(log, "a") as f:
        f.write("[2026-11-29] INFO - 2026-11-29 11:03:12,025 INFO lakeformat.progress: compact demo.t: "
                "1 of 2 tasks of stage 0 (collect) done, 1 running\n"
                "audit: 25 of 4,770 rows unexpected\n")
    assert demo._latest_progress(log, since) == "compact demo.t: 1 of 2 tasks of stage 0 (collect) done, 1 running"
