"""Deletion vectors applied inside Spark's Parquet scan, with no join and no Spark job to plan.

Each file's vector becomes a bitmap of its row positions (one bit per row, ``row_count // 64 + 1``
64-bit words); the bitmaps of the files one scan reads are concatenated into one ``array<bigint>``
literal, and each row is kept when its bit is clear:

    word = get(bits, (_metadata.row_index >> 6) + offset(_metadata.file_name))
    keep = (word >> (_metadata.row_index & 63)) & 1 == 0

``offset`` is a balanced tree of comparisons of the file name (depth log2 of the scan's files), and
a name outside the tree fails the query instead of keeping a row. Spark evaluates this in the
scan's generated code: a few integer operations a row, where the anti-join it replaces built a
table of keys in Python workers (a Spark job on every read) and hashed and probed every row.

The literal travels once per stage with the task binary. Files are packed into scans of at most
:data:`MAX_FILES_PER_SCAN` files and :data:`MAX_WORDS_PER_SCAN` words (a file larger than that
gets a scan of its own), so a table with thousands of vectors makes tens of scans, each with a
bounded literal and a shallow tree; files without deleted rows go into one plain scan.
"""
from __future__ import annotations

from typing import Callable, Mapping, Optional, Sequence

import numpy as np
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakeformat.errors import LakeformatError

MAX_FILES_PER_SCAN = 64
MAX_WORDS_PER_SCAN = 1 << 20    # 8 MiB of bitmap (64M rows) in one scan's literal


def bitmap(positions, row_count: int, file_name: str = "") -> np.ndarray:
    """The positions as bits of ``row_count // 64 + 1`` int64 words, bit ``p & 63`` of word
    ``p >> 6`` (pure)."""
    pos = np.asarray(positions, np.int64)
    if len(pos) and (pos.min() < 0 or pos.max() >= row_count):
        raise LakeformatError(f"deletion vector of {file_name} names a position outside its {row_count} rows")
    words = np.zeros(row_count // 64 + 1, np.uint64)
    np.bitwise_or.at(words, pos >> 6, np.left_shift(np.uint64(1), (pos & 63).astype(np.uint64)))
    return words.view(np.int64)


def pack(words: Sequence[tuple[str, int]], max_files: Optional[int] = None,
         max_words: Optional[int] = None) -> list[list[str]]:
    """Files (name, bitmap words) packed in order into scans of at most ``max_files`` files and
    ``max_words`` words (the module's limits by default); a file above ``max_words`` is a scan
    alone (pure)."""
    max_files = MAX_FILES_PER_SCAN if max_files is None else max_files
    max_words = MAX_WORDS_PER_SCAN if max_words is None else max_words
    scans: list[list[str]] = []
    size = 0
    for name, n in words:
        if not scans or len(scans[-1]) >= max_files or size + n > max_words:
            scans.append([])
            size = 0
        scans[-1].append(name)
        size += n
    return scans


def _offset(name: Column, offsets: Sequence[tuple[str, int]]) -> Column:
    """The word offset of the file called ``name``: a balanced tree of comparisons over
    ``offsets`` sorted by name; a name not in it raises."""
    if len(offsets) == 1:
        n, off = offsets[0]
        return F.when(name == F.lit(n), F.lit(off)).otherwise(
            F.raise_error(F.concat(F.lit("lakeformat: no deletion vector planned for file "), name)))
    mid = len(offsets) // 2
    return F.when(name < F.lit(offsets[mid][0]), _offset(name, offsets[:mid])).otherwise(_offset(name, offsets[mid:]))


def _long_array(spark, words: np.ndarray) -> Column:
    """An ``array<bigint>`` literal of ``words``, sent to the JVM as one byte string (a literal
    per element would be a Py4J call per element)."""
    jvm = spark._jvm
    longs = spark.sparkContext._gateway.new_array(jvm.long, len(words))
    jvm.java.nio.ByteBuffer.wrap(bytearray(words.astype(">i8").tobytes())).asLongBuffer().get(longs)
    return Column(jvm.org.apache.spark.sql.functions.lit(longs))


def keep(spark, bitmaps: Mapping[str, np.ndarray]) -> Column:
    """True for the rows of the files in ``bitmaps`` whose bit is clear."""
    names = sorted(bitmaps)
    starts = np.cumsum([0] + [len(bitmaps[n]) for n in names[:-1]])
    bits = _long_array(spark, np.concatenate([bitmaps[n] for n in names]))
    row = F.col("_metadata.row_index")
    index = (F.shiftright(row, 6) + _offset(F.col("_metadata.file_name"),
                                            [(n, int(s)) for n, s in zip(names, starts)])).cast("int")
    bit = F.call_function("shiftright", F.get(bits, index), row.bitwiseAND(F.lit(63)).cast("int"))
    return bit.bitwiseAND(F.lit(1)) == F.lit(0)


def scans(spark, read: Callable[[Sequence[str]], DataFrame], paths: Sequence[str], row_counts: Sequence[int],
          vectors: Mapping[str, Sequence[int]]) -> list[DataFrame]:
    """``read`` of ``paths`` without the rows ``vectors`` (file name to deleted positions) delete:
    one plain scan of the files without deleted rows, and scans of the others filtered by
    :func:`keep`."""
    name_of = {p: p.rsplit("/", 1)[-1] for p in paths}
    rows = dict(zip(paths, row_counts))
    deleted = [p for p in paths if len(vectors.get(name_of[p], ()))]
    plain = [p for p in paths if not len(vectors.get(name_of[p], ()))]
    frames = [read(plain)] if plain else []
    bitmaps = {p: bitmap(vectors[name_of[p]], rows[p], name_of[p]) for p in deleted}
    by_name = {name_of[p]: p for p in deleted}
    if len(by_name) != len(deleted):
        raise LakeformatError("two planned files with deletion vectors share a file name")
    for group in pack([(name_of[p], len(bitmaps[p])) for p in deleted]):
        group_paths = [by_name[n] for n in group]
        frames.append(read(group_paths).where(keep(spark, {name_of[p]: bitmaps[p] for p in group_paths})))
    return frames
