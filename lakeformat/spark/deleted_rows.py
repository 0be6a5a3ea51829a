"""Deletion vectors applied inside Spark's Parquet scan, with no join and no Spark job to plan.

Where the session has lakeformat's jar, its reader (``DeletionVectorParquet.java``) marks the
deleted rows as it reads, from the bitmaps of :func:`bitmap` given as a read option
(:func:`encoded_vectors`). Without it:

Each file's vector becomes a bitmap of its row positions (one bit per row, ``row_count // 64 + 1``
64-bit words); the bitmaps of the files one scan reads are concatenated into one ``array<bigint>``
literal, and each row is kept when its bit is clear:

    word = get(bits, (row_index >> 6) + offset(_metadata.file_size))
    keep = (word >> (row_index & 63)) & 1 == 0

``row_index`` is the row's position in its file, which Spark's reader computes (:data:`ROW_INDEX`).
``offset`` is a balanced tree of comparisons of the file's size (depth log2 of the scan's files),
given to Spark as one SQL expression: the files of one scan have distinct sizes (the manifests
record them), and a size outside the tree (a file that is not the one its manifest describes)
fails the query instead of keeping a row. Sizes, not names: a tree of string comparisons made
the generated code of each row larger and cost a fifth more CPU in the benchmark. Spark
evaluates this in the scan's generated code, a few integer operations a row, where the anti-join
it replaces built a table of keys in Python workers (a Spark job on every read) and hashed and
probed every row.

The literal, one contiguous unsafe array, travels once per stage with the task binary. Files
are packed into scans of at most :data:`MAX_FILES_PER_SCAN` files and :data:`MAX_WORDS_PER_SCAN`
words (a file larger than that gets a scan of its own) with distinct sizes, so a table with
thousands of vectors makes tens of scans, each with a bounded literal and a shallow tree; files
without deleted rows go into one plain scan.
"""
from __future__ import annotations

import base64
from typing import Optional
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lakeformat.errors import LakeformatError
from lakeformat.spark import catalyst, jar

MAX_FILES_PER_SCAN = 64
MAX_WORDS_PER_SCAN = 1 << 20    # 8 MiB of bitmap (64M rows) in one scan's literal
_SIZE = "_metadata.file_size"
_WRONG_SIZE = ("lakeformat: a file read for its deletion vector is not the size its manifest records "
               "(read the table with native=False): ")
# a query that meets a file outside the offset tree fails, naming it (not ``input_file_name()``, which is
# not deterministic: Spark would then push no filter of the read below this one into the scan)
_WRONG_FILE = f"raise_error(concat('{_WRONG_SIZE}', _metadata.file_path))"
# Spark's Parquet reader fills a requested column of this name that the file lacks with each row's
# position in its file (FileFormat.ROW_INDEX_TEMPORARY_COLUMN_NAME: how it computes
# _metadata.row_index; Apache Hudi reads row positions for its position-based merge the same way).
# Read directly, it is a flat long column: through the _metadata struct the filtered scan took
# 8% longer at 10M rows. A file that holds a column of this name gives its values instead, so
# :func:`reads_row_index` keeps such files off this path.
ROW_INDEX = "_tmp_metadata_row_index"


