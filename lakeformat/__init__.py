"""lakeformat: Apache Paimon's table format in Python.

The public API is what the README shows: a ``Catalog`` and its ``Table``s (reads, writes,
``t.maintenance``), predicates (``col``), schema changes and the errors to catch. Everything else
(the committer, staged commits, the maintenance internals) is imported from its module.
"""
from lakeformat.errors import (
                               AlreadyExistsError,
                               CommitConflictError,
                               CommitError,
                               CorruptFileError,
                               DataError,
                               InvalidNameError,
                               LakeformatError,
                               LockTimeoutError,
                               NotFoundError,
                               OptionError,
                               SchemaError,
)
from lakeformat.format.predicate import col
from lakeformat.format.schema import (
                               AddColumn,
                               DropColumn,
                               RemoveOption,
                               RenameColumn,
                               SetOption,
                               UpdateColumnType,
)
from lakeformat.table.catalog import Catalog
from lakeformat.table.stream import TableStream
from lakeformat.table.table import Table

__all__ = [
    "Catalog", "Table", "TableStream", "col",
    "AddColumn", "DropColumn", "RenameColumn", "UpdateColumnType", "SetOption", "RemoveOption",
    "LakeformatError", "SchemaError", "DataError", "InvalidNameError", "OptionError", "NotFoundError",
    "AlreadyExistsError", "CorruptFileError", "CommitError", "CommitConflictError", "LockTimeoutError",
]
