"""Deletion vectors across implementations: pypaimon and pypaimon-rust read what lakeformat's
merge-on-write compactions produce, and lakeformat appends to and compacts a table Paimon's Java
writers made (tests/fixtures/paimon-java, see PROVENANCE.md) without breaking it for anyone."""
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.io.index_files import IndexFiles
from tests.interop.helpers import Oracle, assert_same_rows, check_readers

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "paimon-java"
JAVA_DV = "pk_table_scan_and_read_dv.pk_table_scan_and_read_dv"

SCHEMA = pa.schema([pa.field("dt", pa.string(), False), pa.field("id", pa.int64(), False),
                    ("name", pa.string()), ("score", pa.float64())])
KEYS = ["dt", "id"]


def rows(ids, dt="a", tag="v"):
    ids = list(ids)
    return pa.table({"dt": [dt] * len(ids), "id": ids, "name": [f"{tag}{i}" for i in ids],
                     "score": [i * 0.5 for i in ids]}, schema=SCHEMA)


class Model:
    def __init__(self):
        self.rows = {}

    def upsert(self, t):
        for r in t.to_pylist():
            self.rows[(r["dt"], r["id"])] = r
        return t

    def delete(self, t):
        for r in t.to_pylist():
            self.rows.pop((r["dt"], r["id"]), None)
        return t

    def table(self):
        return pa.Table.from_pylist(list(self.rows.values()), schema=SCHEMA)


@pytest.fixture
def oracle(tmp_path):
    return Oracle(tmp_path / "oracle")


@pytest.mark.parametrize("write_only", [False, True])
def test_lakeformat_deletion_vectors_read_by_oracles(catalog, oracle, write_only):
    wh, m = catalog.warehouse, Model()
    options = {"bucket": "2", "deletion-vectors.enabled": "true", "write-only": str(write_only).lower()}
    t = catalog.create_table("db.dv", SCHEMA, partition_keys=["dt"], primary_keys=KEYS, options=options)
    t.write(m.upsert(pa.concat_tables([rows(range(0, 300)), rows(range(0, 50), "b")])))
    t.compact(full=True)                                   # everything at the max level
    t.write(m.upsert(rows(range(100, 180), tag="second")))
    t.delete(m.delete(rows([1, 2, 150])))
    if write_only:                                         # the dedicated job does the lookups
        t.compact()
    t.write(m.upsert(rows(range(170, 200), tag="third")))
    t.delete(m.delete(rows([3], "b")))
    if write_only:
        t.compact()
    latest = t.latest_snapshot()
    assert latest.index_manifest, "merge-on-write made no deletion vectors"
    assert all(f["level"] > 0 for f in t.files()), "level 0 left behind: batch reads would miss rows"
    assert_same_rows(t.read(), m.table(), KEYS, "lakeformat")
    i = oracle.read(wh, "db.dv")
    check_readers(oracle.run(), i, m.table(), KEYS, what="after merge-on-write")


def test_64_bit_deletion_vectors_read_by_oracles(catalog, oracle):
    m = Model()
    t = catalog.create_table("db.dv64", SCHEMA, partition_keys=["dt"], primary_keys=KEYS, options={
        "bucket": "1", "deletion-vectors.enabled": "true", "deletion-vectors.bitmap64": "true"})
    t.write(m.upsert(rows(range(0, 100))))
    t.write(m.upsert(rows(range(0, 100, 10), tag="new")))   # 10%: marked, not rewritten
    assert_same_rows(t.read(), m.table(), KEYS, "lakeformat")
    i = oracle.read(catalog.warehouse, "db.dv64")
    res = oracle.run()
    # pypaimon 2.1 knows only the 32-bit format ("Invalid magic number"); pypaimon-rust reads both
    assert "magic number" in res.read_error(i, "pypaimon")
    check_readers(res, i, m.table(), KEYS, readers=["rust"], what="64-bit vectors")


def test_overwrite_drops_the_replaced_partitions_deletion_vectors(catalog, oracle):
    m = Model()
    t = catalog.create_table("db.ow", SCHEMA, partition_keys=["dt"], primary_keys=KEYS, options={
        "bucket": "1", "deletion-vectors.enabled": "true"})
    t.write(m.upsert(pa.concat_tables([rows(range(100)), rows(range(100), "b")])))
    t.write(m.upsert(pa.concat_tables([rows(range(10), tag="x"), rows(range(10), "b", tag="x")])))
    index = IndexFiles(t.io, t.path)

    def parts():
        return {t.partition_values(e.partition)[0] for e in index.read_manifest(t.latest_snapshot().index_manifest)}
    assert parts() == {"a", "b"}
    m.rows = {k: v for k, v in m.rows.items() if k[0] != "a"}
    t.write(m.upsert(rows(range(3), tag="new")), overwrite=True)
    assert parts() == {"b"}
    assert_same_rows(t.read(), m.table(), KEYS, "lakeformat")
    i = oracle.read(catalog.warehouse, "db.ow")
    check_readers(oracle.run(), i, m.table(), KEYS, what="after overwrite")


# -- a table Paimon's Java writers made ---------------------------------------------------------

JAVA_SCHEMA = pa.schema([pa.field("f0", pa.string(), False), pa.field("f1", pa.int32(), False),
                         pa.field("f2", pa.int32(), False), ("f3", pa.float64())])
JAVA_KEYS = ["f0", "f1", "f2"]


def java_rows(*rows):
    return pa.Table.from_pylist([dict(zip(JAVA_SCHEMA.names, r)) for r in rows], schema=JAVA_SCHEMA)


def test_java_dv_table_appended_to_and_compacted_by_lakeformat(tmp_path, oracle):
    wh = tmp_path / "parquet"
    shutil.copytree(FIXTURES / "parquet", wh)
    for p in wh.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    case = next(c for c in json.loads((FIXTURES / "expected.json").read_text())
                if c["table"] == JAVA_DV and c["snapshot"] == 6)
    # what the table holds once its level-0 files (snapshots 5 and 6, per the fixture's README) are compacted
    state = {tuple(r[:3]): r for r in case["rows"]}
    state.pop(("Alex", 10, 0))
    for r in (("Skye", 10, 0, 21.0), ("Marco", 10, 0, 21.1), ("Skye2", 10, 0, 31.0), ("Marco2", 10, 0, 31.1)):
        state[r[:3]] = list(r)
    t = lf.Catalog(str(wh)).get_table(JAVA_DV)
    t.write(java_rows(("Bob", 10, 0, 99.0), ("Zoe", 20, 1, 5.5), ("Yan", 10, 1, 6.5)))
    state.update({("Bob", 10, 0): ["Bob", 10, 0, 99.0], ("Zoe", 20, 1): ["Zoe", 20, 1, 5.5],
                  ("Yan", 10, 1): ["Yan", 10, 1, 6.5]})
    t.delete(java_rows(("Emily", 10, 0, None)))
    state.pop(("Emily", 10, 0))
    expected = java_rows(*state.values())
    assert_same_rows(t.read(), expected, JAVA_KEYS, "lakeformat after append")
    assert all(f["level"] > 0 for f in t.files())
    i = oracle.read(str(wh), JAVA_DV)
    check_readers(oracle.run(), i, expected, JAVA_KEYS, what="after lakeformat's merge-on-write")
    t.compact(full=True)
    assert_same_rows(t.read(), expected, JAVA_KEYS, "lakeformat after full compaction")
    i = oracle.read(str(wh), JAVA_DV)
    check_readers(oracle.run(), i, expected, JAVA_KEYS, what="after full compaction")
