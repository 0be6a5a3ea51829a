"""Manifest entries decoded into columns by the compiled reader (``io/avro_columns.py``,
``manifest_cache.Columns``): the same entries as fastavro's record-by-record decoding, for our
manifests and Paimon Java's; the record ends a merge cuts blocks at are the bytes' own; a schema
or bytes the decoder does not understand is an error naming the file, never a wrong entry."""
import glob
import io
import json
import os
from pathlib import Path
import signal
import time

import fastavro
import pytest

import lakeformat as lf
from lakeformat.format.binary_row import serialize_row
from lakeformat.format.manifest import ADD, DELETE, DataFileMeta, ManifestEntry, SimpleStats
from lakeformat.io import avro_blocks, avro_columns, manifest_cache
from lakeformat.io.manifests import ENTRIES
from tests.unit.test_manifest_concat import setup

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "paimon-java")


@pytest.fixture(autouse=True)
def empty_cache():
    manifest_cache.CACHE.clear()
    yield
    manifest_cache.CACHE.clear()


def rich_entry(types, i):
    """An entry with every optional field set (and some left empty), as Paimon writes them."""
    return ManifestEntry(ADD if i % 4 else DELETE, serialize_row([f"2024-01-{1 + i % 3:02d}"], types), i % 2, 2,
                         DataFileMeta(
        f"data-{i:06d}.parquet", 100 + i * 1_000_003, i, serialize_row([f"key-{i}"], types), b"",
        SimpleStats(b"k" * (i % 3), b"K", (0,)),
        SimpleStats(b"\x00" * 200 * (i % 2), b"", (None, i, 0) if i % 2 else None),
        -i, 1 << 40, i % 3, i % 5, tuple(f"extra-{i}-{j}.index" for j in range(i % 3)),
        None if i % 5 == 0 else 1_700_000_000_000 + i, None if i % 7 == 0 else i, b"\x01\x02" if i % 2 else None,
        None if i % 6 == 0 else i % 2, ("id", "v") if i % 2 else None,
        f"s3://bucket/x/{i}.parquet" if i % 3 == 0 else None,
        i * 10 if i % 4 == 0 else None, ("id",) if i % 3 == 1 else None))


def by_fastavro(data: bytes) -> list:
    return [ManifestEntry.from_avro(r) for r in fastavro.reader(io.BytesIO(data))]


def test_columns_decode_every_field_as_fastavro_does(catalog):
    t, mf, types = setup(catalog)
    metas = mf.write([rich_entry(types, i) for i in range(700)])
    for m in metas:
        data = t.io.read_bytes(mf.path(m.file_name))
        decoded = manifest_cache.decode(data, "entry", ENTRIES)
        assert decoded == by_fastavro(data) and len(decoded) > 0
        assert all(type(e) is ManifestEntry and type(e.file) is DataFileMeta for e in decoded)
        with pytest.raises(AttributeError):   # still frozen
            decoded[0].file.file_name = "other"


def test_paimon_java_manifests_decode_as_with_fastavro():
    paths = [p for p in glob.glob(os.path.join(FIXTURES, "**", "manifest", "manifest-*"), recursive=True)
             if "manifest-list-" not in p]
    avro = [p for p in paths if Path(p).read_bytes()[:4] == avro_blocks.MAGIC]
    assert len(avro) >= 10
    for p in avro:
        data = Path(p).read_bytes()
        assert manifest_cache.decode(data, "entry", ENTRIES) == by_fastavro(data), p


def test_record_ends_are_where_the_records_end_in_the_bytes(catalog):
    t, mf, types = setup(catalog)
    (m,) = mf.write([rich_entry(types, i) for i in range(300)])
    data = t.io.read_bytes(mf.path(m.file_name))
    c, blocks = manifest_cache.blocks(data, "entry", ENTRIES)
    schema = fastavro.parse_schema(json.loads(c.metadata["avro.schema"]))
    for (count, raw), block in zip(c.blocks, blocks):
        plain = io.BytesIO(manifest_cache.decompress(c.metadata["avro.codec"].decode(), raw))
        ends = []
        for _ in range(count):
            fastavro.schemaless_reader(plain, schema, None)
            ends.append(plain.tell())
        assert list(block.ends) == ends


def test_records_that_do_not_fill_their_block_are_an_error():
    schema = {"type": "record", "name": "r", "fields": [{"name": "a", "type": "long"}]}
    buf = io.BytesIO()
    fastavro.writer(buf, schema, [{"a": 1}, {"a": 300}], codec="null")
    c = avro_blocks.parse(buf.getvalue())
    (count, raw), = c.blocks
    text = c.metadata["avro.schema"]
    ends = avro_columns.record_ends(text, avro_columns.read_table(text, c.blocks), c.blocks)
    assert [list(e) for e in ends] == [[1, 3]]
    padded = [(count, raw + b"\x00")]   # a byte no record accounts for
    with pytest.raises(ValueError, match="do not fill their block"):
        avro_columns.record_ends(text, avro_columns.read_table(text, padded), padded)


def test_an_avro_type_no_manifest_uses_is_named():
    schema = {"type": "record", "name": "r", "fields": [{"name": "m", "type": {"type": "map", "values": "long"}}]}
    buf = io.BytesIO()
    fastavro.writer(buf, schema, [{"m": {"x": 1}}], codec="null")
    c = avro_blocks.parse(buf.getvalue())
    text = c.metadata["avro.schema"]
    with pytest.raises(ValueError, match="map"):
        avro_columns.record_ends(text, avro_columns.read_table(text, c.blocks), c.blocks)


