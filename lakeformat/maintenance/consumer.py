"""Consumers: the progress of named incremental readers (``consumer/consumer-<id>``).

A consumer file is ``{"nextSnapshot": n}``: the first snapshot the reader has not consumed yet.
Snapshot expiration keeps every snapshot from the smallest ``nextSnapshot`` on, so a reader that
stops and restarts finds its next snapshot still there. Files are replaced whole (temp file +
rename on local disks, one PUT on object stores), so a reader never sees half a file from
lakeformat; a writer that is not as careful (or a crash of one) can leave a truncated file, which
readers retry briefly before failing with the file's name.
"""
from __future__ import annotations

import builtins
import datetime as dt
import json
import logging
import re
import time
from typing import Optional

from lakeformat.errors import CorruptFileError, LakeformatError, NotFoundError
from lakeformat.format import options as O
from lakeformat.format.names import validate_ref_name
from lakeformat.io.fileio import join
from lakeformat.io.table_context import TableContext

log = logging.getLogger(__name__)

CONSUMER_PREFIX = "consumer-"
NEXT_SNAPSHOT = "nextSnapshot"
READ_ATTEMPTS = 3          # a half-written file is usually complete a moment later
RETRY_SLEEP_SECONDS = 0.1


def parse_consumer(text: bytes) -> int:
    """``nextSnapshot`` of a consumer file's bytes; ValueError if the content is not one."""
    d = json.loads(text.decode("utf-8"))
    n = d.get(NEXT_SNAPSHOT) if isinstance(d, dict) else None
    if not isinstance(n, int) or isinstance(n, bool):
        raise ValueError(f"no integer {NEXT_SNAPSHOT!r} in {text[:80]!r}")
    return n


def to_json(next_snapshot: int) -> bytes:
    return json.dumps({NEXT_SNAPSHOT: next_snapshot}).encode()


class ConsumerManager:
    """Read and change the consumers of one table."""

    def __init__(self, ctx: TableContext):
        self.ctx = ctx
        self.io = ctx.io
        self.dir = join(ctx.branch_path, "consumer")

    def path(self, consumer_id: str) -> str:
        return join(self.dir, CONSUMER_PREFIX + validate_ref_name(consumer_id, "consumer"))

    def ids(self) -> list[str]:
        return sorted(n[len(CONSUMER_PREFIX):] for n in self.io.list_names(self.dir)
                      if n.startswith(CONSUMER_PREFIX) and len(n) > len(CONSUMER_PREFIX))

    def get(self, consumer_id: str) -> Optional[int]:
        """The consumer's ``nextSnapshot``, or None if there is no such consumer. A file that
        does not parse is read again a few times (it may be mid-write) before this fails."""
        path = self.path(consumer_id)
        error = None
        for attempt in range(READ_ATTEMPTS):
            if attempt:
                time.sleep(RETRY_SLEEP_SECONDS * attempt)
            try:
                return parse_consumer(self.io.read_bytes(path))
            except FileNotFoundError:
                return None
            except (ValueError, UnicodeDecodeError) as e:
                error = e
        raise CorruptFileError(path, f"consumer {consumer_id!r} of {self.ctx.name} is not "
                                     f'{{"nextSnapshot": <n>}} after {READ_ATTEMPTS} reads: {error}. '
                                     f"Reset it (reset-consumer) or delete it")

    def record(self, consumer_id: str, next_snapshot: int) -> None:
        """Store a reader's progress: ``next_snapshot`` is the first snapshot it has not read."""
        if not isinstance(next_snapshot, int) or isinstance(next_snapshot, bool) or next_snapshot < 1:
            raise LakeformatError(f"consumer {consumer_id!r}: next snapshot must be a positive integer, "
                                  f"not {next_snapshot!r}")
        self.io.write_bytes(self.path(consumer_id), to_json(next_snapshot))

    def reset(self, consumer_id: str, next_snapshot: int) -> None:
        """Move a consumer to ``next_snapshot`` (which must exist, or be the one after the
        latest), creating it if needed: the reader continues from there."""
        sm = self.ctx.snapshot_manager
        earliest, latest = sm.earliest_id(), sm.latest_id()
        if not isinstance(next_snapshot, int) or isinstance(next_snapshot, bool):
            raise LakeformatError(f"consumer {consumer_id!r}: next snapshot must be an integer, not {next_snapshot!r}")
        ok = (latest is None and next_snapshot == 1) or (
            latest is not None and (next_snapshot == latest + 1 or sm.exists(next_snapshot)))
        if not ok:
            raise NotFoundError(f"cannot reset consumer {consumer_id!r} of {self.ctx.name} to snapshot "
                                f"{next_snapshot}: the table has snapshots {earliest}..{latest}")
        self.record(consumer_id, next_snapshot)

    def delete(self, consumer_id: str) -> None:
        path = self.path(consumer_id)
        if not self.io.exists(path):
            raise NotFoundError(f"consumer {consumer_id!r} of {self.ctx.name} does not exist")
        self.io.delete(path)

    def list(self) -> dict[str, int]:
        out = {}
        for cid in self.ids():
            n = self.get(cid)
            if n is not None:      # deleted while listing
                out[cid] = n
        return out

    def min_next_snapshot(self) -> Optional[int]:
        """The oldest snapshot some consumer still needs (None without consumers). Fails on a
        corrupt consumer: guessing could let expiration delete what a reader needs."""
        values = self.list().values()
        return min(values) if values else None

    def expire(self, older_than: Optional[dt.timedelta] = None, now: Optional[dt.datetime] = None,
               dry_run: bool = False) -> builtins.list[str]:
        """Delete consumers whose file was last written more than ``older_than`` ago (default:
        the table's ``consumer.expiration-time``; unset: none expire). Returns their ids."""
        if older_than is None:
            older_than = self.ctx.typed_options.get(O.CONSUMER_EXPIRATION_TIME)
            if older_than is None:
                return []
        now = now or dt.datetime.now(dt.UTC)
        if now.tzinfo is None:
            now = now.astimezone()
        cutoff = now - older_than
        expired = []
        for info in self.io.list_dir(self.dir):
            name = info.base_name
            if not name.startswith(CONSUMER_PREFIX) or info.mtime is None:
                continue
            if info.mtime < cutoff:
                if not dry_run:
                    self.io.delete(join(self.dir, name))
                expired.append(name[len(CONSUMER_PREFIX):])
        if expired and not dry_run:
            log.info("expired consumers %s of %s (idle longer than %s)", sorted(expired), self.ctx.name, older_than)
        return sorted(expired)

    def clear(self, including: str = ".*", excluding: Optional[str] = None,
              dry_run: bool = False) -> builtins.list[str]:
        """Delete the consumers whose whole id matches ``including`` and not ``excluding``
        (regular expressions, as Paimon's clear_consumers procedure). Returns their ids."""
        try:
            inc = re.compile(including)
            exc = re.compile(excluding) if excluding else None
        except re.error as e:
            raise LakeformatError(f"invalid consumer pattern: {e}") from None
        cleared = [c for c in self.ids() if inc.fullmatch(c) and not (exc and exc.fullmatch(c))]
        for cid in ([] if dry_run else cleared):
            self.io.delete(self.path(cid))
        return cleared
