"""Why an expiration removed or kept each snapshot, in the words of the limit that decided.

Three limits split a table's snapshots (``plan_expiration``): beyond the newest
``retain_max`` every snapshot goes, the newest ``retain_min`` always stay, and in between
only snapshots older than the time retained go. A user who asked for ``--retain-max 3`` and
was left with one snapshot needs to read that the time retained removed the other two; this
module says so, as text ranges, from the metadata alone (a pure function: no I/O).
Consumers and the per-run limit keep snapshots too; ``expire._held`` words those.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Optional, Union
from collections.abc import Callable

from lakeformat.format.human import human_duration


@dataclass(frozen=True)
class Limits:
    """The three limits of one expiration and what to call each one (an argument the caller
    gave, or the table option it came from)."""

    retain_min: int
    retain_max: int
    older_than_millis: int
    min_name: str
    max_name: str
    time_text: str      # "older than 1 h (snapshot.time-retained)"
    young_text: str     # "younger than 1 h (snapshot.time-retained)"


def limits(retain_min: int, retain_max: int, older_than_millis: int, *, given_min: bool, given_max: bool,
           older_than: Union[None, dt.timedelta, dt.datetime], time_retained: dt.timedelta) -> Limits:
    """``Limits`` of resolved settings; ``given_*``/``older_than``: what the caller passed (None:
    the table's option decided), ``time_retained``: the table's ``snapshot.time-retained``."""
    if isinstance(older_than, dt.datetime):
        when = older_than.isoformat(sep=" ", timespec="seconds")
        old, young = f"committed before {when} (older_than)", f"committed at or after {when} (older_than)"
    else:
        span = human_duration(older_than if older_than is not None else time_retained)
        source = "older_than" if older_than is not None else "snapshot.time-retained"
        old, young = f"older than {span} ({source})", f"younger than {span} ({source})"
    return Limits(retain_min, retain_max, older_than_millis,
                  "retain_min" if given_min else "snapshot.num-retained.min",
                  "retain_max" if given_max else "snapshot.num-retained.max", old, young)


def _span(lo: int, hi: int) -> str:
    """Snapshots ``lo..hi`` (inclusive) as text."""
    return f"snapshot {lo}" if lo == hi else f"snapshots {lo}..{hi}"


def expire_reasons(*, earliest: Optional[int], end: Optional[int], latest: Optional[int],
                   time_of: Callable[[int], Optional[int]], lim: Limits) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(why the expired snapshots ``earliest .. end-1`` went, why the kept ``end .. latest``
    stayed), one text per range and limit. ``end`` None: nothing expired (``end = earliest``).
    ``time_of(id)``: a kept snapshot's commit time in epoch millis. Kept snapshots old enough
    to go that none of these limits keeps (held by a consumer or the per-run limit) are not
    named here."""
    if earliest is None or latest is None:
        return (), ()
    end = earliest if end is None else end
    by_max = max(latest - lim.retain_max + 1, earliest)   # the oldest snapshot retain_max allows
    by_min = max(latest - lim.retain_min + 1, earliest)   # the oldest of the newest retain_min
    gone: list[str] = []
    if earliest < min(end, by_max):
        gone.append(f"{_span(earliest, min(end, by_max) - 1)}: more than {lim.retain_max} newer "
                    f"snapshot(s) ({lim.max_name} {lim.retain_max})")
    if max(earliest, by_max) < end:
        gone.append(f"{_span(max(earliest, by_max), end - 1)}: {lim.time_text}")
    kept: list[str] = []
    young = first_young(max(end, by_max), by_min, time_of, lim.older_than_millis)
    if young < by_min:
        kept.append(f"{_span(young, by_min - 1)}: {lim.young_text}")
    if by_min <= latest:
        kept.append(f"{_span(max(by_min, end), latest)}: the newest {lim.retain_min} are always kept "
                    f"({lim.min_name} {lim.retain_min})")
    return tuple(gone), tuple(kept)


def first_young(lo: int, hi: int, time_of: Callable[[int], Optional[int]], cutoff_millis: int) -> int:
    """The first id in ``[lo, hi)`` committed at or after ``cutoff_millis`` (``hi`` if none), by
    bisection: commit times grow with ids, so a few snapshot reads at any backlog."""
    while lo < hi:
        mid = (lo + hi) // 2
        t = time_of(mid)
        if t is not None and t >= cutoff_millis:
            hi = mid
        else:
            lo = mid + 1
    return lo
