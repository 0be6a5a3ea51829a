"""Shared plumbing for the interop tests: drive pypaimon / pypaimon-rust in the oracle venv.

Everything crosses the interpreter boundary as files: rows go in and out as Parquet, the list of
operations goes in as one JSON file, and the oracle answers with one JSON line (per-operation
results and errors). One oracle process runs a whole batch of operations, so a test pays the
interpreter and import start-up once.

Operations (each a dict with ``op``, ``warehouse`` and ``table`` = "db.name"):

* ``read``    read the latest snapshot with each of ``readers`` ("pypaimon", "rust") and write
              what came back to ``<out>.<reader>.parquet``; a reader failing is reported, not
              raised, so the test decides what it means.
* ``buckets`` (pypaimon) plan splits and read them one by one, writing the rows with an extra
              ``__bucket`` column to ``<out>.parquet``.
* ``create``  create the table with pypaimon, schema taken from the Parquet file ``schema``.
* ``write``   append the Parquet file ``data`` with pypaimon, or overwrite (``overwrite`` = a
              static partition dict, {} for the whole table / dynamic partitions of the data);
              ``write_cols``: only those columns, as a partial file (``with_write_type``).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional
from collections.abc import Iterable, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from tests.oracle import run_oracle

READERS = ("pypaimon", "rust")

ORACLE_SCRIPT = r'''
import json, sys, traceback
import pyarrow as pa
import pyarrow.parquet as pq

ops = json.load(open(sys.argv[1]))
_py_cats, _rs_cats = {}, {}


def py_catalog(wh):
    from pypaimon import CatalogFactory
    if wh not in _py_cats:
        _py_cats[wh] = CatalogFactory.create({"warehouse": wh})
    return _py_cats[wh]


def rs_catalog(wh):
    from pypaimon_rust.datafusion import PaimonCatalog
    if wh not in _rs_cats:
        _rs_cats[wh] = PaimonCatalog({"warehouse": wh})
    return _rs_cats[wh]


def literal(v):
    """JSON literal -> Python value; dates, times, decimals and bytes come tagged."""
    import datetime as dt, decimal
    if not isinstance(v, dict):
        return v
    (tag, x), = v.items()
    if tag == "date":
        return dt.date.fromisoformat(x)
    if tag == "time":
        return dt.time.fromisoformat(x)
    if tag == "datetime":
        return dt.datetime.fromisoformat(x)
    if tag == "decimal":
        return decimal.Decimal(x)
    if tag == "bytes":
        return bytes.fromhex(x)
    raise ValueError("unknown literal tag " + tag)


def native_filter(f):
    if f["method"] in ("and", "or"):
        return {"method": f["method"], "children": [native_filter(c) for c in f["children"]]}
    return {"method": f["method"], "field": f["field"], "literals": [literal(v) for v in f.get("literals", [])]}


def py_filter(pb, f):
    from pypaimon.common.predicate_builder import PredicateBuilder
    if f["method"] in ("and", "or"):
        children = [py_filter(pb, c) for c in f["children"]]
        return (PredicateBuilder.and_predicates if f["method"] == "and" else PredicateBuilder.or_predicates)(children)
    lits = [literal(v) for v in f.get("literals", [])]
    return pb._build_predicate(f["method"], f["field"], lits if lits or f["method"] in ("in", "notIn") else None)


def read_pypaimon(op):
    t = py_catalog(op["warehouse"]).get_table(op["table"])
    if op.get("snapshot_id") is not None:
        t = t.copy({"scan.snapshot-id": str(op["snapshot_id"])})
    rb = t.new_read_builder()
    if op.get("filter"):
        rb = rb.with_filter(py_filter(rb.new_predicate_builder(), op["filter"]))
    return rb.new_read().to_arrow(rb.new_scan().plan().splits())


def read_rust(op):
    if op.get("snapshot_id") is not None:
        raise ValueError("time travel is not wired up for pypaimon-rust in these tests")
    t = rs_catalog(op["warehouse"]).get_table(op["table"])
    rb = t.new_read_builder()
    if op.get("rust_columns"):
        rb = rb.with_projection(op["rust_columns"])
    if op.get("filter"):
        rb = rb.with_filter(native_filter(op["filter"]))
    batches = rb.new_read().read(rb.new_scan().plan().splits())
    return pa.Table.from_batches(batches) if batches else None


def pypaimon_arrow_schema(t):
    from pypaimon.schema.data_types import PyarrowFieldParser
    return PyarrowFieldParser.from_paimon_schema(t.table_schema.fields)


def run(op):
    kind = op["op"]
    if kind == "read":
        out = {}
        for reader in op.get("readers", ["pypaimon", "rust"]):
            try:
                tab = (read_pypaimon if reader == "pypaimon" else read_rust)(op)
                path = op["out"] + "." + reader + ".parquet"
                if tab is not None:
                    pq.write_table(tab, path)
                out[reader] = {"rows": 0 if tab is None else tab.num_rows,
                               "path": path if tab is not None else None}
            except BaseException as e:
                out[reader] = {"error": "".join(traceback.format_exception_only(type(e), e)).strip()[-3000:]}
        return out
    if kind == "buckets":
        t = py_catalog(op["warehouse"]).get_table(op["table"])
        rb = t.new_read_builder()
        read = rb.new_read()
        parts = []
        for split in rb.new_scan().plan().splits():
            tab = read.to_arrow([split])
            parts.append(tab.append_column("__bucket", pa.array([split.bucket] * tab.num_rows, pa.int32())))
        pq.write_table(pa.concat_tables(parts), op["out"] + ".parquet")
        return {"splits": len(parts)}
    if kind == "create":
        from pypaimon import Schema
        cat = py_catalog(op["warehouse"])
        cat.create_database(op["table"].split(".")[0], True)
        schema = pq.read_schema(op["schema"])
        cat.create_table(op["table"], Schema.from_pyarrow_schema(
            schema, partition_keys=op.get("partition_keys") or None, primary_keys=op.get("primary_keys") or None,
            options=op.get("options") or {}), False)
        return {}
    if kind == "write":
        t = py_catalog(op["warehouse"]).get_table(op["table"])
        data = pq.read_table(op["data"])
        schema, cols = pypaimon_arrow_schema(t), op.get("write_cols")
        data = data.cast(pa.schema([schema.field(n) for n in cols]) if cols else schema)
        wb = t.new_batch_write_builder()
        if op.get("overwrite") is not None:
            wb = wb.overwrite(op["overwrite"])
        w, c = wb.new_write(), wb.new_commit()
        if cols:   # a file of these columns only (pypaimon's with_write_type: '_WRITE_COLS')
            w = w.with_write_type(cols)
        w.write_arrow(data)
        c.commit(w.prepare_commit())
        w.close()
        c.close()
        return {}
    raise ValueError("unknown op " + kind)


results = []
for op in ops:
    try:
        results.append({"ok": True, "result": run(op)})
    except BaseException as e:
        results.append({"ok": False, "error": traceback.format_exc()[-4000:]})
        if op["op"] in ("create", "write"):   # later operations depend on these
            break
print(json.dumps({"results": results}))
'''


def lit(v):
    """A literal for an oracle filter, JSON-safe (dates, times, decimals and bytes tagged)."""
    import datetime as dt
    import decimal
    if isinstance(v, dt.datetime):
        return {"datetime": v.isoformat()}
    if isinstance(v, dt.date):
        return {"date": v.isoformat()}
    if isinstance(v, dt.time):
        return {"time": v.isoformat()}
    if isinstance(v, decimal.Decimal):
        return {"decimal": str(v)}
    if isinstance(v, bytes):
        return {"bytes": v.hex()}
    return v


def pred(method: str, field: str, *literals) -> dict:
    return {"method": method, "field": field, "literals": [lit(v) for v in literals]}


class Oracle:
    """Collects operations, then runs them all in one oracle process."""

    def __init__(self, workdir: Path):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.ops: list[dict] = []
        self._n = 0

    def _path(self, stem: str) -> str:
        self._n += 1
        return str(self.workdir / f"{self._n:03d}-{stem}")

    def read(self, warehouse: str, table: str, readers: Sequence[str] = READERS,
             rust_columns: Optional[Sequence[str]] = None, filter: Optional[dict] = None,
             snapshot_id: Optional[int] = None) -> int:
        """``filter``: {"method": "equal", "field": "x", "literals": [1]} (pypaimon's predicate
        methods; "and"/"or" take "children"); literals as in :func:`lit`."""
        self.ops.append({"op": "read", "warehouse": warehouse, "table": table,
                         "readers": list(readers), "out": self._path(table.replace(".", "_")),
                         "rust_columns": list(rust_columns) if rust_columns else None,
                         "filter": filter, "snapshot_id": snapshot_id})
        return len(self.ops) - 1

    def buckets(self, warehouse: str, table: str) -> int:
        self.ops.append({"op": "buckets", "warehouse": warehouse, "table": table,
                         "out": self._path(table.replace(".", "_") + "-buckets")})
        return len(self.ops) - 1

    def create(self, warehouse: str, table: str, schema: pa.Schema, partition_keys=(),
               options: Optional[dict] = None, primary_keys=()) -> int:
        path = self._path("schema") + ".parquet"
        pq.write_table(schema.empty_table(), path)
        self.ops.append({"op": "create", "warehouse": warehouse, "table": table, "schema": path,
                         "partition_keys": list(partition_keys), "primary_keys": list(primary_keys),
                         "options": dict(options or {})})
        return len(self.ops) - 1

    def write(self, warehouse: str, table: str, data: pa.Table, overwrite: Optional[dict] = None,
              write_cols: Optional[Sequence[str]] = None) -> int:
        """Append ``data`` (or overwrite); with ``write_cols``, as a file holding only those columns."""
        path = self._path("data") + ".parquet"
        pq.write_table(data if write_cols is None else data.select(list(write_cols)), path)
        self.ops.append({"op": "write", "warehouse": warehouse, "table": table, "data": path,
                         "overwrite": overwrite, "write_cols": None if write_cols is None else list(write_cols)})
        return len(self.ops) - 1

    def run(self, timeout: int = 240) -> OracleResults:
        spec = self.workdir / f"ops-{self._n:03d}.json"
        spec.write_text(json.dumps(self.ops))
        answer = run_oracle(ORACLE_SCRIPT, str(spec), timeout=timeout)
        results = answer.get("results")
        assert results is not None, f"oracle printed no results: {answer}"
        ops, self.ops = self.ops, []
        return OracleResults(ops, results)


class OracleResults:
    def __init__(self, ops: list[dict], results: list[dict]):
        self.ops, self.results = ops, results

    def ok(self, i: int) -> dict:
        assert i < len(self.results), (f"oracle stopped before operation {i} {self.ops[i]['op']}: "
                                       f"{self.results[-1].get('error')}")
        r = self.results[i]
        assert r["ok"], f"oracle operation {self.ops[i]} failed:\n{r['error']}"
        return r["result"]

    def check_all(self) -> None:
        for i in range(len(self.ops)):
            self.ok(i)

    def read_error(self, i: int, reader: str) -> Optional[str]:
        return self.ok(i)[reader].get("error")

    def table(self, i: int, reader: str, schema: pa.Schema) -> pa.Table:
        """What ``reader`` returned for read operation ``i``, cast to ``schema``."""
        r = self.ok(i)[reader]
        assert "error" not in r, f"{reader} failed to read {self.ops[i]['table']}:\n{r['error']}"
        if r["path"] is None:
            return schema.empty_table()
        return conform(pq.read_table(r["path"]), schema, f"{reader} reading {self.ops[i]['table']}")

    def bucket_table(self, i: int) -> pa.Table:
        self.ok(i)
        return pq.read_table(self.ops[i]["out"] + ".parquet")


def conform(got: pa.Table, schema: pa.Schema, what: str = "") -> pa.Table:
    """Select ``schema``'s columns from ``got`` and cast them to ``schema``'s types (the oracle's
    Arrow may name list items differently or carry other field metadata)."""
    assert sorted(got.column_names) == sorted(schema.names), \
        f"{what}: columns {got.column_names}, expected {schema.names}"
    cols = []
    for f in schema:
        c = got.column(f.name)
        if c.type != f.type:
            c = c.cast(f.type)
        cols.append(c)
    return pa.Table.from_arrays(cols, schema=pa.schema([pa.field(f.name, f.type) for f in schema]))


def sorted_rows(t: pa.Table, key: Sequence[str] | str) -> list[dict]:
    keys = [key] if isinstance(key, str) else list(key)
    return sorted(t.to_pylist(), key=lambda r: tuple((r[k] is None, r[k] if r[k] is not None else 0)
                                                      for k in keys))


def assert_same_rows(got: pa.Table, expected: pa.Table, key, what: str = "") -> None:
    got = conform(got, expected.schema, what)
    g, e = sorted_rows(got, key), sorted_rows(expected, key)
    assert len(g) == len(e), f"{what}: {len(g)} rows, expected {len(e)}"
    for i, (a, b) in enumerate(zip(g, e)):
        assert a == b, f"{what}: row {i} differs:\n got      {a}\n expected {b}"


def check_readers(res: OracleResults, i: int, expected: pa.Table, key, readers: Iterable[str] = READERS,
                  what: str = "") -> None:
    for reader in readers:
        assert_same_rows(res.table(i, reader, expected.schema), expected, key, f"{reader} {what}".strip())
