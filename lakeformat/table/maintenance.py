"""A table's maintenance as users find it: ``t.maintenance.expire_snapshots(...)``,
``.expire_partitions(...)``, ``.remove_orphan_files(...)``, ``.compact(...)``,
``.rollback_to(...)``, ``.create_tag(...)`` (as PyIceberg's ``tbl.maintenance``).

Every front end (the library, the CLI, the Spark jobs, the Airflow operators) maintains a table
through this object, so each operation is followed by the same side effects
(``lakeformat.table.effects``): an expiration or a rollback is published to the table's Iceberg
metadata whichever way it ran. The work itself is in ``lakeformat.maintenance``.
"""
from __future__ import annotations

import datetime as dt
import logging
import uuid
from typing import Optional, Union
from collections.abc import Iterable, Sequence

from lakeformat.format import options as O
from lakeformat.format.commit_message import CommitMessage
from lakeformat.format.snapshot import Snapshot
from lakeformat.maintenance import compaction
from lakeformat.maintenance.compaction import BucketJob, CompactionResult
from lakeformat.maintenance.consumer import ConsumerManager
from lakeformat.maintenance.expire import ExpireResult, expire_snapshots
from lakeformat.maintenance.expire_backlog import expire_backlog
from lakeformat.maintenance.iceberg import PublishResult
from lakeformat.maintenance.orphans import OrphanResult, remove_orphan_files
from lakeformat.maintenance.partition_expire import expire_partitions
from lakeformat.maintenance.rollback import RollbackResult, rollback_to
from lakeformat.maintenance.tag import Tag, TagManager
from lakeformat.secrets import mask
from lakeformat.table import effects

__all__ = ["BucketJob", "CompactionResult", "ExpireResult", "OrphanResult", "PublishResult", "RollbackResult",
           "Tag", "TableMaintenance", "Tags", "ConsumerManager"]

log = logging.getLogger(__name__)


class Tags(TagManager):
    """A table's tags; creating or deleting one updates the Iceberg tag refs too."""

    def create(self, name: str, snapshot_id: Optional[int] = None, time_retained=None) -> Tag:
        tag = super().create(name, snapshot_id, time_retained)
        effects.after_change(self.ctx)
        return tag

    def delete(self, name: str, dry_run: bool = False) -> int:
        deleted = super().delete(name, dry_run)
        if not dry_run:
            effects.after_change(self.ctx)
        return deleted


