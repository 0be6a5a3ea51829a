"""Errors a user of lakeformat can catch. Each names the thing that is wrong."""


class LakeformatError(Exception):
    """Base class of every error lakeformat raises on purpose."""


class SchemaError(LakeformatError):
    """A type, schema or schema change that Paimon's format cannot express or allow."""


class DataError(LakeformatError):
    """Data that does not fit the table: missing or extra columns, wrong types, nulls in NOT NULL."""


class InvalidNameError(LakeformatError, ValueError):
    """A database, table, tag, consumer or file name that is empty or could escape its directory.
    Also a ValueError, so that a reader of a metadata file reports a bad name in it as corrupt."""


class OptionError(LakeformatError):
    """An unknown table option or an invalid value for a known one."""


class UnsupportedError(LakeformatError):
    """Something valid in Paimon that lakeformat does not implement: an option value, a data type,
    a file format. Raised instead of reading or writing as if the feature were absent."""


class UnsupportedOptionError(UnsupportedError, OptionError):
    """A table option set to a value whose feature lakeformat does not implement."""


class UnsupportedTypeError(UnsupportedError, SchemaError):
    """A column of a Paimon data type that lakeformat does not implement (BLOB, VARIANT, ...)."""


class UnknownOptionWarning(UserWarning):
    """An existing table carries option keys that neither Paimon nor lakeformat knows; they are
    kept and ignored, as Paimon ignores them."""


class NotFoundError(LakeformatError):
    """A database, table, snapshot or schema that does not exist."""


class AlreadyExistsError(LakeformatError):
    """A database or table that exists already."""


class CorruptFileError(LakeformatError):
    """A metadata or data file that is missing or cannot be parsed."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = path


class CommitError(LakeformatError):
    """A commit that cannot be applied."""


class CommitConflictError(CommitError):
    """A commit that conflicts with one committed after its writer started; its data files are
    left for the writer to ``abort``."""

    def __init__(self, message: str, snapshot_id=None, files=(), partition=None, bucket=None):
        super().__init__(message)
        self.snapshot_id, self.files, self.partition, self.bucket = snapshot_id, tuple(files), partition, bucket


class LockTimeoutError(CommitError):
    """The catalog lock of a table stayed held by another committer for ``lock.acquire-timeout``;
    nothing was committed."""

    def __init__(self, lock_id: str, waited: float, timeout: float, ttl: float):
        super().__init__(
            f"could not take the catalog lock {lock_id!r}: another committer held it for the whole "
            f"{waited:.1f} s this commit waited (lock.acquire-timeout is {timeout:g} s). Nothing was "
            f"committed; retry later. A lock left by a crashed committer frees itself after "
            f"lock.ttl ({ttl:g} s).")
        self.lock_id, self.waited = lock_id, waited


class StorageError(LakeformatError, OSError):
    """The file system or object store failed an operation (disk full, connection reset,
    throttling past the retries). Nothing that failed this way is reported as written. Also an
    OSError, so code that treats storage failures alike keeps doing so."""

    def __init__(self, operation: str, path: str, reason: str):
        super().__init__(f"{operation} {path}: {reason}")
        self.operation, self.path, self.reason = operation, path, reason

    def __str__(self) -> str:   # OSError's own __str__ would print the args tuple
        return f"{self.operation} {self.path}: {self.reason}"


class OutcomeUnknownError(StorageError):
    """A write the store neither confirmed nor refused, and whose file could not be read back to
    tell: it may or may not have happened. Files it may depend on are never deleted."""


class CommitOutcomeUnknownError(CommitError):
    """A commit whose ``snapshot-N`` may or may not exist: the store did not answer and the
    snapshot could not be read back. Nothing was deleted, so either way the table is intact;
    ``snapshot_id`` and ``commit_user`` say what to look for."""

    def __init__(self, message: str, snapshot_id: int, commit_user: str):
        super().__init__(message)
        self.snapshot_id, self.commit_user = snapshot_id, commit_user
