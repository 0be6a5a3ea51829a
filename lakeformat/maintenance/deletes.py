"""Deleting many files at once, as expiration and orphan removal do.

On an object store every delete is one request (tens of milliseconds), so one at a time a table
with millions of expired files takes hours. Both maintenance jobs delete through
:func:`delete_files`: a bounded pool of ``DELETE_THREADS`` threads keeps that many requests in
flight, and at most ``WINDOW`` paths are queued at any moment, so memory stays flat however
many files go. Missing files are skipped (``FileIO.delete``), so an interrupted run's retry
deletes what is left. The first error stops the submitting and is raised once the requests in
flight have finished.
"""
from __future__ import annotations

from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Optional
from collections.abc import Callable, Iterable

DELETE_THREADS = 16
WINDOW = 4 * DELETE_THREADS   # paths submitted and not yet deleted, at most


def delete_files(io, paths: Iterable[str], done: Optional[Callable[[int], None]] = None,
                 threads: int = DELETE_THREADS) -> int:
    """Delete every path of ``paths`` through ``io`` with up to ``threads`` deletes in flight;
    ``done(n)`` is called after each one with the number deleted so far. Returns that number."""
    count = 0
    with ThreadPoolExecutor(max(1, threads)) as pool:
        pending: deque = deque()
        for path in paths:
            pending.append(pool.submit(io.delete, path))
            if len(pending) >= min(WINDOW, 4 * max(1, threads)):
                pending.popleft().result()
                count += 1
                if done is not None:
                    done(count)
        while pending:
            pending.popleft().result()
            count += 1
            if done is not None:
                done(count)
    return count
