"""Storage access through ``pyarrow.fs``: local paths, ``file://`` and ``s3://``.

Paths handed around lakeformat are URIs or absolute local paths; ``FileIO`` maps them to the
filesystem's own path form. The one operation Paimon needs beyond plain IO is an atomic
create-if-absent for ``snapshot-N`` and ``schema-N``: a hard link on local disks (fails if the
target exists), a conditional PUT (``If-None-Match: *``) on object stores.

Outcomes are decided from the store, never from an error. An object store may apply a write and
lose its reply; the client's retry then meets its own object (a conditional PUT answers 412, as
if another writer had won). So a create or write that failed or was refused is read back: the
bytes it meant to write mean it happened; other bytes mean another writer's; a file that cannot
be read back is an :class:`OutcomeUnknownError`, after which callers delete nothing. Storage
failures surface as :class:`StorageError` naming the operation and path, and leave no temp file.
"""
from __future__ import annotations

import errno
import logging
import os
import posixpath
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Optional
from collections.abc import Mapping, Sequence
from urllib.parse import urlparse

import pyarrow.fs as pafs

from lakeformat.errors import LakeformatError, OutcomeUnknownError, StorageError
from lakeformat.secrets import mask, mask_options

log = logging.getLogger(__name__)

S3_OPTION_KEYS = ("s3.endpoint", "s3.access-key", "s3.secret-key", "s3.region",
                  "s3.session-token", "s3.path-style-access")
CONFIRM_TRIES = 6   # read-backs (and re-sent creates) before an outcome is called unknown
_ERRNO_REASONS = {errno.ENOSPC: "the disk is full (no space left on device)",
                  errno.EDQUOT: "the disk quota is exceeded", errno.EROFS: "the file system is read-only",
                  errno.EACCES: "permission denied", errno.EIO: "an input/output error"}


def storage_error(operation: str, path: str, error: BaseException) -> StorageError:
    """``error`` (an OSError of the file system, pyarrow or botocore) as a StorageError that names
    the operation and path in a user's words; secrets masked."""
    if isinstance(error, StorageError):
        return error
    reason = _ERRNO_REASONS.get(getattr(error, "errno", None) or 0)
    text = mask(error)
    if reason is None:
        if "SLOW_DOWN" in text or "SlowDown" in text or "503" in text:
            reason = f"the object store kept throttling the request past its retries ({text})"
        elif any(k in text for k in ("NETWORK_CONNECTION", "Connection was closed", "onnection reset",
                                      "ConnectionClosed", "timed out", "Timeout")):
            reason = f"the connection to the object store failed past its retries ({text})"
        else:
            reason = text or type(error).__name__
    return StorageError(operation, path, reason)


def _pause(attempt: int) -> None:
    """Backoff with jitter between read-backs: throttling and resets pass in seconds."""
    time.sleep(random.uniform(0.5, 1.0) * min(4.0, 0.1 * (2 ** attempt)))


def join(*parts: str) -> str:
    """Join path parts with '/' (URIs and POSIX paths alike)."""
    return posixpath.join(*parts)


