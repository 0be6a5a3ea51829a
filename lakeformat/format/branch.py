"""Branches of a table, as names and rules (no IO).

A Paimon table has a ``main`` branch and any number of named ones; ``db.t$branch_b`` names
branch ``b`` of table ``db.t``. Branch names become directory names (``branch/branch-<b>``), so
they are checked as tag names are, and, as in Paimon, are never ``main`` nor all digits.

``scan.fallback-branch``: a batch read of a branch takes the partitions it lacks from the
fallback branch. Paimon allows that only when both branches have the same columns (types equal
up to nullability) and, if the branch has a primary key, the same one.
"""
from __future__ import annotations

from typing import Optional

from lakeformat.errors import InvalidNameError, SchemaError
from lakeformat.format.names import validate_ref_name
from lakeformat.format.schema import TableSchema
from lakeformat.format.types import type_to_json

MAIN = "main"
SUFFIX = "$branch_"   # db.t$branch_b


def validate_branch_name(name: str) -> str:
    """``name`` if it can name a new branch, else InvalidNameError."""
    validate_ref_name(name, "branch", allow_numeric=False)
    if name == MAIN:
        raise InvalidNameError("invalid branch name 'main': it is the default branch")
    if "$" in name:
        raise InvalidNameError(f"invalid branch name {name!r}: must not contain '$'")
    return name


def split_branch(identifier: str) -> tuple[str, Optional[str]]:
    """``("db.t", "b")`` for ``"db.t$branch_b"``; ``(identifier, None)`` without a branch suffix."""
    base, sep, branch = identifier.partition(SUFFIX)
    if not sep:
        return identifier, None
    if branch == MAIN:
        return base, MAIN
    return base, validate_branch_name(branch)


def branch_identifier(identifier: str, branch: str) -> str:
    """The name a branch's table goes by: ``db.t`` for main, else ``db.t$branch_b``."""
    return identifier if branch == MAIN else f"{identifier}{SUFFIX}{branch}"


def _loose(t) -> str:
    return str(type_to_json(t)).replace(" NOT NULL", "")


def check_fallback_schema(main: TableSchema, fallback: TableSchema, main_branch: str, fallback_branch: str) -> None:
    """Raise SchemaError unless ``fallback`` can fill partitions of ``main`` (Paimon's rule, plus
    equal column names: rows of both are put side by side by name)."""
    cols = [(f.name, _loose(f.type)) for f in main.fields]
    fb_cols = [(f.name, _loose(f.type)) for f in fallback.fields]
    if cols != fb_cols:
        raise SchemaError(f"branch {main_branch!r} and its scan.fallback-branch {fallback_branch!r} do not have the "
                          f"same columns: {cols} against {fb_cols}")
    if list(main.partition_keys) != list(fallback.partition_keys):
        raise SchemaError(f"branch {main_branch!r} and its scan.fallback-branch {fallback_branch!r} are partitioned "
                          f"differently: {list(main.partition_keys)} against {list(fallback.partition_keys)}")
    if main.primary_keys and list(main.primary_keys) != list(fallback.primary_keys):
        raise SchemaError(f"branch {main_branch!r} has primary key {list(main.primary_keys)} but its "
                          f"scan.fallback-branch {fallback_branch!r} has {list(fallback.primary_keys)}")
