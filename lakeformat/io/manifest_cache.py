"""Decoded manifest blocks, cached by their bytes.

Decoding Avro entries (fastavro, one record at a time) is most of what planning, merging and the
orphan scan cost. Manifests are immutable, and a merge by block copy (``ManifestFile.concat``)
puts the same compressed blocks into the merged manifest, so one block is often named by many
manifests of a table's history. Entries are therefore cached per block, keyed by a digest of the
file's schema and codec and of the block's compressed bytes: content-addressed, so a cached value
can never be stale or belong to another file (a rewritten or corrupt file has other bytes and is
decoded, and fails, as without the cache). The cache is bounded by entries (least recently used
blocks go first; ``configure``); the values are the immutable ``ManifestEntry`` objects handed to
callers, so a hit allocates nothing per entry.
"""
from __future__ import annotations

import hashlib
import io
import os
import threading
from collections import OrderedDict
from typing import Callable, Optional

import fastavro

from lakeformat.io import avro_blocks

DEFAULT_MAX_ENTRIES = int(os.environ.get("LAKEFORMAT_MANIFEST_CACHE_ENTRIES", "500000"))


class BlockCache:
    """Least-recently-used map of block key -> tuple of decoded values, at most ``max_entries``
    values in all (0 disables it). Thread-safe."""

    def __init__(self, max_entries: int):
        self.max_entries = max_entries
        self._blocks: OrderedDict[tuple, tuple] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key: tuple) -> Optional[tuple]:
        with self._lock:
            value = self._blocks.get(key)
            if value is None:
                self.misses += 1
                return None
            self._blocks.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key: tuple, value: tuple) -> None:
        if len(value) > self.max_entries:
            return
        with self._lock:
            if key in self._blocks:
                return
            self._blocks[key] = value
            self._size += len(value)
            self._evict()

    def _evict(self) -> None:
        while self._size > self.max_entries:
            _, old = self._blocks.popitem(last=False)
            self._size -= len(old)

    def resize(self, max_entries: int) -> None:
        with self._lock:
            self.max_entries = max(0, int(max_entries))
            self._evict()

    def clear(self) -> None:
        with self._lock:
            self._blocks.clear()
            self._size = 0
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return self._size


class RecordError(Exception):
    """A record the conversion cannot take: the file is Avro, but not of the expected shape."""


CACHE = BlockCache(DEFAULT_MAX_ENTRIES)


def configure(max_entries: int) -> None:
    """Bound the process-wide cache of decoded manifest entries (0: no cache)."""
    CACHE.resize(max_entries)


def _digest(data) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def _converted(records, convert) -> list:
    """``convert`` of each record as the reader yields it (no list of the records' dicts)."""
    def one(r):
        try:
            return convert(r)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise RecordError(str(e)) from None
    return [one(r) for r in records]


def decode(data: bytes, kind: str, convert: Callable[[dict], object], cache: BlockCache = CACHE) -> list:
    """The values (``convert`` of each record) of an Avro container file, block by block from
    ``cache`` where it holds them (``kind`` names what ``convert`` makes, part of the key).
    Raises what the Avro reader or ``convert`` raise on bytes that are not such a file."""
    c = avro_blocks.parse(data)
    head = _digest(b"\0".join((kind.encode(), c.metadata.get("avro.schema", b""),
                               c.metadata.get("avro.codec", b"null"))))
    wanted = range(len(c.blocks))
    keys = {i: (head, _digest(c.blocks[i][1])) for i in wanted}
    found = {i: cache.get(k) for i, k in keys.items()}
    missing = [i for i in wanted if found[i] is None]
    if missing:
        # one container of the file's own header and the missing blocks, read in one pass
        header = data[:avro_blocks.header_length(data)]
        raw = header + avro_blocks.blocks_bytes([c.blocks[i] for i in missing], c.sync)
        values = _converted(fastavro.reader(io.BytesIO(raw)), convert)
        if sum(c.blocks[i][0] for i in missing) != len(values):
            raise ValueError("Avro block record counts do not match the records read")
        start = 0
        for i in missing:
            n = c.blocks[i][0]
            found[i] = tuple(values[start:start + n])
            start += n
            cache.put(keys[i], found[i])
    return [v for i in wanted for v in found[i]]