@dataclass
class FileIO:
    """One filesystem plus the knowledge of how to turn URIs into its paths."""

    fs: pafs.FileSystem
    scheme: str = "file"
    options: Mapping[str, str] = field(default_factory=dict)
    _s3_client: object = None

    def __repr__(self) -> str:
        return f"FileIO({self.scheme!r}, {mask_options(self.options)!r})"   # never the S3 secret

    @classmethod
    def for_uri(cls, uri: str, options: Optional[Mapping[str, str]] = None) -> FileIO:
        options = dict(options or {})
        scheme = urlparse(uri).scheme
        if scheme in ("", "file"):
            return cls(pafs.LocalFileSystem(), "file", options)
        if scheme in ("s3", "s3a"):
            return cls(_s3_filesystem(options), "s3", options)
        raise LakeformatError(f"unsupported storage scheme {scheme!r} in {uri!r}: use a path, file:// or s3://")

    # -- paths -------------------------------------------------------------------------
    def _p(self, path: str) -> str:
        if self.scheme == "file" and path.startswith("/"):   # a local path: no URI to parse
            return os.path.abspath(path)
        u = urlparse(path)
        if self.scheme == "file":
            return os.path.abspath(u.path if u.scheme == "file" else path)
        return (u.netloc + u.path) if u.scheme else path.lstrip("/")

    # -- reads -------------------------------------------------------------------------
    def _info(self, path: str) -> pafs.FileInfo:
        try:
            return self.fs.get_file_info(self._p(path))
        except FileNotFoundError:
            raise
        except OSError as e:
            raise storage_error("looking up", path, e) from None

    def exists(self, path: str) -> bool:
        return self._info(path).type != pafs.FileType.NotFound

    def read_bytes(self, path: str) -> bytes:
        """The whole file. On an object store a failed read is asked again a few times: the AWS
        SDK under pyarrow does not retry a 500/503 answer to a read smaller than the error's body
        (it cannot fit the body into the caller's buffer), which hits every small metadata file."""
        tries = 1 if self.scheme == "file" else 3
        for attempt in range(tries):
            if attempt:
                _pause(attempt)
            try:
                with self.fs.open_input_stream(self._p(path)) as f:
                    return f.read()
            except FileNotFoundError:
                raise
            except OSError as e:
                error = e
        raise storage_error("reading", path, error) from None

    def open_input(self, path: str):
        return self.fs.open_input_file(self._p(path))

    def is_dir(self, path: str) -> bool:
        """Whether ``path`` is a directory (on an object store: a prefix some object lies under)."""
        return self._info(path).type == pafs.FileType.Directory

    def file_size(self, path: str) -> int:
        return self._info(path).size

    def stat(self, path: str) -> Optional[tuple[int, int]]:
        """(modification time in ns, size) of a file; None if it does not exist."""
        info = self._info(path)
        return None if info.type == pafs.FileType.NotFound else (info.mtime_ns or 0, info.size or 0)

    def list_dir(self, path: str) -> list[pafs.FileInfo]:
        """Entries directly under ``path``; an absent directory lists as empty."""
        try:
            return self.fs.get_file_info(pafs.FileSelector(self._p(path), allow_not_found=True))
        except FileNotFoundError:
            return []
        except OSError as e:
            raise storage_error("listing", path, e) from None

    def list_names(self, path: str) -> list[str]:
        return [info.base_name for info in self.list_dir(path)]

    def read_back(self, path: str) -> Optional[bytes]:
        """The bytes of ``path`` (None if absent), asked again through throttling and resets;
        OutcomeUnknownError if the store never answers."""
        for attempt in range(CONFIRM_TRIES):
            if attempt:
                _pause(attempt)
            try:
                return self.read_bytes(path)
            except FileNotFoundError:
                return None
            except OSError as e:
                error = e
        raise OutcomeUnknownError("reading back", path, f"the store did not answer ({mask(error)})")

    # -- writes ------------------------------------------------------------------------
    def mkdirs(self, path: str) -> None:
        if self.scheme == "file":
            try:
                self.fs.create_dir(self._p(path), recursive=True)
            except OSError as e:
                raise storage_error("creating directory", path, e) from None

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write (or overwrite) a whole file. Local writes go through a temp file and rename,
        so a reader never sees a half-written file."""
        self.write_parts(path, (data,))

    def write_parts(self, path: str, parts: Sequence) -> None:
        """:meth:`write_bytes` of the concatenation of bytes-like ``parts`` (not built in memory
        on local disks)."""
        p = self._p(path)
        if self.scheme == "file":
            tmp = _write_temp(p, parts, durable=False, path=path)
            try:
                os.replace(tmp, p)
            except OSError as e:
                _unlink(tmp)
                raise storage_error("writing", path, e) from None
            return
        self._put_confirmed(path, b"".join(parts))

    def write_new(self, path: str, data: bytes) -> None:
        """Write a file that nothing names yet (a new manifest), so no reader can see it half
        written: no temp file and rename, the parent directory made only when missing."""
        p = self._p(path)
        if self.scheme != "file":
            self._put_confirmed(path, data)
            return
        try:
            try:
                f = open(p, "wb")  # noqa: SIM115 -- closed by the `with f` below
            except FileNotFoundError:
                os.makedirs(os.path.dirname(p), exist_ok=True)
                f = open(p, "wb")  # noqa: SIM115
            with f:
                f.write(data)
        except OSError as e:
            _unlink(p)   # half a file that nothing names
            raise storage_error("writing", path, e) from None

    def _put_confirmed(self, path: str, data: bytes) -> None:
        """Upload ``data`` to ``path`` on an object store. A failed upload whose bytes are there
        when read back happened (its reply was lost); else StorageError."""
        try:
            with self.fs.open_output_stream(self._p(path)) as f:
                f.write(data)
            return
        except OSError as e:
            error = e
        if self.read_back(path) == data:
            log.info("the store reported a failed write of %s, but the file holds what was written: done", path)
            return
        raise storage_error("writing", path, error) from None

    def write_over(self, path: str, data: bytes) -> bool:
        """Replace the bytes of an existing local file no longer than ``data`` in place: no file
        created, renamed or truncated. False where that cannot be done (object stores, a missing
        or longer file)."""
        if self.scheme != "file":
            return False
        try:
            fd = os.open(self._p(path), os.O_WRONLY)
        except FileNotFoundError:
            return False
        try:
            if os.fstat(fd).st_size > len(data):
                return False
            os.pwrite(fd, data, 0)
        except OSError as e:
            raise storage_error("writing", path, e) from None
        finally:
            os.close(fd)
        return True

    def open_output(self, path: str):
        p = self._p(path)
        try:
            if self.scheme == "file":
                os.makedirs(os.path.dirname(p), exist_ok=True)
            return self.fs.open_output_stream(p)
        except OSError as e:
            raise storage_error("creating", path, e) from None

    def try_create(self, path: str, data: bytes) -> bool:
        """Create ``path`` with ``data`` only if it does not exist. True if the file holds this
        call's bytes afterwards (created now, or by a retry whose reply was lost); False if
        another writer's bytes are there; OutcomeUnknownError if the store cannot tell."""
        p = self._p(path)
        if self.scheme != "file":
            return self._s3_create(path, p, data)
        for _ in range(3):
            tmp = _write_temp(p, (data,), durable=True, path=path)
            try:
                os.link(tmp, p)  # atomic, and fails if p exists: the POSIX create-if-absent
                return True
            except FileExistsError:
                return False
            except FileNotFoundError:
                continue   # the temp file vanished (an orphan removal with no age limit): again
            except OSError as e:
                raise storage_error("creating", path, e) from None
            finally:
                _unlink(tmp)
        raise StorageError("creating", path, "its temp file kept vanishing before it could be linked "
                           "(is an orphan removal with a very short older_than running?)")

    def move(self, src: str, dst: str) -> None:
        """Rename ``src`` to ``dst`` (atomic on local disks; a copy and a delete on object stores)."""
        try:
            self.fs.move(self._p(src), self._p(dst))
        except FileNotFoundError:
            raise
        except OSError as e:
            raise storage_error("moving", f"{src} to {dst}", e) from None

    def delete(self, path: str) -> None:
        try:
            self.fs.delete_file(self._p(path))
        except FileNotFoundError:
            pass
        except OSError as e:
            raise storage_error("deleting", path, e) from None

    def delete_dir(self, path: str) -> None:
        try:
            self.fs.delete_dir(self._p(path))
        except FileNotFoundError:
            pass
        except OSError as e:
            raise storage_error("deleting directory", path, e) from None

    def delete_empty_dir(self, path: str) -> bool:
        """Remove ``path`` only if it is an empty directory (atomic on local disks: a file
        created meanwhile keeps it). Object stores have no real directories: False."""
        if self.scheme != "file":
            return False
        try:
            os.rmdir(self._p(path))
            return True
        except OSError:
            return False

    # -- object stores -----------------------------------------------------------------
    def _s3_create(self, path: str, p: str, data: bytes) -> bool:
        """The conditional PUT, decided by reading the object back whenever it was not plainly
        created: a 412 or an unanswered request may be this very write (its reply lost)."""
        error: Optional[BaseException] = None
        for attempt in range(CONFIRM_TRIES):
            if attempt:
                _pause(attempt)
            try:
                if self._s3_put_if_absent(p, data):
                    return True
                refused = True
            except Exception as e:   # no answer: the PUT may have been applied
                refused, error = False, e
            current = self.read_back(path)   # unanswered reads: OutcomeUnknownError, nothing decided
            if current is not None:
                if current == data and not refused:
                    log.info("created %s although the store reported %s", path, mask(error))
                elif current == data:
                    log.info("created %s: its first reply was lost and the retry found it", path)
                return current == data
            if refused:
                return False   # another writer's object, removed since (expired): not ours either
        raise OutcomeUnknownError("creating", path, f"the store kept failing the conditional write ({mask(error)}) "
                                  "and the file is not there yet: a delayed request may still create it")

    def _s3_put_if_absent(self, p: str, data: bytes) -> bool:
        import botocore.exceptions  # lazy: boto3 loads in ~0.3 s and only conditional PUTs need it

        bucket, _, key = p.partition("/")
        try:
            self._s3().put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
            return True
        except botocore.exceptions.ClientError as e:
            if e.response.get("Error", {}).get("Code") in ("PreconditionFailed", "ConditionalRequestConflict"):
                return False
            raise

    def _s3(self):
        if self._s3_client is None:
            import boto3  # lazy: see _s3_put_if_absent
            from botocore.config import Config

            o = self.options
            self._s3_client = boto3.client(
                "s3", endpoint_url=o.get("s3.endpoint"), region_name=o.get("s3.region", "us-east-1"),
                aws_access_key_id=o.get("s3.access-key"), aws_secret_access_key=o.get("s3.secret-key"),
                aws_session_token=o.get("s3.session-token"),
                config=Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=10, read_timeout=30))
        return self._s3_client


