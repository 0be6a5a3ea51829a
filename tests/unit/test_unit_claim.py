"""One run at a time per unit (issue 16): the claim beside a unit's stage, and the plan of a
DAG run, which leaves out units with no landing folder or claimed by another active run, before
any Spark work. Real tables on disk; no Airflow (``active`` stands for asking it)."""
import datetime as dt
import os

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.table import staging
from lakeformat.pipeline import unit_claim, wap
from lakeformat.pipeline.config import load_config
from lakeformat.pipeline.units import IngestUnit, ingest_identity, stage_id_for
from tests.project import CONFIG

SPEC = load_config(str(CONFIG)).table("user_behavior")
DAY = "2024-06-01"
SID = stage_id_for(SPEC, IngestUnit(DAY))


@pytest.fixture
def cat(tmp_path):
    return lf.Catalog(str(tmp_path / "wh"))


@pytest.fixture
def landing(tmp_path):
    root = tmp_path / "landing"
    (root / SPEC.landing_path.format(ds=DAY)).mkdir(parents=True)
    return str(root)


def plan(cat, landing, owner, active=lambda _: True, day=DAY):
    return wap.plan_units(cat, SPEC, [IngestUnit(day)], landing_root=landing, owner=owner, active=active)


def test_claim_is_held_until_released_or_its_run_ends(cat):
    t = wap.create_table(cat, SPEC)
    assert unit_claim.claim(t, SID, "dag/backfill__1", lambda _: True) is None
    assert unit_claim.claim(t, SID, "dag/backfill__1", lambda _: True) is None    # a retry of the same run
    why = unit_claim.claim(t, SID, "dag/manual__2", lambda owner: owner == "dag/backfill__1")
    assert why.startswith("run dag/backfill__1 is loading it")
    unit_claim.release(t, SID, "dag/manual__2")                                 # not its claim: kept
    assert unit_claim.holder(t, SID) == "dag/backfill__1"
    assert unit_claim.claim(t, SID, "dag/manual__2", lambda _: False) is None   # the holder's run ended
    assert unit_claim.holder(t, SID) == "dag/manual__2"
    unit_claim.release(t, SID, "dag/manual__2")
    assert unit_claim.holder(t, SID) is None
    assert [s.stage_id for s in staging.list_staged(t)] == []   # a claim is not a stage


def test_a_unit_without_landing_data_is_left_out_before_anything_is_created(cat, tmp_path):
    units, skipped = plan(cat, str(tmp_path / "nothing-landed"), "dag/scheduled__1")
    assert units == []
    assert len(skipped) == 1 and f"{DAY} of {SPEC.identifier}: no landing folder" in skipped[0]
    assert not cat.table_exists(SPEC.identifier)


def test_a_unit_another_active_run_is_loading_is_left_out_and_its_stage_kept(cat, landing):
    (first,), skipped = plan(cat, landing, "dag/backfill__1")
    assert skipped == [] and first["stage_id"] == SID
    t = cat.get_table(SPEC.identifier)
    user, ident = ingest_identity(SPEC, IngestUnit(DAY))
    staging.stage(t, [], SID, commit_user=user, identifier=ident)   # the first run's job staged the day
    units, skipped = plan(cat, landing, "dag/manual__2", active=lambda o: o == "dag/backfill__1")
    assert units == []
    assert skipped == [f"{DAY} of {SPEC.identifier}: run dag/backfill__1 is loading it (stage {SID}): "
                       "not staged again by this run"]
    assert [s.stage_id for s in staging.list_staged(t)] == [SID]   # not discarded as a leftover
    # the first run publishes and lets go: a later run's plan finds the day published
    with pytest.raises(wap.UnitSkipped):   # an empty stage makes no snapshot
        wap.publish_unit(t, SPEC, SID, DAY, "dag/backfill__1")
    assert unit_claim.holder(t, SID) is None
    units, skipped = plan(cat, landing, "dag/manual__3")
    assert units == [] and skipped == [f"{DAY} of {SPEC.identifier} is already published as stage {SID} "
                                       "(it held no changes): not ingested again"]
    assert unit_claim.holder(t, SID) is None   # nothing claimed for a loaded day


def _rows(n: int, day: str) -> pa.Table:
    schema = SPEC.arrow_schema()
    rows = {f.name: [None] * n for f in schema}
    rows.update(user_id=list(range(n)), item_id=[7] * n, behavior=["buy"] * n, dt=[day] * n)
    return pa.Table.from_pydict(rows, schema=schema)


def _stage_rows(t, n: int) -> None:
    """What the Spark job does for DAY: write ``n`` rows and stage them under the unit's id."""
    user, ident = ingest_identity(SPEC, IngestUnit(DAY))
    w = t.new_write(user)
    with w:
        w.write(_rows(n, DAY))
        staging.stage(t, w.prepare_commit(), SID, commit_user=user, identifier=ident)


def test_a_published_unit_is_left_out_by_its_snapshot_before_any_spark_work(cat, landing):
    plan(cat, landing, "dag/r1")
    t = cat.get_table(SPEC.identifier)
    _stage_rows(t, 5)
    published = wap.publish_unit(t, SPEC, SID, DAY, "dag/r1")["snapshot_id"]
    t.write(_rows(2, "2024-06-02"))   # another commit after it
    for after in ("retained", "expired"):
        units, skipped = plan(cat, landing, f"dag/rerun-{after}")
        assert units == []
        why = f"{DAY} of {SPEC.identifier} is already published as snapshot {published}"
        assert skipped == [why + (", expired since" if after == "expired" else "") + ": not ingested again"]
        assert unit_claim.holder(t, SID) is None and staging.list_staged(t) == []
        t.expire_snapshots(retain_min=1, retain_max=1, older_than=dt.timedelta(0))   # the marker outlives it
    assert [s.id for s in t.snapshots()] != [published]


def test_the_leftover_of_an_ended_run_is_taken_over(cat, landing):
    plan(cat, landing, "dag/backfill__1")
    t = cat.get_table(SPEC.identifier)
    staging.stage(t, [], SID, commit_user="someone", identifier=1)
    (_unit,), skipped = plan(cat, landing, "dag/manual__2", active=lambda _: False)
    assert skipped == [] and unit_claim.holder(t, SID) == "dag/manual__2"
    assert staging.list_staged(t) == []   # the ended run's stage was cleared


def test_a_failed_audit_or_a_loaded_unit_releases_the_claim(cat, landing):
    plan(cat, landing, "dag/r1")
    t = cat.get_table(SPEC.identifier)
    user, ident = ingest_identity(SPEC, IngestUnit(DAY))
    with pytest.raises(lf.LakeformatError):   # the job staged nothing and the day is not loaded
        wap.audit_unit(t, SPEC, SID, DAY, {"user": user, "identifier": str(ident)}, "dag/r1")
    assert unit_claim.holder(t, SID) == "dag/r1"   # a failure keeps it until the run ends
    staging.stage(t, [], SID, commit_user=user, identifier=ident)
    staging.publish(t, SID)
    with pytest.raises(wap.UnitSkipped):
        wap.audit_unit(t, SPEC, SID, DAY, {"user": user, "identifier": str(ident)}, "dag/r1")
    assert unit_claim.holder(t, SID) is None
    assert os.path.isdir(t.path)
