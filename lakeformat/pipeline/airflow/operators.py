"""Operators that maintain lakeformat tables in the task itself, without Spark: for small and
medium tables, where starting a Spark application costs more than the work.

Each one takes ``table`` (a name from ``config/tables.yaml`` or ``db.table``; templated) and
``conn_id`` (a lakeformat connection, see hooks.py), logs what it did in a user's words, and
returns a small JSON summary as its XCom. Destructive ones take ``dry_run`` (templated, so a DAG
param such as ``"{{ params.dry_run }}"`` works) and then change nothing. It is kept as
``dry_run_value``: an attribute ``dry_run`` would hide ``BaseOperator.dry_run()``.
"""
from __future__ import annotations

import datetime as dt
from typing import Any, Optional, Union
from collections.abc import Sequence

from airflow.sdk import BaseOperator

import lakeformat as lf
from lakeformat.table import staging
from lakeformat.errors import LakeformatError
from lakeformat.format import options as O
from lakeformat.format.human import human_size
from lakeformat.format.progress import ProgressReporter
from lakeformat.io.fileio import join
from lakeformat.pipeline.airflow.hooks import LakeformatHook
from lakeformat.pipeline.airflow.overview import bucket_runs

Duration = Union[None, str, int, float, dt.timedelta]


def as_bool(value: Any, what: str = "dry_run") -> bool:
    """Booleans from DAG params arrive as text when templates are rendered to strings."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off", "", "none"):
        return False
    raise LakeformatError(f"{what} must be true or false, not {value!r}")


def as_duration(value: Duration, what: str) -> Optional[dt.timedelta]:
    """A timedelta from a timedelta, seconds, or Paimon's duration text ('1 h', '7 d')."""
    return O.duration(value, what)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


class LakeformatTableOperator(BaseOperator):
    """Base: resolves the table through the hook and reports long work as progress logs."""

    template_fields: Sequence[str] = ("table",)
    ui_color = "#d6eaf8"
    PROGRESS_EVERY_SECONDS = 10.0

    def __init__(self, *, table: str, conn_id: str = LakeformatHook.default_conn_name,
                 config: Optional[str] = None, **kwargs):
        super().__init__(**kwargs)
        self.table = table
        self.conn_id = conn_id
        self.config = config

    def get_table(self) -> lf.Table:
        return LakeformatHook(self.conn_id).get_table(self.table, self.config)

    def progress(self) -> ProgressReporter:
        """A ``progress(done, total, what)`` callback: the one reporter, into the task's log."""
        return ProgressReporter(self.task_id, every=self.PROGRESS_EVERY_SECONDS, emit=self.log.info)


class LakeformatCompactOperator(LakeformatTableOperator):
    """Compact a table: merge small files (append tables) or sorted runs (primary-key tables)
    per bucket, as one COMPACT snapshot. ``full`` rewrites every bucket completely."""

    template_fields = ("table", "partitions")

    def __init__(self, *, full: bool = False, partitions: Optional[list[dict]] = None,
                 commit_user: Optional[str] = None, **kwargs):
        super().__init__(**kwargs)
        self.full = full
        self.partitions = partitions
        self.commit_user = commit_user

    def execute(self, context) -> dict:
        t = self.get_table()
        before = bucket_runs(t)
        r = t.maintenance.compact(full=as_bool(self.full, "full"), partitions=self.partitions or None,
                             commit_user=self.commit_user, progress=self.progress())
        snap = r.snapshot
        after = bucket_runs(t) if snap else before
        if r.expired is not None and r.expired.begin is not None:
            self.log.info("%s", r.expired.summary(t.name))
        if r.expire_error is not None:
            self.log.warning("Expiring snapshots of %s after the compaction failed: %s", t.name, r.expire_error)
        summary = {"table": t.name, "snapshot_id": snap.id if snap else None,
                   "expired_snapshots": list(r.expired.expired) if r.expired else [], "expire_error": r.expire_error,
                   "files_before": sum(b.files for b in before), "files_after": sum(b.files for b in after),
                   "max_sorted_runs_before": max((b.sorted_runs for b in before), default=0),
                   "max_sorted_runs_after": max((b.sorted_runs for b in after), default=0)}
        if snap is None:
            self.log.info("Nothing to compact in %s: %s in %s, at most %s per bucket; no bucket "
                          "needed compaction", t.name, _plural(summary["files_before"], "file"),
                          _plural(len(before), "bucket"), _plural(summary["max_sorted_runs_before"], "sorted run"))
        else:
            self.log.info("Compacted %s into snapshot %d: %s became %s; sorted runs per bucket at most %d "
                          "before, %d after", t.name, snap.id, _plural(summary["files_before"], "file"),
                          _plural(summary["files_after"], "file"), summary["max_sorted_runs_before"],
                          summary["max_sorted_runs_after"])
        return summary


