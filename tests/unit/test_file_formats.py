"""ORC and Avro data files and ORC manifests: written with statistics, read by extension (several
formats in one table), and the Java-written ORC/Avro fixtures read as Paimon's tests state."""
import datetime as dt
import decimal
import json
import os
from pathlib import Path
import shutil

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.errors import CorruptFileError, UnsupportedError
from lakeformat.format.binary_row import deserialize_row

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "paimon-java")

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), False), ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()),
    ("f32", pa.float32()), ("f64", pa.float64()), ("s", pa.string()), ("bin", pa.binary()), ("d", pa.date32()),
    ("dec", pa.decimal128(12, 3)), ("ts3", pa.timestamp("ms")), ("ts6", pa.timestamp("us")),
    ("ltz", pa.timestamp("us", "UTC")), ("dt", pa.string())])


def data(n: int, start: int = 0, dt_: str = "a") -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({
        "id": ids, "b": [i % 2 == 0 for i in ids], "i8": [i % 100 - 50 for i in ids], "i16": [i * 7 for i in ids],
        "i32": [None if i % 5 == 0 else i * 1000 for i in ids], "f32": [i / 4 for i in ids],
        "f64": [i * 1.5 for i in ids], "s": [f"name-{i:05d}" for i in ids], "bin": [bytes([i % 256, 1]) for i in ids],
        "d": [dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in ids],
        "dec": [decimal.Decimal(i * 1001) / 1000 - 5 for i in ids],
        "ts3": [dt.datetime(2024, 1, 1, 0, 0, 0, (i % 1000) * 1000) for i in ids],
        "ts6": [dt.datetime(2023, 12, 31, 23, 59, 59, i % 1000000) for i in ids],
        "ltz": [dt.datetime(2024, 6, 1, 12, tzinfo=dt.UTC) + dt.timedelta(microseconds=i) for i in ids],
        "dt": [dt_] * n}, schema=SCHEMA)


def by_id(t: pa.Table) -> list[dict]:
    return sorted(t.to_pylist(), key=lambda r: r["id"])


@pytest.mark.parametrize("fmt", ["orc", "avro", "parquet"])
@pytest.mark.parametrize("manifest", ["orc", "avro"])
def test_append_table_round_trip_with_statistics(catalog, fmt, manifest):
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["dt"],
                             options={"file.format": fmt, "manifest.format": manifest})
    t.write(data(300))
    t.write(data(200, start=300, dt_="b"))
    assert by_id(t.read()) == by_id(pa.concat_tables([data(300), data(200, 300, "b")]))
    files = t.files()
    assert files and all(f["file_name"].endswith("." + fmt) for f in files)
    # statistics of the first file are the data's own min/max/null counts
    entry = next(e for e in t.live_entries(t.latest_snapshot()) if t.partition_values(e.partition) == ("a",))
    stats = entry.file.value_stats
    types = [f.type for f in t.schema.fields]
    mins, maxs = deserialize_row(stats.min_values, types), deserialize_row(stats.max_values, types)
    names = t.schema.names
    assert (mins[names.index("id")], maxs[names.index("id")]) == (0, 299)
    assert (mins[names.index("s")], maxs[names.index("s")]) == ("name-00000", "name-00299")
    assert stats.null_counts[names.index("i32")] == 60
    # pruning by statistics still finds rows
    assert t.read(filter=lf.col("id") == 250).column("s").to_pylist() == ["name-00250"]
    with open(os.path.join(t.path, "manifest", t.latest_snapshot().base_manifest_list), "rb") as f:
        assert f.read(3) == (b"ORC" if manifest == "orc" else b"Obj")


