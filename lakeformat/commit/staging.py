"""Write-audit-publish: data files written now, committed later, only if an audit passes.

``stage`` records a writer's CommitMessages in ``<table>/staged/<stage_id>.json`` (Paimon readers
never look in ``staged/``), so the rows exist as files but no snapshot names them: nothing is
visible. ``read_staged`` returns the staged rows for the audit; publishing commits them exactly
once per (commit user, identifier): ``plan_publish`` says whether and what to commit, the caller
commits through the table (lakeformat/table/staging.py: the commit's expiration and Iceberg
publish run there) and ``finish_publish`` records it; ``discard`` deletes the files. Orphan
cleaning keeps the files every stage file names, however old.

Exactly-once across retries and re-runs:
- publishing a stage whose identifier is already committed by its commit user returns that
  snapshot without committing again (a crash after the commit, before the stage file was
  removed), and when the staged files are not the committed ones (a re-run wrote them again)
  deletes them;
- a published stage leaves ``staged/<stage_id>.published`` naming its snapshot, so publishing it
  again returns that snapshot even when the stage file is gone.
The committer's own check stops at the user's first smaller identifier (Paimon assumes they
grow); stage identifiers are hashes (:func:`identifier_for`), so publish scans every retained
snapshot of the user instead.

Staged rows (``read_staged``): the rows of the staged data files as written, in the table's
current columns. For a primary-key table these are the written versions before any merge with
the table, with a ``_row_kind`` column (+I, -U, +U, -D) since deletes and updates are part of
what is audited; files a writer's compaction produced are not new rows and are not read.
"""
from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import hashlib
import json
import logging
import time
from dataclasses import dataclass
from typing import Any, Optional
from collections.abc import Sequence

import pyarrow as pa

from lakeformat.commit.commit import BATCH_IDENTIFIER, FileStoreCommit
from lakeformat.errors import (
    AlreadyExistsError,
    CommitError,
    CorruptFileError,
    LakeformatError,
    NotFoundError,
    StorageError,
    UnsupportedError,
)
from lakeformat.format.commit_message import CommitMessage
from lakeformat.format.index_manifest import INDEX_TYPES, DeletionVectorRange, IndexFileMeta
from lakeformat.format.manifest import ADD, DataFileMeta, SimpleStats
from lakeformat.format.metadata_checks import UnsupportedMetadataError, check_index_type, with_path
from lakeformat.format.names import validate_name
from lakeformat.format.snapshot import Snapshot
from lakeformat.io.data_file import read_columns
from lakeformat.io.fileio import join
from lakeformat.io.table_context import TableContext
from lakeformat.mergetree.kv_file import KIND
from lakeformat.read.entries import delta_entries, live_entries
from lakeformat.read.split_read import SplitRead

log = logging.getLogger(__name__)

STAGED_DIR = "staged"
STAGE_SUFFIX, PUBLISHED_SUFFIX = ".json", ".published"
FORMAT_VERSION = 1
ROW_KIND = "_row_kind"
_MESSAGE_FILES = ("new_files", "deleted_files", "changelog_files", "compact_before", "compact_after",
                  "compact_changelog")
_MESSAGE_INDEX_FILES = ("index_added", "index_deleted")


@dataclass(frozen=True)
class StagedCommit:
    stage_id: str
    commit_user: str
    identifier: int
    messages: tuple[CommitMessage, ...]
    create_time: dt.datetime   # UTC
    schema_id: int

    @property
    def row_count(self) -> int:
        """Rows the stage adds (its new data files)."""
        return sum(f.row_count for m in self.messages for f in m.new_files)

    def file_names(self) -> set[str]:
        """Every data file the stage wrote (what discarding deletes, what orphan cleaning keeps)."""
        return {f.file_name for m in self.messages for f in m.all_files()}


def identifier_for(*parts: Any) -> int:
    """A stable positive 63-bit commit identifier for a unit of work, e.g.
    ``identifier_for("ingest", "user_behavior", "2024-06-01")``: the same parts give the same
    identifier in every process and Python version. Parts are strings (ints are turned into
    their decimal text)."""
    if not parts:
        raise ValueError("identifier_for needs at least one part")
    texts = []
    for p in parts:
        if isinstance(p, bool) or not isinstance(p, (str, int)):
            raise TypeError(f"identifier parts must be strings, not {type(p).__name__} ({p!r})")
        texts.append(str(p))
    digest = hashlib.sha256(json.dumps(texts, ensure_ascii=False).encode()).digest()
    value = int.from_bytes(digest[:8], "big") & BATCH_IDENTIFIER
    return value if 0 < value < BATCH_IDENTIFIER else 1   # the batch identifier is never deduplicated


