"""Write-audit-publish on a ``Table``: the staging of lakeformat/commit/staging.py, published
through the table's own commit, so a publish runs what every commit of the table runs after it
(snapshot and partition expiration, the Iceberg publish). The layer below only plans a publish
and records it; it never commits through the table itself."""
from __future__ import annotations

from typing import Optional
from collections.abc import Sequence

import pyarrow as pa

from lakeformat.commit import staging as _staging
from lakeformat.commit.staging import (  # noqa: F401 - the staging API, re-exported for the front ends
    PUBLISHED_SUFFIX,
    STAGE_SUFFIX,
    STAGED_DIR,
    StagedCommit,
    identifier_for,
    message_from_json,
    message_to_json,
)
from lakeformat.format.commit_message import CommitMessage
from lakeformat.format.snapshot import Snapshot
from lakeformat.table.table import Table


def stage(table: Table, messages: Sequence[CommitMessage], stage_id: str, *, commit_user: str,
          identifier: int) -> StagedCommit:
    """Record a writer's messages as stage ``stage_id`` (see lakeformat/commit/staging.py)."""
    return _staging.stage(table.ctx, messages, stage_id, commit_user=commit_user, identifier=identifier)


def load_staged(table: Table, stage_id: str) -> StagedCommit:
    return _staging.load_staged(table.ctx, stage_id)


def list_staged(table: Table) -> list[StagedCommit]:
    """Every pending stage of the table, oldest first."""
    return _staging.list_staged(table.ctx)


def read_staged(table: Table, stage_id: str, columns: Optional[Sequence[str]] = None) -> pa.Table:
    """The staged rows of ``stage_id``, for the audit."""
    return _staging.read_staged(table.ctx, stage_id, columns)


def find_committed(table: Table, commit_user: str, identifier: int) -> Optional[Snapshot]:
    return _staging.find_committed(table.ctx, commit_user, identifier)


def committed_as(table: Table, stage_id: str, commit_user: str, identifier: int) -> tuple[bool, Optional[Snapshot]]:
    return _staging.committed_as(table.ctx, stage_id, commit_user, identifier)


def publish(table: Table, stage_id: str) -> Optional[Snapshot]:
    """Commit stage ``stage_id`` exactly once, through ``table.new_commit``, and remove its stage
    file. Returns the snapshot made, or the one made earlier for the same (commit user,
    identifier); None if the stage held no changes or its snapshot has since expired."""
    plan = _staging.plan_publish(table.ctx, stage_id)
    snap = plan.snapshot
    if plan.commit and plan.staged is not None:
        staged = plan.staged
        snap = table.new_commit(staged.commit_user).commit(list(staged.messages), staged.identifier)
    return _staging.finish_publish(table.ctx, plan, snap)


def discard(table: Table, stage_id: str) -> int:
    """Delete a stage's data files and its stage file; refuses once it was published."""
    return _staging.discard(table.ctx, stage_id)


def published_snapshot_id(table: Table, stage_id: str) -> Optional[int]:
    """The snapshot id the published marker of ``stage_id`` records (None: not published, or
    published without changes); it outlives the snapshot's expiration."""
    return _staging.published_snapshot_id(table.ctx, stage_id)
