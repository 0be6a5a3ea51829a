"""Spark stage progress while a long action runs: the poller, on the real session, logs the
running stage's finished tasks through the one reporter, and stops with the action."""
import time

from lakeformat.format.progress import ProgressReporter
from lakeformat.spark.progress import StageProgress


def test_a_slow_stage_is_reported_while_it_runs(spark):
    lines: list[str] = []
    reporter = ProgressReporter("ingest demo.t 2024-06-01", every=0, emit=lines.append)
    slow = spark.sparkContext.parallelize(range(6), 6).map(lambda x: time.sleep(1.5) or x)
    with StageProgress(spark, "ignored", every=0.3, reporter=reporter) as watcher:
        assert sorted(slow.collect()) == list(range(6))
    assert not watcher._thread.is_alive()
    said = [ln for ln in lines if "tasks of stage" in ln]
    assert said, lines
    assert all(ln.startswith("ingest demo.t 2024-06-01: ") and " of 6 tasks of stage " in ln
               and "(collect) done, " in ln for ln in said), said
    counts = [int(ln.split(": ", 1)[1].split(" of ")[0]) for ln in said]
    assert counts == sorted(counts) and len(set(counts)) == len(counts)   # a line only when the count moved
    assert len(lines) == len(said)