# ---------------------------------------------------------------- JSON form of CommitMessages

def _enc(v: Any) -> Any:
    if isinstance(v, bytes):
        return {"base64": base64.b64encode(v).decode()}
    if isinstance(v, SimpleStats):
        return {"min_values": _enc(v.min_values), "max_values": _enc(v.max_values),
                "null_counts": None if v.null_counts is None else list(v.null_counts)}
    if isinstance(v, tuple):
        return [_enc(x) for x in v]
    if v is None or isinstance(v, (int, str)):
        return v
    raise TypeError(f"cannot encode {type(v).__name__} in a staged commit")


def _dec_bytes(v: Any) -> Optional[bytes]:
    if v is None:
        return None
    if not isinstance(v, dict) or set(v) != {"base64"}:
        raise ValueError(f"expected {{'base64': ...}}, got {v!r}")
    return base64.b64decode(v["base64"], validate=True)


def _dec_required_bytes(v: Any, what: str) -> bytes:
    out = _dec_bytes(v)
    if out is None:
        raise ValueError(f"{what} is missing")
    return out


def _dec_stats(v: dict) -> SimpleStats:
    nc = v["null_counts"]
    return SimpleStats(_dec_required_bytes(v["min_values"], "min_values"),
                       _dec_required_bytes(v["max_values"], "max_values"), None if nc is None else tuple(nc))


_FILE_FIELDS = {f.name for f in dataclasses.fields(DataFileMeta)}
_BYTES_FIELDS = {"min_key", "max_key", "embedded_index"}
_STATS_FIELDS = {"key_stats", "value_stats"}


def file_to_json(f: DataFileMeta) -> dict:
    """Every field of a DataFileMeta, JSON-safe (bytes as base64)."""
    return {name: _enc(getattr(f, name)) for name in sorted(_FILE_FIELDS)}


def file_from_json(d: dict) -> DataFileMeta:
    unknown = set(d) - _FILE_FIELDS
    if unknown:
        raise ValueError(f"unknown data file fields {sorted(unknown)} (written by a newer lakeformat?)")
    kwargs: dict[str, Any] = {}
    for name, v in d.items():
        if name in _BYTES_FIELDS:
            kwargs[name] = _dec_bytes(v)
        elif name in _STATS_FIELDS:
            kwargs[name] = _dec_stats(v)
        elif isinstance(v, list):
            kwargs[name] = tuple(v)
        else:
            kwargs[name] = v
    return DataFileMeta(**kwargs)


def index_file_to_json(f: IndexFileMeta) -> dict:
    return {"index_type": f.index_type, "file_name": f.file_name, "file_size": f.file_size,
            "row_count": f.row_count, "dv_ranges": None if f.dv_ranges is None else [
                [r.data_file, r.offset, r.length, r.cardinality] for r in f.dv_ranges]}


def index_file_from_json(d: dict) -> IndexFileMeta:
    check_index_type(d["index_type"], d["file_name"], INDEX_TYPES)   # a newer lakeformat's staged index
    ranges = d.get("dv_ranges")
    return IndexFileMeta(d["index_type"], d["file_name"], int(d["file_size"]), int(d["row_count"]),
                         None if ranges is None else tuple(DeletionVectorRange(*r) for r in ranges))


def message_to_json(m: CommitMessage) -> dict:
    out = {"partition": _enc(m.partition), "bucket": m.bucket, "total_buckets": m.total_buckets}
    for name in _MESSAGE_FILES:
        out[name] = [file_to_json(f) for f in getattr(m, name)]
    for name in _MESSAGE_INDEX_FILES:
        out[name] = [index_file_to_json(f) for f in getattr(m, name)]
    return out


def message_from_json(d: dict) -> CommitMessage:
    files: dict[str, Any] = {name: tuple(file_from_json(f) for f in d.get(name, ())) for name in _MESSAGE_FILES}
    files.update({name: tuple(index_file_from_json(f) for f in d.get(name, ())) for name in _MESSAGE_INDEX_FILES})
    return CommitMessage(_dec_required_bytes(d["partition"], "partition"), int(d["bucket"]), int(d["total_buckets"]),
                         **files)


# ---------------------------------------------------------------- stage files

def _dir(ctx: TableContext) -> str:
    return join(ctx.path, STAGED_DIR)


def _path(ctx: TableContext, stage_id: str, suffix: str = STAGE_SUFFIX) -> str:
    return join(_dir(ctx), validate_name(stage_id, "stage") + suffix)


