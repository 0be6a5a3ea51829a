"""BLOB columns with pypaimon: its .blob files decoded by lakeformat's codec, lakeformat's decoded
by pypaimon's blob reader, and whole BLOB tables read across."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pyarrow as pa

from lakeformat.io.blob_file import BlobFileReader, BlobFileWriter
from tests.oracle import run_oracle


def blob_values(n: int, seed: int = 0) -> list:
    """Deterministic blobs both interpreters build alike: nulls, empties and sizes up to ~40 KB."""
    out: list = []
    for i in range(n):
        if i % 7 == 3:
            out.append(None)
        elif i % 11 == 5:
            out.append(b"")
        else:
            out.append(hashlib.sha256(f"{seed}-{i}".encode()).digest() * ((i * 131) % 1200 + 1))
    return out


def digests(values) -> list:
    return [None if v is None else hashlib.sha256(v).hexdigest() for v in values]


PYPAIMON_WRITES_BLOBS = r'''
import hashlib, json, sys
import pyarrow as pa
from pypaimon import CatalogFactory, Schema
wh, n, target = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def blob_values(n, seed=0):
    out = []
    for i in range(n):
        if i % 7 == 3: out.append(None)
        elif i % 11 == 5: out.append(b"")
        else: out.append(hashlib.sha256(f"{seed}-{i}".encode()).digest() * ((i * 131) % 1200 + 1))
    return out
cat = CatalogFactory.create({"warehouse": wh})
cat.create_database("db", True)
schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("pic", pa.large_binary())])
cat.create_table("db.b", Schema.from_pyarrow_schema(schema, options={
    "row-tracking.enabled": "true", "data-evolution.enabled": "true",
    "blob.target-file-size": target}), False)
t = cat.get_table("db.b")
for part in range(2):
    ids = list(range(part * n, (part + 1) * n))
    wb = t.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(pa.table({"id": ids, "name": [f"n{i}" for i in ids], "pic": blob_values(n, part)},
                           schema=schema))
    c.commit(w.prepare_commit()); w.close(); c.close()
print(json.dumps({}))
'''

PYPAIMON_DECODES_BLOB_FILES = r'''
import hashlib, json, sys
from pypaimon.filesystem.local_file_io import LocalFileIO
from pypaimon.read.reader.format_blob_reader import FormatBlobReader
from pypaimon.schema.data_types import AtomicType, DataField
out = {}
for path in sys.argv[1:]:
    r = FormatBlobReader(LocalFileIO(), path, ["pic"], [DataField(0, "pic", AtomicType("BLOB"))], None, False)
    vals = []
    while True:
        b = r.read_arrow_batch()
        if b is None:
            break
        vals += [None if v is None else hashlib.sha256(v).hexdigest() for v in b.column(0).to_pylist()]
    out[path] = vals
print(json.dumps(out))
'''


def _read_blob_file(path: Path, **kw) -> list:
    r = BlobFileReader(pa.OSFile(str(path)), os.path.getsize(path), str(path))
    return [v for a in r.iter_arrays(**kw) for v in a.to_pylist()]


def test_lakeformats_codec_decodes_pypaimons_blob_files(tmp_path):
    wh = tmp_path / "wh"
    run_oracle(PYPAIMON_WRITES_BLOBS, str(wh), "40", str(200_000))
    files = sorted((wh / "db.db" / "b" / "bucket-0").glob("*.blob"))
    assert len(files) > 2, "the target file size rolls blob files"
    answer = run_oracle(PYPAIMON_DECODES_BLOB_FILES, *map(str, files))
    decoded = {str(p): _read_blob_file(p, batch_bytes=50_000) for p in files}
    assert {p: digests(v) for p, v in decoded.items()} == answer
    # every value written is in some file, in order, once
    both = [v for p in files for v in decoded[str(p)]]
    assert sorted(digests(both), key=str) == sorted(digests(blob_values(40, 0) + blob_values(40, 1)), key=str)


def test_pypaimons_blob_reader_decodes_lakeformats_blob_files(tmp_path):
    paths = []
    for seed in range(2):
        p = tmp_path / f"f{seed}.blob"
        w = BlobFileWriter(pa.OSFile(str(p), "wb"))
        w.write_array(pa.array(blob_values(30, seed), pa.large_binary()))
        w.close()
        paths.append(p)
    answer = run_oracle(PYPAIMON_DECODES_BLOB_FILES, *map(str, paths))
    assert answer == {str(p): digests(blob_values(30, s)) for s, p in enumerate(paths)}


PYPAIMON_READS_TABLE = r'''
import hashlib, json, sys
from pypaimon import CatalogFactory
cat = CatalogFactory.create({"warehouse": sys.argv[1]})
t = cat.get_table("db." + sys.argv[2])
rb = t.new_read_builder()
rows = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
print(json.dumps(sorted([[r["id"], r["name"], None if r["pic"] is None else hashlib.sha256(r["pic"]).hexdigest()]
                         for r in rows])))
'''


def _rows(table: pa.Table) -> list:
    return sorted([[r["id"], r["name"], digests([r["pic"]])[0]] for r in table.to_pylist()])


def test_lakeformat_reads_pypaimons_blob_table(tmp_path):
    """Two commits, blob files rolled by size: lakeformat reads the rows pypaimon reads, whole
    and streamed, and its batches stay near the blob byte budget."""
    import lakeformat as lf
    wh = tmp_path / "wh"
    run_oracle(PYPAIMON_WRITES_BLOBS, str(wh), "40", str(200_000))
    expected = run_oracle(PYPAIMON_READS_TABLE, str(wh), "b")
    t = lf.Catalog(str(wh)).get_table("db.b")
    assert t.arrow_schema().field("pic").type == pa.large_binary()
    assert _rows(t.read()) == expected
    batches = list(t.to_batches())
    assert _rows(pa.Table.from_batches(batches)) == expected
    assert sorted(r["id"] for r in t.read(columns=["id", "_ROW_ID"]).to_pylist()) == list(range(80))
    ids = t.read(columns=["pic", "_ROW_ID", "id"]).to_pylist()
    assert all(r["_ROW_ID"] == r["id"] for r in ids), "row ids follow the rows"
    # lakeformat continues pypaimon's table; pypaimon reads both writers' rows
    t.write(pa.table({"id": [80, 81], "name": ["m", "n"], "pic": [b"lakeformat", None]}))
    both = sorted(expected + [[80, "m", digests([b"lakeformat"])[0]], [81, "n", None]])
    assert run_oracle(PYPAIMON_READS_TABLE, str(wh), "b") == both == _rows(t.read())
    assert sorted(r["_ROW_ID"] for r in t.read(columns=["_ROW_ID"]).to_pylist()) == list(range(82))


def test_pypaimon_reads_lakeformats_blob_table_and_continues_it(tmp_path):
    """lakeformat writes a BLOB table (two commits, blob files rolled by size); pypaimon reads
    the same rows, appends to it, and lakeformat reads that back."""
    import lakeformat as lf
    wh = tmp_path / "wh"
    cat = lf.Catalog(str(wh))
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("pic", pa.binary())])
    t = cat.create_table("db.b", schema, options={"row-tracking.enabled": "true", "data-evolution.enabled": "true",
                                                  "blob-field": "pic", "blob.target-file-size": "200000"})
    for part in range(2):
        ids = list(range(part * 40, (part + 1) * 40))
        data = pa.table({"id": ids, "name": [f"n{i}" for i in ids], "pic": blob_values(40, part)}, schema=schema)
        w = t.new_write()
        with w:
            for start in range(0, 40, 10):
                w.write(data.slice(start, 10))
            msgs = w.prepare_commit()
        t.new_commit().commit(msgs)
    files = [f["file_name"] for f in t.files()]
    assert sum(n.endswith(".blob") for n in files) > 2 and sum(n.endswith(".parquet") for n in files) == 2
    mine = _rows(t.read())
    assert run_oracle(PYPAIMON_READS_TABLE, str(wh), "b") == mine
    run_oracle(PYPAIMON_APPENDS, str(wh))
    t = t.refresh() if hasattr(t, "refresh") else cat.get_table("db.b")
    assert _rows(t.read()) == sorted(mine + [[1000, "p", digests([b"from pypaimon"])[0]], [1001, "q", None]])
    assert _rows(pa.Table.from_batches(list(t.to_batches()))) == _rows(t.read())
    # lakeformat updates a non-BLOB column of rows both wrote; pypaimon reads the result
    t.update_columns(pa.table({"_ROW_ID": pa.array([3, 80], pa.int64()), "name": ["u3", "u1000"]}))
    final = _rows(t.read())
    assert {r[0]: r[1] for r in final if r[0] in (3, 1000)} == {3: "u3", 1000: "u1000"}
    assert run_oracle(PYPAIMON_READS_TABLE, str(wh), "b") == final


PYPAIMON_APPENDS = r'''
import json, sys
import pyarrow as pa
from pypaimon import CatalogFactory
t = CatalogFactory.create({"warehouse": sys.argv[1]}).get_table("db.b")
wb = t.new_batch_write_builder()
w, c = wb.new_write(), wb.new_commit()
schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("pic", pa.large_binary())])
w.write_arrow(pa.table({"id": [1000, 1001], "name": ["p", "q"], "pic": [b"from pypaimon", None]}, schema=schema))
c.commit(w.prepare_commit()); w.close(); c.close()
print(json.dumps({}))
'''


PYPAIMON_UPDATES_BLOBS = r'''
import json, sys
import pyarrow as pa
from pypaimon import CatalogFactory
t = CatalogFactory.create({"warehouse": sys.argv[1]}).get_table("db.b")
wb = t.new_batch_write_builder()
ids = [1, 3, 45, 70]
data = pa.table({"_ROW_ID": pa.array(ids, pa.int64()),
                 "pic": pa.array([b"new", None, b"x" * 5000, b""], pa.large_binary())})
wb.new_commit().commit(wb.new_update().with_update_type(["pic"]).update_by_arrow_with_row_id(data))
print(json.dumps({}))
'''


def test_lakeformat_reads_blob_updates_pypaimon_wrote(tmp_path):
    """pypaimon's update of a BLOB by row id leaves a second version of the range's blobs, with
    placeholders for the rows it kept: lakeformat takes each row's newest value, as pypaimon."""
    import lakeformat as lf
    wh = tmp_path / "wh"
    run_oracle(PYPAIMON_WRITES_BLOBS, str(wh), "40", str(200_000))   # blob files rolled, two commits
    run_oracle(PYPAIMON_UPDATES_BLOBS, str(wh))
    expected = run_oracle(PYPAIMON_READS_TABLE, str(wh), "b")
    assert {r[0]: r[2] for r in expected if r[0] in (1, 3, 45)} == dict(
        zip((1, 3, 45), digests([b"new", None, b"x" * 5000])))   # (an empty update pypaimon keeps as before)
    t = lf.Catalog(str(wh)).get_table("db.b")
    assert _rows(t.read()) == expected
    assert _rows(pa.Table.from_batches(list(t.to_batches()))) == expected


