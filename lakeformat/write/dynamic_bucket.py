"""Dynamic bucket mode for a table write: keys routed to the bucket the HASH index records (or
to a bucket with room, for new keys), and a new HASH index file for every bucket that gained keys,
replacing its old one in the same commit (see :mod:`lakeformat.format.hash_index`)."""
from __future__ import annotations

from typing import Optional

import numpy as np
import pyarrow as pa

from lakeformat.format import options as O
from lakeformat.format.bucket import hash_rows
from lakeformat.format.hash_index import PartitionIndex
from lakeformat.format.index_manifest import HASH, IndexFileMeta
from lakeformat.io.index_files import IndexFiles
from lakeformat.io.table_context import TableContext


class DynamicBuckets:
    """The bucket assignment of one writer, for every partition it writes."""

    def __init__(self, ctx: TableContext, ignore_previous_files: bool = False):
        self.ctx, self.schema = ctx, ctx.schema
        o = ctx.typed_options
        self.target = o.required(O.DYNAMIC_BUCKET_TARGET_ROWS)
        self.max_buckets = o.required(O.DYNAMIC_BUCKET_MAX_BUCKETS)
        self.index_files = IndexFiles.of(ctx)
        self.ignore_previous_files = ignore_previous_files
        self._live: Optional[dict[tuple[bytes, int], IndexFileMeta]] = None   # HASH files of the latest snapshot
        self._partitions: dict[bytes, PartitionIndex] = {}
        self._grown: dict[bytes, set[int]] = {}   # buckets that gained keys since the last hand-over

    def _live_files(self) -> dict[tuple[bytes, int], IndexFileMeta]:
        if self._live is None:
            latest = None if self.ignore_previous_files else self.ctx.latest_snapshot()
            self._live = {(e.partition, e.bucket): e.file for e in
                          (self.index_files.read_manifest(latest.index_manifest) if latest else ())
                          if e.file.index_type == HASH}
        return self._live

    def _index(self, partition: bytes) -> PartitionIndex:
        if partition not in self._partitions:
            per_bucket = {b: self.index_files.read_hashes(f) for (p, b), f in self._live_files().items()
                          if p == partition}
            self._partitions[partition] = PartitionIndex.of(per_bucket)
        return self._partitions[partition]

    def assign(self, partition: bytes, rows: pa.Table) -> np.ndarray:
        """The bucket of each row of one partition."""
        keys = [self.schema.field(k) for k in self.schema.trimmed_primary_keys]
        hashes = hash_rows([rows.column(f.name) for f in keys], [f.type for f in keys])
        buckets, index = self._index(partition).assign(hashes, self.target, self.max_buckets)
        if index is not self._partitions[partition]:
            before = self._partitions[partition]
            self._partitions[partition] = index
            grown = set(np.unique(index.buckets).tolist()) - set(np.unique(before.buckets).tolist())
            grown |= {b for b, n in index.counts().items() if before.counts().get(b, 0) != n}
            self._grown.setdefault(partition, set()).update(grown)
        return buckets

    def hand_over(self) -> dict[tuple[bytes, int], tuple[tuple, tuple]]:
        """Per (partition, bucket) that gained keys: (index files added, index files removed)."""
        out = {}
        live = self._live_files()
        for partition, buckets in self._grown.items():
            index = self._partitions[partition]
            for b in sorted(buckets):
                new = self.index_files.write_hashes(index.hashes[index.buckets == b], partition, b)
                old = live.get((partition, b))
                out[(partition, b)] = ((new,), (old,) if old is not None else ())
                live[(partition, b)] = new
        self._grown = {}
        return out
