"""Storage access through ``pyarrow.fs``: local paths, ``file://`` and ``s3://``.

Paths handed around lakeformat are URIs or absolute local paths; ``FileIO`` maps them to the
filesystem's own path form. The one operation Paimon needs beyond plain IO is an atomic
create-if-absent for ``snapshot-N`` and ``schema-N``: a hard link on local disks (fails if the
target exists), a conditional PUT (``If-None-Match: *``) on object stores.
"""
from __future__ import annotations

import os
import posixpath
import uuid
from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence
from urllib.parse import urlparse

import pyarrow.fs as pafs

from lakeformat.errors import LakeformatError
from lakeformat.secrets import mask, mask_options

S3_OPTION_KEYS = ("s3.endpoint", "s3.access-key", "s3.secret-key", "s3.region",
                  "s3.session-token", "s3.path-style-access")


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
    def for_uri(cls, uri: str, options: Optional[Mapping[str, str]] = None) -> "FileIO":
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
    def exists(self, path: str) -> bool:
        return self.fs.get_file_info(self._p(path)).type != pafs.FileType.NotFound

    def read_bytes(self, path: str) -> bytes:
        with self.fs.open_input_stream(self._p(path)) as f:
            return f.read()

    def open_input(self, path: str):
        return self.fs.open_input_file(self._p(path))

    def is_dir(self, path: str) -> bool:
        """Whether ``path`` is a directory (on an object store: a prefix some object lies under)."""
        return self.fs.get_file_info(self._p(path)).type == pafs.FileType.Directory

    def file_size(self, path: str) -> int:
        return self.fs.get_file_info(self._p(path)).size

    def stat(self, path: str) -> Optional[tuple[int, int]]:
        """(modification time in ns, size) of a file; None if it does not exist."""
        info = self.fs.get_file_info(self._p(path))
        return None if info.type == pafs.FileType.NotFound else (info.mtime_ns or 0, info.size or 0)

    def list_dir(self, path: str) -> list[pafs.FileInfo]:
        """Entries directly under ``path``; an absent directory lists as empty."""
        try:
            return self.fs.get_file_info(pafs.FileSelector(self._p(path), allow_not_found=True))
        except FileNotFoundError:
            return []

    def list_names(self, path: str) -> list[str]:
        return [info.base_name for info in self.list_dir(path)]

    # -- writes ------------------------------------------------------------------------
    def mkdirs(self, path: str) -> None:
        if self.scheme == "file":
            self.fs.create_dir(self._p(path), recursive=True)

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write (or overwrite) a whole file. Local writes go through a temp file and rename,
        so a reader never sees a half-written file."""
        self.write_parts(path, (data,))

    def write_parts(self, path: str, parts: Sequence) -> None:
        """:meth:`write_bytes` of the concatenation of bytes-like ``parts`` (not built in memory
        on local disks)."""
        p = self._p(path)
        if self.scheme == "file":
            os.replace(_write_temp(p, parts, durable=False), p)
            return
        with self.fs.open_output_stream(p) as f:
            f.write(b"".join(parts))

    def write_new(self, path: str, data: bytes) -> None:
        """Write a file that nothing names yet (a new manifest), so no reader can see it half
        written: no temp file and rename, the parent directory made only when missing."""
        p = self._p(path)
        if self.scheme != "file":
            with self.fs.open_output_stream(p) as f:
                f.write(data)
            return
        try:
            f = open(p, "wb")
        except FileNotFoundError:
            os.makedirs(os.path.dirname(p), exist_ok=True)
            f = open(p, "wb")
        with f:
            f.write(data)

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
        finally:
            os.close(fd)
        return True

    def open_output(self, path: str):
        p = self._p(path)
        if self.scheme == "file":
            os.makedirs(os.path.dirname(p), exist_ok=True)
        return self.fs.open_output_stream(p)

    def try_create(self, path: str, data: bytes) -> bool:
        """Create ``path`` with ``data`` only if it does not exist. True if this call created it."""
        p = self._p(path)
        if self.scheme == "file":
            tmp = _write_temp(p, (data,), durable=True)
            try:
                os.link(tmp, p)  # atomic, and fails if p exists: the POSIX create-if-absent
                return True
            except FileExistsError:
                return False
            finally:
                os.unlink(tmp)
        return self._s3_put_if_absent(p, data)

    def move(self, src: str, dst: str) -> None:
        """Rename ``src`` to ``dst`` (atomic on local disks; a copy and a delete on object stores)."""
        self.fs.move(self._p(src), self._p(dst))

    def delete(self, path: str) -> None:
        try:
            self.fs.delete_file(self._p(path))
        except FileNotFoundError:
            pass

    def delete_dir(self, path: str) -> None:
        try:
            self.fs.delete_dir(self._p(path))
        except FileNotFoundError:
            pass

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

            o = self.options
            self._s3_client = boto3.client(
                "s3", endpoint_url=o.get("s3.endpoint"), region_name=o.get("s3.region", "us-east-1"),
                aws_access_key_id=o.get("s3.access-key"), aws_secret_access_key=o.get("s3.secret-key"),
                aws_session_token=o.get("s3.session-token"))
        return self._s3_client


def _write_temp(p: str, parts: Sequence, durable: bool) -> str:
    """A hidden temp file beside ``p`` holding the bytes-like ``parts`` one after the other
    (synced to disk if ``durable``)."""
    os.makedirs(os.path.dirname(p), exist_ok=True)
    tmp = f"{os.path.dirname(p)}/.{os.path.basename(p)}.{uuid.uuid4().hex}.tmp"
    with open(tmp, "wb") as f:
        f.writelines(parts)
        if durable:
            f.flush()
            os.fsync(f.fileno())
    return tmp


def _s3_filesystem(o: Mapping[str, str]) -> pafs.S3FileSystem:
    endpoint = o.get("s3.endpoint")
    kwargs = dict(region=o.get("s3.region", "us-east-1"),
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

