"""Decoded manifest blocks, cached by their bytes.

Decoding Avro entries is most of what planning, merging and the orphan scan cost: manifest entries
are decoded into columns by a compiled reader (``Columns``, ``io/avro_columns.py``), the few records
of manifest lists by fastavro one at a time. Manifests are immutable, and a merge by block copy
(``ManifestFile.concat``) puts the same compressed blocks into the merged manifest, so one block is often named by many
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
from typing import Optional, cast
from collections.abc import Callable, Sequence

import cramjam
import fastavro
import numpy as np
import pyarrow as pa
from fastavro.read import BLOCK_READERS

from lakeformat.format.avro_varint import write_long
from lakeformat.io import avro_blocks, avro_columns

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

    def get(self, key: tuple) -> Optional[Block]:
        with self._lock:
            value = self._blocks.get(key)
            if value is None:
                self.misses += 1
                return None
            self._blocks.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key: tuple, value: Block) -> None:
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
        parsed = _SCHEMAS[head] = cast(dict, fastavro.parse_schema(_plain(json.loads(text))))
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
    """``blocks`` (count, raw) of files of ``metadata`` with runs of small blocks joined into blocks
    of at least ``SMALL_BLOCK`` records (and less than twice that): the records' bytes concatenated
    and compressed again, nothing decoded. A joined block
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
            cached = [p for p in parts if p is not None]
            if len(cached) == len(parts):
                shift, ends = 0, array("Q")
                for p, plain in zip(cached, plains):
                    ends.extend(e + shift for e in p.ends)
                    shift += len(plain)
                remember(metadata, kind, raw, tuple(v for p in cached for v in p.values), ends)
        run.clear()

    for count, raw in blocks:
        if count < SMALL_BLOCK:
            run.append((count, raw))
            if sum(n for n, _ in run) >= SMALL_BLOCK:   # joined blocks stay small: a partition-
                flush()                                  # filtered read decodes only its neighbours
        else:
            flush()
            out.append((count, raw))
    flush()
    return out


@dataclass(frozen=True)
class Columns:
    """A conversion of decoded columns (an Arrow table of many blocks' records) to one value per
    record: blocks of a kind converted so are decoded by the compiled reader
    (``io/avro_columns.py``), many blocks at once, instead of one record at a time by fastavro."""

    convert: Callable[[pa.Table], list]
    from_record: Callable[[dict], object]   # the same of one fastavro record, where the compiled reader cannot run


COLUMN_CHUNK = 1024   # records decoded in one call: bounds the memory of the bytes and columns in flight


def _chunks(items: list, limit: int) -> list[list]:
    """``items`` (key, count, raw) in runs of at most ``limit`` records (a larger block alone)."""
    out: list[list] = []
    run: list = []
    size = 0
    for item in items:
        if run and size + item[1] > limit:
            out.append(run)
            run, size = [], 0
        run.append(item)
        size += item[1]
    return out + [run] if run else out


def _decode_run(codec: str, text: bytes, head: bytes, items: list[tuple], convert) -> dict:
    """Blocks (key, count, raw) of one kind of file decoded: key -> ``Block``."""
    if not isinstance(convert, Columns) or not avro_columns.chosen_for(sum(count for _, count, _ in items)):
        schema, per_record = _schema(head, text), getattr(convert, "from_record", convert)
        return {key: _decode_block(decompress(codec, raw), count, schema, per_record) for key, count, raw in items}
    out = {}
    for run in _chunks(items, COLUMN_CHUNK):
        framed = [(count, decompress(codec, raw)) for _, count, raw in run]
        table = avro_columns.read_table(text, framed)
        ends = avro_columns.record_ends(text, table, framed)
        try:
            values = convert.convert(table)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise RecordError(str(e)) from None
        start = 0
        for (key, count, _), block_ends in zip(run, ends):
            out[key] = Block(tuple(values[start:start + count]), array("Q", block_ends.astype(np.uint64).tobytes()))
            start += count
    return out


def blocks_of(datas: Sequence[bytes], kind: str, convert, cache: BlockCache = CACHE) -> list:
    """For each of ``datas`` (Avro files of one ``kind`` of value, that ``convert`` makes: part of
    the cache key), its container (header, raw blocks) and each block decoded, from ``cache``
    where it holds the block; or the exception that file raises, as ``blocks`` would raise it.
    A block shared by several of the files is decoded once, and the blocks missing from the
    cache are decoded together (``Columns``: one call of the columnar reader for many files)."""
    parsed: list = []
    for data in datas:
        try:
            parsed.append(avro_blocks.parse(data))
        except Exception as e:   # the block parser raises many kinds on garbage input
            parsed.append(e)
    found: dict[tuple, Block] = {}
    missing: dict[bytes, dict[tuple, tuple]] = {}   # head -> key -> (key, count, raw)
    kinds: dict[bytes, tuple[str, bytes]] = {}      # head -> (codec, schema text)
    for c in parsed:
        if isinstance(c, Exception):
            continue
        head = _head(kind, c.metadata)
        kinds[head] = (c.metadata.get("avro.codec", b"null").decode(), c.metadata.get("avro.schema", b""))
        for count, raw in c.blocks:
            key = (head, _digest(raw))
            if key not in found and key not in missing.get(head, ()):
                block = cache.get(key)
                if block is None:
                    missing.setdefault(head, {})[key] = (key, count, raw)
                else:
                    found[key] = block
    failed: dict[int, Exception] = {}

    def decode(head: bytes, items: list[tuple]) -> None:
        decoded = _decode_run(*kinds[head], head, items, convert)
        for key, block in decoded.items():
            cache.put(key, block)
        found.update(decoded)

    for head, items in missing.items():
        try:
            decode(head, list(items.values()))
        except Exception:   # find the files at fault: decode each file's missing blocks alone
            for i, c in enumerate(parsed):
                if isinstance(c, Exception) or _head(kind, c.metadata) != head:
                    continue
                own = {k: items[k] for k in ((head, _digest(raw)) for _, raw in c.blocks)
                       if k in items and k not in found}
                try:
                    decode(head, list(own.values()))
                except Exception as e:
                    failed[i] = e
    return [c if isinstance(c, Exception) else failed[i] if i in failed
            else (c, [found[(_head(kind, c.metadata), _digest(raw))] for _, raw in c.blocks])
            for i, c in enumerate(parsed)]


def blocks(data: bytes, kind: str, convert, cache: BlockCache = CACHE) -> tuple[avro_blocks.Container, list[Block]]:
    """The container (header, raw blocks) of an Avro file and each block decoded (see
    ``blocks_of``). Raises what the Avro reader or ``convert`` raise on bytes that are not such a
    file (``RecordError`` for records of another shape)."""
    (result,) = blocks_of([data], kind, convert, cache)
    if isinstance(result, Exception):
        raise result
    return result


def decode(data: bytes, kind: str, convert, cache: BlockCache = CACHE) -> list:
    """The values of an Avro container file (see ``blocks``)."""
    return [v for b in blocks(data, kind, convert, cache)[1] for v in b.values]
