"""Tags: named snapshots that outlive snapshot expiration (``tag/tag-<name>``).

A tag file is the tagged snapshot's JSON, so a tag keeps its snapshot readable after
``snapshot-N`` itself has been expired: the manifest lists it names stay protected. As in
Paimon, a tag created with a retention also carries ``tagCreateTime`` (a Java LocalDateTime as
``[year, month, day, hour, minute, second, nanos]``, local time, trailing zeros omitted) and
``tagTimeRetained`` (a Java Duration as decimal seconds); a tag without one is the plain snapshot
JSON, which older Paimon readers also understand.
"""
from __future__ import annotations

import builtins
import datetime as dt
import json
import logging
from dataclasses import dataclass
from typing import Optional, Union

from lakeformat.format.metadata_checks import UnsupportedMetadataError, with_path
from lakeformat.errors import (
    AlreadyExistsError,
    CorruptFileError,
    LakeformatError,
    NotFoundError,
)
from lakeformat.format import options as O
from lakeformat.format.names import validate_ref_name
from lakeformat.format.snapshot import Snapshot
from lakeformat.io.fileio import join
from lakeformat.io.table_context import TableContext
from lakeformat.maintenance.branches import keep_unreached, other_branches_reach
from lakeformat.maintenance.references import (
    FileRefs,
    changelog_refs,
    snapshot_refs,
    union,
)

log = logging.getLogger(__name__)

TAG_PREFIX = "tag-"
CREATE_TIME, TIME_RETAINED = "tagCreateTime", "tagTimeRetained"


@dataclass(frozen=True)
class Tag:
    name: str
    snapshot: Snapshot
    create_time: Optional[dt.datetime] = None     # naive local time, as Java's LocalDateTime
    time_retained: Optional[dt.timedelta] = None

    @property
    def snapshot_id(self) -> int:
        return self.snapshot.id

    @property
    def expires_at(self) -> Optional[dt.datetime]:
        if self.create_time is None or self.time_retained is None:
            return None
        return self.create_time + self.time_retained

    def to_json(self) -> str:
        d = json.loads(self.snapshot.to_json())
        if self.time_retained is not None:
            d[CREATE_TIME] = local_datetime_to_json(self.create_time or dt.datetime.now())
            d[TIME_RETAINED] = self.time_retained.total_seconds()
        return json.dumps(d, indent=2)

    @classmethod
    def from_json(cls, name: str, text: str) -> Tag:
        snapshot = Snapshot.from_json(text)   # first: it rejects what is not a JSON object
        d = json.loads(text)
        created, retained = d.get(CREATE_TIME), d.get(TIME_RETAINED)
        return cls(name, snapshot,
                   None if created is None else json_to_local_datetime(created),
                   None if retained is None else dt.timedelta(seconds=float(retained)))


def local_datetime_to_json(t: dt.datetime) -> list[int]:
    """Jackson's LocalDateTime array: seconds only if seconds or nanos, nanos only if nonzero."""
    out = [t.year, t.month, t.day, t.hour, t.minute]
    nanos = t.microsecond * 1000
    if t.second or nanos:
        out.append(t.second)
        if nanos:
            out.append(nanos)
    return out


