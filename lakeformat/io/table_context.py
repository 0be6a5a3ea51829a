"""What the layers below the table façade need of a table, as one typed object.

``Table`` (lakeformat/table/table.py) owns one (``t.ctx``) and hands it down; readers, writers,
the committer and maintenance take a ``TableContext`` and never the ``Table``, so nothing below
the façade can call back up into what follows an operation there (expiration after a commit,
the Iceberg publish). It holds the table's storage (file IO, path, name, the catalog lock), its
schema and typed options, and the schema and snapshot managers; what is derived from those
(partition values, bucket directories, key decoding) is computed here.

Everything but ``schema`` is fixed for the context's life; ``schema`` changes when the façade
refreshes or alters the table, so writers and readers holding the context see the new one, as
they did holding the table. ``with_schema`` gives a view of another schema (time travel).

Branches: a context is of one branch of the table (``branch``, default ``main``). A branch ``b``
keeps its own ``snapshot/``, ``schema/``, ``tag/``, ``consumer/`` and ``changelog/`` under
``branch_path`` (``<table>/branch/branch-b``); data files, manifests, index and statistics files
stay in the table's directories (``path``), shared by every branch, as Paimon lays them out.
"""
from __future__ import annotations

import copy
from functools import lru_cache
from contextlib import AbstractContextManager
from typing import Optional, Protocol
from collections.abc import Callable, Sequence

import pyarrow as pa

from lakeformat.errors import LakeformatError, NotFoundError
from lakeformat.format import options as O
from lakeformat.format.binary_row import deserialize_row
from lakeformat.format.branch import MAIN as MAIN_BRANCH
from lakeformat.format.options import Options, target_file_size
from lakeformat.format.partition import partition_path
from lakeformat.format.schema import TableSchema
from lakeformat.format.snapshot import Snapshot
from lakeformat.io.fileio import FileIO, join
from lakeformat.io.iceberg_cache import IcebergCache
from lakeformat.io.schemas import SchemaManager
from lakeformat.io.snapshots import SnapshotManager


BRANCH_DIR, BRANCH_PREFIX = "branch", "branch-"


def branch_path(table_path: str, branch: str) -> str:
    """The directory of a branch's metadata: the table's own for ``main``."""
    return table_path if branch == MAIN_BRANCH else join(table_path, BRANCH_DIR, BRANCH_PREFIX + branch)


class Lock(Protocol):
    """The catalog lock commits and expirations take (``lakeformat.commit.lock.CatalogLock``)."""

    def hold(self, lock_id: str) -> AbstractContextManager[None]: ...


class TableContext:
    """A table's storage, schema, options and metadata managers (see the module docstring)."""

    def __init__(self, io: FileIO, path: str, name: str, schema: Optional[TableSchema] = None,
                 lock: Optional[Lock] = None, iceberg_cache: Optional[IcebergCache] = None,
                 branch: str = MAIN_BRANCH):
        self.io, self.path, self.name = io, path, name
        self.branch = branch
        self.branch_path = branch_path(path, branch)   # where this branch's snapshots, schemas, tags live
        self.lock = lock   # None: commits create snapshots by conditional create alone
        # what Iceberg publishes reuse: the catalog's, shared by the tables it opens
        self.iceberg_cache = iceberg_cache if iceberg_cache is not None else IcebergCache()
        self.schema_manager = SchemaManager(io, self.branch_path)
        self.snapshot_manager = SnapshotManager(io, self.branch_path)
        latest = schema or self.schema_manager.latest()
        if latest is None:
            raise NotFoundError(f"table {name} has no schema at {self.branch_path}")
        self.schema: TableSchema = latest
        self._typed_options: tuple[Optional[TableSchema], Optional[Options]] = (None, None)

    def with_schema(self, schema: TableSchema) -> TableContext:
        """This context seen with another of the table's schemas (the one a snapshot was written with)."""
        view = copy.copy(self)
        view.schema, view._typed_options = schema, (None, None)
        return view

    # -- schema and options -----------------------------------------------------------------
    @property
    def options(self) -> dict[str, str]:
        return dict(self.schema.options)

    @property
    def typed_options(self) -> Options:
        cached_for, typed = self._typed_options
        if cached_for is not self.schema or typed is None:   # parsed once per schema: read paths ask often
            typed = Options(self.schema.options)
            self._typed_options = (self.schema, typed)
        return typed

    @property
    def target_file_size(self) -> int:
        return target_file_size(self.typed_options, bool(self.schema.primary_keys))

    @property
    def is_main(self) -> bool:
        return self.branch == MAIN_BRANCH

    @property
    def partition_keys(self) -> list[str]:
        return list(self.schema.partition_keys)

    @property
    def primary_keys(self) -> list[str]:
        return list(self.schema.primary_keys)

    def arrow_schema(self) -> pa.Schema:
        return self.schema.arrow_schema()

    def key_decoder(self) -> Optional[Callable[[bytes], tuple]]:
        """Decodes min/max keys of a primary-key table into comparable tuples (None for
        append tables, which have no keys)."""
        if not self.schema.primary_keys:
            return None
        types = tuple(self.schema.field(k).type for k in self.schema.trimmed_primary_keys)
        return lambda b: decode_row(b, types)

    # -- paths -----------------------------------------------------------------------------
    def partition_values(self, partition: bytes) -> tuple:
        return decode_row(partition, tuple(f.type for f in self.schema.partition_fields))

    def bucket_dir(self, values: Sequence, bucket: int) -> str:
        fields = self.schema.partition_fields
        if not fields:
            return join(self.path, f"bucket-{bucket}")
        o = self.typed_options
        path = partition_path(values, fields, o.required(O.PARTITION_DEFAULT_NAME), o.required(O.PARTITION_LEGACY_NAME))
        return join(self.path, path, f"bucket-{bucket}")

    def bucket_dir_of(self, partition: bytes, bucket: int) -> str:
        return self.bucket_dir(self.partition_values(partition), bucket)

    def partition_matcher(self, static: dict) -> Callable[[bytes], bool]:
        """Predicate over serialized partitions for a static partition spec like {"dt": "x"}."""
        names = [f.name for f in self.schema.partition_fields]
        unknown = [k for k in static if k not in names]
        if unknown:
            raise LakeformatError(f"{unknown} are not partition keys of {self.name} (partition keys: {names})")
        idx = {k: names.index(k) for k in static}

        def matches(partition: bytes) -> bool:
            values = self.partition_values(partition)
            return all(str(values[i]) == str(static[k]) for k, i in idx.items())
        return matches

    # -- snapshots -------------------------------------------------------------------------
    def snapshot(self, snapshot_id: int) -> Snapshot:
        return self.snapshot_manager.get(snapshot_id)

    def latest_snapshot(self) -> Optional[Snapshot]:
        return self.snapshot_manager.latest()


@lru_cache(maxsize=65536)
def decode_row(partition: bytes, types: tuple) -> tuple:
    """A serialized BinaryRow (a partition, a min/max key) as a tuple of its values."""
    return tuple(deserialize_row(partition, list(types)))
