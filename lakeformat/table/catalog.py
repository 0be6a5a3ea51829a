"""Filesystem catalog: databases are ``<warehouse>/<db>.db``, tables ``<db>.db/<table>``."""
from __future__ import annotations

import difflib
from typing import Any, Optional
from collections.abc import Mapping, Sequence

import pyarrow as pa

from lakeformat.commit.lock import LOCK_OPTION_KEYS, lock_from_options
from lakeformat.errors import (AlreadyExistsError, LakeformatError, NotFoundError, OptionError, UnsupportedError,
                               UnsupportedOptionError)
from lakeformat.format.branch import MAIN as MAIN_BRANCH, branch_identifier, split_branch, validate_branch_name
from lakeformat.format.row_tracking import check_schema as check_row_tracking
from lakeformat.format.iceberg.schema import check_table
from lakeformat.format.names import split_identifier, validate_name
from lakeformat.format import options as O
from lakeformat.format.options import validate
from lakeformat.format.schema import new_schema
from lakeformat.io.file_format import check_table_formats
from lakeformat.io.fileio import S3_OPTION_KEYS, FileIO, join
from lakeformat.io.schemas import SchemaManager
from lakeformat.io.table_context import branch_path
from lakeformat.maintenance.branches import list_branches
from lakeformat.io.iceberg_cache import IcebergCache
from lakeformat.secrets import mask_options, register_options
from lakeformat.table.table import Table


CATALOG_OPTION_KEYS = S3_OPTION_KEYS + LOCK_OPTION_KEYS


def check_catalog_options(options: Mapping[str, Any]) -> dict[str, str]:
    """The catalog options as strings; an unknown key is an error naming it (with the closest
    known key), so a typo never silently falls back to a default store or no lock."""
    out = {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in options.items()}
    unknown = [k for k in out if k not in CATALOG_OPTION_KEYS]
    if unknown:
        hints = [f"{k!r} -> {c[0]!r}" for k in unknown if (c := difflib.get_close_matches(k, CATALOG_OPTION_KEYS, n=1))]
        raise OptionError(f"unknown catalog option(s) {unknown}; known: {list(CATALOG_OPTION_KEYS)}"
                          + (f" (did you mean {', '.join(hints)}?)" if hints else ""))
    return out



