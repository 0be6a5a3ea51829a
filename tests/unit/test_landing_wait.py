"""The pure parts of waiting for late landing data (lakeformat/pipeline/landing_wait.py): which
runs wait, when the next look is, and the reason a run is skipped with. The waits themselves run
through Airflow in tests/airflow/test_landing_check.py."""
from __future__ import annotations

import datetime as dt

import pytest

from lakeformat.pipeline import landing_wait
from lakeformat.pipeline.config import LandingWait, load_config
from lakeformat.pipeline.units import IngestUnit
from tests.project import CONFIG

SIX_HOURS = LandingWait()
NEVER = LandingWait(wait_timeout=dt.timedelta(0))
T0 = dt.datetime(2024, 6, 2, tzinfo=dt.UTC)


@pytest.mark.parametrize("run_type, asked, settings, expected", [
    ("scheduled", False, SIX_HOURS, True),    # the data of the day that just ended may be late
    ("manual", False, SIX_HOURS, False),      # a Trigger, or a day re-run by hand: look once
    ("backfill", None, SIX_HOURS, False),     # Airflow's backfill of past days: look once
    ("manual", True, SIX_HOURS, True),        # ... unless the run's wait_for_landing param says so
    ("backfill", True, SIX_HOURS, True),
    ("manual", "true", SIX_HOURS, False),     # only a real boolean (the Param is typed) asks
    ("scheduled", False, NEVER, False),       # wait_timeout 0: nobody waits
    ("manual", True, NEVER, False),
])
def test_which_runs_wait(run_type, asked, settings, expected):
    assert landing_wait.waits(run_type, asked, settings) is expected


def test_the_triggerer_looks_every_poke_interval_and_last_at_the_deadline():
    deadline = T0 + dt.timedelta(minutes=12)
    assert landing_wait.next_look(T0, deadline, 300.0) == 300.0
    assert landing_wait.next_look(T0 + dt.timedelta(minutes=10), deadline, 300.0) == 120.0   # not past it
    assert landing_wait.next_look(deadline, deadline, 300.0) is None
    assert landing_wait.next_look(deadline + dt.timedelta(seconds=1), deadline, 300.0) is None


def test_a_run_is_skipped_only_when_none_of_its_units_landed():
    gone = ["2024-06-01 of demo.t: no landing folder /l/t/dt=2024-06-01 (yet)"]
    assert landing_wait.skip_reason([], 1, None, SIX_HOURS) is None
    assert landing_wait.skip_reason(gone, 2, None, SIX_HOURS) is None   # the other day landed: ingest it
    waited = landing_wait.skip_reason(gone, 1, dt.timedelta(hours=6), SIX_HOURS)
    assert waited == ("no landing data for this run after waiting 6 h (pipeline.landing.wait_timeout): "
                      + gone[0])
    manual = landing_wait.skip_reason(gone, 1, None, SIX_HOURS)
    assert "without waiting" in manual and "'wait_for_landing' param is true (then up to 6 h)" in manual
    assert "wait_timeout is 0" in landing_wait.skip_reason(gone, 1, None, NEVER)


def test_missing_units_are_named_with_the_plan_tasks_reason(tmp_path):
    spec = load_config(str(CONFIG)).table("user_behavior")
    (tmp_path / "user_behavior" / "dt=2024-06-01").mkdir(parents=True)
    units = [IngestUnit("2024-06-01"), IngestUnit("2024-06-02")]
    (why,) = landing_wait.missing(spec, units, str(tmp_path))
    assert why.startswith(f"2024-06-02 of demo.user_behavior: no landing folder {tmp_path}/user_behavior/dt=2024-06-02")


def test_the_units_of_a_run():
    spec = load_config(str(CONFIG)).table("user_behavior")
    assert landing_wait.run_units(spec, T0, T0) == [IngestUnit("2024-06-02")]
    assert landing_wait.run_units(spec, None, T0) == [IngestUnit("2024-06-02")]   # a Trigger without a date
