"""A commit as a table's users make it: the committer's snapshot(s), then the post-commit steps
the table's options ask for (Paimon's ``TableCommitImpl`` above ``FileStoreCommit``); the steps
themselves are in ``lakeformat.table.effects``. What they did stays on the commit object for
callers that report it.
"""
from __future__ import annotations

from typing import Optional
from collections.abc import Sequence

from lakeformat.commit.commit import BATCH_IDENTIFIER, FileStoreCommit, Overwrite
from lakeformat.format.commit_message import CommitMessage
from lakeformat.format.snapshot import Snapshot
from lakeformat.io.table_context import TableContext
from lakeformat.maintenance.expire import ExpireResult
from lakeformat.maintenance.iceberg import PublishResult
from lakeformat.table import effects

__all__ = ["BATCH_IDENTIFIER", "Overwrite", "TableCommit"]   # the names front ends commit with


class TableCommit(FileStoreCommit):
    """``FileStoreCommit`` plus the post-commit steps, run once per commit that made a snapshot
    (a re-run of an identifier that is committed already makes none and runs none)."""

    def __init__(self, ctx: TableContext, commit_user: Optional[str] = None):
        super().__init__(ctx, commit_user)
        self.expired: Optional[ExpireResult] = None          # of the last commit's snapshot expiration
        self.expired_partitions: Optional[list[dict]] = None  # of its partition expiration
        self.iceberg: Optional[PublishResult] = None          # of its Iceberg publish

    def commit(self, messages: Sequence[CommitMessage], identifier: int = BATCH_IDENTIFIER,
               overwrite: Optional[Overwrite] = None) -> Optional[Snapshot]:
        made_before = self.snapshots_made
        snapshot = super().commit(messages, identifier, overwrite)
        self.expired = self.expired_partitions = self.iceberg = None
        if self.snapshots_made > made_before:
            done = effects.after_commit(self.ctx, snapshot, self.deltas)
            self.expired, self.expired_partitions, self.iceberg = done.expired, done.expired_partitions, done.iceberg
        return snapshot
