"""The deletion vectors of one bucket while a writer works on it (Paimon's
``DeletionVectorsMaintainer``): restored from the bucket's index file, marked by compactions that
find older versions of the keys they write, dropped for files a compaction rewrote, and written
as one new index file per hand-over that replaces the old one in the index manifest."""
from __future__ import annotations

from typing import Optional
from collections.abc import Iterable, Sequence

import numpy as np

from lakeformat.format.index_manifest import IndexFileMeta
from lakeformat.io.index_files import IndexFiles


class BucketDeletionVectors:
    def __init__(self, index_files: IndexFiles, partition: bytes, bucket: int,
                 restored: Sequence[IndexFileMeta] = (), bitmap64: bool = False):
        self.index_files, self.bitmap64 = index_files, bitmap64
        self.partition, self.bucket = partition, bucket
        # the bucket's live index files (located: index/ or beside the data), replaced at the next hand-over
        self.live = tuple(index_files.locate(m, partition, bucket) for m in restored)
        self.vectors: dict[str, np.ndarray] = {}
        for meta in self.live:
            self.vectors.update(index_files.read_deletion_vectors(meta))
        self.changed = False

    def deleted(self, file_name: str) -> Optional[np.ndarray]:
        return self.vectors.get(file_name)

    def mark(self, file_name: str, positions: np.ndarray) -> None:
        """Rows of ``file_name`` at ``positions`` now have a newer version elsewhere."""
        if not len(positions):
            return
        old = self.vectors.get(file_name)
        new = np.unique(np.asarray(positions, dtype=np.uint64))
        self.vectors[file_name] = new if old is None else np.union1d(old, new)
        self.changed = True

    def forget(self, file_names: Iterable[str]) -> None:
        """Files a compaction rewrote are gone, and so are their vectors."""
        for name in file_names:
            if self.vectors.pop(name, None) is not None:
                self.changed = True

    def hand_over(self) -> tuple[tuple[IndexFileMeta, ...], tuple[IndexFileMeta, ...]]:
        """(index files added, index files removed) since the last hand-over: a new index file
        with every vector of the bucket replaces the old one."""
        if not self.changed:
            return (), ()
        added = (self.index_files.write_deletion_vectors(
            self.vectors, self.bitmap64, self.partition, self.bucket),) if self.vectors else ()
        removed, self.live = self.live, added
        self.changed = False
        return added, removed
