"""Spark stage progress in a job's log: while a long Spark action runs (an ingest's write, a
compaction's tasks), a daemon thread asks ``SparkContext.statusTracker()`` for the active
stages every few seconds and logs ``stage 3 (save): 2 of 4 tasks done`` through the one
:class:`~lakeformat.format.progress.ProgressReporter`, so a minute-long write is not a
minute of silence (Spark's own console progress bar is off in a job: it draws to a terminal).
"""
from __future__ import annotations

import logging
import threading
from typing import Optional

from lakeformat.format.progress import ProgressReporter

log = logging.getLogger("lakeformat.spark.progress")


class StageProgress:
    """Logs the running stages of ``spark``'s context every ``every`` seconds while open::

        with StageProgress(spark, "ingest demo.events 2024-06-01"):
            df.write...

    A stage's line repeats only when its count of finished tasks moved. The poller never
    fails the action it watches: a status request that fails (the context stopping) ends it.
    """

    def __init__(self, spark, task: str, every: float = 5.0, reporter: Optional[ProgressReporter] = None):
        self.tracker = spark.sparkContext.statusTracker()
        self.every = every
        self.reporter = reporter or ProgressReporter(task, every=0.0)
        self._stop = threading.Event()
        self._seen: dict[int, int] = {}
        self._thread = threading.Thread(target=self._run, name="lakeformat-stage-progress", daemon=True)

    def __enter__(self) -> StageProgress:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=self.every + 5)

    def poll(self) -> None:
        """Report each active stage whose finished-task count changed since the last poll."""
        for sid in sorted(self.tracker.getActiveStageIds()):
            info = self.tracker.getStageInfo(sid)
            if info is None or self._seen.get(sid) == info.numCompletedTasks:
                continue
            self._seen[sid] = info.numCompletedTasks
            failed = f", {info.numFailedTasks} failed" if info.numFailedTasks else ""
            self.reporter(info.numCompletedTasks, info.numTasks,
                          f"tasks of stage {sid} ({info.name.split(' at ')[0]}) done, "
                          f"{info.numActiveTasks} running{failed}")

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.poll()
            except Exception as e:   # the context is going away: stop watching, never fail the job
                log.debug("stage progress stopped: %s", e)
                return
