"""Sizes and durations as people read them: one formatter for the CLI, the Lakehouse page and
the Airflow operators' logs (``1.2 MiB``, ``3 min 20 s``), so the same file size never reads
differently in two places. Binary units, as Paimon's MemorySize parses them (``mb`` = MiB).
"""
from __future__ import annotations

import datetime as dt
from typing import Union

_SIZE_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def human_size(n: int | float | None) -> str:
    """``512 B``, ``1.2 MiB``, ``12 GiB``: one decimal below 10 of a unit, none from 10 on."""
    if n is None:
        return ""
    n = float(n)
    sign, n = ("-" if n < 0 else ""), abs(n)
    if n < 1024:
        return f"{sign}{n:.0f} B"
    for unit in _SIZE_UNITS:
        n /= 1024
        if round(n, 1) < 1024 or unit == _SIZE_UNITS[-1]:
            # 9.96 MiB rounds to "10.0": print it as "10" like every other value from 10 on
            return f"{sign}{n:.1f} {unit}" if round(n, 1) < 10 else f"{sign}{n:.0f} {unit}"
    raise AssertionError("unreachable")


_DURATION_STEPS = ((86_400, "d"), (3_600, "h"), (60, "min"), (1, "s"))


def human_duration(d: Union[dt.timedelta, int, float, None]) -> str:
    """``850 ms``, ``4.2 s``, ``3 min 20 s``, ``2 h 5 min``, ``3 d 4 h``: the two largest units
    (seconds or a ``timedelta``); the unit names are the ones Paimon's durations parse."""
    if d is None:
        return ""
    s = d.total_seconds() if isinstance(d, dt.timedelta) else float(d)
    sign, s = ("-" if s < 0 else ""), abs(s)
    if s < 1:
        return f"{sign}{s * 1000:.0f} ms"
    if s < 10:
        return f"{sign}{s:.1f} s"
    whole, parts = round(s), []
    for size, unit in _DURATION_STEPS:   # adjacent units only: "2 h", not "2 h 0 min 5 s"
        if whole >= size:
            count, whole = divmod(whole, size)
            parts.append(f"{count} {unit}")
        elif parts:
            break
        if len(parts) == 2:
            break
    return sign + " ".join(parts)


__all__ = ["human_size", "human_duration"]