def _to_json(s: StagedCommit) -> bytes:
    return json.dumps({
        "version": FORMAT_VERSION, "stageId": s.stage_id, "commitUser": s.commit_user,
        "commitIdentifier": s.identifier, "schemaId": s.schema_id,
        "createTimeMillis": int(s.create_time.timestamp() * 1000),
        "messages": [message_to_json(m) for m in s.messages]}, indent=1).encode()


def _from_json(path: str, data: bytes) -> StagedCommit:
    try:
        d = json.loads(data.decode())
        if not isinstance(d, dict) or d.get("version") != FORMAT_VERSION:
            raise ValueError(f"not a stage file of version {FORMAT_VERSION}")
        return StagedCommit(d["stageId"], d["commitUser"], int(d["commitIdentifier"]),
                            tuple(message_from_json(m) for m in d["messages"]),
                            dt.datetime.fromtimestamp(d["createTimeMillis"] / 1000, dt.UTC),
                            int(d["schemaId"]))
    except UnsupportedMetadataError as e:
        raise with_path(e, path) from None
    except (ValueError, KeyError, TypeError, AttributeError, OverflowError, UnicodeDecodeError) as e:
        raise CorruptFileError(path, f"cannot read staged commit: {e}") from None


def stage(ctx: TableContext, messages: Sequence[CommitMessage], stage_id: str, *, commit_user: str,
          identifier: int) -> StagedCommit:
    """Record ``messages`` (from ``TableWrite.prepare_commit``) as stage ``stage_id`` without
    committing them. Fails if the stage exists (publish or discard it first) or if a message's
    files are missing."""
    if not ctx.is_main:   # stages live in the table's staged/, which main's publish and cleanup read
        raise UnsupportedError(f"cannot stage a commit on {ctx.name}: lakeformat stages commits of the main "
                               "branch only (write the branch directly: a branch is itself an audit area)")
    path = _path(ctx, stage_id)
    if not isinstance(commit_user, str) or not commit_user:
        raise LakeformatError("a stage needs a commit_user (the user that will publish it)")
    if isinstance(identifier, bool) or not isinstance(identifier, int) or not 0 <= identifier < BATCH_IDENTIFIER:
        raise LakeformatError(f"stage identifier must be an int in 0..2^63-2 (see identifier_for), not {identifier!r}")
    messages = tuple(messages)
    for m in messages:
        if not isinstance(m, CommitMessage):
            raise LakeformatError(f"stage {stage_id!r}: expected CommitMessages, got {type(m).__name__}")
    _check_files(ctx, stage_id, messages, "staged")
    staged = StagedCommit(stage_id, commit_user, identifier, messages,
                          dt.datetime.fromtimestamp(int(time.time() * 1000) / 1000, dt.UTC), ctx.schema.id)
    ctx.io.mkdirs(_dir(ctx))
    if not ctx.io.try_create(path, _to_json(staged)):
        raise AlreadyExistsError(f"stage {stage_id!r} of {ctx.name} exists already: publish or discard it first")
    log.info("staged %s of %s: %d rows in %d files (commit user %s, identifier %d)", stage_id, ctx.name,
             staged.row_count, len(staged.file_names()), commit_user, identifier)
    return staged


def _check_files(ctx: TableContext, stage_id: str, messages: Sequence[CommitMessage], verb: str) -> None:
    for m in messages:
        try:
            d = ctx.bucket_dir_of(m.partition, m.bucket)
        except Exception:
            raise LakeformatError(f"stage {stage_id!r}: a message's partition ({m.partition.hex()}) is not a "
                                  f"partition of {ctx.name}") from None
        for f in m.all_files():
            if not ctx.io.exists(join(d, f.file_name)):
                raise CommitError(f"stage {stage_id!r} of {ctx.name} cannot be {verb}: its data file "
                                  f"{join(d, f.file_name)} is missing (removed by hand or by another "
                                  "process?). Nothing was committed; discard the stage and write the data again.")


def load_staged(ctx: TableContext, stage_id: str) -> StagedCommit:
    path = _path(ctx, stage_id)
    try:
        data = ctx.io.read_bytes(path)
    except FileNotFoundError:
        raise NotFoundError(f"{ctx.name} has no staged commit {stage_id!r} ({path})") from None
    return _from_json(path, data)


def list_staged(ctx: TableContext) -> list[StagedCommit]:
    """Every pending stage of the table, oldest first (published stages are not pending)."""
    out = []
    for name in ctx.io.list_names(_dir(ctx)):
        if name.endswith(STAGE_SUFFIX) and not name.startswith("."):
            path = join(_dir(ctx), name)
            try:
                out.append(_from_json(path, ctx.io.read_bytes(path)))
            except FileNotFoundError:
                continue   # published or discarded while listing
    return sorted(out, key=lambda s: (s.create_time, s.stage_id))


