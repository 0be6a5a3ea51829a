"""Validation of names users give to things that become file or directory names.

Database and table names become directories: letters, digits, '_' and '-' only. Tag and consumer
names end up in ``tag/tag-<name>`` and ``consumer/consumer-<id>``; Paimon allows more there
(auto-created tags look like ``2024-06-01 13``), so that check only rules out what could escape
the directory or confuse a listing.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import InvalidNameError
from lakeformat.format import arrays as A

MAX_NAME_LENGTH = 200   # file names are limited to 255 bytes on most filesystems; leave room for prefixes


def validate_ref_name(name: str, what: str, allow_numeric: bool = True) -> str:
    """``name`` if it is safe as the tail of a file name, else :class:`InvalidNameError`.

    Rejected: non-strings, empty or blank names, leading or trailing spaces, '/', '\\', a
    leading '.', control characters, and more than 200 UTF-8 bytes. ``allow_numeric=False``
    also rejects all-digit names (a tag named "5" would be ambiguous with snapshot 5).
    """
    def bad(why: str) -> InvalidNameError:
        return InvalidNameError(f"invalid {what} name {name!r}: {why}")

    if not isinstance(name, str):
        raise bad(f"must be a string, not {type(name).__name__}")
    if not name.strip():
        raise bad("must not be empty or blank")
    if name != name.strip():
        raise bad("must not start or end with spaces")
    if "/" in name or "\\" in name:
        raise bad("must not contain '/' or '\\'")
    if name.startswith("."):
        raise bad("must not start with '.' (no '.', '..' or hidden names)")
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise bad("must not contain control characters")
    if len(name.encode("utf-8")) > MAX_NAME_LENGTH:
        raise bad(f"longer than {MAX_NAME_LENGTH} bytes")
    if not allow_numeric and name.isdigit():
        raise bad("must not be all digits (it would read as a snapshot id)")
    return name


_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_\-]*$")


def validate_name(name: str, what: str) -> str:
    """Names become directory names: only letters, digits, '_' and '-' (no '/', '..', dots,
    spaces or control characters, so no name can escape its parent directory), at most 200
    characters (a directory name is at most 255 bytes, and ``<db>.db`` adds a suffix)."""
    if isinstance(name, str) and len(name) > MAX_NAME_LENGTH:
        raise InvalidNameError(f"invalid {what} name {name[:40]!r}...: {len(name)} characters, "
                               f"longer than {MAX_NAME_LENGTH}")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidNameError(f"invalid {what} name {name!r}: use letters, digits, '_' and '-' "
                               "(not empty, no '/', '.', '..' or spaces)")
    return name


def split_identifier(identifier: str) -> tuple[str, str]:
    db, sep, table = identifier.partition(".")
    if not sep:
        raise InvalidNameError(f"table identifier {identifier!r} must look like 'database.table'")
    return validate_name(db, "database"), validate_name(table, "table")


_NOT_PLAIN = re.compile(r"[/\\\x00-\x1f]")   # a separator or a control character (one C-level scan)


def check_file_name(name, what: str = "file") -> str:
    """``name`` if it is a plain file name (what metadata may name inside the table's own
    directories), else :class:`InvalidNameError`. Names in manifests, snapshots and commit
    messages are joined to a directory of the table: a '/', '..' or NUL would leave it."""
    if not isinstance(name, str) or not name:
        raise InvalidNameError(f"{what} name {name!r} is not a plain file name: empty or not a string")
    if _NOT_PLAIN.search(name) is not None or name in (".", "..") \
            or (len(name) > 63 and len(name.encode("utf-8", "surrogatepass")) > 255):
        raise InvalidNameError(f"{what} name {name!r} is not a plain file name: no '/', '\\', '..', "
                               "control characters, at most 255 bytes")
    return name


def check_file_names(names: pa.Array, what: str = "file") -> None:
    """``check_file_name`` of every value of an Arrow string array at once (a decoded manifest's
    column): InvalidNameError naming the first name that is not a plain file name."""
    if len(names) == 0:
        return
    names = names.cast(pa.string())
    bad = pc.or_(pc.or_(pc.match_substring_regex(names, _NOT_PLAIN.pattern),
                        pc.is_in(names, A.from_pylist(["", ".", ".."], pa.string()))),
                 pc.greater(pc.binary_length(names), A.scalar(255, pa.int32())))
    bad = pc.fill_null(bad, A.scalar(True, pa.bool_()))   # a missing name is no name
    if pc.any(bad).as_py():
        check_file_name(names[pc.index(bad, True).as_py()].as_py(), what)


def under_root(path: str, roots: Sequence[str]) -> bool:
    """Whether ``path`` (a URI or an absolute path) lies inside one of ``roots``, with no '..'
    segment that could climb out of it."""
    u = urlsplit(path)
    if not u.path or any(seg in ("..", ".") for seg in u.path.split("/")) or "\0" in path:
        return False
    for root in roots:
        r = urlsplit(root.rstrip("/"))
        if (u.scheme, u.netloc) == (r.scheme, r.netloc) and u.path.startswith(r.path.rstrip("/") + "/"):
            return True
    return False