PYPAIMON_UPDATES_NAMES = r'''
import json, sys
import pyarrow as pa
from pypaimon import CatalogFactory
t = CatalogFactory.create({"warehouse": sys.argv[1]}).get_table("db.b")
wb = t.new_batch_write_builder()
data = pa.table({"_ROW_ID": pa.array([0, 2, 41], pa.int64()), "name": pa.array(["u0", "u2", "u41"])})
wb.new_commit().commit(wb.new_update().with_update_type(["name"]).update_by_arrow_with_row_id(data))
print(json.dumps({}))
'''


def test_compacting_a_blob_table_keeps_its_blobs(tmp_path):
    """pypaimon updates a non-BLOB column (a second data file per row id range); lakeformat's
    compaction merges each range's data files into one without the BLOB column, whose blob files
    stay: lakeformat and pypaimon read the same rows before and after."""
    import lakeformat as lf
    wh = tmp_path / "wh"
    run_oracle(PYPAIMON_WRITES_BLOBS, str(wh), "40", str(200_000))
    run_oracle(PYPAIMON_UPDATES_NAMES, str(wh))
    expected = run_oracle(PYPAIMON_READS_TABLE, str(wh), "b")
    assert [r[1] for r in expected if r[0] in (0, 2, 41)] == ["u0", "u2", "u41"]
    t = lf.Catalog(str(wh)).get_table("db.b")
    assert _rows(t.read()) == expected
    before = {f["file_name"] for f in t.files()}
    t.compact(full=True)
    after = {f["file_name"] for f in t.files()}
    assert {n for n in before if n.endswith(".blob")} == {n for n in after if n.endswith(".blob")}
    assert after != before, "the ranges with two data files were compacted"
    assert _rows(t.read()) == expected
    assert run_oracle(PYPAIMON_READS_TABLE, str(wh), "b") == expected