def read_staged(ctx: TableContext, stage_id: str, columns: Optional[Sequence[str]] = None) -> pa.Table:
    """The staged rows (see the module docstring), for the audit."""
    staged = load_staged(ctx, stage_id)
    reader = SplitRead(ctx, columns)
    fields = [ctx.schema.field(c) for c in reader.columns]
    pk = bool(ctx.schema.primary_keys)
    parts = []
    for m in staged.messages:
        d = ctx.bucket_dir_of(m.partition, m.bucket)
        for f in m.new_files:
            parts.append(read_columns(ctx, join(d, f.file_name), f, fields, (KIND,) if pk else ()))
    out_schema = reader.out_schema.append(pa.field(ROW_KIND, pa.string())) if pk else reader.out_schema
    if not parts:
        return out_schema.empty_table()
    data = pa.concat_tables(parts)
    out = data.select(reader.columns).cast(reader.out_schema)
    if pk:
        out = out.append_column(ROW_KIND, pa.array(["+I", "-U", "+U", "-D"]).take(data.column(KIND)))
    return out


# ---------------------------------------------------------------- publish / discard

@dataclass(frozen=True)
class _Published:
    commit_user: str
    identifier: int
    snapshot_id: Optional[int]


def _read_marker(ctx: TableContext, stage_id: str) -> Optional[_Published]:
    path = _path(ctx, stage_id, PUBLISHED_SUFFIX)
    try:
        d = json.loads(ctx.io.read_bytes(path).decode())
        return _Published(d["commitUser"], int(d["commitIdentifier"]), d.get("snapshotId"))
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError, AttributeError, OverflowError, UnicodeDecodeError) as e:
        raise CorruptFileError(path, f"cannot read publish record: {e}") from None


def _write_marker(ctx: TableContext, staged: StagedCommit, snapshot: Optional[Snapshot]) -> None:
    ctx.io.write_bytes(_path(ctx, staged.stage_id, PUBLISHED_SUFFIX), json.dumps({
        "stageId": staged.stage_id, "commitUser": staged.commit_user, "commitIdentifier": staged.identifier,
        "snapshotId": snapshot.id if snapshot else None, "publishTimeMillis": int(time.time() * 1000),
        "rowCount": staged.row_count}).encode())


def find_committed(ctx: TableContext, commit_user: str, identifier: int) -> Optional[Snapshot]:
    """The snapshot ``commit_user`` committed with ``identifier``, searching every retained
    snapshot (identifiers need not grow)."""
    return FileStoreCommit(ctx, commit_user).committed_snapshot(identifier)


def _snapshot_or_none(ctx: TableContext, snapshot_id: Optional[int]) -> Optional[Snapshot]:
    if snapshot_id is None:
        return None
    try:
        return ctx.snapshot(snapshot_id)
    except NotFoundError:
        return None


def committed_as(ctx: TableContext, stage_id: str, commit_user: str,
                 identifier: int) -> tuple[bool, Optional[Snapshot]]:
    """(whether ``commit_user`` committed ``identifier``, the snapshot if still retained): found
    among the retained snapshots, or in the published marker of ``stage_id``, which outlives
    snapshot expiration."""
    snap = find_committed(ctx, commit_user, identifier)
    if snap is not None:
        return True, snap
    marker = _read_marker(ctx, stage_id)
    if marker and (marker.commit_user, marker.identifier) == (commit_user, identifier):
        return True, _snapshot_or_none(ctx, marker.snapshot_id)
    return False, None


def published_snapshot_id(ctx: TableContext, stage_id: str) -> Optional[int]:
    """The snapshot id the published marker of ``stage_id`` records (None: not published, or
    published without changes); it outlives the snapshot's expiration."""
    marker = _read_marker(ctx, stage_id)
    return marker.snapshot_id if marker else None


def _committed_as(ctx: TableContext, staged: StagedCommit) -> tuple[bool, Optional[Snapshot]]:
    return committed_as(ctx, staged.stage_id, staged.commit_user, staged.identifier)


def _committed_files(ctx: TableContext, staged: StagedCommit, snap: Optional[Snapshot]) -> set[str]:
    """Staged files that a snapshot references (of ``snap``'s delta, and live in the latest)."""
    names = staged.file_names()
    found = set()
    if snap is not None:
        found |= {e.file.file_name for e in delta_entries(ctx, snap) if e.kind == ADD} & names
    latest = ctx.latest_snapshot()
    if latest is not None:
        found |= {e.file.file_name for e in live_entries(ctx, latest)} & names
    return found


