"""Benchmark worker: one contender's calls in a process of its own.

``benchmarks/run.py`` starts it once as ``.venv-oracle/bin/python benchmarks/oracle_bench.py`` for
pypaimon 2.1.0 and pypaimon-rust 0.4.0 (the oracle venv pins another pyarrow and has no
lakeformat); ``benchmarks/fresh.py`` starts it afresh per call, from either venv, so every
contender (lakeformat and raw pyarrow too, from ``.venv``) makes its first call in a fresh process
through the same code. Each implementation is imported on first use only. It speaks JSON lines:
one command per line on stdin, one ``@@RESULT <json>`` line per command on stdout (anything else a
library prints is ignored by the parent). Only the operation being measured is inside the timer:
input Parquet files are loaded into memory by ``load`` before any timing, tables are created and
opened before their timer starts.

Commands:
  {"cmd": "load", "files": [...], "dataset": "append"}    load the batches into memory (a named set;
                                                          "append" by default, "pk" for primary keys)
  {"cmd": "write", "impl": "pypaimon"|"rust"|"lakeformat"|"raw", "warehouse": w, "partition_keys": [...],
   "primary_keys": [...] | null, "options": {...} | null, "dataset": "append"}
                                                          create db.t, then time write+commit of
                                                          every batch of the set (one commit each;
                                                          raw: pq.write_table of each batch, zstd 1)
  {"cmd": "read", "impl": ..., "warehouse": w, "table": "db.t", "digest_keys": [...] | null}
                                                          time plan + read of the whole table; with
                                                          digest_keys, also return table_digest()
                                                          (raw: pq.read_table of the directory)
  {"cmd": "plan", "impl": ..., "warehouse": w, "table": ..., "partition": {"dt": v} | null,
   "repeat": n}                                           time scan planning, n times
  {"cmd": "quit"}
"""
from __future__ import annotations

import hashlib
import json
import sys
import time
import traceback
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

DATASETS: dict[str, list[pa.Table]] = {}
RUST_DATASETS: dict[str, list[list[pa.RecordBatch]]] = {}


def _reply(obj) -> None:
    sys.stdout.write("@@RESULT " + json.dumps(obj) + "\n")
    sys.stdout.flush()


def table_digest(tab: pa.Table, keys: list[str]) -> dict:
    """Order-independent fingerprint of a table, comparable across processes and pyarrow
    versions: rows sorted by ``keys``, then a hash of the key columns and a hash of every
    column (timestamps as epoch milliseconds, strings as UTF-8)."""
    tab = tab.sort_by([(k, "ascending") for k in keys])

    def column_bytes(name: str) -> bytes:
        col = tab.column(name).combine_chunks()
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        if pa.types.is_timestamp(col.type):
            col = col.cast(pa.timestamp("ms")).cast(pa.int64())
        if pa.types.is_integer(col.type) or pa.types.is_floating(col.type):
            width = pa.int64() if pa.types.is_integer(col.type) else pa.float64()
            return col.cast(width).to_numpy(zero_copy_only=False).tobytes()
        return "\x00".join("\x01" if v is None else v for v in col.cast(pa.string()).to_pylist()).encode()

    keys_hash, rows_hash = hashlib.blake2b(digest_size=16), hashlib.blake2b(digest_size=16)
    for name in sorted(tab.column_names):
        b = column_bytes(name)
        rows_hash.update(name.encode() + b)
        if name in keys:
            keys_hash.update(name.encode() + b)
    return {"rows": tab.num_rows, "keys_hash": keys_hash.hexdigest(), "rows_hash": rows_hash.hexdigest()}


def cmd_load(files, dataset="append"):
    DATASETS[dataset] = [pq.read_table(f) for f in files]
    # pypaimon-rust takes RecordBatches: split them up front, outside the timer
    RUST_DATASETS[dataset] = [t.to_batches() for t in DATASETS[dataset]]
    return {"rows": [t.num_rows for t in DATASETS[dataset]], "pyarrow": pa.__version__}


def _create(warehouse, partition_keys, options, primary_keys=None, dataset="append"):
    from pypaimon import CatalogFactory, Schema
    cat = CatalogFactory.create({"warehouse": warehouse})
    cat.create_database("db", True)
    cat.create_table("db.t", Schema.from_pyarrow_schema(DATASETS[dataset][0].schema, partition_keys=partition_keys,
                                                        primary_keys=primary_keys or None,
                                                        options=options or {}), False)
    return cat


def _lakeformat_write(warehouse, partition_keys, options, primary_keys, dataset) -> list[float]:
    import lakeformat as lf
    cat = lf.Catalog(warehouse)
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table("db.t", DATASETS[dataset][0].schema, partition_keys=partition_keys,
                         primary_keys=primary_keys or (), options=options or {})   # not timed
    per_batch = []
    for tab in DATASETS[dataset]:
        start = time.perf_counter()
        t.write(tab)
        per_batch.append(time.perf_counter() - start)
    return per_batch