class LakeformatExpireSnapshotsOperator(LakeformatTableOperator):
    """Expire every old snapshot (and changelog) due by the table's retention options, or the
    given overrides, ``step`` at a time (default ``snapshot.expire.limit``) up to ``max_deletes``;
    files only they referenced are deleted. Tags and consumers keep theirs."""

    template_fields = ("table", "dry_run_value", "older_than")

    def __init__(self, *, retain_min: Optional[int] = None, retain_max: Optional[int] = None,
                 older_than: Duration = None, max_deletes: Optional[int] = None, step: Optional[int] = None,
                 dry_run: Union[bool, str] = False, **kwargs):
        super().__init__(**kwargs)
        self.retain_min, self.retain_max, self.max_deletes = retain_min, retain_max, max_deletes
        self.step = step
        self.older_than = older_than
        self.dry_run_value = dry_run

    def execute(self, context) -> dict:
        t = self.get_table()
        dry = as_bool(self.dry_run_value)
        ids_before = t.snapshot_manager.list_ids()
        result = t.maintenance.expire_snapshots(
            retain_min=self.retain_min, retain_max=self.retain_max,
            older_than=as_duration(self.older_than, "older_than"), step=self.step, max_deletes=self.max_deletes,
            dry_run=dry, progress=self.progress())
        summary = {"table": t.name, "dry_run": dry, **expire_summary(result, ids_before)}
        if summary["expired_snapshots"]:
            self.log.info("%s %s of %s (%s) and %s; %s remain (%s)", "Would expire" if dry else "Expired",
                          _plural(len(summary["expired_snapshots"]), "snapshot"), t.name,
                          _ids(summary["expired_snapshots"]),
                          ("would delete " if dry else "deleted ") + summary["files"],
                          _plural(len(summary["remaining_snapshots"]), "snapshot"),
                          _ids(summary["remaining_snapshots"]))
        else:
            self.log.info("No snapshot of %s is due to expire: the retention options keep all %s (%s)",
                          t.name, _plural(len(ids_before), "snapshot"), _ids(ids_before))
        return summary


class LakeformatExpirePartitionsOperator(LakeformatTableOperator):
    """Drop the partitions older than ``partition.expiration-time`` (or ``expiration_time``),
    judged by their partition values, in one commit. A table without that option (and no
    ``expiration_time`` given) keeps every partition: the table's own options decide."""

    template_fields = ("table", "dry_run_value", "expiration_time")

    def __init__(self, *, expiration_time: Duration = None, dry_run: Union[bool, str] = False, **kwargs):
        super().__init__(**kwargs)
        self.expiration_time = expiration_time
        self.dry_run_value = dry_run

    def execute(self, context) -> dict:
        t = self.get_table()
        dry = as_bool(self.dry_run_value)
        latest = t.snapshot_manager.latest_id()
        expiration_time = as_duration(self.expiration_time, "expiration_time")
        if expiration_time is None and t.typed_options.get(O.PARTITION_EXPIRATION_TIME) is None:
            self.log.info("%s has no partition.expiration-time and no expiration_time was given: "
                          "no partition expires", t.name)
            return {"table": t.name, "dry_run": dry, "partitions": [], "snapshot_id": None}
        expired = t.maintenance.expire_partitions(expiration_time=expiration_time,
                                                  dry_run=dry, progress=self.progress())
        parts = [{k: str(v) for k, v in p.items()} for p in expired]
        new_latest = t.snapshot_manager.latest_id()
        summary = {"table": t.name, "dry_run": dry, "partitions": parts,
                   "snapshot_id": new_latest if new_latest != latest else None}
        if not parts:
            self.log.info("No partition of %s has expired", t.name)
        else:
            self.log.info("%s %s of %s: %s%s", "Would drop" if dry else "Dropped",
                          _plural(len(parts), "expired partition"), t.name,
                          ", ".join("/".join(f"{k}={v}" for k, v in p.items()) for p in parts),
                          f" (snapshot {summary['snapshot_id']})" if summary["snapshot_id"] else "")
        return summary


