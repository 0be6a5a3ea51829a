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
