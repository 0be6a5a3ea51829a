"""Avro blocks decoded into Arrow columns by a compiled reader (polars' Rust Avro reader).

Decoding manifest entries one record at a time (fastavro, ~10 µs each) was most of what planning,
merging and the orphan scan cost; polars decodes the same records into columns in ~1.5 µs. Its
reader does not know every codec Paimon writes (zstandard), so the blocks are handed to it already
decompressed, framed as a ``null``-codec container in memory: no temporary file.

The reader yields values, not where each record ends; a merge that keeps some records of a block
copies their bytes (``ManifestFile.rewrite``). ``record_ends`` computes each record's encoded size
from its decoded values (Avro's binary encoding is determined by the values) and checks that the
sizes add up to each block's bytes, so a schema that does not describe the bytes is an error,
never a wrong cut.

polars' thread pool does not survive ``fork()``: a process forked after the reader ran here would
hang at its next use (``multiprocessing``'s default start method on Linux forks). Such a process
decodes with fastavro instead (:func:`usable`).

Importing polars takes 0.4-0.7 s on an idle machine, and its first columns make pyarrow import
pandas where it is installed: more than fastavro needs for thousands of records. So a process
decodes its first records with fastavro (:func:`chosen_for`): a command on a small table never
pays for either import.
"""
from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.format import arrays as A
from lakeformat.format.avro_varint import write_long
from lakeformat.io import avro_blocks


_ran = False      # this process has run the compiled reader: its thread pool exists
_forked = False   # this process was forked from one where it had


def _after_fork_in_child() -> None:
    global _forked
    _forked = _forked or _ran


os.register_at_fork(after_in_child=_after_fork_in_child)


def usable() -> bool:
    """Whether the compiled reader can run in this process (not forked after it ran)."""
    return not _forked


BEFORE_IMPORT = 20_000   # records a process decodes with fastavro (~10 µs each) before it imports polars
_decoded_before_import = 0


def chosen_for(records: int) -> bool:
    """Whether to decode a run of ``records`` with the compiled reader: once polars is imported,
    always (where :func:`usable`); before, only when the run would take the records this process
    has decoded with fastavro past ``BEFORE_IMPORT``. Counts the records it leaves to fastavro."""
    global _decoded_before_import
    if not usable():
        return False
    if "polars" in sys.modules or _decoded_before_import + records > BEFORE_IMPORT:
        return True
    _decoded_before_import += records
    return False


def _container(schema: bytes, blocks: Sequence[tuple[int, bytes]]) -> bytes:
    """An uncompressed Avro container file of ``schema`` holding the decompressed ``blocks``."""
    sync = bytes(16)
    meta = {b"avro.schema": schema, b"avro.codec": b"null"}
    header = avro_blocks.MAGIC + write_long(len(meta)) + b"".join(
        write_long(len(k)) + k + write_long(len(v)) + v for k, v in meta.items()) + write_long(0) + sync
    return header + avro_blocks.blocks_bytes([(n, plain) for n, plain in blocks if n], sync)


def read_table(schema: bytes, blocks: Sequence[tuple[int, bytes]]) -> pa.Table:
    """The records of decompressed ``blocks`` (count, bytes) of a file of Avro ``schema`` (its
    JSON text) as one Arrow table. ValueError if the reader cannot decode them or finds another
    number of records than the blocks declare."""
    import polars as pl   # imported when first needed: it takes a while, and most processes never decode

    global _ran
    if _forked:
        raise RuntimeError("the compiled Avro reader cannot run in a process forked after it ran (see usable())")
    _ran = True
    expected = sum(n for n, _ in blocks)
    try:
        table = pl.read_avro(io.BytesIO(_container(schema, blocks))).to_arrow()
    except (Exception, pl.exceptions.PanicException) as e:   # the Rust reader panics on some garbage
        raise ValueError(f"cannot decode Avro records: {e}") from None
    if table.num_rows != expected:
        raise ValueError(f"{table.num_rows} Avro records decoded where the blocks declare {expected}")
    return table


def _varint_sizes(values: np.ndarray) -> np.ndarray:
    """Bytes of each value as an Avro zig-zag varint."""
    v = values.astype(np.int64)
    z = ((v << 1) ^ (v >> 63)).view(np.uint64)
    sizes = np.ones(len(z), np.int64)
    for k in range(1, 10):
        sizes += z >= np.uint64(1 << (7 * k))
    return sizes


def _sizes(schema, array: pa.Array) -> np.ndarray:
    """The encoded size of each value of ``array``, of Avro type ``schema``."""
    if isinstance(schema, dict) and schema.get("logicalType") and schema["type"] in ("int", "long"):
        schema = schema["type"]
        if pa.types.is_timestamp(array.type):
            array = array.cast(pa.timestamp("ms", array.type.tz)).cast(pa.int64())
    if isinstance(schema, dict) and schema["type"] in ("int", "long", "string", "bytes", "boolean", "float", "double"):
        schema = schema["type"]
    if schema in ("int", "long"):
        return _varint_sizes(A.to_numpy(array.fill_null(A.scalar(0, array.type))))
    if schema in ("string", "bytes"):
        lengths = pc.binary_length(array)
        lengths = A.to_numpy(lengths.fill_null(A.scalar(0, lengths.type))).astype(np.int64)
        return _varint_sizes(lengths) + lengths
    if schema in ("boolean", "float", "double"):
        return np.full(len(array), {"boolean": 1, "float": 4, "double": 8}[schema], np.int64)
    if isinstance(schema, list):
        if len(schema) != 2 or "null" not in schema:
            raise ValueError(f"Avro union {schema} is not a nullable type")
        branch = schema[1 - schema.index("null")]
        valid = A.is_valid(array)
        return 1 + np.where(valid, _sizes(branch, array), 0)
    if isinstance(schema, dict) and schema["type"] == "array":
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        offsets = A.to_numpy(array.offsets).astype(np.int64)
        items = array.values.slice(offsets[0], offsets[-1] - offsets[0])
        summed = np.concatenate(([0], np.cumsum(_sizes(schema["items"], items))))
        lengths = np.diff(offsets)
        content = summed[offsets[1:] - offsets[0]] - summed[offsets[:-1] - offsets[0]]
        return np.where(lengths > 0, _varint_sizes(lengths) + content + 1, 1)
    if isinstance(schema, dict) and schema["type"] == "record":
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        total = np.zeros(len(array), np.int64)
        for f in schema["fields"]:
            field = array.column(f["name"]) if isinstance(array, pa.Table) else array.field(f["name"])
            total += _sizes(f["type"], field)
        return total
    raise ValueError(f"Avro type {json.dumps(schema)} is not one a Paimon manifest uses")


def record_ends(schema: bytes, data: pa.Table, blocks: Sequence[tuple[int, bytes]]) -> list[np.ndarray]:
    """Where each record of each of ``blocks`` ends in the block's decompressed bytes, from the
    records ``data`` decoded from them. ValueError if the sizes do not add up to the blocks."""
    sizes = _sizes(json.loads(schema), data)
    out, start = [], 0
    for n, plain in blocks:
        ends = np.cumsum(sizes[start:start + n])
        start += n
        if (ends[-1] if n else 0) != len(plain):
            raise ValueError("Avro records do not fill their block: the bytes are not of the file's schema")
        out.append(ends)
    return out
