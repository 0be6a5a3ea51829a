"""Decoded manifest blocks, cached by their bytes.

Decoding Avro entries (fastavro, one record at a time) is most of what planning, merging and the
orphan scan cost. Manifests are immutable, and a merge by block copy (``ManifestFile.concat``)
puts the same compressed blocks into the merged manifest, so one block is often named by many
manifests of a table's history. Entries are therefore cached per block, keyed by a digest of the
file's schema and codec and of the block's compressed bytes: content-addressed, so a cached value
can never be stale or belong to another file (a rewritten or corrupt file has other bytes and is
decoded, and fails, as without the cache). The cache is bounded by entries, 100,000 by default
(about 70 MB; ``LAKEFORMAT_MANIFEST_CACHE_ENTRIES`` or ``configure``; 0 turns it off), least
recently used blocks going first. The values are the immutable ``ManifestEntry`` objects handed
to callers, so a hit allocates nothing per entry. It pays in long-lived processes (a streaming
reader, a Spark driver, a service, a writer's merge commits); a fresh process decodes every block
once, as it would without it.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import struct
import threading
import zlib
from array import array
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Optional

import cramjam
import fastavro
from fastavro.read import BLOCK_READERS

from lakeformat.format.avro_varint import write_long
from lakeformat.io import avro_blocks

try:
    from compression import zstd   # Python >= 3.14
except ImportError:   # pragma: no cover - the backport before 3.14
    from backports import zstd

# About 0.7 KB per cached entry (slotted metadata objects, shared partition and key values):
# 100,000 entries are about 70 MB, the live files of a table of 100,000 files.
DEFAULT_MAX_ENTRIES = int(os.environ.get("LAKEFORMAT_MANIFEST_CACHE_ENTRIES", "100000"))


class BlockCache:
    """Least-recently-used map of block key -> decoded ``Block``, at most ``max_entries`` values
    in all (0 disables it). Thread-safe."""

    def __init__(self, max_entries: int):
        self.max_entries = max_entries
        self._blocks: OrderedDict[tuple, Block] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key: tuple) -> Optional["Block"]:
        with self._lock:
            value = self._blocks.get(key)
            if value is None:
                self.misses += 1
                return None
            self._blocks.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key: tuple, value: "Block") -> None:
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


@dataclass(frozen=True, slots=True)
class Block:
    """One block's decoded values, and where each record ends in its decompressed bytes (so the
    records a merge keeps are copied as bytes, not encoded again)."""

    values: tuple
    ends: array

    def __len__(self) -> int:
        return len(self.values)


def _digest(data) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def decompress(codec: str, raw: bytes) -> bytes:
    """A block's records as bytes (the codecs fastavro reads)."""
    return BLOCK_READERS[codec](io.BytesIO(write_long(len(raw)) + raw)).getvalue()


def compress(codec: str, plain: bytes) -> bytes:
    """A block's bytes in ``codec`` (Avro spec: deflate is raw deflate; snappy is followed by the
    big-endian CRC-32 of the uncompressed bytes)."""
    if codec == "null":
        return plain
    if codec == "zstandard":
        return zstd.compress(plain)
    if codec == "deflate":
        c = zlib.compressobj(wbits=-15)
        return c.compress(plain) + c.flush()
    if codec == "snappy":
        return bytes(cramjam.snappy.compress_raw(plain)) + struct.pack(">I", zlib.crc32(plain))
    raise ValueError(f"cannot write Avro blocks with codec {codec!r}")


_SCHEMAS: dict[bytes, dict] = {}


def _plain(schema):
    """``schema`` without logical types: the values as written (a timestamp-millis as its long,
    which is what the metadata classes keep), so no datetime is made and taken apart again."""
    if isinstance(schema, dict):
        return {k: _plain(v) for k, v in schema.items() if k != "logicalType"}
    if isinstance(schema, list):
        return [_plain(v) for v in schema]
    return schema