def json_to_local_datetime(value) -> dt.datetime:
    if isinstance(value, str):   # ISO text, which Jackson also accepts
        return dt.datetime.fromisoformat(value)
    y, mo, d, h, mi, s, nanos = (list(value) + [0] * 7)[:7]
    return dt.datetime(y, mo, d, h, mi, s, nanos // 1000)


def _duration(value: Union[None, str, dt.timedelta]) -> Optional[dt.timedelta]:
    return O.duration(value, "tag time_retained")


class TagManager:
    """Create, read, list and delete the tags of one table."""

    def __init__(self, ctx: TableContext):
        self.ctx = ctx
        self.io = ctx.io
        self.dir = join(ctx.branch_path, "tag")

    def path(self, name: str) -> str:
        return join(self.dir, TAG_PREFIX + validate_ref_name(name, "tag"))

    def exists(self, name: str) -> bool:
        return self.io.exists(self.path(name))

    def names(self) -> list[str]:
        return sorted(n[len(TAG_PREFIX):] for n in self.io.list_names(self.dir)
                      if n.startswith(TAG_PREFIX) and len(n) > len(TAG_PREFIX))

    def get(self, name: str) -> Tag:
        path = self.path(name)
        try:
            text = self.io.read_bytes(path)
        except FileNotFoundError:
            raise NotFoundError(f"tag {name!r} of {self.ctx.name} does not exist ({path})") from None
        try:
            return Tag.from_json(name, text.decode())
        except UnsupportedMetadataError as e:
            raise with_path(e, path) from None
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError, UnicodeDecodeError) as e:
            raise CorruptFileError(path, f"cannot parse tag {name!r}: {e}") from None

    def list(self) -> list[Tag]:
        """Every tag, ordered by snapshot id (then name)."""
        tags = []
        for name in self.names():
            try:
                tags.append(self.get(name))
            except NotFoundError:   # deleted while listing
                continue
        return sorted(tags, key=lambda t: (t.snapshot.id, t.name))

    def create(self, name: str, snapshot_id: Optional[int] = None,
               time_retained: Union[None, str, dt.timedelta] = None) -> Tag:
        """Tag a snapshot (default: the latest). ``time_retained`` (default: the table's
        ``tag.default-time-retained``) lets :meth:`expire` drop the tag after that long. A
        snapshot id that was expired can still be tagged while another tag holds it."""
        validate_ref_name(name, "tag", allow_numeric=False)
        retained = _duration(time_retained)
        if retained is None:
            retained = self.ctx.typed_options.get(O.TAG_DEFAULT_TIME_RETAINED)
        if retained is not None and retained <= dt.timedelta(0):
            raise LakeformatError(f"tag {name!r}: time_retained must be positive, not {retained}")
        snapshot = self._find_snapshot(snapshot_id)
        if self.exists(name):
            raise AlreadyExistsError(f"tag {name!r} of {self.ctx.name} exists already "
                                     f"(on snapshot {self.get(name).snapshot.id}); delete it first")
        tag = Tag(name, snapshot, dt.datetime.now() if retained is not None else None, retained)
        if not self.io.try_create(self.path(name), tag.to_json().encode()):
            raise AlreadyExistsError(f"tag {name!r} of {self.ctx.name} was created concurrently")
        log.info("created tag %r on snapshot %d of %s", name, snapshot.id, self.ctx.name)
        return tag

    def _find_snapshot(self, snapshot_id: Optional[int]) -> Snapshot:
        sm = self.ctx.snapshot_manager
        if snapshot_id is None:
            latest = sm.latest()
            if latest is None:
                raise NotFoundError(f"{self.ctx.name} has no snapshot to tag yet")
            return latest
        if sm.exists(snapshot_id):
            return sm.get(snapshot_id)
        held = [t for t in self.list() if t.snapshot.id == snapshot_id]
        if held:
            return held[0].snapshot
        raise NotFoundError(f"cannot tag snapshot {snapshot_id} of {self.ctx.name}: it does not exist "
                            f"(snapshots {sm.earliest_id()}..{sm.latest_id()}) and no tag holds it")

    def delete(self, name: str, dry_run: bool = False) -> int:
        """Delete a tag. If its snapshot was expired and no other tag holds it, the files only
        it kept alive are deleted too (as Paimon does); otherwise only the tag file goes.
        Returns the number of those files (with ``dry_run``: that would go; nothing changes)."""
        tag = self.get(name)
        tags = self.list()
        orphaned = FileRefs()
        if not self.ctx.snapshot_manager.exists(tag.snapshot.id) and \
                not any(t.snapshot.id == tag.snapshot.id and t.name != name for t in tags):
            orphaned = self.files_only_held_by(tag, [t for t in tags if t.name != name])
        paths = keep_unreached(orphaned.paths(self.ctx.path), other_branches_reach(self.ctx) if orphaned else None)
        if dry_run:
            return len(paths)
        self.io.delete(self.path(name))     # the tag first: a kill then leaves only unreferenced files
        for path in paths:
            self.io.delete(path)
        log.info("deleted tag %r of %s (%d files only it held)", name, self.ctx.name, len(paths))
        return len(paths)

    def files_only_held_by(self, tag: Tag, others: builtins.list[Tag]) -> FileRefs:
        """Files of an expired tagged snapshot that nothing else refers to. History is linear,
        so a file of ``tag`` still in use is used by its nearest tagged neighbour below, or by
        the nearest of (earliest snapshot, tagged neighbour above)."""
        below = [t.snapshot for t in others if t.snapshot.id < tag.snapshot.id]
        above = [t.snapshot for t in others if t.snapshot.id > tag.snapshot.id]
        earliest = self.ctx.snapshot_manager.earliest_id()
        if earliest is not None:
            above.append(self.ctx.snapshot_manager.get(earliest))
        keep = []
        if below:
            keep.append(max(below, key=lambda s: s.id))
        if above:
            keep.append(min(above, key=lambda s: s.id))
        protected = union(snapshot_refs(self.ctx, s) for s in keep)
        changelog = join(self.ctx.branch_path, "changelog", f"changelog-{tag.snapshot.id}")
        if self.io.exists(changelog):   # a long-lived changelog still serves this snapshot's changes
            protected = protected | changelog_refs(self.ctx, tag.snapshot)
        return snapshot_refs(self.ctx, tag.snapshot) - protected

    def expire(self, now: Optional[dt.datetime] = None, dry_run: bool = False) -> builtins.list[str]:
        """Delete the tags whose ``time_retained`` has passed (tags without one never expire).
        ``now`` is local time, as the tags' create times are."""
        now = now or dt.datetime.now()
        expired = [t for t in self.list() if t.expires_at is not None and t.expires_at < now]
        if not dry_run:
            for t in expired:
                self.delete(t.name)
        return [t.name for t in expired]

    def snapshot_of(self, name: str) -> Snapshot:
        """The snapshot a tag holds, for time travel."""
        return self.get(name).snapshot