class TableMaintenance:
    """The maintenance operations of one table (``Table.maintenance``)."""

    def __init__(self, table):
        self.table = table
        self.ctx = table.ctx

    # -- snapshots ---------------------------------------------------------------------
    def expire_snapshots(self, *, retain_min: Optional[int] = None, retain_max: Optional[int] = None,
                         older_than: Union[None, dt.timedelta, dt.datetime] = None, step: Optional[int] = None,
                         max_deletes: Optional[int] = None, dry_run: bool = False, progress=None) -> ExpireResult:
        """Expire every snapshot that is due (and the files only they use), ``step`` (default
        ``snapshot.expire.limit``) per run until none is left or ``max_deletes`` went. Unset
        limits come from the table's options; tagged snapshots and those a consumer needs stay.
        See lakeformat/maintenance/expire_backlog.py."""
        result = expire_backlog(self.ctx, retain_min=retain_min, retain_max=retain_max, older_than=older_than,
                                step=step, max_deletes=max_deletes, dry_run=dry_run, progress=progress)
        effects.after_expiration(self.ctx, result)
        return result

    def expire_snapshots_step(self, **kwargs) -> ExpireResult:
        """One run of snapshot expiration, at most ``max_deletes`` (default
        ``snapshot.expire.limit``) snapshots, as a commit runs it: retain_min, retain_max,
        older_than, max_deletes, dry_run, progress, from_hints; see lakeformat/maintenance/expire.py."""
        result = expire_snapshots(self.ctx, **kwargs)
        effects.after_expiration(self.ctx, result)
        return result

    def rollback_to(self, snapshot_or_tag: Union[int, str], progress=None, dry_run: bool = False) -> RollbackResult:
        """Make a snapshot (id) or tag (name) the latest again; newer snapshots, tags and their
        files go. See lakeformat/maintenance/rollback.py."""
        result = rollback_to(self.ctx, snapshot_or_tag, progress, dry_run)
        if not dry_run:
            effects.after_change(self.ctx)
        return result

    # -- partitions and files ------------------------------------------------------------
    def expire_partitions(self, *, expiration_time=None, now: Optional[dt.datetime] = None,
                          dry_run: bool = False, progress=None, commit_user: Optional[str] = None) -> list[dict]:
        """Drop partitions older than ``partition.expiration-time`` (or ``expiration_time``) in
        one commit; returns their values. See lakeformat/maintenance/partition_expire.py."""
        dropped = expire_partitions(self.ctx, expiration_time=expiration_time, now=now, dry_run=dry_run,
                                    progress=progress, commit_user=commit_user)
        if dropped and not dry_run:
            effects.after_change(self.ctx)
        return dropped

    def remove_orphan_files(self, *, older_than: dt.timedelta = dt.timedelta(days=1), dry_run: bool = False,
                            progress=None, allow_deleting_in_flight_files: bool = False) -> OrphanResult:
        """Delete files nothing reaches that are older than ``older_than`` (default 1 day);
        see lakeformat/maintenance/orphans.py."""
        return remove_orphan_files(self.ctx, older_than=older_than, dry_run=dry_run, progress=progress,
                                   allow_deleting_in_flight_files=allow_deleting_in_flight_files)

    # -- compaction ----------------------------------------------------------------------
    def compact(self, full: bool = False, partitions: Optional[Sequence[dict]] = None,
                commit_user: Optional[str] = None, progress=None) -> CompactionResult:
        """Compact the buckets (all, or those of ``partitions`` like ``[{"dt": "x"}]``) as one
        COMPACT snapshot, then expire snapshots (see ``commit_compaction``)."""
        snap, expired = compaction.compact_table(self.ctx, self._commit(commit_user), full, partitions, progress)
        return self._expired_after(snap, expired)

    def plan_compaction(self, full: bool = False, partitions: Optional[Sequence[dict]] = None) -> list[BucketJob]:
        """The buckets a compaction would rewrite (for compacting them elsewhere, as Spark does)."""
        return compaction.plan_compaction(self.ctx, full, partitions)

    def compact_bucket(self, job: BucketJob, full: bool = False) -> CommitMessage:
        """Rewrite one planned bucket; the result is committed with ``commit_compaction``."""
        return compaction.compact_bucket_job(self.ctx, job, full)

    def commit_compaction(self, messages: Sequence[CommitMessage], commit_user: Optional[str] = None
                          ) -> CompactionResult:
        """Commit rewritten buckets as one COMPACT snapshot. The commit's own expiration runs on
        tables that are not ``write-only``; on write-only tables (whose writers never expire)
        this is the dedicated compaction and expires explicitly, also when nothing needed
        compacting. A failed expiration is reported, never raised: the compaction is committed."""
        snap, expired = compaction.commit_compaction(self.ctx, self._commit(commit_user), messages)
        return self._expired_after(snap, expired)

    def discard_compaction(self, messages: Iterable[CommitMessage], keep: Iterable[str] = ()) -> None:
        """Delete the files of rewritten buckets that will not be committed (except ``keep``)."""
        compaction.delete_outputs(self.ctx, messages, keep)

    def _commit(self, commit_user: Optional[str]):
        return self.table.new_commit(commit_user or f"compact-{uuid.uuid4()}")

    def _expired_after(self, snap: Optional[Snapshot], expired: Optional[ExpireResult]) -> CompactionResult:
        if not self.ctx.typed_options.get(O.WRITE_ONLY):
            return CompactionResult(snap, expired)
        try:
            return CompactionResult(snap, self.expire_snapshots_step())
        except Exception as e:   # the compaction is committed; report, don't undo the news
            error = mask(f"{type(e).__name__}: {e}")
            log.warning("%s: %s, but expiring snapshots after it failed (the next compaction tries again): %s",
                        self.ctx.name, f"compacted in snapshot {snap.id}" if snap else "nothing to compact", error)
            return CompactionResult(snap, None, error)

    # -- tags, consumers, Iceberg ---------------------------------------------------------
    @property
    def tags(self) -> Tags:
        return Tags(self.ctx)

    @property
    def consumers(self) -> ConsumerManager:
        return ConsumerManager(self.ctx)

    def create_tag(self, name: str, snapshot_id: Optional[int] = None, time_retained=None) -> Tag:
        """Tag a snapshot (default: the latest); published Iceberg metadata gets an Iceberg tag ref."""
        return self.tags.create(name, snapshot_id, time_retained)

    def delete_tag(self, name: str, dry_run: bool = False) -> int:
        """Delete a tag (and its Iceberg tag ref); returns the files deleted with it."""
        return self.tags.delete(name, dry_run)

    def iceberg_sync(self, rebuild: bool = False) -> PublishResult:
        """Publish (repair, or with ``rebuild`` rewrite) the Iceberg metadata up to the latest
        snapshot; see lakeformat/maintenance/iceberg.py."""
        return effects.sync_iceberg(self.ctx, rebuild)
