"""The time of a partition, read from its values as Paimon reads it.

``partition.timestamp-pattern`` builds a text from the partition values (``$dt $hour:00:00``;
default: the first partition key's value) and ``partition.timestamp-formatter`` parses it with a
Java ``DateTimeFormatter`` pattern (``yyyyMMdd``; default: ``yyyy-M-d[ H:m:s[.SSS]]``).

Java patterns are compiled here into regular expressions rather than mapped onto ``strptime``:
Java's widths are exact (``MM`` takes two digits where ``%m`` takes one or two), its letters are
reserved (literal text is quoted: ``yyyy-MM-dd'T'HH``), and a pattern without a time of day
parses at midnight. Patterns that cannot make a date (no year, month or day) are rejected up
front instead of silently never matching, as they would in Paimon.
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Optional
from collections.abc import Sequence

from lakeformat.errors import OptionError

_SHORT_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_LONG_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
                "September", "October", "November", "December")
_NUMERIC = {"d": "day", "H": "hour", "k": "hour24", "K": "hour11", "h": "hour12", "m": "minute", "s": "second"}
_SUPPORTED = "y u M L d H k K h m s S a"


@dataclass(frozen=True)
class TimePattern:
    """A compiled Java ``DateTimeFormatter`` pattern."""

    pattern: str
    regex: re.Pattern
    groups: tuple[str, ...]   # field of each capture group, in order

    def parse(self, text: str) -> dt.datetime:
        """The local date-time ``text`` denotes; ValueError if it does not match the pattern."""
        m = self.regex.fullmatch(text)
        if m is None:
            raise ValueError(f"{text!r} does not match the pattern {self.pattern!r}")
        return _resolve(dict(zip(self.groups, m.groups())), text)


@lru_cache(maxsize=64)
def compile_pattern(pattern: str) -> TimePattern:
    """Compile a Java date-time pattern; OptionError naming the pattern if it is unsupported."""
    def bad(why: str) -> OptionError:
        return OptionError(f"partition.timestamp-formatter {pattern!r}: {why}")

    if not isinstance(pattern, str) or not pattern:
        raise bad("must be a non-empty Java date-time pattern such as yyyy-MM-dd")
    parts: list[str] = []
    groups: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "'":
            end = i + 1
            text = []
            while True:
                if end >= n:
                    raise bad("unclosed quote")
                if pattern[end] == "'":
                    if end + 1 < n and pattern[end + 1] == "'":   # '' inside quotes is one quote
                        text.append("'")
                        end += 2
                        continue
                    break
                text.append(pattern[end])
                end += 1
            parts.append(re.escape("".join(text) if text or end > i + 1 else "'"))
            i = end + 1
            continue
        if c in "[]{}#":
            raise bad(f"{c!r} (optional sections and reserved characters) is not supported")
        if not c.isalpha():
            parts.append(re.escape(c))
            i += 1
            continue
        count = 1
        while i + count < n and pattern[i + count] == c:
            count += 1
        regex, field = _letter(c, count, bad)
        parts.append(f"({regex})")
        groups.append(field)
        i += count
    fields = set(groups)
    for need, what in (({"year", "year2"}, "a year (yyyy)"), ({"month", "month_text"}, "a month (MM)"),
                       ({"day"}, "a day of month (dd)")):
        if not fields & need:
            raise bad(f"has no {what}: a partition time needs a date")
    if fields & {"hour12", "hour11"} and "ampm" not in fields:
        raise bad("'h' and 'K' are hours of AM/PM and need the marker 'a'; use 'HH' for 0-23")
    if len(groups) != len(fields):
        raise bad("a field appears twice")
    return TimePattern(pattern, re.compile("".join(parts)), tuple(groups))


def _letter(c: str, count: int, bad) -> tuple[str, str]:
    if c in "yu":
        return (r"\d{2}", "year2") if count == 2 else (rf"\d{{{count},9}}", "year")
    if c in "ML":
        if count <= 2:
            return (r"\d{1,2}" if count == 1 else r"\d{2}"), "month"
        if count in (3, 4):
            names = _SHORT_MONTHS if count == 3 else _LONG_MONTHS
            return "|".join(names), "month_text"
        raise bad(f"'{c * count}' (narrow month) is not supported")
    if c in _NUMERIC:
        if count > 2:
            raise bad(f"'{c * count}' is too wide (at most two letters)")
        return (r"\d{1,2}" if count == 1 else r"\d{2}"), _NUMERIC[c]
    if c == "S":
        return rf"\d{{{count}}}", "fraction"
    if c == "a" and count == 1:
        return "AM|PM", "ampm"
    raise bad(f"pattern letter '{c * count}' is not supported (supported: {_SUPPORTED}; quote literal "
              "text like 'T')")


def _resolve(f: dict[str, str], text: str) -> dt.datetime:
    year = int(f["year"]) if "year" in f else 2000 + int(f["year2"])   # Java's two-digit base year
    month = int(f["month"]) if "month" in f else (
        _SHORT_MONTHS.index(f["month_text"]) + 1 if f["month_text"] in _SHORT_MONTHS
        else _LONG_MONTHS.index(f["month_text"]) + 1)
    hour = 0
    if "hour" in f:
        hour = int(f["hour"])
    elif "hour24" in f:   # k: 1..24, 24 is midnight
        hour = int(f["hour24"])
        if not 1 <= hour <= 24:
            raise ValueError(f"{text!r}: clock hour {hour} is outside 1..24")
        hour %= 24
    elif "hour12" in f or "hour11" in f:
        hour = int(f.get("hour12") or f["hour11"])
        if "hour12" in f:
            if not 1 <= hour <= 12:
                raise ValueError(f"{text!r}: clock hour {hour} is outside 1..12")
            hour %= 12
        elif not 0 <= hour <= 11:
            raise ValueError(f"{text!r}: hour {hour} is outside 0..11")
        hour += 12 if f["ampm"] == "PM" else 0
    micros = int(f["fraction"].ljust(6, "0")[:6]) if "fraction" in f else 0
    return dt.datetime(year, month, int(f["day"]), hour, int(f.get("minute", 0)), int(f.get("second", 0)), micros)


# Paimon's default when no formatter is set: yyyy-M-d, optionally followed by " H:m:s[.fraction]".
_DEFAULT = re.compile(r"(\d{1,10})-(\d{1,2})-(\d{1,2})(?: (\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,9}))?)?")


def parse_default(text: str) -> dt.datetime:
    m = _DEFAULT.fullmatch(text)
    if m is None:
        raise ValueError(f"{text!r} is not a date (yyyy-MM-dd) or a timestamp (yyyy-MM-dd HH:mm:ss); "
                         "set partition.timestamp-formatter for other layouts")
    y, mo, d, h, mi, s, frac = m.groups()
    micros = int(frac.ljust(6, "0")[:6]) if frac else 0
    return dt.datetime(int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(s or 0), micros)


_REFERENCE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def check_timestamp_pattern(pattern: str, keys: Sequence[str]) -> None:
    """OptionError unless every ``$name`` in ``pattern`` is a partition key."""
    rest = pattern
    for k in sorted(keys, key=len, reverse=True):
        rest = rest.replace("$" + k, "")
    unknown = _REFERENCE.findall(rest)
    if unknown or "$" in rest:
        raise OptionError(f"partition.timestamp-pattern {pattern!r} refers to "
                          f"{', '.join('$' + u for u in unknown) or 'a $ that names nothing'}, "
                          f"which is not a partition key (keys: {list(keys)})")


def value_text(value: Any) -> str:
    """A partition value as text for the timestamp pattern: strings as they are, dates and
    timestamps in ISO form (Paimon would give a DATE's epoch day, which no formatter parses)."""
    if value is None:
        raise ValueError("the partition value is null")
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def partition_time(keys: Sequence[str], values: Sequence[Any], pattern: Optional[str] = None,
                   formatter: Optional[str] = None) -> dt.datetime:
    """The local date-time of one partition; ValueError if its values do not make one."""
    if pattern is None:
        text = value_text(values[0])
    else:
        text = pattern
        # longest keys first, so that $dt never eats the head of $dt_hour
        for k, v in sorted(zip(keys, values), key=lambda kv: len(kv[0]), reverse=True):
            if "$" + k in text:
                text = text.replace("$" + k, value_text(v))
    return compile_pattern(formatter).parse(text) if formatter else parse_default(text)
