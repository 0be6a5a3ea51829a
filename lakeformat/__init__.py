"""lakeformat: Apache Paimon's table format in Python (file store, merge tree, committer)."""
from lakeformat.catalog import Catalog
from lakeformat.commit import FileStoreCommit, Overwrite
from lakeformat.write import CommitMessage
from lakeformat.errors import (AlreadyExistsError, CommitConflictError, CommitError, CorruptFileError,
                               DataError, InvalidNameError, LakeformatError, LockTimeoutError,
                               NotFoundError, OptionError, SchemaError)
from lakeformat.predicate import col
from lakeformat.schema import AddColumn, DropColumn, RemoveOption, RenameColumn, SetOption, UpdateColumnType
from lakeformat.table import Table
from lakeformat.tag import Tag, TagManager
from lakeformat.consumer import ConsumerManager
from lakeformat.rollback import RollbackResult
from lakeformat.stream import TableStream

__all__ = [
    "Catalog", "Table", "col", "CommitMessage", "FileStoreCommit", "Overwrite",
    "Tag", "TagManager", "ConsumerManager", "RollbackResult", "TableStream",
    "AddColumn", "DropColumn", "RenameColumn", "UpdateColumnType", "SetOption", "RemoveOption",
    "LakeformatError", "SchemaError", "DataError", "InvalidNameError", "OptionError", "NotFoundError",
    "AlreadyExistsError", "CorruptFileError", "CommitError", "CommitConflictError", "LockTimeoutError",
]
