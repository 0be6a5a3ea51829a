"""Waiting for late landing data, before any Spark work (the ingest DAG's ``landing`` task).

A scheduled run starts when its day (or hour) ends, and the upstream system may drop the
landing files a little later: the run waits for them, up to ``pipeline.landing.wait_timeout``,
looking every ``poke_interval`` (in Airflow's triggerer: a waiting run holds no worker slot).
Manual runs and backfills are for data that should be there: they look once and go on at once,
unless the run's ``wait_for_landing`` param asks them to wait as a scheduled run does. When the
wait ends (or there is none) and no unit of the run has landed, the run is skipped with the
reason; units that did land are ingested, the others left out with the reason by ``plan``.

Whether a unit has landed is :func:`lakeformat.pipeline.wap.landing_missing`, the check ``plan``
makes. No Airflow here.
"""
from __future__ import annotations

import datetime as dt
from typing import Any, Optional
from collections.abc import Mapping, Sequence

from lakeformat.format.human import human_duration
from lakeformat.pipeline.config import LandingWait, TableSpec
from lakeformat.pipeline.units import IngestUnit, ingest_units
from lakeformat.pipeline.wap import landing_missing

WAIT_PARAM = "wait_for_landing"   # the ingest DAG's param: a manual run or backfill waits too
# "FIRST..LAST": the only days with landing data, the ingest DAGs' start and end dates
# (``make airflow`` sets it from its demo data; see ``dags.ingest_dag_args``)
LANDING_DAYS_ENV = "LAKEFORMAT_LANDING_DAYS"


def run_units(spec: TableSpec, logical_date: Optional[dt.datetime], run_after: dt.datetime) -> list[IngestUnit]:
    """The unit of a DAG run: its logical date's (one run per day or hour, backfills included);
    a manual run without a logical date (a Trigger with default parameters) takes the unit of
    the time it was triggered."""
    return ingest_units(spec, logical_date or run_after)


def missing(spec: TableSpec, units: Sequence[IngestUnit], landing_root: str,
            options: Optional[Mapping[str, str]] = None) -> list[str]:
    """Why each unit of ``units`` that has not landed cannot be ingested yet (empty: all landed);
    ``options``: the warehouse's storage options, which an object-store landing root shares."""
    return [why for u in units if (why := landing_missing(spec, u, landing_root, options))]


def waits(run_type: str, asked: Any, settings: LandingWait) -> bool:
    """Whether a run of ``run_type`` waits for missing landing data: scheduled runs do, manual
    runs and backfills when ``asked`` (their ``wait_for_landing`` param); none when the
    configured wait is 0."""
    return settings.wait_timeout > dt.timedelta(0) and (run_type == "scheduled" or asked is True)


def next_look(now: dt.datetime, deadline: dt.datetime, poke_interval: float) -> Optional[float]:
    """Seconds until the next look, or None when the deadline has passed (the last look was made)."""
    left = (deadline - now).total_seconds()
    return None if left <= 0 else min(poke_interval, left)


def skip_reason(missing_units: Sequence[str], total: int, waited: Optional[dt.timedelta],
                settings: LandingWait) -> Optional[str]:
    """Why the whole run is skipped (every unit is missing), or None when at least one unit
    landed (the run ingests what landed). ``waited``: how long the run waited, None if it did
    not wait at all."""
    if not missing_units or len(missing_units) < total:
        return None
    if waited is not None:
        why = f"after waiting {human_duration(waited)} (pipeline.landing.wait_timeout)"
    elif settings.wait_timeout <= dt.timedelta(0):
        why = "without waiting (pipeline.landing.wait_timeout is 0)"
    else:
        why = (f"without waiting: manual runs and backfills do not wait for landing data unless their "
               f"'{WAIT_PARAM}' param is true (then up to {human_duration(settings.wait_timeout)})")
    return f"no landing data for this run {why}: " + "; ".join(missing_units)
