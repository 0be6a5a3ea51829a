"""The one progress reporter: long operations call ``progress(done, total, what)`` and people
read ``compacting demo.events: 3 of 8 buckets done (dt=2024-06-01 bucket 1), 12 s`` in a log.

Compaction, expiration, orphan removal and partition expiration take such a callback; the CLI
(in a log), the jobs, the Airflow operators, the Spark stage poller and the demo all give them
this one, so progress reads the same wherever it shows. Lines are rate-limited: the first, the
last, and at most one every ``every`` seconds in between, so a 10,000-bucket compaction logs
a few dozen lines, not 10,000.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Optional
from collections.abc import Callable

from lakeformat.format.human import human_duration

log = logging.getLogger("lakeformat.progress")

Progress = Callable[[int, int, str], None]


class ProgressReporter:
    """A ``progress(done, total, what)`` callback writing ``"<task>: N of M <what>, <elapsed>"``
    lines through ``emit`` (default: the ``lakeformat.progress`` logger at INFO). ``what`` is
    the unit and, after it, what was just done: ``"buckets done (dt=2024-06-01 bucket 1)"``.
    Safe to call from several threads (a pool reporting its finished buckets)."""

    def __init__(self, task: str, every: float = 5.0, emit: Optional[Callable[[str], None]] = None):
        self.task, self.every = task, every
        self.emit = emit if emit is not None else log.info
        self.started = time.monotonic()
        self._last: Optional[float] = None
        self._lock = threading.Lock()

    def line(self, done: int, total: int, what: str) -> str:
        """The text of one report (without rate limiting)."""
        of = f"{done:,} of {total:,}" if total else f"{done:,}"
        return f"{self.task}: {of} {what}, {human_duration(time.monotonic() - self.started)}"

    def __call__(self, done: int, total: int, what: str) -> None:
        now = time.monotonic()
        with self._lock:
            finished = bool(total) and done >= total
            if not (self._last is None or finished or now - self._last >= self.every):
                return
            self._last = now
        self.emit(self.line(done, total, what))
