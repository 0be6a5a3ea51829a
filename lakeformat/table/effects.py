"""The side effects that follow an operation on a table, in one place: whatever front end ran
the operation (the library, the CLI, a Spark job, an Airflow operator), the table ends in the
same state.

- after a commit that made a snapshot: snapshot expiration and partition expiration (both
  skipped on ``write-only`` tables, whose dedicated jobs run them), then the Iceberg publish;
- after a snapshot expiration, a partition expiration, a rollback, a tag created or deleted: the
  Iceberg publish (the published metadata must list only snapshots that still exist, and the
  tags as Iceberg tag refs).

The publish is last so that it sees what the expirations did, and it is a no-op unless the table
sets ``metadata.iceberg.storage``. A failed step after a commit is logged, never raised: the
commit happened and must be reported as such; the next commit (or ``iceberg-sync``) repairs it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from lakeformat.format.snapshot import Snapshot
from lakeformat.io.table_context import TableContext
from lakeformat.maintenance.expire import ExpireResult, expire_after_commit
from lakeformat.maintenance.iceberg import PublishResult, iceberg_sync, publish_after_change
from lakeformat.maintenance.partition_expire import maybe_expire_partitions


@dataclass(frozen=True)
class CommitEffects:
    """What followed one commit."""

    expired: Optional[ExpireResult] = None           # its snapshot expiration
    expired_partitions: Optional[list[dict]] = None  # its partition expiration
    iceberg: Optional[PublishResult] = None          # its Iceberg publish


def after_commit(ctx: TableContext, snapshot: Optional[Snapshot], deltas) -> CommitEffects:
    """The post-commit steps of a commit that made ``snapshot`` (Paimon's ``TableCommitImpl``);
    ``deltas``: the entries the committer wrote per snapshot, so the publish reads none back."""
    expired = expire_after_commit(ctx, snapshot.id if snapshot is not None else None)
    partitions = maybe_expire_partitions(ctx)
    # a partition expiration commits a snapshot of its own: then the publish reads what it lacks
    iceberg = publish_after_change(ctx, None if partitions else deltas, expired)
    return CommitEffects(expired, partitions, iceberg)


def after_expiration(ctx: TableContext, result: ExpireResult) -> Optional[PublishResult]:
    """After a snapshot expiration: the expired snapshots leave the Iceberg metadata too."""
    if result.begin is None or result.dry_run:
        return None
    return publish_after_change(ctx, None, result)


def after_change(ctx: TableContext) -> Optional[PublishResult]:
    """After any other change of the table's history or tags (a partition expiration, a
    rollback, a tag created or deleted): the Iceberg metadata follows it."""
    return publish_after_change(ctx)


def sync_iceberg(ctx: TableContext, rebuild: bool = False) -> PublishResult:
    """Publish now (repair; with ``rebuild`` rewrite) and raise what fails: the ``iceberg-sync`` verb."""
    return iceberg_sync(ctx, rebuild)