def _write_temp(p: str, parts: Sequence, durable: bool, path: str) -> str:
    """A hidden temp file beside ``p`` holding the bytes-like ``parts`` one after the other
    (synced to disk if ``durable``); on failure none is left and StorageError names ``path``."""
    tmp = f"{os.path.dirname(p)}/.{os.path.basename(p)}.{uuid.uuid4().hex}.tmp"
    try:
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(tmp, "wb") as f:
            f.writelines(parts)
            if durable:
                f.flush()
                os.fsync(f.fileno())
    except OSError as e:
        _unlink(tmp)
        raise storage_error("writing", path, e) from None
    return tmp


def _unlink(p: str) -> None:
    try:
        os.unlink(p)
    except OSError:
        pass


def _s3_filesystem(o: Mapping[str, str]) -> pafs.S3FileSystem:
    endpoint = o.get("s3.endpoint")
    kwargs: dict[str, Any] = dict(region=o.get("s3.region", "us-east-1"),
                  access_key=o.get("s3.access-key"), secret_key=o.get("s3.secret-key"),
                  session_token=o.get("s3.session-token"))
    if endpoint:
        u = urlparse(endpoint if "://" in endpoint else "http://" + endpoint)
        kwargs.update(endpoint_override=u.netloc, scheme=u.scheme or "http")
    if str(o.get("s3.path-style-access", "true")).lower() == "true":
        kwargs["force_virtual_addressing"] = False
    try:
        return pafs.S3FileSystem(**{k: v for k, v in kwargs.items() if v is not None})
    except (ValueError, TypeError) as e:   # e.g. a secret key without an access key
        raise LakeformatError(f"cannot open the S3 store with these s3.* options: {mask(e)}") from None