def _raw_write(warehouse, dataset) -> list[float]:
    out = Path(warehouse)
    out.mkdir(parents=True)
    per_batch = []
    for i, tab in enumerate(DATASETS[dataset]):
        start = time.perf_counter()
        pq.write_table(tab, out / f"batch-{i}.parquet", compression="zstd", compression_level=1)
        per_batch.append(time.perf_counter() - start)
    return per_batch


def cmd_write(impl, warehouse, partition_keys, options=None, primary_keys=None, dataset="append"):
    if impl in ("lakeformat", "raw"):
        per = (_lakeformat_write(warehouse, partition_keys, options, primary_keys, dataset) if impl == "lakeformat"
               else _raw_write(warehouse, dataset))
        return {"seconds": sum(per), "per_batch": per}
    cat = _create(warehouse, partition_keys, options, primary_keys, dataset)   # table creation is not timed
    per_batch = []
    if impl == "pypaimon":
        t = cat.get_table("db.t")
        for tab in DATASETS[dataset]:
            start = time.perf_counter()
            wb = t.new_batch_write_builder()
            w = wb.new_write()
            c = wb.new_commit()
            w.write_arrow(tab)
            c.commit(w.prepare_commit())
            w.close()
            c.close()
            per_batch.append(time.perf_counter() - start)
    elif impl == "rust":
        from pypaimon_rust.datafusion import PaimonCatalog
        t = PaimonCatalog({"warehouse": warehouse}).get_table("db.t")
        for batches in RUST_DATASETS[dataset]:
            start = time.perf_counter()
            wb = t.new_batch_write_builder()
            w = wb.new_write()
            c = wb.new_commit()
            for b in batches:
                w.write_arrow(b)
            c.commit(w.prepare_commit())
            w.close()
            c.close()
            per_batch.append(time.perf_counter() - start)
    else:
        raise ValueError(f"unknown impl {impl!r}")
    return {"seconds": sum(per_batch), "per_batch": per_batch}


def _open(impl, warehouse, table):
    if impl == "pypaimon":
        from pypaimon import CatalogFactory
        return CatalogFactory.create({"warehouse": warehouse}).get_table(table)
    from pypaimon_rust.datafusion import PaimonCatalog
    return PaimonCatalog({"warehouse": warehouse}).get_table(table)


def cmd_read(impl, warehouse, table, digest_keys=None):
    if impl == "raw":
        start = time.perf_counter()
        out = pq.read_table(warehouse)
    elif impl == "lakeformat":
        import lakeformat as lf
        t = lf.Catalog(warehouse).get_table(table)   # not timed, as the others' get_table
        start = time.perf_counter()
        out = t.read()
    else:
        t = _open(impl, warehouse, table)   # opening the catalog and table is not timed
        start = time.perf_counter()
        rb = t.new_read_builder()
        if impl == "pypaimon":
            out = rb.new_read().to_arrow(rb.new_scan().plan().splits())
        else:
            out = pa.Table.from_batches(rb.new_read().read(rb.new_scan().plan().splits()))
    seconds = time.perf_counter() - start
    checksum = int(pc.sum(out.column("user_id")).as_py()) if out.num_rows else 0
    res = {"seconds": seconds, "rows": out.num_rows, "user_id_sum": checksum}
    if digest_keys:
        res["digest"] = table_digest(out, digest_keys)
    return res


def _plan_once(impl, t, partition):
    rb = t.new_read_builder()
    if partition:
        if impl == "pypaimon":
            pb = rb.new_predicate_builder()
            preds = [pb.equal(k, v) for k, v in partition.items()]
            rb = rb.with_filter(preds[0] if len(preds) == 1 else pb.and_predicates(preds))
        else:
            (k, v), = partition.items()
            rb = rb.with_filter({"method": "equal", "field": k, "literals": [v]})
    splits = rb.new_scan().plan().splits()
    if impl == "pypaimon":
        return {"files": sum(len(s.files) for s in splits), "splits": len(splits)}
    # pypaimon-rust splits do not expose their files: report splits and planned rows
    return {"rows": sum(s.row_count() for s in splits), "splits": len(splits)}


def cmd_plan(impl, warehouse, table, partition=None, repeat=5):
    times = []
    for _ in range(repeat):
        t = _open(impl, warehouse, table)   # a fresh table object per run, as lakeformat gets
        start = time.perf_counter()
        found = _plan_once(impl, t, partition)
        times.append(time.perf_counter() - start)
    return {"runs": times, "found": found}


def main() -> None:
    handlers = {"load": cmd_load, "write": cmd_write, "read": cmd_read, "plan": cmd_plan}
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        cmd = req.pop("cmd")
        if cmd == "quit":
            _reply({"ok": True})
            return
        try:
            _reply({"ok": True, **handlers[cmd](**req)})
        except Exception as e:   # report, keep serving: one failing contender must not sink the run
            _reply({"ok": False, "error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()[-3000:]})


if __name__ == "__main__":
    main()
