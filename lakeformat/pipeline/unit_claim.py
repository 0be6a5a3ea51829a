"""One run at a time per unit of a table: a claim file beside the unit's stage.

Two DAG runs of the same day (a backfill and a manual trigger at once: Airflow's backfills
ignore ``max_active_runs``) would otherwise stage under the same stage id: the second one
either fails with "stage ... exists already" or discards the first one's stage as a leftover.
Before a run stages a unit it claims it (``staged/<stage_id>.claim``, created only if absent:
``FileIO.try_create``, atomic on local disks and object stores alike). A unit claimed by
another run that is still active is skipped with the reason; a claim whose run has ended
(failed, killed) is taken over, and what that run left staged is cleared as a leftover. The
claim is released when the unit is published, discarded or found loaded.

``active(owner)`` says whether the owner's run is still going (the DAG asks Airflow); no
Airflow here.
"""
from __future__ import annotations

import json
from typing import Optional
from collections.abc import Callable

from lakeformat.table import staging
from lakeformat.format.names import validate_name
from lakeformat.io.fileio import join

CLAIM_SUFFIX = ".claim"


def _path(table, stage_id: str) -> str:
    return join(table.path, staging.STAGED_DIR, validate_name(stage_id, "stage") + CLAIM_SUFFIX)


def holder(table, stage_id: str) -> Optional[str]:
    """The owner holding ``stage_id``'s claim, or None."""
    try:
        return json.loads(table.io.read_bytes(_path(table, stage_id)))["owner"]
    except FileNotFoundError:
        return None


def claim(table, stage_id: str, owner: str, active: Callable[[str], bool]) -> Optional[str]:
    """Claim the unit staged as ``stage_id`` for ``owner`` (a run). None when ``owner`` holds it
    now (claimed, already its own, or taken over from an ended run); else why not: the other
    active run that holds it."""
    path = _path(table, stage_id)
    data = json.dumps({"owner": owner}).encode()
    table.io.mkdirs(join(table.path, staging.STAGED_DIR))
    for _ in range(3):   # a claim released or taken over meanwhile: look again
        if table.io.try_create(path, data):
            return None
        current = holder(table, stage_id)
        if current is None:
            continue
        if current == owner:
            return None
        if active(current):
            return f"run {current} is loading it (stage {stage_id}): not staged again by this run"
        table.io.delete(path)   # its run has ended: take over (a racing taker may win: look again)
    return f"the claim on stage {stage_id} kept changing hands: another run is loading it"


def release(table, stage_id: str, owner: str) -> None:
    """Drop ``owner``'s claim on ``stage_id`` (nothing when another owner holds it)."""
    if holder(table, stage_id) == owner:
        table.io.delete(_path(table, stage_id))
