"""lakeformat: Apache Paimon's table format in Python (file store, merge tree, committer)."""
from lakeformat.commit.commit import FileStoreCommit, Overwrite
from lakeformat.table.staging import (
                               StagedCommit,
                               discard,
                               identifier_for,
                               list_staged,
                               load_staged,
                               publish,
                               read_staged,
                               stage,
)
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
from lakeformat.format.commit_message import CommitMessage
from lakeformat.format.predicate import col
from lakeformat.format.schema import (
                               AddColumn,
                               DropColumn,
                               RemoveOption,
                               RenameColumn,
                               SetOption,
                               UpdateColumnType,
)
from lakeformat.maintenance.consumer import ConsumerManager
from lakeformat.maintenance.orphans import OrphanResult, remove_orphan_files
from lakeformat.maintenance.partition_expire import expire_partitions
from lakeformat.maintenance.rollback import RollbackResult
from lakeformat.maintenance.tag import Tag, TagManager
from lakeformat.table.catalog import Catalog
from lakeformat.table.stream import TableStream
from lakeformat.table.table import Table

__all__ = [
    "Catalog", "Table", "col", "CommitMessage", "FileStoreCommit", "Overwrite",
    "Tag", "TagManager", "ConsumerManager", "RollbackResult", "TableStream",
    "expire_partitions", "OrphanResult", "remove_orphan_files",
    "StagedCommit", "stage", "list_staged", "load_staged", "read_staged", "publish", "discard", "identifier_for",
    "AddColumn", "DropColumn", "RenameColumn", "UpdateColumnType", "SetOption", "RemoveOption",
    "LakeformatError", "SchemaError", "DataError", "InvalidNameError", "OptionError", "NotFoundError",
    "AlreadyExistsError", "CorruptFileError", "CommitError", "CommitConflictError", "LockTimeoutError",
]
