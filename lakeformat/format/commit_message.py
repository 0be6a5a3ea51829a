"""What a writer hands the committer: the files it wrote and compacted in one (partition, bucket).

Writers never touch ``snapshot/``; one committer turns the messages of many writers (Spark tasks,
threads, processes) into a snapshot."""
from __future__ import annotations

from dataclasses import dataclass

from lakeformat.format.index_manifest import IndexFileMeta
from lakeformat.format.manifest import DataFileMeta


@dataclass(frozen=True)
class CommitMessage:
    """The files one writer produced for one (partition, bucket)."""

    partition: bytes          # serialized BinaryRow of the partition values
    bucket: int
    total_buckets: int
    new_files: tuple[DataFileMeta, ...] = ()
    deleted_files: tuple[DataFileMeta, ...] = ()
    changelog_files: tuple[DataFileMeta, ...] = ()
    compact_before: tuple[DataFileMeta, ...] = ()
    compact_after: tuple[DataFileMeta, ...] = ()
    compact_changelog: tuple[DataFileMeta, ...] = ()
    # index files of this bucket (in index/ or beside its data files) the commit adds and removes; a
    # global index file (its own row ranges) is committed the same way. A compaction's new
    # deletion vectors replace the bucket's old ones
    index_added: tuple[IndexFileMeta, ...] = ()
    index_deleted: tuple[IndexFileMeta, ...] = ()

    def is_empty(self) -> bool:
        return not (self.new_files or self.deleted_files or self.changelog_files
                    or self.compact_before or self.compact_after or self.compact_changelog
                    or self.index_added or self.index_deleted)

    def all_files(self) -> list[DataFileMeta]:
        return [*self.new_files, *self.changelog_files, *self.compact_after, *self.compact_changelog]
