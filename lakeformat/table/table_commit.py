"""A commit as a table's users make it: the committer's snapshot(s), then the post-commit steps
the table's options ask for (Paimon's ``TableCommitImpl`` above ``FileStoreCommit``).

The steps are snapshot expiration and partition expiration, both skipped on ``write-only`` tables
(a dedicated job runs them), then, with ``metadata.iceberg.storage``, publishing the Iceberg
metadata of the latest snapshot (last, so that it sees what the expirations did). A failed step is logged and never
raised: the commit has happened and must be reported as such; the next commit tries again. What the steps did stays on
the commit object for callers that report it.
"""
from __future__ import annotations

from typing import Optional
from collections.abc import Sequence

from lakeformat.commit.commit import BATCH_IDENTIFIER, FileStoreCommit, Overwrite
from lakeformat.format.commit_message import CommitMessage
from lakeformat.format.snapshot import Snapshot
from lakeformat.maintenance.expire import ExpireResult, expire_after_commit
from lakeformat.maintenance.iceberg import PublishResult, publish_after_change
from lakeformat.maintenance.partition_expire import maybe_expire_partitions


class TableCommit(FileStoreCommit):
    """``FileStoreCommit`` plus the post-commit steps, run once per commit that made a snapshot
    (a re-run of an identifier that is committed already makes none and runs none)."""

    def __init__(self, table, commit_user: Optional[str] = None):
        super().__init__(table, commit_user)
        self.expired: Optional[ExpireResult] = None          # of the last commit's snapshot expiration
        self.expired_partitions: Optional[list[dict]] = None  # of its partition expiration
        self.iceberg: Optional[PublishResult] = None          # of its Iceberg publish

    def commit(self, messages: Sequence[CommitMessage], identifier: int = BATCH_IDENTIFIER,
               overwrite: Optional[Overwrite] = None) -> Optional[Snapshot]:
        made_before = self.snapshots_made
        snapshot = super().commit(messages, identifier, overwrite)
        self.expired = self.expired_partitions = self.iceberg = None
        if self.snapshots_made > made_before:
            self.expired = expire_after_commit(self.table, snapshot.id if snapshot is not None else None)
            self.expired_partitions = maybe_expire_partitions(self.table)
            # a partition expiration commits a snapshot of its own: then the publish reads what it lacks
            deltas = None if self.expired_partitions else self.deltas
            self.iceberg = publish_after_change(self.table, deltas, self.expired)
        return snapshot
