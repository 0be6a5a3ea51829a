"""The steps of write-audit-publish around a Spark ingest job, as the ingest DAG runs them.

The Spark job writes the files and stages the commit (``jobs/ingest.py --stage ID``); then:

- ``clear_leftover`` before a unit is staged again: a pending stage with the same id is what an
  earlier, failed attempt left. If its (commit user, identifier) is committed already (a crash
  after the commit), publishing finishes it without committing again; otherwise it is discarded.
- ``audit_stage`` runs the quality expectations on the staged rows and records the result beside
  the stage (commit/stage_log.py, shown on the Lakehouse page); a failed audit discards the
  stage, so nothing of it becomes visible and no file is left behind.
- publishing is ``staging.publish``, exactly once per (commit user, identifier).

No Airflow here: the DAG wraps these in tasks, tests call them directly.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Optional, Sequence

from lakeformat.commit import stage_log, staging
from lakeformat.pipeline.quality import AuditReport, Expectation, audit

log = logging.getLogger(__name__)


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
        stage_log.record_audit(table, stage_id, outcome.as_dict())
        return outcome
    # recorded before the discard: the failing expectations stay readable (the Lakehouse page)
    stage_log.record_audit(table, stage_id, AuditOutcome(report, None).as_dict())
    n = staging.discard(table, stage_id)
    log.warning("%s\nstage %s discarded (%d files deleted); the table is unchanged",
                report.summary(), stage_id, n)
    outcome = AuditOutcome(report, n)
    stage_log.record_audit(table, stage_id, outcome.as_dict())
    return outcome