def _rewrite(t, mf, name, records, schema):
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, codec="null")
    t.io.write_bytes(mf.path(name), buf.getvalue())


def test_a_manifest_without_a_required_field_is_corrupt_naming_it(catalog):
    t, mf, types = setup(catalog)
    (m,) = mf.write([rich_entry(types, i) for i in range(5)])
    records = list(fastavro.reader(io.BytesIO(t.io.read_bytes(mf.path(m.file_name)))))
    schema = json.loads(avro_blocks.parse(t.io.read_bytes(mf.path(m.file_name))).metadata["avro.schema"])
    schema["fields"] = [f for f in schema["fields"] if f["name"] != "_BUCKET"]
    _rewrite(t, mf, m.file_name, records, schema)
    with pytest.raises(lf.CorruptFileError, match=f"{m.file_name}.*_BUCKET"):
        mf.read(m.file_name)


def test_a_manifest_naming_a_file_outside_the_table_is_corrupt_naming_it(catalog):
    t, mf, types = setup(catalog)
    (m,) = mf.write([rich_entry(types, i) for i in range(5)])
    data = t.io.read_bytes(mf.path(m.file_name))
    records = list(fastavro.reader(io.BytesIO(data)))
    records[3]["_FILE"]["_EXTRA_FILES"] = ["../../escape"]
    _rewrite(t, mf, m.file_name, records, json.loads(avro_blocks.parse(data).metadata["avro.schema"]))
    with pytest.raises(lf.CorruptFileError, match=f"{m.file_name}.*escape"):
        mf.read(m.file_name)


def test_a_batch_with_a_corrupt_manifest_fails_that_one_and_decodes_the_others(catalog):
    t, mf, types = setup(catalog)
    metas = [m for i in range(4) for m in mf.write([rich_entry(types, 10 * i + j) for j in range(10)])]
    bad = metas[2].file_name
    data = t.io.read_bytes(mf.path(bad))
    t.io.write_bytes(mf.path(bad), data[:-40] + bytes(24) + data[-16:])   # last block damaged, sync intact
    got = dict(mf.read_all([m.file_name for m in metas]))
    assert isinstance(got[bad], lf.CorruptFileError) and bad in str(got[bad])
    for m in metas:
        if m.file_name != bad:
            assert got[m.file_name] == by_fastavro(t.io.read_bytes(mf.path(m.file_name)))


def test_file_names_mode_names_each_entrys_data_and_extra_files(catalog):
    _t, mf, types = setup(catalog)
    metas = mf.write([rich_entry(types, i) for i in range(50)])
    entries = [e for m in metas for e in mf.read(m.file_name)]
    manifest_cache.CACHE.clear()
    named = [n for _, got in mf.read_all([m.file_name for m in metas], file_names=True) for n in got]
    assert named == [(e.file.file_name, *e.file.extra_files) for e in entries]


def test_a_process_forked_after_the_reader_ran_decodes_with_fastavro(catalog):
    """polars' thread pool does not survive fork(): a child forked after the reader ran would
    hang at its next use (it did, in the crash test's forked writers); it decodes with fastavro,
    the same entries."""
    t, mf, types = setup(catalog)
    first, second = (mf.write([rich_entry(types, i) for i in range(k, k + 300)])[0] for k in (0, 300))
    datas = [t.io.read_bytes(mf.path(m.file_name)) for m in (first, second)]
    manifest_cache.decode(datas[0], "entry", ENTRIES)   # the reader runs in this process
    assert avro_columns.usable()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:   # child: never returns into pytest
        try:
            ok = not avro_columns.usable() \
                and manifest_cache.decode(datas[1], "entry", ENTRIES) == by_fastavro(datas[1])
            os.write(write, b"same" if ok else b"different")
        finally:
            os._exit(0)
    os.close(write)
    deadline = time.monotonic() + 120   # a hang, not a speed: the decode takes milliseconds
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked process hung decoding a manifest")
        time.sleep(0.05)
    assert os.read(read, 16) == b"same"


SMALL_TABLE_READ = """
import sys
import pyarrow as pa
import lakeformat as lf
from lakeformat.io import avro_columns
t = lf.Catalog(sys.argv[1]).get_table("db.t")
small = t.read().num_rows
without = "polars" not in sys.modules
avro_columns.BEFORE_IMPORT = 0   # the next decode is past the budget
from lakeformat.io import manifest_cache
manifest_cache.CACHE.clear()
large = t.read().num_rows
print(small, without, large, "polars" in sys.modules)
"""


def test_a_small_table_is_read_without_importing_the_compiled_reader(catalog, tmp_path):
    """Importing polars costs more than fastavro's decoding of a few thousand entries: a process
    reading a small table never imports it; past the budget it does, and reads the same rows."""
    import subprocess
    import sys

    import pyarrow as pa
    t = catalog.create_table("db.t", pa.schema([("id", pa.int64())]))
    for i in range(3):
        t.write(pa.table({"id": [i]}))
    out = subprocess.run([sys.executable, "-c", SMALL_TABLE_READ, catalog.warehouse], capture_output=True,
                         text=True, check=True, env={**os.environ, "PYTHONPATH": os.getcwd()}).stdout.split()
    assert out == ["3", "True", "3", "True"]
