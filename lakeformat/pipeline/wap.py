"""The steps of write-audit-publish around a Spark ingest job, and the rules that say when a
unit of work is skipped, for the ingest job and the ingest DAG alike.

The Spark job writes the files and stages the commit (``jobs/ingest.py --stage ID``); then:

- ``loaded`` says whether a unit is in the table already: its commit among the retained
  snapshots, or its stage published (the marker :mod:`lakeformat.commit.staging` keeps after
  the snapshot has expired). A loaded unit is never staged or published again.
- ``clear_leftover`` before a unit is staged again: a pending stage with the same id is what an
  earlier, failed attempt left. If its (commit user, identifier) is committed already (a crash
  after the commit), publishing finishes it without committing again; otherwise it is discarded.
- ``plan_units`` (the DAG's first task) lists the units of a run with their job arguments,
  before any Spark work: a unit that is loaded already, whose landing folder is not there, or
  that another active run is loading (:mod:`.unit_claim`), is left out with the reason;
  ``audit_unit`` runs the quality expectations on the staged rows and records the result
  beside the stage (commit/stage_log.py, shown on the Lakehouse page); a failed audit
  discards the stage, so nothing of it becomes visible and no file is left behind;
  ``publish_unit`` commits exactly once per (commit user, identifier). A unit with
  nothing to do raises ``UnitSkipped``.

No Airflow here: the DAG maps ``UnitSkipped`` to a skipped task and other errors to a failed
one; tests call these directly.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Optional
from collections.abc import Callable, Mapping, Sequence

from lakeformat.commit import stage_log
from lakeformat.table import staging
from lakeformat.errors import LakeformatError
from lakeformat.pipeline import landing_files, unit_claim
from lakeformat.pipeline.config import TableSpec
from lakeformat.pipeline.units import IngestUnit, ingest_identity, stage_id_for
from lakeformat.pipeline.quality import AuditReport, Expectation, audit

log = logging.getLogger(__name__)


class UnitSkipped(LakeformatError):
    """The unit needs no work (it is loaded already); the message says why."""


class AuditFailed(LakeformatError):
    """The staged rows broke a quality rule; the stage was discarded. ``outcome`` has the details."""

    def __init__(self, message: str, outcome: AuditOutcome):
        super().__init__(message)
        self.outcome = outcome


@dataclass(frozen=True)
class AuditOutcome:
    report: AuditReport
    discarded_files: Optional[int]   # files deleted because the audit failed; None if it passed

    def as_dict(self) -> dict:
        """JSON-safe, for XCom: the verdict, the summary and one entry per failed expectation."""
        r = self.report
        return {"subject": r.subject, "success": r.success, "rows": r.rows, "summary": r.summary(),
                "discarded_files": self.discarded_files,
                "failed": [{"expectation": o.expectation.describe(), "unexpected": o.unexpected_count,
                            "of": o.element_count, "samples": [_jsonable(v) for v in o.samples],
                            "error": o.error} for o in r.failed]}


def _jsonable(v):
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return None if v != v else v
    return str(v)


def loaded(table, stage_id: str, commit_user: str, identifier: int) -> Optional[str]:
    """Which snapshot holds the unit committed as (``commit_user``, ``identifier``) under
    ``stage_id`` ("snapshot 7", "snapshot 7, expired since"), or None if it is not loaded."""
    done, snap = staging.committed_as(table, stage_id, commit_user, identifier)
    if not done:
        return None
    if snap is not None:
        return f"snapshot {snap.id}"
    published = staging.published_snapshot_id(table, stage_id)
    return (f"snapshot {published}, expired since" if published is not None
            else f"stage {stage_id} (it held no changes)")


def clear_leftover(table, stage_id: str) -> Optional[str]:
    """Make room to stage ``stage_id`` again; returns what was done (None: nothing was there)."""
    pending = {s.stage_id: s for s in staging.list_staged(table)}
    old = pending.get(stage_id)
    if old is None:
        return None
    if staging.find_committed(table, old.commit_user, old.identifier) is not None:
        snap = staging.publish(table, stage_id)   # commits nothing: finishes the earlier publish
        return (f"stage {stage_id} of {table.name} was committed by an earlier attempt"
                f"{f' (snapshot {snap.id})' if snap else ''}; finished its publish")
    n = staging.discard(table, stage_id)
    return f"discarded stage {stage_id} of {table.name} left by an earlier attempt ({n} files)"


def audit_stage(table, stage_id: str, expectations: Sequence[Expectation], subject: str) -> AuditOutcome:
    """Audit the staged rows of ``stage_id``; discard the stage when an expectation fails."""
    rows = staging.read_staged(table, stage_id)
    report = audit(rows, expectations, subject)
    if report.success:
        log.info("%s", report.summary())
        outcome = AuditOutcome(report, None)
        stage_log.record_audit(table.ctx, stage_id, outcome.as_dict())
        return outcome
    # recorded before the discard: the failing expectations stay readable (the Lakehouse page)
    stage_log.record_audit(table.ctx, stage_id, AuditOutcome(report, None).as_dict())
    n = staging.discard(table, stage_id)
    log.warning("%s\nstage %s discarded (%d files deleted); the table is unchanged",
                report.summary(), stage_id, n)
    outcome = AuditOutcome(report, n)
    stage_log.record_audit(table.ctx, stage_id, outcome.as_dict())
    return outcome


def create_table(catalog, spec: TableSpec):
    """The table, created from its config entry when missing."""
    if catalog.table_exists(spec.identifier):
        return catalog.get_table(spec.identifier)
    catalog.create_database(spec.database, ignore_if_exists=True)
    return catalog.create_table(spec.identifier, spec.arrow_schema(), list(spec.partition_keys),
                                list(spec.primary_keys), dict(spec.options), ignore_if_exists=True)


def landing_missing(spec: TableSpec, unit: IngestUnit, landing_root: str,
                    options: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """Why ``unit`` cannot be ingested yet (its landing folder is not there), or None. The root
    is a path or a URI (``s3://bucket/prefix``); ``options``: the warehouse's storage options
    (``s3.endpoint``, credentials), which an object-store landing root shares."""
    folder = spec.landing_dir(landing_root, unit.date, unit.hour)
    if landing_files.folder_present(folder, options):
        return None
    return f"{unit.label} of {spec.identifier}: no landing folder {folder} (yet): not ingested by this run"


def plan_units(catalog, spec: TableSpec, units: Sequence[IngestUnit], *, landing_root: str,
               owner: str, active: Callable[[str], bool]) -> tuple[list[dict], list[str]]:
    """(planned, skipped): of a DAG run's ``units``, those to ingest, each with its stage id,
    commit identity and the job's unit arguments, and why the others are not ingested: loaded
    already (``loaded``: a retained commit or the stage's published marker, read from the table's
    metadata, so a re-run of a loaded day starts no Spark job), no landing folder (looked for
    with the catalog's storage options), or another active run holds the unit (:mod:`.unit_claim`).
    Claims the units for ``owner`` and clears what earlier, ended attempts left staged; creates
    the table when a unit is ingested."""
    out, skipped = [], []
    table = catalog.get_table(spec.identifier) if catalog.table_exists(spec.identifier) else None
    for u in units:
        sid = stage_id_for(spec, u)
        user, identifier = ingest_identity(spec, u)
        done = loaded(table, sid, user, identifier) if table is not None else None
        if done is not None:
            skipped.append(f"{u.label} of {spec.identifier} is already published as {done}: not ingested again")
            continue
        missing = landing_missing(spec, u, landing_root, catalog.options)
        if missing:
            skipped.append(missing)
            continue
        if table is None:
            table = create_table(catalog, spec)
        taken = unit_claim.claim(table, sid, owner, active)
        if taken:
            skipped.append(f"{u.label} of {spec.identifier}: {taken}")
            continue
        left = clear_leftover(table, sid)
        if left:
            log.info("%s", left)
        out.append({"stage_id": sid, "label": u.label, "unit_args": u.job_args(),
                    "commit": {"user": user, "identifier": str(identifier)}})
    return out, skipped


def audit_unit(table, spec: TableSpec, stage_id: str, label: str, commit: dict,
               owner: Optional[str] = None) -> AuditOutcome:
    """Audit the unit's stage. ``UnitSkipped`` when the job staged nothing because the unit is
    loaded; ``AuditFailed`` (stage discarded) when an expectation fails. Either ends ``owner``'s
    claim on the unit."""
    try:
        return _audit_unit(table, spec, stage_id, label, commit)
    except (UnitSkipped, AuditFailed):
        if owner:
            unit_claim.release(table, stage_id, owner)
        raise


def _audit_unit(table, spec: TableSpec, stage_id: str, label: str, commit: dict) -> AuditOutcome:
    if stage_id not in {s.stage_id for s in staging.list_staged(table)}:
        done = loaded(table, stage_id, commit["user"], int(commit["identifier"]))
        if done is not None:
            raise UnitSkipped(f"{label} of {spec.identifier} is already published ({done}): "
                              "nothing staged, nothing to do")
        raise LakeformatError(f"the ingest job staged nothing for {label} of {spec.identifier} "
                              f"(stage {stage_id}); see the log of the stage task")
    outcome = audit_stage(table, stage_id, spec.quality, f"{spec.identifier} {label}")
    if not outcome.report.success:
        raise AuditFailed(f"{outcome.report.summary()}\nStage {stage_id} was discarded "
                          f"({outcome.discarded_files} files deleted): nothing of {label} was published.", outcome)
    return outcome


def publish_unit(table, spec: TableSpec, stage_id: str, label: str, owner: Optional[str] = None) -> dict:
    """Commit the audited stage exactly once; ``UnitSkipped`` when that makes no new snapshot
    (an empty stage, or a unit published before). Ends ``owner``'s claim on the unit."""
    try:
        return _publish_unit(table, spec, stage_id, label)
    finally:
        if owner:
            unit_claim.release(table, stage_id, owner)


def _publish_unit(table, spec: TableSpec, stage_id: str, label: str) -> dict:
    before = table.snapshot_manager.latest_id()
    snap = staging.publish(table, stage_id)
    if snap is None:
        raise UnitSkipped(f"nothing committed for {label} of {spec.identifier}: the stage held no changes, "
                          "or the unit was published before and that snapshot has expired since")
    if before is not None and snap.id <= before:
        raise UnitSkipped(f"{label} of {spec.identifier} was published before as snapshot {snap.id}: "
                          "not committed again")
    log.info("published %s of %s as snapshot %d (%s rows)", label, spec.identifier, snap.id,
             f"{snap.delta_record_count:,}")
    return {"table": spec.identifier, "unit": label, "stage_id": stage_id, "snapshot_id": snap.id,
            "rows": snap.delta_record_count}