def bitmap(positions, row_count: int, file_name: str = "") -> np.ndarray:
    """The positions as bits of ``row_count // 64 + 1`` int64 words, bit ``p & 63`` of word
    ``p >> 6`` (pure)."""
    pos = np.asarray(positions, np.int64)
    if len(pos) and (pos.min() < 0 or pos.max() >= row_count):
        raise LakeformatError(f"deletion vector of {file_name} names a position outside its {row_count} rows")
    words = np.zeros(row_count // 64 + 1, np.uint64)
    np.bitwise_or.at(words, pos >> 6, np.left_shift(np.uint64(1), (pos & 63).astype(np.uint64)))
    return words.view(np.int64)


def pack(files: Sequence[tuple[str, int, int]], max_files: Optional[int] = None,
         max_words: Optional[int] = None) -> list[list[str]]:
    """Files (name, bitmap words, file size) packed in order into scans of at most ``max_files``
    files and ``max_words`` words (the module's limits by default), no two of one size; a file
    above ``max_words`` is a scan alone (pure)."""
    max_files = MAX_FILES_PER_SCAN if max_files is None else max_files
    max_words = MAX_WORDS_PER_SCAN if max_words is None else max_words
    scans: list[list[str]] = []
    sizes: set[int]
    words, sizes = 0, set()
    for name, n, size in files:
        if not scans or len(scans[-1]) >= max_files or words + n > max_words or size in sizes:
            scans.append([])
            words, sizes = 0, set()
        scans[-1].append(name)
        words += n
        sizes.add(size)
    return scans


def reads_row_index(column_names: Sequence[str]) -> bool:
    """Whether files with these columns can have their row positions read as :data:`ROW_INDEX`
    (none of them is named so, in any case: Spark may match names ignoring case)."""
    return all(n.lower() != ROW_INDEX for n in column_names)


def _offset_sql(offsets: Sequence[tuple[int, int]]) -> str:
    """The word offset of the scanned row's file, as Spark SQL: a balanced tree of comparisons of
    its size over ``offsets`` (size, offset) sorted by size, NULL for a size not in it (pure). One
    string Spark parses: a Column built call by call costs Py4J round trips per node (80 ms of
    planning for 8 files)."""
    if len(offsets) == 1:
        n, off = offsets[0]
        return f"CASE WHEN {_SIZE} = {int(n)} THEN {int(off)} END"
    mid = len(offsets) // 2
    return (f"CASE WHEN {_SIZE} < {int(offsets[mid][0])} THEN {_offset_sql(offsets[:mid])} "
            f"ELSE {_offset_sql(offsets[mid:])} END")


def keep(spark, bitmaps: Mapping[int, np.ndarray]) -> Column:
    """True for the rows of the files in ``bitmaps`` (by file size, distinct) whose bit is clear."""
    sizes = sorted(bitmaps)
    starts = np.cumsum([0] + [len(bitmaps[n]) for n in sizes[:-1]])
    bits = catalyst.long_array(spark, np.concatenate([bitmaps[n] for n in sizes]))
    offset = _offset_sql([(n, int(s)) for n, s in zip(sizes, starts)])
    word = F.get(bits, F.expr(f"cast(shiftright({ROW_INDEX}, 6) + coalesce({offset}, {_WRONG_FILE}) as int)"))
    return word.bitwiseAND(F.expr(f"shiftleft(1L, cast({ROW_INDEX} & 63 as int))")) == 0


def encoded_vectors(files: Sequence[tuple[str, int, np.ndarray]]) -> str:
    """Files (name, size, bitmap) as the read option of the jar's deletion-vector reader (pure)."""
    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode("ascii")
    return ";".join(f"{b64(name.encode())} {int(size)} {b64(words.astype('<i8').tobytes())}"
                    for name, size, words in files)


def scans(spark, read: Callable[..., DataFrame], paths: Sequence[str], row_counts: Sequence[int],
          file_sizes: Sequence[int], vectors: Mapping[str, Sequence[int]]) -> list[DataFrame]:
    """``read`` of ``paths`` (with their row counts and sizes) without the rows ``vectors`` (file
    name to deleted positions) delete: one plain scan of the files without deleted rows, and scans
    of the others. Where the session has lakeformat's jar, ``read(paths, vectors=option)`` reads
    them through its deletion-vector reader (:data:`jar.DELETION_VECTOR_READER`, which marks the
    deleted rows as it reads, for ``read`` to filter them); else ``read(paths, row_index=True)`` adds the column
    :data:`ROW_INDEX` to its read schema and the rows are filtered by :func:`keep`. The frames
    returned have the columns of ``read(paths)``."""
    name_of = {p: p.rsplit("/", 1)[-1] for p in paths}
    rows, size_of = dict(zip(paths, row_counts)), dict(zip(paths, file_sizes))
    deleted = [p for p in paths if len(vectors.get(name_of[p], ()))]
    plain = [p for p in paths if not len(vectors.get(name_of[p], ()))]
    frames = [read(plain)] if plain else []
    bitmaps = {p: bitmap(vectors[name_of[p]], rows[p], name_of[p]) for p in deleted}
    by_name = {name_of[p]: p for p in deleted}
    if len(by_name) != len(deleted):
        raise LakeformatError("two planned files with deletion vectors share a file name")
    if deleted and jar.loadable(spark, jar.DELETION_VECTOR_READER):
        # the reader finds a file's vector by its name: sizes may repeat within a scan
        for group in pack([(name_of[p], len(bitmaps[p]), i) for i, p in enumerate(deleted)]):
            group_paths = [by_name[n] for n in group]
            option = encoded_vectors([(name_of[p], size_of[p], bitmaps[p]) for p in group_paths])
            frames.append(read(group_paths, vectors=option))
        return frames
    for group in pack([(name_of[p], len(bitmaps[p]), size_of[p]) for p in deleted]):
        group_paths = [by_name[n] for n in group]
        kept = read(group_paths, row_index=True).where(keep(spark, {size_of[p]: bitmaps[p] for p in group_paths}))
        frames.append(kept.drop(ROW_INDEX))
    return frames