class LakeformatCleanConsumersOperator(LakeformatTableOperator):
    """Delete consumers that stopped reading: those idle longer than ``older_than`` (default
    the table's ``consumer.expiration-time``), or with ``including``/``excluding`` regular
    expressions those whose id matches (Paimon's clear_consumers). Snapshot expiration no
    longer waits for a deleted consumer."""

    template_fields = ("table", "dry_run_value", "older_than", "including", "excluding")

    def __init__(self, *, older_than: Duration = None, including: Optional[str] = None,
                 excluding: Optional[str] = None, dry_run: Union[bool, str] = False, **kwargs):
        super().__init__(**kwargs)
        self.older_than, self.including, self.excluding = older_than, including, excluding
        self.dry_run_value = dry_run

    def execute(self, context) -> dict:
        t = self.get_table()
        dry = as_bool(self.dry_run_value)
        consumers = t.maintenance.consumers
        before = consumers.list()
        if self.including or self.excluding:
            rule = f"matching {self.including or '.*'}" + (f" but not {self.excluding}" if self.excluding else "")
            removed = sorted(consumers.clear(self.including or ".*", self.excluding, dry_run=dry))
        else:
            older = as_duration(self.older_than, "older_than")
            if older is None:   # a zero span is a real choice, not "unset"
                older = t.typed_options.get(O.CONSUMER_EXPIRATION_TIME)
            if older is None:
                self.log.info("%s has no consumer.expiration-time and no older_than was given: "
                              "no consumer expires (%s kept)", t.name, _plural(len(before), "consumer"))
                return {"table": t.name, "dry_run": dry, "removed": [], "remaining": sorted(before)}
            rule = f"idle for more than {older}"
            removed = consumers.expire(older, dry_run=dry)
        remaining = sorted(set(before) - set(removed))
        if removed:
            self.log.info("%s %s of %s %s: %s (they had reached snapshots %s); %s remain",
                          "Would remove" if dry else "Removed", _plural(len(removed), "consumer"), t.name, rule,
                          ", ".join(removed), ", ".join(str(before.get(c, "?")) for c in removed),
                          _plural(len(remaining), "consumer"))
        else:
            self.log.info("No consumer of %s is %s; %s kept", t.name, rule, _plural(len(before), "consumer"))
        return {"table": t.name, "dry_run": dry, "removed": sorted(removed), "remaining": remaining}


class LakeformatRemoveOrphanFilesOperator(LakeformatTableOperator):
    """Delete files in the table's directories that no snapshot, tag, changelog or staged commit
    references and that are older than ``older_than`` (default 1 day, so files of commits in
    flight are never touched). ``dry_run`` (default on) only lists them."""

    template_fields = ("table", "dry_run_value", "older_than")

    def __init__(self, *, older_than: Duration = dt.timedelta(days=1), dry_run: Union[bool, str] = True, **kwargs):
        super().__init__(**kwargs)
        self.older_than = older_than
        self.dry_run_value = dry_run

    def execute(self, context) -> dict:
        t = self.get_table()
        dry = as_bool(self.dry_run_value)
        older = as_duration(self.older_than, "older_than")
        if older is None:   # a zero span is a real choice, not "unset"
            older = dt.timedelta(days=1)
        result = t.maintenance.remove_orphan_files(older_than=older, dry_run=dry, progress=self.progress())
        summary = {"table": t.name, "dry_run": dry, **orphan_summary(result)}
        if result.skipped:
            self.log.warning("Removed no orphan files of %s: %s", t.name, result.skipped)
        elif summary["orphan_files"]:
            self.log.info("%s %s (%s) of %s older than %s; first: %s", "Found" if dry else "Deleted",
                          _plural(summary["orphan_files"], "orphan file"), human_size(summary["orphan_bytes"]), t.name,
                          older, ", ".join(summary["sample"]))
        else:
            self.log.info("No orphan files in %s older than %s", t.name, older)
        return summary


