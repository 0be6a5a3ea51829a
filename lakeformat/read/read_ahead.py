"""Bounded read-ahead: run a sequence of streams in a few threads, hand their items out in order.

``to_batches()`` reads file after file (or key section after section). Reading the next one
while the caller handles the current one hides IO and decoding, but without a bound a slow caller
lets the readers pile up whole files in memory. Here ``open_streams`` threads (default one) take
the streams in order and the items waiting hold at most ``budget`` bytes: a stream that would
exceed it waits until the caller has taken enough (backpressure). The stream being consumed may
always put one item, so a single item larger than the budget never stalls the read. Memory is
the budget plus one item in the making per thread, whatever the table's size.
"""
from __future__ import annotations

import itertools
import threading
from collections import deque
from typing import TypeVar
from collections.abc import Callable, Iterator, Sequence

T = TypeVar("T")


class _Closed(Exception):
    """The consumer went away: producers stop at their next item."""


_DONE = object()


class _State:
    def __init__(self, n: int, budget: int):
        self.cond = threading.Condition()
        self.queues: list[deque] = [deque() for _ in range(n)]
        self.finished = [False] * n
        self.errors: list[BaseException | None] = [None] * n
        self.used = 0
        self.budget = budget
        self.head = 0
        self.closed = False

    def put(self, i: int, item, size: int) -> None:
        with self.cond:
            while not self.closed and self.used + size > self.budget and (self.queues[i] or i != self.head):
                self.cond.wait()
            if self.closed:
                raise _Closed
            self.queues[i].append((item, size))
            self.used += size
            self.cond.notify_all()

    def finish(self, i: int, error: BaseException | None) -> None:
        with self.cond:
            self.finished[i], self.errors[i] = True, error
            self.cond.notify_all()

    def take(self, i: int):
        """The next item of stream ``i``, or ``_DONE`` when it has no more."""
        with self.cond:
            if self.head != i:
                self.head = i
                self.cond.notify_all()
            while not self.queues[i] and not self.finished[i]:
                self.cond.wait()
            if self.queues[i]:
                item, size = self.queues[i].popleft()
                self.used -= size
                self.cond.notify_all()
                return item
            error = self.errors[i]
            if error is not None:
                raise error
            return _DONE

    def close(self) -> None:
        with self.cond:
            self.closed = True
            for q in self.queues:
                q.clear()
            self.cond.notify_all()


def read_ahead(streams: Sequence[Callable[[], Iterator[T]]], size_of: Callable[[T], int],
               budget: int, open_streams: int = 1) -> Iterator[T]:
    """The items of ``streams[0]()``, then of ``streams[1]()``, ...; see the module docstring.
    ``open_streams`` threads take the streams in order, each running one at a time."""
    if not streams:
        return
    state = _State(len(streams), budget)
    order = itertools.count()

    def produce() -> None:
        while (i := next(order)) < len(streams) and not state.closed:
            error = None
            try:
                for item in streams[i]():
                    state.put(i, item, size_of(item))
            except _Closed:
                return
            except BaseException as e:   # handed to the consumer, raised in order
                error = e
            state.finish(i, error)

    workers = [threading.Thread(target=produce, name="lakeformat-read-ahead", daemon=True)
               for _ in range(max(1, min(open_streams, len(streams))))]
    for w in workers:
        w.start()
    try:
        for i in range(len(streams)):
            while (item := state.take(i)) is not _DONE:
                yield item
    finally:
        state.close()
        for w in workers:
            w.join()
