"""Paimon's dynamic bucket mode (``bucket = -1`` on a primary-key table): which bucket a key lives
in is recorded, per partition, in one HASH index file per bucket (the keys' hashes as big-endian
int32s, Paimon's table-index spec), so every writer puts a key where it already is.

A new key goes to the first bucket (lowest id first) holding fewer than
``dynamic-bucket.target-row-num`` keys, else to a new bucket with the lowest free id, as Paimon's
``HashBucketAssigner`` with one assigner does. All of it is numpy over arrays of hashes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from lakeformat.errors import OptionError

MAX_BUCKETS = 32768   # bucket ids stay below Java's Short.MAX_VALUE


def encode(hashes: np.ndarray) -> bytes:
    return np.unique(np.asarray(hashes, dtype=np.int32)).astype(">i4").tobytes()


def decode(data: bytes) -> np.ndarray:
    if len(data) % 4:
        raise ValueError(f"a HASH index of {len(data)} bytes is not a whole number of int32 hashes")
    return np.frombuffer(data, dtype=">i4").astype(np.int32)


@dataclass
class PartitionIndex:
    """The key hashes of one partition and the bucket each lives in."""

    hashes: np.ndarray = field(default_factory=lambda: np.empty(0, np.int32))    # sorted
    buckets: np.ndarray = field(default_factory=lambda: np.empty(0, np.int32))   # aligned with hashes

    @classmethod
    def of(cls, per_bucket: dict[int, np.ndarray]) -> PartitionIndex:
        if not per_bucket:
            return cls()
        hashes = np.concatenate([h for h in per_bucket.values()]).astype(np.int32)
        buckets = np.concatenate([np.full(len(h), b, np.int32) for b, h in per_bucket.items()])
        order = np.argsort(hashes, kind="stable")
        return cls(hashes[order], buckets[order])

    def counts(self) -> dict[int, int]:
        ids, n = np.unique(self.buckets, return_counts=True)
        return dict(zip(ids.tolist(), n.tolist()))

    def assign(self, row_hashes: np.ndarray, target: int, max_buckets: int) -> tuple[np.ndarray, PartitionIndex]:
        """The bucket of every row (known keys where they are, new keys filled into buckets in
        order of first appearance), and the index with the new keys."""
        row_hashes = np.asarray(row_hashes, dtype=np.int32)
        out = np.empty(len(row_hashes), np.int32)
        pos = np.searchsorted(self.hashes, row_hashes)
        known = pos < len(self.hashes)
        known[known] = self.hashes[pos[known]] == row_hashes[known]
        out[known] = self.buckets[pos[known]]
        unknown = row_hashes[~known]
        if not len(unknown):
            return out, self
        distinct, first = np.unique(unknown, return_index=True)
        in_order = distinct[np.argsort(first, kind="stable")]
        assigned = _fill(self.counts(), len(in_order), target, max_buckets)
        order = np.argsort(in_order, kind="stable")
        new_sorted, new_buckets = in_order[order], assigned[order]
        out[~known] = new_buckets[np.searchsorted(new_sorted, unknown)]
        return out, PartitionIndex.of_arrays(np.concatenate([self.hashes, new_sorted]),
                                             np.concatenate([self.buckets, new_buckets]))

    @classmethod
    def of_arrays(cls, hashes: np.ndarray, buckets: np.ndarray) -> PartitionIndex:
        order = np.argsort(hashes, kind="stable")
        return cls(hashes[order], buckets[order])


def _fill(counts: dict[int, int], n: int, target: int, max_buckets: int) -> np.ndarray:
    """Buckets for ``n`` new keys: room left in existing buckets (ascending id), then new ones."""
    limit = MAX_BUCKETS if max_buckets == -1 else min(max_buckets, MAX_BUCKETS)
    ids, caps = [], []
    for b in sorted(counts):
        if counts[b] < target:
            ids.append(b)
            caps.append(target - counts[b])
    room = sum(caps)
    candidate = 0
    while room < n:
        while candidate in counts:
            candidate += 1
        if candidate >= limit:
            raise OptionError(f"dynamic bucket mode: {n} new keys need more than the {limit} buckets "
                              "'dynamic-bucket.max-buckets' allows at 'dynamic-bucket.target-row-num' = "
                              f"{target} keys each; lakeformat does not spread keys over full buckets")
        ids.append(candidate)
        caps.append(target)
        room += target
        candidate += 1
    return np.repeat(np.asarray(ids, np.int32), caps)[:n]