@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_primary_key_table_merges_compacts_and_reads_its_format(catalog, fmt):
    schema = pa.schema([pa.field("k", pa.int32(), False), ("v", pa.string()), ("n", pa.int64())])
    t = catalog.create_table("db.pk", schema, primary_keys=["k"],
                             options={"bucket": "2", "file.format": fmt, "manifest.format": "orc"})
    t.write(pa.table({"k": list(range(10)), "v": ["a"] * 10, "n": list(range(10))}, schema=schema))
    t.write(pa.table({"k": [1, 2, 11], "v": ["b", "b", "b"], "n": [100, 200, 1100]}, schema=schema))
    t.delete(pa.table({"k": [3]}, schema=pa.schema([pa.field("k", pa.int32(), False)])))
    expected = {k: ("b" if k in (1, 2, 11) else "a",
                    (k * 100 if k in (1, 2, 11) else k)) for k in range(12) if k not in (3, 10)}
    got = {r["k"]: (r["v"], r["n"]) for r in t.read().to_pylist()}
    assert got == expected
    t.compact(full=True)
    assert {r["k"]: (r["v"], r["n"]) for r in t.read().to_pylist()} == expected
    assert all(f["file_name"].endswith("." + fmt) for f in t.files())


def test_formats_mix_in_one_table_and_per_level(catalog):
    schema = pa.schema([pa.field("k", pa.int32(), False), ("v", pa.string())])
    t = catalog.create_table("db.mix", schema, primary_keys=["k"],
                             options={"bucket": "1", "file.format.per.level": "0:avro,5:orc"})
    t.write(pa.table({"k": [1, 2, 3], "v": ["x", "y", "z"]}, schema=schema))
    t.write(pa.table({"k": [2], "v": ["y"]}, schema=schema))
    assert {f["file_name"].rsplit(".", 1)[1] for f in t.files()} == {"avro"}
    t.compact(full=True)   # two runs merge into a rewritten level-5 file (one run would only move up)
    assert {(f["level"], f["file_name"].rsplit(".", 1)[1]) for f in t.files()} == {(5, "orc")}
    t.alter(lf.SetOption("file.format.per.level", "0:parquet"))
    t.write(pa.table({"k": [3, 4], "v": ["Z", "w"]}, schema=schema))
    assert {f["file_name"].rsplit(".", 1)[1] for f in t.files()} == {"orc", "parquet"}
    assert sorted(t.read().to_pylist(), key=lambda r: r["k"]) == [
        {"k": 1, "v": "x"}, {"k": 2, "v": "y"}, {"k": 3, "v": "Z"}, {"k": 4, "v": "w"}]


def test_errors_name_the_format(catalog):
    t = catalog.create_table("db.t", SCHEMA, options={"file.format": "orc"})
    t.write(data(5))
    path = t.files()[0]["path"]
    with open(path, "wb") as f:
        f.write(b"not an orc file at all")
    with pytest.raises(CorruptFileError, match="cannot read ORC data file"):
        t.read()
    os.rename(path, path[:-4] + ".csv")
    from lakeformat.io.file_format import format_of
    with pytest.raises(UnsupportedError, match="format 'csv' is not supported"):
        format_of(os.path.basename(path[:-4] + ".csv"))


# -- tables written by Paimon Java --------------------------------------------------------------
def _fixture(tmp_path, warehouse: str, name: str):
    shutil.copytree(os.path.join(FIXTURES, warehouse), tmp_path / warehouse)
    return lf.Catalog(str(tmp_path / warehouse)).get_table(f"{name}.{name}")


def _expected(case_table: str, warehouse: str = "parquet", snapshot=None):
    cases = json.loads(Path(FIXTURES, "expected.json").read_text())
    return next(c for c in cases if c["table"] == case_table and c["warehouse"] == warehouse
                and c["snapshot"] == snapshot)


def _values(t: pa.Table, columns) -> list[tuple]:
    out = []
    for r in t.select(columns).to_pylist():
        out.append(tuple(v.isoformat() if isinstance(v, (dt.datetime, dt.date)) else v for v in r.values()))
    return sorted(out, key=repr)