def _delete_files(ctx: TableContext, staged: StagedCommit, keep: set[str]) -> int:
    n = 0
    for m in staged.messages:
        d = ctx.bucket_dir_of(m.partition, m.bucket)
        moved = {f.file_name for f in m.compact_before} & {f.file_name for f in m.compact_after}
        for f in m.all_files():
            if f.file_name not in moved and f.file_name not in keep:
                ctx.io.delete(join(d, f.file_name))
                n += 1
    return n


@dataclass(frozen=True)
class PublishPlan:
    """What publishing a stage needs: ``commit`` says whether ``staged`` is to be committed now;
    otherwise ``snapshot`` is the one that holds it already (None: none, or since expired)."""

    stage_id: str
    staged: Optional[StagedCommit]   # None: published before, the stage file is gone
    commit: bool
    snapshot: Optional[Snapshot] = None


def plan_publish(ctx: TableContext, stage_id: str) -> PublishPlan:
    """Whether stage ``stage_id`` still needs its commit (once per (commit user, identifier)).
    A stage found committed already by a re-run of the same work has its re-written files deleted."""
    path = _path(ctx, stage_id)
    if not ctx.io.exists(path):
        marker = _read_marker(ctx, stage_id)
        if marker is None:
            raise NotFoundError(f"{ctx.name} has no staged commit {stage_id!r} to publish ({path})")
        log.info("stage %s of %s was published before (snapshot %s); nothing to do",
                 stage_id, ctx.name, marker.snapshot_id)
        return PublishPlan(stage_id, None, False, _snapshot_or_none(ctx, marker.snapshot_id))
    staged = load_staged(ctx, stage_id)
    done, snap = _committed_as(ctx, staged)
    if not done:
        _check_files(ctx, stage_id, staged.messages, "published")
        return PublishPlan(stage_id, staged, True)
    # a re-run wrote the same work again: its files were never committed, so they go. If
    # any staged file is referenced (a crash after the commit), or the snapshot has expired
    # and cannot tell, every file stays (orphan cleaning sees tags too).
    rerun = snap is not None and not _committed_files(ctx, staged, snap)
    removed = _delete_files(ctx, staged, keep=set()) if rerun else 0
    log.info("identifier %d of %s is already committed (snapshot %s): stage %s not committed again%s",
             staged.identifier, staged.commit_user, snap.id if snap else "expired", stage_id,
             f"; its {removed} re-written file(s) deleted" if removed else "")
    return PublishPlan(stage_id, staged, False, snap)


def finish_publish(ctx: TableContext, plan: PublishPlan, snap: Optional[Snapshot]) -> Optional[Snapshot]:
    """Record a planned publish as done (``snap``: the snapshot its commit made, or the plan's)
    and remove the stage file; returns ``snap``."""
    staged = plan.staged
    if staged is None:
        return snap
    if plan.commit:
        log.info("published stage %s of %s as snapshot %s (%d rows)", plan.stage_id, ctx.name,
                 snap.id if snap else "-", staged.row_count)
    try:
        _write_marker(ctx, staged, snap)
        ctx.io.delete(_path(ctx, plan.stage_id))
    except StorageError as e:
        raise CommitError(f"stage {plan.stage_id!r} of {ctx.name} is published as snapshot "
                          f"{snap.id if snap else '-'}, but recording that failed ({e}); publishing it again "
                          "finds the snapshot and commits nothing twice") from None
    return snap


def discard(ctx: TableContext, stage_id: str) -> int:
    """Delete a stage's data files and its stage file; returns the number of files deleted.
    Refuses (changing nothing) if the stage was already published."""
    if not ctx.io.exists(_path(ctx, stage_id)):
        marker = _read_marker(ctx, stage_id)
        if marker is not None:
            raise LakeformatError(f"stage {stage_id!r} of {ctx.name} was already published as snapshot "
                                  f"{marker.snapshot_id}: its rows are in the table, nothing was discarded")
    staged = load_staged(ctx, stage_id)
    _done, snap = _committed_as(ctx, staged)
    committed = _committed_files(ctx, staged, snap)
    if committed:
        raise LakeformatError(f"stage {stage_id!r} of {ctx.name} was already published"
                              f"{f' as snapshot {snap.id}' if snap else ''}: its rows are in the table, "
                              "nothing was discarded")
    removed = _delete_files(ctx, staged, keep=set())
    ctx.io.delete(_path(ctx, stage_id))
    log.info("discarded stage %s of %s: %d file(s) deleted", stage_id, ctx.name, removed)
    return removed