def _schema(head: bytes, text: bytes) -> dict:
    parsed = _SCHEMAS.get(head)
    if parsed is None:
        if len(_SCHEMAS) > 256:
            _SCHEMAS.clear()
        parsed = _SCHEMAS[head] = fastavro.parse_schema(_plain(json.loads(text)))
    return parsed


def _decode_block(plain: bytes, count: int, schema: dict, convert) -> Block:
    """The ``count`` records of a decompressed block, converted, with their end offsets."""
    bio, read = io.BytesIO(plain), fastavro.schemaless_reader
    values, ends = [], array("Q")
    for _ in range(count):
        record = read(bio, schema, None)
        try:
            values.append(convert(record))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise RecordError(str(e)) from None
        ends.append(bio.tell())
    return Block(tuple(values), ends)


def _head(kind: str, metadata: dict) -> bytes:
    return _digest(b"\0".join((kind.encode(), metadata.get("avro.schema", b""),
                                metadata.get("avro.codec", b"null"))))


def remember(metadata: dict, kind: str, raw: bytes, values: tuple, ends: array,
             cache: BlockCache = CACHE) -> None:
    """Put a block a writer made (its raw bytes in a file of ``metadata``) into the cache."""
    cache.put((_head(kind, metadata), _digest(raw)), Block(tuple(values), ends))


SMALL_BLOCK = 64   # records: blocks with fewer are joined by ``coalesce``


def coalesce(metadata: dict, kind: str, blocks: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
    """``blocks`` (count, raw) of files of ``metadata`` with each run of small blocks joined into
    one: the records' bytes concatenated and compressed again, nothing decoded. A joined block
    whose parts are all in the cache goes into the cache too."""
    codec = metadata.get("avro.codec", b"null").decode()
    head = _head(kind, metadata)
    out: list[tuple[int, bytes]] = []
    run: list[tuple[int, bytes]] = []

    def flush():
        if len(run) == 1:
            out.append(run[0])
        elif run:
            plains = [decompress(codec, raw) for _, raw in run]
            raw = compress(codec, b"".join(plains))
            out.append((sum(n for n, _ in run), raw))
            parts = [CACHE.get((head, _digest(r))) for _, r in run]
            if all(p is not None for p in parts):
                shift, ends = 0, array("Q")
                for p, plain in zip(parts, plains):
                    ends.extend(e + shift for e in p.ends)
                    shift += len(plain)
                remember(metadata, kind, raw, tuple(v for p in parts for v in p.values), ends)
        run.clear()

    for count, raw in blocks:
        if count < SMALL_BLOCK:
            run.append((count, raw))
        else:
            flush()
            out.append((count, raw))
    flush()
    return out


def blocks(data: bytes, kind: str, convert: Callable[[dict], object],
           cache: BlockCache = CACHE) -> tuple[avro_blocks.Container, list[Block]]:
    """The container (header, raw blocks) of an Avro file and each block decoded (``convert`` of
    each record), from ``cache`` where it holds the block (``kind`` names what ``convert``
    makes: part of the key). Raises what the Avro reader or ``convert`` raise on bytes that are
    not such a file (``RecordError`` for records of another shape)."""
    c = avro_blocks.parse(data)
    text, codec = c.metadata.get("avro.schema", b""), c.metadata.get("avro.codec", b"null")
    head = _head(kind, c.metadata)
    out = []
    for count, raw in c.blocks:
        key = (head, _digest(raw))
        block = cache.get(key)
        if block is None:
            block = _decode_block(decompress(codec.decode(), raw), count, _schema(head, text), convert)
            cache.put(key, block)
        out.append(block)
    return c, out


def decode(data: bytes, kind: str, convert: Callable[[dict], object], cache: BlockCache = CACHE) -> list:
    """The values of an Avro container file (see ``blocks``)."""
    return [v for b in blocks(data, kind, convert, cache)[1] for v in b.values]
