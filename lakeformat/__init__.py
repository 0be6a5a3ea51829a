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
from lakeformat.partition_expire import expire_partitions
from lakeformat.orphans import OrphanResult, remove_orphan_files
from lakeformat.staging import (StagedCommit, discard, identifier_for, list_staged, load_staged, publish,
                                read_staged, stage)

__all__ = [
    "Catalog", "Table", "col", "CommitMessage", "FileStoreCommit", "Overwrite",
    "Tag", "TagManager", "ConsumerManager", "RollbackResult", "TableStream",
    "expire_partitions", "OrphanResult", "remove_orphan_files",
    "StagedCommit", "stage", "list_staged", "load_staged", "read_staged", "publish", "discard", "identifier_for",
    "AddColumn", "DropColumn", "RenameColumn", "UpdateColumnType", "SetOption", "RemoveOption",
    "LakeformatError", "SchemaError", "DataError", "InvalidNameError", "OptionError", "NotFoundError",
    "AlreadyExistsError", "CorruptFileError", "CommitError", "CommitConflictError", "LockTimeoutError",
]
