"""What a run ingests: the units of landing data (a day, or an hour of a day) and the identity
each unit is staged and committed under, the same for the ingest job and the ingest DAG, so
that both agree on what is loaded and a re-run never loads a unit twice."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Optional

from lakeformat.table.staging import identifier_for
from lakeformat.pipeline.config import PipelineConfigError, TableSpec

MAX_BACKFILL_UNITS = 1000   # a typo in a date range should not start years of Spark jobs


@dataclass(frozen=True)
class IngestUnit:
    """One slice of landing data one Spark ingest job stages: a day, or an hour of a day."""
    date: str                      # YYYY-MM-DD
    hour: Optional[int] = None

    @property
    def label(self) -> str:
        return self.date if self.hour is None else f"{self.date}T{self.hour:02d}"

    def job_args(self) -> list[str]:
        return ["--date", self.date] + ([] if self.hour is None else ["--hour", str(self.hour)])


def _day(value: Any, what: str) -> dt.date:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(str(value).strip())
    except ValueError:
        raise PipelineConfigError(f"{what} {value!r} is not a date like 2024-06-01") from None


def ingest_units(spec: TableSpec, logical_date: Optional[dt.datetime],
                 start: Any = None, end: Any = None) -> list[IngestUnit]:
    """The units one run ingests. With ``start`` (and optionally ``end``, inclusive; it
    defaults to ``start``) every day, or every hour of every day for hourly tables, of the
    range; else the unit of the logical date (its day, or its hour)."""
    if start in (None, "") and end not in (None, ""):
        raise PipelineConfigError(f"backfill of {spec.name}: 'end' {end!r} given without 'start'")
    if start in (None, ""):
        if logical_date is None:
            raise PipelineConfigError(f"run of {spec.name} has no logical date: give 'start' and 'end'")
        d = logical_date.date().isoformat()
        return [IngestUnit(d, logical_date.hour if spec.hourly else None)]
    first = _day(start, f"backfill of {spec.name}: 'start'")
    last = _day(end, f"backfill of {spec.name}: 'end'") if end not in (None, "") else first
    if last < first:
        raise PipelineConfigError(f"backfill of {spec.name}: 'end' {last} is before 'start' {first}")
    days = [first + dt.timedelta(days=i) for i in range((last - first).days + 1)]
    units = [IngestUnit(d.isoformat(), h) for d in days for h in (range(24) if spec.hourly else [None])]
    if len(units) > MAX_BACKFILL_UNITS:
        raise PipelineConfigError(f"backfill of {spec.name} from {first} to {last} is {len(units)} runs "
                                  f"of the ingest job; split it (at most {MAX_BACKFILL_UNITS} at once)")
    return units


def stage_id_for(spec: TableSpec, unit: IngestUnit) -> str:
    """The stage id of one unit of a table, for the job and the DAG alike: the same for every
    run and retry of that unit, so a new attempt replaces the leftovers of an old one, and the
    stage's published marker tells every later run that the unit is loaded."""
    return f"ingest-{spec.name}-{unit.label.replace(':', '')}"


def ingest_identity(spec: TableSpec, unit: IngestUnit) -> tuple[str, int]:
    """(commit user, commit identifier) of a unit's commit: what makes it exactly-once."""
    parts = ("ingest", spec.name, unit.date) + (() if unit.hour is None else (f"{unit.hour:02d}",))
    return f"lakeformat-ingest-{spec.name}", identifier_for(*parts)