class Catalog:
    """Entry point: ``Catalog("/path/to/warehouse")`` or ``Catalog("s3://bucket/wh", **{"s3.endpoint": ...})``.
    Options: the ``s3.*`` keys of the store, and ``lock.*`` for a catalog lock around commits."""

    def __init__(self, warehouse: str, **options: str):
        if not warehouse:
            raise LakeformatError("a catalog needs a warehouse path or URI")
        self.warehouse = warehouse.rstrip("/")
        register_options(options)   # any later message that echoes a credential gets it masked
        self.options = check_catalog_options(options)
        self.io = FileIO.for_uri(self.warehouse, self.options)
        self.lock = lock_from_options(self.warehouse, self.options)
        self.iceberg_cache = IcebergCache()   # what its tables' Iceberg publishes reuse

    def __repr__(self) -> str:
        return f"Catalog({self.warehouse!r}, {mask_options(self.options)!r})"

    # -- databases ---------------------------------------------------------------------
    def database_path(self, name: str) -> str:
        return join(self.warehouse, f"{validate_name(name, 'database')}.db")

    def list_databases(self) -> list[str]:
        return sorted(i.base_name[:-3] for i in self.io.list_dir(self.warehouse)
                      if i.base_name.endswith(".db") and i.type.name == "Directory")

    def database_exists(self, name: str) -> bool:
        return name in self.list_databases() if self.io.scheme != "file" else self.io.exists(self.database_path(name))

    def create_database(self, name: str, ignore_if_exists: bool = False) -> None:
        path = self.database_path(name)
        if self.database_exists(name):
            if ignore_if_exists:
                return
            raise AlreadyExistsError(f"database {name!r} exists already")
        self.io.mkdirs(path)
        if self.io.scheme != "file":   # object stores have no directories: leave a marker
            self.io.write_bytes(join(path, ".database"), b"")

    def drop_database(self, name: str, ignore_if_not_exists: bool = False, cascade: bool = False) -> None:
        if not self.database_exists(name):
            if ignore_if_not_exists:
                return
            raise NotFoundError(f"database {name!r} does not exist")
        tables = self.list_tables(name)
        if tables and not cascade:
            raise LakeformatError(f"database {name!r} is not empty ({len(tables)} tables); use cascade=True")
        self.io.delete_dir(self.database_path(name))

    # -- tables ------------------------------------------------------------------------
    def table_path(self, identifier: str) -> str:
        db, table = split_identifier(identifier)
        return join(self.warehouse, f"{db}.db", table)

    def list_tables(self, database: str) -> list[str]:
        if not self.database_exists(database):
            raise NotFoundError(f"database {database!r} does not exist")
        path = self.database_path(database)
        return sorted(i.base_name for i in self.io.list_dir(path)
                      if i.type.name == "Directory" and SchemaManager(self.io, i.path).list_ids())

    def table_exists(self, identifier: str) -> bool:
        """Whether ``"db.t"`` exists (``"db.t$branch_b"``: that branch of it)."""
        base, branch = split_branch(identifier)
        path = self.table_path(base)
        if branch is not None and branch != MAIN_BRANCH:
            path = branch_path(path, branch)
        return bool(SchemaManager(self.io, path).list_ids())

    def create_table(self, identifier: str, schema: pa.Schema, partition_keys: Sequence[str] = (),
                     primary_keys: Sequence[str] = (), options: Optional[Mapping[str, str]] = None,
                     comment: Optional[str] = None, ignore_if_exists: bool = False) -> Table:
        db, _ = split_identifier(identifier)
        if not self.database_exists(db):
            raise NotFoundError(f"database {db!r} does not exist; create it first")
        opts = validate(dict(options or {}), columns=schema.names if isinstance(schema, pa.Schema) else None)
        if opts.get("branch", MAIN_BRANCH).strip() not in ("", MAIN_BRANCH):
            raise OptionError("the option 'branch' picks a branch when a table is opened; create the table, then "
                              "a branch of it (Table.branches.create)")
        ts = new_schema(schema, partition_keys, primary_keys, opts, comment)
        check_table_formats(ts)
        check_table(ts)
        check_row_tracking(ts.primary_keys, ts.options, ts.names, f"table {identifier}")
        path = self.table_path(identifier)
        if not SchemaManager(self.io, path).create(ts):
            if ignore_if_exists:
                return self.get_table(identifier)
            raise AlreadyExistsError(f"table {identifier} exists already")
        return Table(self.io, path, identifier, ts, self.lock, self.iceberg_cache)

    def get_table(self, identifier: str, branch: Optional[str] = None) -> Table:
        """The table ``"db.t"``, or a branch of it: ``"db.t$branch_b"`` or ``branch="b"`` (a
        ``branch`` option in the table's own options picks one too, as in Paimon)."""
        base, named = split_branch(identifier)
        if named is not None and branch is not None and named != branch:
            raise LakeformatError(f"{identifier!r} names branch {named!r} but branch={branch!r} was given")
        path = self.table_path(base)
        sm = SchemaManager(self.io, path)
        ids = sm.list_ids()
        if not ids:
            raise NotFoundError(f"table {base} does not exist (no schema under {path})")
        schema = sm.get(ids[-1])
        branch = branch or named or schema.options.get("branch", MAIN_BRANCH).strip() or MAIN_BRANCH
        if branch == MAIN_BRANCH:
            return Table(self.io, path, base, schema, self.lock, self.iceberg_cache)
        validate_branch_name(branch)
        if not SchemaManager(self.io, branch_path(path, branch)).list_ids():
            raise NotFoundError(f"branch {branch!r} of {base} does not exist "
                                f"(branches: {list_branches(self.io, path)})")
        return Table(self.io, path, branch_identifier(base, branch), None, self.lock, self.iceberg_cache, branch)

    def rename_table(self, identifier: str, new_identifier: str) -> None:
        """Rename ``"db.t"`` to ``"db2.u"`` (an existing database) by moving its directory, as
        Paimon's filesystem catalog does: every file is named relative to the table. Local
        warehouses only (an object store moves a table file by file, which a concurrent commit
        could interleave with); tables publishing Iceberg metadata are refused (it names the old
        paths)."""
        for ident in (identifier, new_identifier):
            if split_branch(ident)[1] is not None:
                raise LakeformatError(f"{ident} names a branch: a table is renamed by its own name")
        new_db, _ = split_identifier(new_identifier)
        t = self.get_table(identifier)
        if self.table_exists(new_identifier):
            raise AlreadyExistsError(f"table {new_identifier} exists already")
        if not self.database_exists(new_db):
            raise NotFoundError(f"database {new_db!r} does not exist; create it first")
        if self.io.scheme != "file":
            raise UnsupportedError(f"renaming {identifier} in {self.warehouse}: a table on an object store would be "
                                   "copied file by file, not renamed at once; create the new table and copy the rows")
        if t.typed_options.get(O.ICEBERG_STORAGE) != "disabled":
            raise UnsupportedOptionError(f"renaming {identifier}: its Iceberg metadata "
                                         f"('{O.ICEBERG_STORAGE.key}') names the table's current paths")
        self.io.move(self.table_path(identifier), self.table_path(new_identifier))

    def drop_table(self, identifier: str, ignore_if_not_exists: bool = False) -> None:
        if split_branch(identifier)[1] is not None:
            raise LakeformatError(f"{identifier} names a branch: delete it with Table.branches.delete, "
                                  "or drop the table by its own name")
        if not self.table_exists(identifier):
            if ignore_if_not_exists:
                return
            raise NotFoundError(f"table {identifier} does not exist")
        self.io.delete_dir(self.table_path(identifier))
