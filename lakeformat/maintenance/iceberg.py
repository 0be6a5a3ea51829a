"""Publishing a Paimon table as an Iceberg table (Paimon's ``metadata.iceberg.storage``).

After each commit the publisher brings the Iceberg metadata up to the latest Paimon snapshot:
one Iceberg snapshot per Paimon snapshot (same id, same commit time, same schema id), each
adding one manifest for the files its Paimon snapshot added and reusing every other manifest;
only manifests holding a removed file are rewritten, and small manifests are merged once there
are enough of them. A primary-key table with deletion vectors shows every file above level 0,
as Paimon's readers read it, and each deletion-vector index file becomes an Iceberg position
delete file (Parquet) listed in one delete manifest, rewritten when the vectors change. Then it
creates ``vN.metadata.json`` (only if absent: a reader never sees half a version) and moves
``version-hint.text`` to it, and deletes what nothing needs any more: earlier versions
(``metadata.iceberg.delete-after-commit.enabled``,
``metadata.iceberg.previous-versions-max``) and the manifest lists and manifests of Iceberg
snapshots whose Paimon snapshot expired.

The Paimon snapshot is the source of truth. Publishing catches up on every Paimon snapshot the
Iceberg view lacks, so a publish that failed or was killed (or a commit made without it, such as
a partition expiration) is repaired by the next one, or by ``lakeformat iceberg-sync``. Metadata
that does not match Paimon's history (a rollback, a dropped and recreated table, snapshots
expired before they were published) is rebuilt from the earliest retained snapshot. Files a
killed publish wrote but no version names are orphans that orphan-file removal deletes.

An ``IcebergCache`` (the catalog's) keeps what was published last (the metadata, the manifest
lists of its snapshots), and the publisher checks that ``version-hint.text`` still names that
version, and the committer hands over the delta it committed, so a commit reads nothing back and
the cost of a publish does not grow with the table's history.
"""
from __future__ import annotations

import bisect
import functools
import logging
import operator
import uuid
from dataclasses import dataclass, field
from typing import Optional

from lakeformat.errors import CorruptFileError, LakeformatError, NotFoundError, OutcomeUnknownError, SchemaError
from lakeformat.format import options as O
from lakeformat.format import types as T
from lakeformat.format.iceberg import manifest as M
from lakeformat.format.iceberg import plan as P
from lakeformat.format.iceberg.metadata import IcebergSnapshot, TableMetadata
from lakeformat.format.iceberg.schema import (
    check_publishable,
    iceberg_schema,
    last_partition_id,
    partition_fields,
)
from lakeformat.format.iceberg.values import column_metrics, physical
from lakeformat.format.index_manifest import DELETION_VECTORS, IndexManifestEntry
from lakeformat.format.manifest import ADD, ManifestEntry
from lakeformat.format.schema import TableSchema
from lakeformat.format.snapshot import COMPACT, Snapshot
from lakeformat.io.data_file import file_path
from lakeformat.io.fileio import join
from lakeformat.io.iceberg import (
    IcebergFiles,
    absolute,
    index_file_of,
    metadata_dir,
    position_deletes,
    position_deletes_name,
)
from lakeformat.io.index_files import IndexFiles
from lakeformat.io.table_context import TableContext
from lakeformat.maintenance.tag import TAG_PREFIX, TagManager
from lakeformat.read.scan import FileScan

log = logging.getLogger(__name__)


def enabled(ctx: TableContext) -> bool:
    """Iceberg metadata follows main only: a branch's snapshots are never published there."""
    return ctx.is_main and ctx.typed_options.get(O.ICEBERG_STORAGE) != "disabled"


def iceberg_files(ctx: TableContext) -> IcebergFiles:
    """The Iceberg ``metadata/`` directory of the table (its storage options decide where)."""
    o = ctx.typed_options
    location = o.get(O.ICEBERG_STORAGE_LOCATION)
    if location is None:
        location = "table-location" if o.get(O.ICEBERG_STORAGE) == "table-location" else "catalog-location"
    return IcebergFiles(ctx.io, metadata_dir(ctx.io, ctx.path, location))


@dataclass
class _Known:
    """What this process published last for one metadata directory."""

    version: int
    metadata: TableMetadata
    manifests: dict[int, list[dict]]   # Iceberg snapshot id -> its manifest list records


