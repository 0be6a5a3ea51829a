"""Dynamic bucket mode (``bucket = -1`` on a primary-key table): Paimon's HASH index files say
where each key lives; new keys fill buckets up to ``dynamic-bucket.target-row-num``."""
from functools import partial

import numpy as np
import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.format import hash_index as H
from lakeformat.format.index_manifest import HASH
from lakeformat.io.index_files import IndexFiles
from tests.conftest import id_rows

SCHEMA = pa.schema([pa.field("dt", pa.string(), False), pa.field("id", pa.int64(), False), ("v", pa.string())])


rows = partial(id_rows, SCHEMA, dt="a", v="v{i}")


def test_hash_index_bytes_are_big_endian_int32s():
    data = H.encode(np.array([5, -1, 5, 70000], np.int32))
    assert data == bytes.fromhex("ffffffff" "00000005" "00011170")
    assert H.decode(data).tolist() == [-1, 5, 70000]
    with pytest.raises(ValueError, match="int32"):
        H.decode(b"\0\0\0")


def test_new_keys_fill_buckets_in_order_known_keys_stay():
    index = H.PartitionIndex.of({0: np.array([1, 2, 3], np.int32), 2: np.array([10], np.int32)})
    buckets, index = index.assign(np.array([3, 50, 51, 50, 52, 53, 54, 10], np.int32), target=4, max_buckets=-1)
    # bucket 0 has room for one, bucket 2 for three, then bucket 1 (the lowest free id) opens
    assert buckets.tolist() == [0, 0, 2, 0, 2, 2, 1, 2]
    assert index.counts() == {0: 4, 1: 1, 2: 4}
    with pytest.raises(lf.OptionError, match=r"dynamic-bucket.max-buckets"):
        index.assign(np.arange(100, 120, dtype=np.int32), target=4, max_buckets=3)


def test_dynamic_bucket_table_round_trip(catalog):
    t = catalog.create_table("db.d", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
                             options={"dynamic-bucket.target-row-num": "100"})
    t.write(pa.concat_tables([rows(range(250)), rows(range(30), dt="b")]))
    t.write(rows(range(200, 320), v="new{i}"))
    t.delete(rows([5]))
    got = {(r["dt"], r["id"]): r["v"] for r in t.read().to_pylist()}
    assert len(got) == 319 + 30 and got[("a", 210)] == "new210" and ("a", 5) not in got
    files = t.files()
    by_bucket = {}
    for f in files:
        by_bucket.setdefault((f["partition"]["dt"], f["bucket"]), 0)
    assert sorted(by_bucket) == [("a", 0), ("a", 1), ("a", 2), ("a", 3), ("b", 0)]
    entries = IndexFiles(t.io, t.path).read_manifest(t.latest_snapshot().index_manifest)
    counts = {(t.partition_values(e.partition)[0], e.bucket): e.file.row_count for e in entries
              if e.file.index_type == HASH}
    assert counts == {("a", 0): 100, ("a", 1): 100, ("a", 2): 100, ("a", 3): 20, ("b", 0): 30}
    # an overwrite replaces a partition's hash indexes with the new data's
    t.write(rows(range(10), v="over{i}"), overwrite=True)
    entries = IndexFiles(t.io, t.path).read_manifest(t.latest_snapshot().index_manifest)
    assert sorted((t.partition_values(e.partition)[0], e.bucket, e.file.row_count) for e in entries) == \
        [("a", 0, 10), ("b", 0, 30)]
    assert t.read(filter=lf.col("dt") == "a").num_rows == 10