def test_java_orc_primary_key_table_with_orc_manifests(tmp_path):
    t = _fixture(tmp_path, "orc", "pk_table_scan_and_read_mor")
    case = _expected("pk_table_scan_and_read_mor.pk_table_scan_and_read_mor")   # same rows, Parquet sibling
    got = sorted(map(tuple, (r.values() for r in t.read(columns=case["columns"]).to_pylist())), key=repr)
    assert got == sorted(map(tuple, case["rows"]), key=repr)


def test_java_orc_append_table_with_nested_layout(tmp_path):
    t = _fixture(tmp_path, "orc", "append_complex_data")
    rows = t.read().to_pylist()
    assert len(rows) == 8
    assert sorted(r["f6"] for r in rows if r["f6"] is not None) == [
        b"add", b"bad", b"cat", b"dad", b"eat", b"fat", b"get"]
    by = {r["f6"]: r for r in rows}
    assert by[b"add"]["f3"] == dt.date(1970, 1, 1) + dt.timedelta(days=1234)
    assert by[b"add"]["f5"] == decimal.Decimal("123456789987654321.45678")
    assert by[b"bad"]["f4"] == pa.scalar(dt.datetime(1899, 1, 1, 0, 59, 20, 1001), pa.timestamp("ns")).as_py() \
        or by[b"bad"]["f4"].isoformat().startswith("1899-01-01T00:59:20.001001")
    assert by[None]["f5"] == decimal.Decimal("1728551410100.10010")


def test_java_avro_timestamps_of_every_precision(tmp_path):
    t = _fixture(tmp_path, "avro", "append_with_multiple_ts_precision_and_timezone")
    # the rows its README states (Timestamp(millis, nanos of milli)), as epoch nanoseconds
    expected = sorted([(10**9, 10**6, 1000, 2 * 10**9, 2 * 10**6, 2000),
                       (None, 3 * 10**6, None, None, 4 * 10**6, None),
                       (5 * 10**9, None, 5000, 6 * 10**9, None, 6000)], key=repr)
    got = t.read()
    assert [got.schema.field(c).type.tz for c in got.column_names] == [None] * 3 + ["UTC"] * 3
    columns = [got.column(c).cast(pa.timestamp("ns", got.schema.field(c).type.tz)).cast(pa.int64()).to_pylist()
               for c in got.column_names]
    assert sorted(zip(*columns), key=repr) == expected


def test_iceberg_metadata_needs_parquet_files(catalog):
    with pytest.raises(lf.OptionError, match="needs Parquet data files"):
        catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("s", pa.string())]),
                             options={"file.format": "orc", "metadata.iceberg.storage": "table-location"})


@pytest.mark.parametrize("column", [pa.field("tags", pa.list_(pa.string())), pa.field("ns", pa.timestamp("ns"))])
def test_avro_refuses_what_it_cannot_write_before_any_file(catalog, column):
    schema = pa.schema([("id", pa.int64()), column])
    with pytest.raises(UnsupportedError, match=f"column '{column.name}'.*Avro"):
        catalog.create_table("db.t", schema, options={"file.format": "avro"})
    assert not catalog.table_exists("db.t")
    t = catalog.create_table("db.t", schema, options={"file.format": "orc"})
    with pytest.raises(UnsupportedError, match=f"column '{column.name}'"):
        t.alter(lf.SetOption("file.format.per.level", "0:avro"))
    assert t.schema.id == 0


def test_orc_keeps_times_and_nested_columns(catalog):
    schema = pa.schema([("id", pa.int32()), ("t", pa.time32("ms")), ("tags", pa.list_(pa.string())),
                        ("m", pa.map_(pa.string(), pa.int32())),
                        ("r", pa.struct([("x", pa.int32()), ("y", pa.string())]))])
    t = catalog.create_table("db.t", schema, options={"file.format": "orc"})
    rows = pa.table({"id": [1, 2], "t": [dt.time(1, 2, 3), None], "tags": [["a"], None], "m": [[("k", 1)], None],
                     "r": [{"x": 1, "y": "z"}, None]}, schema=schema)
    t.write(rows)
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == rows.to_pylist()