def _partition_type(schema: TableSchema, name: str) -> T.AtomicType:
    """The type of partition key ``name``: atomic, as Paimon requires (a schema file written
    elsewhere is not checked at creation here)."""
    t = schema.field(name).type
    if not isinstance(t, T.AtomicType):
        raise SchemaError(f"partition key {name!r} must be an atomic type, not {T.type_to_json(t)}")
    return t


_INDEX_MANIFEST = "paimon.index-manifest"   # summary key: the Paimon index manifest the deletes were made of
_SNAPSHOT_ID = operator.attrgetter("snapshot_id")


@dataclass(frozen=True)
class PublishResult:
    version: Optional[int] = None           # the version now current (None: table has no snapshot)
    published: tuple[int, ...] = ()         # Iceberg snapshots added
    expired: tuple[int, ...] = ()           # Iceberg snapshots dropped with their Paimon snapshot
    rebuilt: bool = False                   # history did not match Paimon's: rebuilt from the earliest
    deleted: tuple[str, ...] = field(default=(), repr=False)   # metadata files deleted
    retagged: bool = False                  # the tag refs changed

    def summary(self, table_name: str = "") -> str:
        of = f" of {table_name}" if table_name else ""
        if self.version is None:
            return f"nothing to publish{of}: no snapshot"
        if not self.published and not self.expired:
            if self.retagged:
                return f"Iceberg tag refs{of} updated (version {self.version})"
            return f"Iceberg metadata{of} is up to date (version {self.version})"
        what = "rebuilt" if self.rebuilt else "published"
        return (f"{what} Iceberg version {self.version}{of}: {len(self.published)} snapshot(s) added, "
                f"{len(self.expired)} expired, {len(self.deleted)} metadata file(s) deleted")