class LakeformatPublishOperator(LakeformatTableOperator):
    """Publish a staged commit (write-audit-publish): the staged files become a snapshot.
    Exactly once: a retried task finds the stage published and returns the same snapshot."""

    template_fields = ("table", "stage_id")

    def __init__(self, *, stage_id: str, **kwargs):
        super().__init__(**kwargs)
        self.stage_id = stage_id

    def execute(self, context) -> dict:
        t = self.get_table()
        snap = staging.publish(t, self.stage_id)
        summary = {"table": t.name, "stage_id": self.stage_id, "snapshot_id": snap.id if snap else None,
                   "rows": snap.delta_record_count if snap else 0}
        if snap is None:
            self.log.info("Stage %s of %s had nothing to publish; no snapshot made", self.stage_id, t.name)
        else:
            self.log.info("Published stage %s of %s as snapshot %d (%s, %s rows; %s rows in the table)",
                          self.stage_id, t.name, snap.id, snap.commit_kind, f"{snap.delta_record_count:+,}",
                          f"{snap.total_record_count:,}")
        return summary


class LakeformatDiscardOperator(LakeformatTableOperator):
    """Discard a staged commit: delete its files and the stage, leaving the table as it was.
    A stage that is gone already (a retried task) is not an error."""

    template_fields = ("table", "stage_id")

    def __init__(self, *, stage_id: str, **kwargs):
        super().__init__(**kwargs)
        self.stage_id = stage_id

    def execute(self, context) -> dict:
        t = self.get_table()
        try:
            staged = staging.load_staged(t, self.stage_id)
        except lf.NotFoundError:
            if t.io.exists(join(t.path, staging.STAGED_DIR, self.stage_id + staging.PUBLISHED_SUFFIX)):
                raise LakeformatError(f"stage {self.stage_id!r} of {t.name} was published: its rows are in "
                                      "the table and cannot be discarded") from None
            self.log.info("Stage %s of %s does not exist (discarded before?); nothing to do", self.stage_id, t.name)
            return {"table": t.name, "stage_id": self.stage_id, "discarded": False, "rows": 0, "files": 0}
        files = staging.discard(t, self.stage_id)
        self.log.info("Discarded stage %s of %s: %s rows not published, %s deleted; the table is unchanged",
                      self.stage_id, t.name, f"{staged.row_count:,}", _plural(files, "data file"))
        return {"table": t.name, "stage_id": self.stage_id, "discarded": True, "rows": staged.row_count,
                "files": files}


# -- summaries --------------------------------------------------------------------------
def _ids(ids: Sequence[int]) -> str:
    ids = sorted(ids)
    if not ids:
        return "none"
    if ids == list(range(ids[0], ids[-1] + 1)) and len(ids) > 2:
        return f"{ids[0]}..{ids[-1]}"
    return ", ".join(map(str, ids))


def expire_summary(result, ids_before: Sequence[int]) -> dict:
    """The XCom of an expiration: which snapshots went (or would go) and what files."""
    expired = [i for i in ids_before if i in result.expired]
    files = (f"{_plural(result.data_files, 'data file')}, {_plural(result.changelog_files, 'changelog file')}, "
             f"{_plural(result.manifests, 'manifest')}, {_plural(result.manifest_lists, 'manifest list')}")
    return {"expired_snapshots": expired, "remaining_snapshots": [i for i in ids_before if i not in result.expired],
            "data_files": result.data_files, "changelog_files": result.changelog_files,
            "manifests": result.manifests, "manifest_lists": result.manifest_lists, "files": files}


def orphan_summary(result) -> dict:
    """The XCom of an orphan clean-up: counts, bytes and the first few paths (not all of them:
    an XCom should stay small)."""
    return {"listed_files": result.listed, "orphan_files": len(result.orphans), "orphan_bytes": result.orphan_bytes,
            "deleted_files": result.deleted, "too_young": result.too_young, "dirs_removed": result.dirs_removed,
            "sample": [p.rsplit("/", 1)[-1] for p in result.orphans[:5]], "skipped": result.skipped}
