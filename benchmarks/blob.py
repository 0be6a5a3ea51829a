"""BLOB read memory benchmark: peak RSS of streaming a BLOB table, in a fresh process.

    .venv/bin/python benchmarks/blob.py [--mb 1024] [--blob-kb 1024] [--writer pypaimon|lakeformat]
                                        [--dir DIR] [--keep]

pypaimon (in .venv-oracle; or lakeformat with ``--writer lakeformat``, one streamed write) writes a
table with row tracking, data evolution and a BLOB column holding ``--mb`` MB of incompressible
blobs of ``--blob-kb`` KB (blob files rolled at 256 MB, the default target size). A fresh
lakeformat process then opens the table, takes its RSS as the baseline, streams every row with
``Table.to_batches()`` (checking each blob's SHA-256 against what was written) and reports the
peak RSS above that baseline. Issue 32's goal: a 1 GB BLOB table read with a peak under 256 MB
above the baseline.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ORACLE_PY = ROOT / ".venv-oracle" / "bin" / "python"
GOAL_MB = 256

WRITE = r'''
import hashlib, json, sys
import numpy as np
import pyarrow as pa
from pypaimon import CatalogFactory, Schema
wh, total, blob = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cat = CatalogFactory.create({"warehouse": wh})
cat.create_database("db", True)
schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("pic", pa.large_binary())])
cat.create_table("db.blobs", Schema.from_pyarrow_schema(schema, options={
    "row-tracking.enabled": "true", "data-evolution.enabled": "true"}), False)
t = cat.get_table("db.blobs")
rng = np.random.default_rng(7)
n = max(1, total // blob)
per_commit = max(1, (64 << 20) // blob)     # pypaimon holds a commit's rows in memory
digest, written = hashlib.sha256(), 0
for start in range(0, n, per_commit):
    ids = list(range(start, min(n, start + per_commit)))
    pics = [rng.bytes(blob) for _ in ids]
    for p in pics:
        digest.update(hashlib.sha256(p).digest())
    wb = t.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(pa.table({"id": ids, "name": [f"n{i}" for i in ids], "pic": pics}, schema=schema))
    c.commit(w.prepare_commit()); w.close(); c.close()
    written += sum(map(len, pics))
print(json.dumps({"rows": n, "bytes": written, "digest": digest.hexdigest()}))
'''

WRITE_LAKEFORMAT = r'''
import hashlib, json, resource, sys
import numpy as np
import pyarrow as pa
import lakeformat as lf
wh, total, blob = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cat = lf.Catalog(wh)
cat.create_database("db", ignore_if_exists=True)
schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("pic", pa.large_binary())])
t = cat.create_table("db.blobs", schema, options={
    "row-tracking.enabled": "true", "data-evolution.enabled": "true", "blob-field": "pic"})
rng = np.random.default_rng(7)
n = max(1, total // blob)
digest, written = hashlib.sha256(), 0
def batches():
    global written
    for start in range(0, n, 16):               # 16 blobs per batch: the writer streams them to files
        ids = list(range(start, min(n, start + 16)))
        pics = [rng.bytes(blob) for _ in ids]
        for p in pics:
            digest.update(hashlib.sha256(p).digest())
        written += sum(map(len, pics))
        yield pa.record_batch([pa.array(ids, pa.int64()), pa.array([f"n{i}" for i in ids]),
                               pa.array(pics, pa.large_binary())], schema=schema)
t.write(pa.RecordBatchReader.from_batches(schema, batches()))
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"rows": n, "bytes": written, "digest": digest.hexdigest(), "write_peak_mb": round(peak, 1)}))
'''

READ = r'''
import hashlib, json, resource, sys, time
def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20
import lakeformat as lf
t = lf.Catalog(sys.argv[1]).get_table("db.blobs")
base = rss_mb()
start = time.perf_counter()
rows, size, by_id, batches, largest = 0, 0, {}, 0, 0
for b in t.to_batches():
    batches += 1
    largest = max(largest, b.nbytes)
    ids, pics = b.column("id").to_pylist(), b.column("pic")
    for i, p in zip(ids, pics):
        v = p.as_buffer()
        by_id[i] = hashlib.sha256(v).digest()
        size += v.size
    rows += b.num_rows
seconds = time.perf_counter() - start
digest = hashlib.sha256()
for i in sorted(by_id):
    digest.update(by_id[i])
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"rows": rows, "bytes": size, "digest": digest.hexdigest(), "baseline_mb": round(base, 1),
                  "peak_mb": round(peak, 1), "peak_above_baseline_mb": round(peak - base, 1),
                  "seconds": round(seconds, 2), "batches": batches, "largest_batch_mb": round(largest / 2**20, 1)}))
'''


def run(py: Path, code: str, *args: str) -> dict:
    proc = subprocess.run([str(py), "-c", code, *args], capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    if proc.returncode != 0:
        sys.exit(f"failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=1024, help="MB of blob values in the table")
    ap.add_argument("--blob-kb", type=int, default=1024, help="KB per blob")
    ap.add_argument("--writer", choices=("pypaimon", "lakeformat"), default="pypaimon",
                    help="who writes the table (lakeformat: one streamed write, its peak RSS reported)")
    ap.add_argument("--dir", help="work directory (default: a temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the table afterwards")
    args = ap.parse_args()
    work = Path(args.dir or tempfile.mkdtemp(prefix="lf-blob-bench-"))
    wh = work / "wh"
    if wh.exists():
        shutil.rmtree(wh)
    t0 = time.perf_counter()
    if args.writer == "pypaimon":
        wrote = run(ORACLE_PY, WRITE, str(wh), str(args.mb << 20), str(args.blob_kb << 10))
    else:
        wrote = run(ROOT / ".venv" / "bin" / "python", WRITE_LAKEFORMAT, str(wh), str(args.mb << 20),
                    str(args.blob_kb << 10))
    write_s = time.perf_counter() - t0
    read = run(ROOT / ".venv" / "bin" / "python", READ, str(wh))
    ok = (read["rows"], read["bytes"], read["digest"]) == (wrote["rows"], wrote["bytes"], wrote["digest"])
    result = {"table_mb": round(wrote["bytes"] / 2**20), "rows": wrote["rows"], "writer": args.writer,
              "write_s": round(write_s, 1), "write_peak_mb": wrote.get("write_peak_mb"),
              **read, "same_values": ok, "goal_mb": GOAL_MB,
              "within_goal": read["peak_above_baseline_mb"] < GOAL_MB}
    print(json.dumps(result, indent=1))
    if not args.keep and not args.dir:
        shutil.rmtree(work)
    if not ok:
        sys.exit("lakeformat read other values than pypaimon wrote")


if __name__ == "__main__":
    main()