class IcebergPublisher:
    """Publishes one table's Iceberg metadata; cheap to create (one per commit)."""

    def __init__(self, ctx: TableContext):
        self.ctx = ctx
        self.cache = ctx.iceberg_cache
        o = ctx.typed_options
        self.files = iceberg_files(ctx)
        self.codec = o.required(O.ICEBERG_MANIFEST_COMPRESSION)
        self.keep_versions = o.required(O.ICEBERG_PREVIOUS_VERSIONS_MAX)
        self.delete_old = o.required(O.ICEBERG_DELETE_AFTER_COMMIT)
        self.min_merge = o.required(O.ICEBERG_COMPACT_MIN_FILE_NUM)
        self.max_merge = o.required(O.ICEBERG_COMPACT_MAX_FILE_NUM)
        self.target_size = o.required(O.MANIFEST_TARGET_FILE_SIZE)
        schema = ctx.schema
        self.deletion_vectors = o.required(O.DELETION_VECTORS)   # an append table's too, written by Paimon Java
        self.visible = P.exported(bool(schema.primary_keys), o.num_levels() - 1, self.deletion_vectors)
        self.partition = [M.PartitionField(f["name"], f["field-id"], _partition_type(schema, f["name"]))
                          for f in partition_fields(schema)]
        self.partition_key = tuple(self.partition)
        self.location = absolute(ctx.io, ctx.path)
        self._dirs: dict[tuple, str] = {}
        self._schemas: dict[int, dict] = {}

    # -- entry point ---------------------------------------------------------------------------
    def sync(self, rebuild: bool = False, deltas: Optional[dict[int, list[ManifestEntry]]] = None,
             expired_to: Optional[int] = None) -> PublishResult:
        """Bring the Iceberg metadata up to the latest Paimon snapshot (``rebuild``: from scratch).
        A committer passes the ``deltas`` of the snapshots it made (the last is the latest it
        knows) and, if its expiration ran, ``expired_to`` (the earliest snapshot kept), so the
        publish reads neither back."""
        check_publishable(self.ctx.schema)
        for attempt in range(3):
            try:
                return self._sync(rebuild, deltas or {}, expired_to)
            except (CorruptFileError, NotFoundError, FileNotFoundError) as e:
                # another publisher or an expiration changed the files while this one read them
                self.cache.forget(self.files.dir)
                deltas, expired_to = {}, None
                if attempt == 2:
                    raise
                log.info("Iceberg metadata of %s changed while publishing (%s); trying again", self.ctx.name, e)
        raise AssertionError("unreachable")

    def _sync(self, rebuild: bool, deltas: dict, expired_to: Optional[int]) -> PublishResult:
        sm = self.ctx.snapshot_manager
        latest = max(deltas) if deltas else sm.latest_id()
        if latest is None:
            return PublishResult()
        known = None if rebuild else self._load()
        if known is not None and deltas and known.version > latest:
            latest = sm.latest_id()   # another committer published beyond this one's snapshot
            if latest is None:
                return PublishResult()
            if known.version <= latest:
                return PublishResult(known.version)
        if expired_to is not None:
            earliest = expired_to
        elif known is not None and deltas:   # nothing expired by this commit: the retained ones stay
            earliest = known.metadata.snapshots[0].snapshot_id
        else:
            earliest = sm.earliest_id() or latest
        if known is not None and (not self._matches(known, earliest, latest) or self._view_changed(known)):
            known = None
            earliest = sm.earliest_id() or latest
        rebuilt = known is None
        if known is None:
            previous = self._previous_uuid()
            meta = TableMetadata(previous or str(uuid.uuid4()), self.location, [], [
                dict(f) for f in partition_fields(self.ctx.schema)], last_partition_id(self.ctx.schema), {}, [])
            manifests: dict[int, list[dict]] = {}
            start = earliest
        else:
            meta, manifests = known.metadata.copy(snapshots=list(known.metadata.snapshots)), dict(known.manifests)
            start = known.version + 1
        written: list[str] = []
        try:
            published = []
            for sid in range(start, latest + 1):
                snap = sm.get(sid)
                base = manifests.get(meta.current.snapshot_id) if meta.current is not None else None
                if base is None and meta.current is not None:
                    base = self._read_list(meta.current.manifest_list)
                first = rebuilt and sid == start
                records, snapshot = self._next(meta, base or [], snap, first, None if first else deltas.get(sid),
                                               written)
                meta.snapshots.append(snapshot)
                manifests[sid] = records
                published.append(sid)
            self._add_schemas(meta, meta.snapshots[len(meta.snapshots) - len(published):])
            expired = meta.snapshots[:P.expired_count(meta.snapshots, earliest)]
            meta.snapshots = meta.snapshots[len(expired):]
            meta.tags = self._tags(meta.snapshots)
            retagged = known is not None and meta.tags != known.metadata.tags
            if known is not None and not published and not expired and not retagged:
                return PublishResult(known.version)
            version = latest
            try:
                self.files.write_version(version, meta.json_parts())
            except OutcomeUnknownError:
                written = []   # the version may exist and name them: they stay (orphans at worst)
                raise
            written = []   # the version names them now
        finally:
            for path in written:   # a failed publish leaves no file behind that nothing names
                self.files.delete(path)
        if published or expired or self.files.read_hint() != version:
            self.files.write_hint(version)
        deleted = self._cleanup(version, known.version if known else None, expired, manifests, meta, rebuilt)
        for s in expired:
            manifests.pop(s.snapshot_id, None)
        self.cache.known[self.files.dir] = _Known(version, meta, manifests)
        return PublishResult(version, tuple(published), tuple(s.snapshot_id for s in expired), rebuilt,
                             tuple(deleted), retagged)

    # -- tags --------------------------------------------------------------------------------
    def _tags(self, snapshots: list[IcebergSnapshot]) -> dict[str, int]:
        """The Paimon tags on the Iceberg ``snapshots`` (ascending), exported as Iceberg tag refs
        as Paimon does; a tag on an expired snapshot has no Iceberg snapshot to name. One listing
        of the tag directory per publish; a tag file is read once (by name, time and size)."""
        tags = TagManager(self.ctx)

        def tag_id(tag: str) -> int:
            return tags.get(tag).snapshot.id
        out = {}
        for info in self.ctx.io.list_dir(tags.dir):
            name = info.base_name
            if not name.startswith(TAG_PREFIX) or len(name) == len(TAG_PREFIX):
                continue
            name = name[len(TAG_PREFIX):]
            try:
                sid = self.cache.tag_snapshot((tags.dir, name, info.mtime_ns, info.size),
                                              functools.partial(tag_id, name))
            except (NotFoundError, CorruptFileError, LakeformatError):   # deleted meanwhile, or unreadable
                continue
            i = bisect.bisect_left(snapshots, sid, key=_SNAPSHOT_ID)
            if i < len(snapshots) and snapshots[i].snapshot_id == sid:
                out[name] = sid
        return out

    # -- what is published already -----------------------------------------------------------
    def _load(self) -> Optional[_Known]:
        """What is published: this process's last publish if the hint still names it (the hint
        moves only after a version is whole), else the newest version on storage."""
        known = self.cache.known.get(self.files.dir)
        if known is not None and self.files.read_hint() == known.version:
            return known
        version = self.files.current_version()
        if version is None:
            return None
        try:
            meta = TableMetadata.from_json(self.files.read_version(version))
        except (ValueError, KeyError, TypeError) as e:
            log.warning("Iceberg metadata %s cannot be read (%s); rebuilding it",
                        self.files.version_path(version), e)
            return None
        if meta.current is None:
            return None
        return _Known(version, meta, {})

    def _matches(self, known: _Known, earliest: int, latest: int) -> bool:
        """Whether the published history is Paimon's: its current snapshot is a retained Paimon
        snapshot with the same commit time, and not newer than the latest."""
        cur = known.metadata.current
        if cur is None or cur.snapshot_id != known.version or not earliest <= cur.snapshot_id <= latest:
            return False
        try:
            return self.ctx.snapshot_manager.get(cur.snapshot_id).time_millis == cur.timestamp_ms
        except NotFoundError:
            return False

    def _view_changed(self, known: _Known) -> bool:
        """Whether deletion vectors were switched on or off since the published snapshots:
        then other files make up the view (see ``plan.exported``), and it is rebuilt."""
        cur = known.metadata.current
        return cur is not None and (_INDEX_MANIFEST in cur.summary) != bool(self.deletion_vectors)

    def _previous_uuid(self) -> Optional[str]:
        """The identity of metadata being rebuilt, kept so readers keep refreshing one table."""
        known = self.cache.known.get(self.files.dir)
        if known is not None:
            return known.metadata.table_uuid
        version = self.files.current_version()
        if version is None:
            return None
        try:
            return TableMetadata.from_json(self.files.read_version(version)).table_uuid
        except Exception:   # unreadable metadata gets a new identity
            return None

    def _read_list(self, path: str) -> list[dict]:
        try:
            return M.read_records(self.files.read(path))
        except FileNotFoundError:
            raise CorruptFileError(path, "Iceberg manifest list is missing") from None

    # -- one snapshot ------------------------------------------------------------------------
    def _next(self, meta: TableMetadata, base: list[dict], snap: Snapshot, first: bool,
              delta: Optional[list[ManifestEntry]], written: list[str]) -> tuple[list[dict], IcebergSnapshot]:
        """The manifest list records and the Iceberg snapshot for Paimon snapshot ``snap`` (whose
        ``delta`` the committer may know already)."""
        sid = snap.id
        if first:   # the whole view of the first snapshot of a rebuilt history
            scan = FileScan(self.ctx)
            added = {(e.partition, e.bucket, e.file.file_name): e for e in scan.live_entries(snap)
                     if self.visible(e.file)}
            removed: dict = {}
        else:
            if delta is None:
                delta = FileScan(self.ctx).delta_entries(snap)
            added, removed = P.file_changes(delta, self.visible)
        records = [r for r in base if r["content"] == M.DATA]
        if removed:
            records = self._remove(records, removed, added, sid, written)
        new_entries = [M.entry(M.ADDED, sid, sid, sid, self._data_file(e)) for e in added.values()]
        if new_entries:
            records.append(self._write_manifest(new_entries, sid, written))
        records = self._merge_small(records, sid, written)
        prev = meta.current.summary if meta.current is not None else {}
        deletes = self._deletes(snap, [r for r in base if r["content"] == M.POSITION_DELETES], prev, written)
        records += deletes
        name = f"snap-{sid}-{uuid.uuid4()}.avro"
        parent = meta.current.snapshot_id if meta.current is not None else None
        path = self.files.write(name, M.write_manifest_list([self._encoded(r) for r in records], sid, parent, sid,
                                                            self.codec))
        written.append(path)
        summary = self._summary(prev, added.values(), removed.values(), snap, deletes)
        return records, IcebergSnapshot(sid, parent, snap.time_millis, path, snap.schema_id, summary)

    def _remove(self, records: list[dict], removed: dict, added: dict, sid: int,
                written: list[str]) -> list[dict]:
        """Rewrite the manifests holding a removed file; a file the snapshot adds that the view
        already holds is not added twice."""
        paths = {self._path(e): key for key, e in removed.items()}
        added_paths = {self._path(e): key for key, e in added.items()}
        types = [p.type for p in self.partition]
        wanted = [[physical(v, t) for v, t in zip(self.ctx.partition_values(e.partition), types)]
                  for e in removed.values()]
        out = []
        for rec in records:
            if not any(P.may_hold(rec.get("partitions"), v, types) for v in wanted):
                out.append(rec)
                continue
            entries = self._manifest(rec["manifest_path"])
            for e in entries:
                if e["status"] != M.DELETED and e["data_file"]["file_path"] in added_paths:
                    added.pop(added_paths[e["data_file"]["file_path"]], None)
            rewritten, hit = P.live_after_removal(entries, set(paths), sid)
            out.append(self._write_manifest(rewritten, sid, written) if hit else rec)
        return out

    def _encoded(self, record: dict) -> bytes:
        """A manifest list record's Avro bytes, encoded once per manifest (records never change)."""
        return self.cache.encoded(record["manifest_path"], lambda: M.encode(M.MANIFEST_LIST_SCHEMA, record))

    def _manifest(self, path: str) -> list[dict]:
        """A manifest's entries: remembered if this process wrote it (manifests never change)."""
        entries = self.cache.entries.get(path)
        return entries if entries is not None else M.read_records(self.files.read(path))

    def _merge_small(self, records: list[dict], sid: int, written: list[str]) -> list[dict]:
        pick = P.compaction_candidates([r["manifest_length"] for r in records], self.target_size,
                                       self.min_merge, self.max_merge)
        if not pick:
            return records
        entries = []
        for i in pick:
            entries += self._manifest(records[i]["manifest_path"])
            if records[i]["added_snapshot_id"] == sid and records[i]["manifest_path"] in written:
                self.files.delete(records[i]["manifest_path"])   # written by this snapshot: nothing names it
                written.remove(records[i]["manifest_path"])
        merged = P.merged_entries(entries, sid)
        chosen = set(pick)
        out = [r for i, r in enumerate(records) if i not in chosen]
        if merged:
            out.append(self._write_manifest(merged, sid, written))
        return out

    def _write_manifest(self, entries: list[dict], sid: int, written: list[str], content: int = M.DATA) -> dict:
        data = M.write_manifest(self.partition_key, entries, self._manifest_metadata(content), self.codec)
        path = self.files.write(f"{uuid.uuid4()}-m0.avro", data)
        written.append(path)
        self.cache.remember_entries(path, entries)
        seqs = [e["sequence_number"] for e in entries if e["sequence_number"] is not None]
        return M.manifest_file(path, len(data), sid, sid, min(seqs, default=sid), entries, self.partition, content)

    # -- deletion vectors ----------------------------------------------------------------------
    def _deletes(self, snap: Snapshot, base: list[dict], prev_summary: dict, written: list[str]) -> list[dict]:
        """The delete manifest of ``snap``: the previous one while the snapshot names the same
        index manifest, else one listing a position delete file per deletion-vector index file,
        each written once (a file of an index file already published is listed again)."""
        if not self.deletion_vectors:
            return []
        if prev_summary.get(_INDEX_MANIFEST) == (snap.index_manifest or ""):
            return base
        vectors = [e for e in IndexFiles.of(self.ctx).read_manifest(snap.index_manifest)
                   if e.kind == ADD and e.file.index_type == DELETION_VECTORS and e.file.dv_ranges]
        if not vectors:
            return []
        published = {index_file_of(e["data_file"]["file_path"]): e["data_file"]
                     for r in base for e in self._manifest(r["manifest_path"]) if e["status"] != M.DELETED}
        entries = [M.entry(M.ADDED, snap.id, snap.id, snap.id,
                           published.get(e.file.file_name) or self._position_deletes(e, written)) for e in vectors]
        return [self._write_manifest(entries, snap.id, written, M.POSITION_DELETES)]

    def _position_deletes(self, e: IndexManifestEntry, written: list[str]) -> dict:
        """Write the position delete file of one deletion-vector index file."""
        d = self._bucket_dir(e.partition, e.bucket)
        vectors = {join(d, name): positions for name, positions in
                   IndexFiles.of(self.ctx).read_deletion_vectors(e.file).items()}
        data = position_deletes(vectors)
        path = self.files.write(position_deletes_name(e.file.file_name, str(uuid.uuid4())), data)
        written.append(path)
        return M.position_deletes_file(path, self.ctx.partition_values(e.partition), self.partition,
                                       sum(len(p) for p in vectors.values()), len(data), list(vectors))

    def _data_file(self, e: ManifestEntry) -> dict:
        f = e.file
        fields = self.ctx.schema_manager.get(f.schema_id).fields
        nulls, lower, upper = column_metrics(f.value_stats, f.value_stats_cols, fields)
        return M.data_file(self._path(e), self.ctx.partition_values(e.partition), self.partition,
                           f.row_count, f.file_size, nulls, lower, upper)

    def _path(self, e: ManifestEntry) -> str:
        return file_path(self.ctx, self._bucket_dir(e.partition, e.bucket), e.file)

    def _bucket_dir(self, partition: bytes, bucket: int) -> str:
        d = self._dirs.get((partition, bucket))
        if d is None:
            d = self._dirs[(partition, bucket)] = absolute(self.ctx.io, self.ctx.bucket_dir_of(partition, bucket))
        return d

    def _summary(self, prev: dict, added, removed, snap: Snapshot, deletes: list[dict]) -> dict:
        added, removed = list(added), list(removed)

        def total(key: str, delta: int) -> str:
            return str(max(0, int(prev.get(key, 0)) + delta))
        add_rows, del_rows = sum(e.file.row_count for e in added), sum(e.file.row_count for e in removed)
        add_size, del_size = sum(e.file.file_size for e in added), sum(e.file.file_size for e in removed)
        return {"operation": P.operation(bool(removed), bool(added), snap.commit_kind == COMPACT),
                "added-data-files": str(len(added)), "added-records": str(add_rows),
                "added-files-size": str(add_size), "deleted-data-files": str(len(removed)),
                "deleted-records": str(del_rows), "removed-files-size": str(del_size),
                "changed-partition-count": str(len({e.partition for e in added + removed})),
                "total-records": total("total-records", add_rows - del_rows),
                "total-data-files": total("total-data-files", len(added) - len(removed)),
                "total-files-size": total("total-files-size", add_size - del_size),
                "total-delete-files": str(sum(r["added_files_count"] for r in deletes)),
                "total-position-deletes": str(sum(r["added_rows_count"] for r in deletes)),
                "total-equality-deletes": "0", "paimon.commit-kind": snap.commit_kind,
                **({_INDEX_MANIFEST: snap.index_manifest or ""} if self.deletion_vectors else {})}

    # -- schemas -------------------------------------------------------------------------------
    def _manifest_metadata(self, content: int) -> dict[str, str]:
        key = (self.files.dir, self.ctx.schema.id, content)
        if key not in self.cache.manifest_metadata:
            self.cache.manifest_metadata[key] = M.manifest_metadata(self._iceberg_schema(self.ctx.schema.id),
                                                          partition_fields(self.ctx.schema), content)
        return self.cache.manifest_metadata[key]

    def _iceberg_schema(self, schema_id: int) -> dict:
        if schema_id not in self._schemas:
            self._schemas[schema_id] = iceberg_schema(self.ctx.schema_manager.get(schema_id))
        return self._schemas[schema_id]

    def _add_schemas(self, meta: TableMetadata, added: list[IcebergSnapshot]) -> None:
        """Every Paimon schema up to the newest the table or a snapshot uses, each once (the
        metadata has those of the snapshots it had already: only the ``added`` ones are looked at)."""
        top = max([self.ctx.schema.id] + [s.schema_id for s in added])
        if meta.schemas and meta.schemas[-1]["schema-id"] >= top:
            return
        have = {s["schema-id"] for s in meta.schemas}
        missing = [i for i in range(top + 1) if i not in have]
        if missing:
            ids = set(self.ctx.schema_manager.list_ids())
            meta.schemas = sorted(meta.schemas + [self._iceberg_schema(i) for i in missing if i in ids],
                                  key=lambda s: s["schema-id"])

    # -- cleanup -------------------------------------------------------------------------------
    def _cleanup(self, version: int, base: Optional[int], expired: list[IcebergSnapshot],
                 manifests: dict[int, list[dict]], meta: TableMetadata, rebuilt: bool) -> list[str]:
        """Delete earlier versions (as the options say), then the manifest lists and manifests
        only expired snapshots named."""
        deleted: list[str] = []
        if self.delete_old:
            if self.keep_versions == 0 and base is not None and not rebuilt:
                old = [base] if base != version else []
            else:
                old = [v for v in self.files.versions() if v != version and (v < version - self.keep_versions
                                                                            or v > version)]
            for v in old:
                self.files.delete(self.files.version_path(v))
                deleted.append(self.files.version_path(v))
        if expired:
            first = meta.snapshots[0].snapshot_id if meta.snapshots else None
            oldest = manifests.get(first) if first is not None else []
            if oldest is None:
                oldest = self._read_list(meta.snapshots[0].manifest_list)
            kept = {r["manifest_path"] for s in meta.snapshots for r in manifests.get(s.snapshot_id, ())}
            kept |= {r["manifest_path"] for r in oldest}
            # a manifest or delete file left out of one snapshot never comes back: what the
            # oldest kept snapshot does not list, no kept snapshot does
            kept_deletes: Optional[set[str]] = None
            for s in expired:
                try:
                    records = manifests.get(s.snapshot_id) or self._read_list(s.manifest_list)
                except CorruptFileError:
                    records = []   # deleted by an earlier, interrupted cleanup
                gone_records = [r for r in records if r["manifest_path"] not in kept]
                gone = []
                if any(r["content"] == M.POSITION_DELETES for r in gone_records):
                    if kept_deletes is None:
                        kept_deletes = set(self._delete_files(oldest))
                    gone = [f for f in self._delete_files(gone_records) if f not in kept_deletes]
                    kept_deletes.update(gone)   # shared with later expired ones: gone already
                gone += [r["manifest_path"] for r in gone_records] + [s.manifest_list]
                for path in gone:
                    self.files.delete(path)
                deleted += gone
                kept |= {r["manifest_path"] for r in records}   # shared with later expired ones: gone already
        return deleted

    def _delete_files(self, records) -> list[str]:
        """Paths of the position delete files the delete manifests among ``records`` list."""
        out = []
        for r in records:
            if r["content"] != M.POSITION_DELETES:
                continue
            try:
                out += [e["data_file"]["file_path"] for e in self._manifest(r["manifest_path"])]
            except FileNotFoundError:
                continue   # deleted by an earlier, interrupted cleanup
        return out


