"""Run by test_streaming_read.py in a fresh process: the net peak resident memory (MiB) of
streaming a table, ``VmHWM`` after a reset minus the resident set before."""
import gc
import os
import sys

import pyarrow as pa
import pyarrow.parquet as pq

import lakeformat as lf
from lakeformat.read.split_read import SplitRead


def status(key: str) -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key + ":")) // 1024


def main(warehouse: str, how: str, buffer: str) -> None:
    t = lf.Catalog(warehouse).get_table("db.t")
    splits = t.scan().plan()
    paths = [os.path.join(t.bucket_dir_of(s.partition_bytes, s.bucket), f.file_name) for s in splits for f in s.files]
    gc.collect()
    pa.default_memory_pool().release_unused()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")   # resets VmHWM to the current resident set
    base, rows = status("VmRSS"), 0
    if how == "pyarrow":
        for p in paths:
            for b in pq.ParquetFile(p).iter_batches():
                rows += b.num_rows
    elif how == "read":
        rows = t.read().num_rows
    else:
        for b in SplitRead(t.ctx).to_batches(splits, buffer=int(buffer) if buffer != "-" else None):
            rows += b.num_rows
    print(rows, status("VmHWM") - base)


if __name__ == "__main__":
    main(*sys.argv[1:])
