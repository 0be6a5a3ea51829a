"""What became of each staged commit (write-audit-publish), for people: pending, published or
discarded, and the result of its audit.

The audit of a stage is recorded beside it as ``staged/<stage_id>.audit`` (JSON: the audit's
verdict, summary and failed expectations, and when it ran), written where the audit runs
(``lakeformat.pipeline.wap.audit_stage``) before a failed stage is discarded, so a red run's
failing expectations stay readable after its files are gone. A later audit of the same stage
id (a re-run) replaces it. Paimon readers never look in ``staged/``; orphan cleaning does not
list it.
"""
from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import dataclass
from typing import Optional

from lakeformat.commit import staging
from lakeformat.errors import CorruptFileError
from lakeformat.format.names import validate_name
from lakeformat.io.fileio import join
from lakeformat.io.table_context import TableContext

AUDIT_SUFFIX = ".audit"


@dataclass(frozen=True)
class StageRecord:
    stage_id: str
    state: str                                  # "pending", "published" or "discarded"
    create_time: Optional[dt.datetime] = None   # UTC, while the stage file exists
    rows: Optional[int] = None
    files: Optional[int] = None
    snapshot_id: Optional[int] = None           # published as
    publish_time: Optional[dt.datetime] = None
    audit: Optional[dict] = None                # {"success", "summary", "failed": [...], ...}
    audit_time: Optional[dt.datetime] = None

    @property
    def audit_passed(self) -> Optional[bool]:
        return None if self.audit is None else bool(self.audit.get("success"))


def record_audit(ctx: TableContext, stage_id: str, result: dict) -> None:
    """Keep ``result`` (a JSON-safe audit outcome) as the audit of ``stage_id``."""
    ctx.io.mkdirs(join(ctx.path, staging.STAGED_DIR))
    ctx.io.write_bytes(join(ctx.path, staging.STAGED_DIR, validate_name(stage_id, "stage") + AUDIT_SUFFIX), json.dumps(
        {"stageId": stage_id, "auditTimeMillis": int(time.time() * 1000), "audit": result}).encode())


def _utc(millis) -> Optional[dt.datetime]:
    return None if millis is None else dt.datetime.fromtimestamp(millis / 1000, dt.UTC)


def _json(ctx: TableContext, name: str) -> Optional[dict]:
    path = join(ctx.path, staging.STAGED_DIR, name)
    try:
        d = json.loads(ctx.io.read_bytes(path).decode())
    except FileNotFoundError:
        return None
    except (ValueError, UnicodeDecodeError) as e:
        raise CorruptFileError(path, f"cannot read: {e}") from None
    if not isinstance(d, dict):
        raise CorruptFileError(path, "not a JSON object")
    return d


def _rows(pending, marker: Optional[dict], audit: Optional[dict]) -> Optional[int]:
    """The stage's row count: from the stage while it is pending, then from its published marker
    (``rowCount``), else from its audit, which counted the staged rows (a discarded stage, or
    one published before markers kept the count)."""
    if pending is not None:
        return pending.row_count
    if marker and marker.get("rowCount") is not None:
        return int(marker["rowCount"])
    rows = ((audit or {}).get("audit") or {}).get("rows")
    return None if rows is None else int(rows)


def stage_history(ctx: TableContext) -> list[StageRecord]:
    """Every stage the table's ``staged/`` folder knows of, newest first: pending stages, the
    published ones (their markers) and the discarded ones whose audit was recorded."""
    names = [n for n in ctx.io.list_names(join(ctx.path, staging.STAGED_DIR)) if not n.startswith(".")]
    ids = {n[:-len(suffix)] for n in names
           for suffix in (staging.STAGE_SUFFIX, staging.PUBLISHED_SUFFIX, AUDIT_SUFFIX) if n.endswith(suffix)}
    pending = {s.stage_id: s for s in staging.list_staged(ctx)}
    out = []
    for sid in ids:
        marker = _json(ctx, sid + staging.PUBLISHED_SUFFIX) if sid + staging.PUBLISHED_SUFFIX in names else None
        audit = _json(ctx, sid + AUDIT_SUFFIX) if sid + AUDIT_SUFFIX in names else None
        s = pending.get(sid)
        state = "pending" if s is not None else "published" if marker is not None else "discarded"
        out.append(StageRecord(
            sid, state, s.create_time if s else None, _rows(s, marker, audit),
            len(s.file_names()) if s else None,
            marker.get("snapshotId") if marker else None, _utc(marker.get("publishTimeMillis")) if marker else None,
            audit.get("audit") if audit else None, _utc(audit.get("auditTimeMillis")) if audit else None))
    last = dt.datetime.min.replace(tzinfo=dt.UTC)
    return sorted(out, key=lambda r: (max(t or last for t in (r.create_time, r.publish_time, r.audit_time)),
                                      r.stage_id), reverse=True)


__all__ = ["StageRecord", "record_audit", "stage_history", "AUDIT_SUFFIX"]
