"""Routing rows to (partition, bucket), vectorised: one combined integer code per row, one stable
argsort, one take."""
from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.format import arrays as A
from lakeformat.format.bucket import bucket_ids
from lakeformat.format.schema import TableSchema


def group_rows(data: pa.Table, schema: TableSchema) -> list[tuple[list, int, pa.Table]]:
    """Split ``data`` into (partition values, bucket, rows) groups, vectorised: one combined
    integer code per row, one stable argsort, one take."""
    n = data.num_rows
    codes = np.zeros(n, dtype=np.int64)
    for name in schema.partition_keys:
        enc = pc.dictionary_encode(data.column(name)).combine_chunks()
        idx = A.to_numpy(enc.indices.fill_null(A.scalar(len(enc.dictionary), enc.indices.type)))
        codes = codes * (len(enc.dictionary) + 1) + idx
    num_buckets = schema.num_buckets
    if num_buckets > 0:
        key_fields = [schema.field(k) for k in schema.bucket_keys]
        buckets = bucket_ids([data.column(f.name) for f in key_fields], [f.type for f in key_fields],
                             num_buckets)
        codes = codes * num_buckets + buckets
    else:
        buckets = None
    if n and codes.min() == codes.max():
        bounds, ordered = [0, n], data
    else:
        steps = np.diff(codes)
        if (steps >= 0).all():   # already clustered (e.g. landing data sorted by day): no shuffle
            ordered = data
        else:
            order = np.argsort(codes, kind="stable")
            codes = codes[order]
            steps = np.diff(codes)
            ordered = data.take(A.indices(order))
            if buckets is not None:
                buckets = buckets[order]
        bounds = [0, *(np.flatnonzero(steps) + 1).tolist(), n]
    groups = []
    part_cols = [ordered.column(k) for k in schema.partition_keys]
    for start, end in itertools.pairwise(bounds):
        if start == end:
            continue
        values = [c[start].as_py() for c in part_cols]
        bucket = int(buckets[start]) if buckets is not None else 0
        groups.append((values, bucket, ordered.slice(start, end - start)))
    return groups