def publish_after_change(ctx: TableContext, deltas: Optional[dict[int, list[ManifestEntry]]] = None,
                         expired=None) -> Optional[PublishResult]:
    """Run last after each commit, snapshot expiration and rollback when ``metadata.iceberg.storage``
    is set. A failure is logged, never raised: the Paimon change happened, and the next commit
    (or ``lakeformat iceberg-sync``) repairs the Iceberg metadata."""
    if not enabled(ctx):
        return None
    try:
        expired_to = expired.end if expired is not None and expired.begin is not None else None
        return IcebergPublisher(ctx).sync(deltas=deltas, expired_to=expired_to)
    except Exception as e:   # the commit succeeded; the next publish repairs
        log.warning("publishing Iceberg metadata of %s failed (the commit itself succeeded; the next commit "
                    "or `lakeformat iceberg-sync` repairs it): %s", ctx.name, e,
                    exc_info=log.isEnabledFor(logging.DEBUG))
        return None


def iceberg_sync(ctx: TableContext, rebuild: bool = False) -> PublishResult:
    """Repair or rebuild the Iceberg metadata of the table now (the ``iceberg-sync`` verb)."""
    if not ctx.is_main:
        raise LakeformatError(f"{ctx.name} is branch {ctx.branch!r}: Iceberg metadata follows the main branch only")
    if not enabled(ctx):
        raise LakeformatError(f"{ctx.name} does not publish Iceberg metadata: set the option "
                              "metadata.iceberg.storage to table-location or hadoop-catalog first")
    return IcebergPublisher(ctx).sync(rebuild)
