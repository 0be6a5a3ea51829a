"""Interop with the two independent Paimon implementations, pypaimon and pypaimon-rust.

Tables written by lakeformat must read back row for row in both; tables written by pypaimon must
read back in lakeformat, survive lakeformat's appends and overwrites, and still read back in both;
fixed-bucket rows must land in the same buckets whoever writes them. The oracles run in
``.venv-oracle`` (see :mod:`tests.interop.helpers`); rows cross over as Parquet files.
"""
from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lakeformat as lf
from lakeformat import col
from lakeformat.format.metadata_checks import UnsupportedMetadataError
from tests.interop.helpers import Oracle, assert_same_rows, check_readers, pred

D = decimal.Decimal
SCHEMA = pa.schema([("user_id", pa.int64()), ("behavior", pa.string()), ("price", pa.float64()),
                    ("note", pa.string()), ("dt", pa.string())])
BEHAVIORS = ["pv", "buy", "cart", "favourite-long-behaviour", "", "ünïcödé", "pv"]


def rows(ids, dt_value: str = "2024-01-01", schema: pa.Schema = SCHEMA) -> pa.Table:
    """Event rows with varied strings and some nulls in value columns."""
    ids = list(ids)
    data = {"user_id": ids,
            "behavior": [BEHAVIORS[i % len(BEHAVIORS)] for i in ids],
            "price": [None if i % 11 == 0 else i * 1.25 for i in ids],
            "note": [None if i % 3 else f"note-{i}" for i in ids],
            "dt": [dt_value] * len(ids)}
    return pa.table({f.name: data[f.name] for f in schema}, schema=schema)


def concat(*tables: pa.Table) -> pa.Table:
    return pa.concat_tables(tables)


def without_dt(t: pa.Table) -> pa.Table:
    return t.drop_columns(["dt"])


@pytest.fixture
def oracle(tmp_path):
    return Oracle(tmp_path / "oracle")


# ---------------------------------------------------------------- 1. lakeformat -> oracles

def test_unpartitioned_unaware_read_by_oracles(catalog, oracle):
    schema = SCHEMA.remove(SCHEMA.get_field_index("dt"))
    t = catalog.create_table("db.t", schema)
    t.write(without_dt(rows(range(0, 120))))
    t.write(without_dt(rows(range(120, 150))))
    expected = without_dt(rows(range(0, 150)))
    i = oracle.read(catalog.warehouse, "db.t")
    check_readers(oracle.run(), i, expected, "user_id")


def test_partitioned_unaware_read_by_oracles(catalog, oracle):
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["dt"])
    t.write(concat(rows(range(0, 50), "2024-01-01"), rows(range(50, 80), "2024-01-02")))
    t.write(rows(range(80, 100), "2024-01-03"))
    expected = concat(rows(range(0, 50), "2024-01-01"), rows(range(50, 80), "2024-01-02"),
                      rows(range(80, 100), "2024-01-03"))
    i = oracle.read(catalog.warehouse, "db.t")
    check_readers(oracle.run(), i, expected, "user_id")


def test_partitioned_fixed_bucket_read_by_oracles(catalog, oracle):
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["dt"],
                             options={"bucket": "4", "bucket-key": "user_id"})
    t.write(concat(rows(range(0, 100), "2024-01-01"), rows(range(100, 160), "2024-01-02")))
    t.write(rows(range(160, 200), "2024-01-01"))
    assert {f["bucket"] for f in t.files()} == {0, 1, 2, 3}
    expected = concat(rows(range(0, 100), "2024-01-01"), rows(range(100, 160), "2024-01-02"),
                      rows(range(160, 200), "2024-01-01"))
    i = oracle.read(catalog.warehouse, "db.t")
    check_readers(oracle.run(), i, expected, "user_id")


def test_merged_manifests_read_by_oracles(catalog, oracle):
    """Manifests merged by block copy (runs of small blocks joined) and merges that fold an
    overwrite's deletes (the kept records copied as bytes) read the same in both oracles."""
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["dt"], options={"manifest.merge-min-count": "3"})
    kept = []
    for k in range(12):
        r = rows(range(k * 10, k * 10 + 10), f"2024-01-{1 + k % 4:02d}")
        t.write(r)
        if k % 4:
            kept.append(r)
    t.write(rows(range(500, 505), "2024-01-01"), overwrite={"dt": "2024-01-01"})
    for k in range(4):
        t.write(rows(range(600 + k * 5, 605 + k * 5), "2024-01-05"))
    expected = concat(*kept, rows(range(500, 505), "2024-01-01"), rows(range(600, 620), "2024-01-05"))
    assert_same_rows(t.read(), expected, "user_id", "lakeformat")
    i = oracle.read(catalog.warehouse, "db.t")
    check_readers(oracle.run(), i, expected, "user_id")


@pytest.mark.parametrize("options", [{}, {"bucket": "4", "bucket-key": "user_id"}], ids=["unaware", "bucket4"])
def test_overwrites_read_by_oracles(catalog, oracle, options):
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["dt"], options=options)
    t.write(concat(rows(range(0, 30), "a"), rows(range(30, 60), "b")))
    t.write(rows(range(60, 90), "c"))
    t.write(concat(rows(range(90, 100), "a"), rows(range(100, 110), "c")))
    # dynamic: replaces partition a only (b and c are not in the data)
    s = t.write(rows(range(500, 505), "a"), overwrite=True)
    assert s.commit_kind == "OVERWRITE"
    # static: replaces partition b with these rows
    t.write(rows(range(600, 607), "b"), overwrite={"dt": "b"})
    expected = concat(rows(range(500, 505), "a"), rows(range(600, 607), "b"), rows(range(60, 90), "c"),
                      rows(range(100, 110), "c"))
    assert_same_rows(t.read(), expected, "user_id", "lakeformat")
    before = concat(rows(range(0, 30), "a"), rows(range(30, 60), "b"), rows(range(60, 90), "c"),
                    rows(range(90, 100), "a"), rows(range(100, 110), "c"))
    assert_same_rows(t.read(snapshot_id=3), before, "user_id", "lakeformat at snapshot 3")
    i = oracle.read(catalog.warehouse, "db.t")
    j = oracle.read(catalog.warehouse, "db.t", readers=["pypaimon"], snapshot_id=3)
    res = oracle.run()
    check_readers(res, i, expected, "user_id")
    check_readers(res, j, before, "user_id", readers=["pypaimon"], what="at snapshot 3")


def test_schema_evolution_read_by_oracles(catalog, oracle):
    old = pa.schema([("user_id", pa.int64()), ("behavior", pa.string()), ("price", pa.float64())])
    t = catalog.create_table("db.t", old, options={"bucket": "2", "bucket-key": "user_id"})
    t.write(rows(range(0, 40), schema=old))
    t.alter(lf.AddColumn("score", pa.int32()), lf.RenameColumn("behavior", "action"))
    new = pa.schema([("user_id", pa.int64()), ("action", pa.string()), ("price", pa.float64()),
                     ("score", pa.int32())])
    added = pa.table({"user_id": list(range(40, 60)), "action": ["new"] * 20,
                      "price": [float(i) for i in range(20)], "score": [None, *range(19)]}, schema=new)
    t.write(added)
    first = rows(range(0, 40), schema=old).rename_columns(["user_id", "action", "price"])
    expected = concat(first.append_column("score", pa.nulls(40, pa.int32())), added)
    assert_same_rows(t.read(), expected, "user_id", "lakeformat")
    i = oracle.read(catalog.warehouse, "db.t")
    j = oracle.read(catalog.warehouse, "db.t", readers=["pypaimon"], snapshot_id=1)
    res = oracle.run()
    check_readers(res, i, expected, "user_id")
    # Snapshot 1 was committed under schema 0. Paimon (Java, pypaimon) time-travels to the
    # snapshot's schema, so it answers with the old names and without "score"; so does lakeformat.
    check_readers(res, j, rows(range(0, 40), schema=old), "user_id", readers=["pypaimon"], what="at snapshot 1")
    at_1 = t.read(snapshot_id=1)
    assert at_1.column_names == old.names
    assert_same_rows(at_1, rows(range(0, 40), schema=old), "user_id", "lakeformat at snapshot 1")


def test_drop_readd_and_widen_read_by_oracles(catalog, oracle):
    """A dropped column re-added under the same name is a new field id (old values must not
    resurface); widened INT->BIGINT and FLOAT->DOUBLE columns read old files through a cast."""
    s0 = pa.schema([("id", pa.int64()), ("a", pa.int32()), ("b", pa.string()), ("c", pa.float32())])
    t = catalog.create_table("db.t", s0)
    t.write(pa.table({"id": [1, 2], "a": [10, None], "b": ["x", "y"], "c": [1.5, None]}, schema=s0))
    t.alter(lf.DropColumn("b"), lf.UpdateColumnType("a", pa.int64()), lf.UpdateColumnType("c", pa.float64()),
            lf.AddColumn("b", pa.string()))
    s1 = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("c", pa.float64()), ("b", pa.string())])
    t.write(pa.table({"id": [3], "a": [2**40], "c": [0.1], "b": ["new"]}, schema=s1))
    expected = pa.table({"id": [1, 2, 3], "a": [10, None, 2**40], "c": [1.5, None, 0.1], "b": [None, None, "new"]},
                        schema=s1)
    assert_same_rows(t.read(), expected, "id", "lakeformat")
    i = oracle.read(catalog.warehouse, "db.t")
    check_readers(oracle.run(), i, expected, "id")


ALL_TYPES = pa.schema([
    ("id", pa.int32()),
    ("f_bool", pa.bool_()), ("f_tinyint", pa.int8()), ("f_smallint", pa.int16()),
    ("f_int", pa.int32()), ("f_bigint", pa.int64()), ("f_float", pa.float32()),
    ("f_double", pa.float64()), ("f_dec10", pa.decimal128(10, 2)), ("f_dec38", pa.decimal128(38, 6)),
    ("f_string", pa.string()), ("f_bytes", pa.binary()), ("f_date", pa.date32()),
    ("f_time", pa.time32("ms")), ("f_ts3", pa.timestamp("ms")), ("f_ts6", pa.timestamp("us")),
    ("f_ltz", pa.timestamp("us", tz="UTC")),
    ("f_array", pa.list_(pa.int32())), ("f_map", pa.map_(pa.string(), pa.int32())),
    ("f_row", pa.struct([("a", pa.int32()), ("b", pa.string())])),
])


def all_types_rows(ids) -> pa.Table:
    out = []
    for i in ids:
        if i % 5 == 4:   # every column null but the id
            out.append({"id": i})
            continue
        sign = -1 if i % 2 else 1
        out.append({
            "id": i, "f_bool": i % 3 == 0, "f_tinyint": sign * (i % 128), "f_smallint": sign * 300 * i,
            "f_int": sign * 70000 * i, "f_bigint": sign * (2**40 + i), "f_float": i * 0.5,
            "f_double": sign * i / 3.0, "f_dec10": D(sign * (12345678 + i)).scaleb(-2),
            "f_dec38": D(f"{sign * (10**31 + i)}.{i:06d}"), "f_string": f"s{i}-" + "x" * i,
            "f_bytes": bytes([i % 256, 0, 255]) * (i % 4), "f_date": dt.date(2024, 1, 1) + dt.timedelta(days=i * 37),
            "f_time": dt.time(i % 24, i % 60, i % 60, (i * 1000) % 1_000_000),
            "f_ts3": dt.datetime(2024, 2, 29, 12, 0, 0, 123000) + dt.timedelta(hours=i),
            "f_ts6": dt.datetime(1969, 12, 31, 23, 59, 59, 999999) + dt.timedelta(microseconds=i * 1001),
            "f_ltz": dt.datetime(2024, 6, 1, 8, 30, 0, 654321, tzinfo=dt.UTC) + dt.timedelta(days=i),
            "f_array": None if i % 7 == 3 else [i, None, -i] if i % 2 else [],
            "f_map": {"k": i, "null": None} if i % 2 else {},
            "f_row": {"a": i, "b": None if i % 2 else f"b{i}"},
        })
    return pa.Table.from_pylist(out, schema=ALL_TYPES)


# pypaimon-rust 0.4.0 reads every type of this table (checked); if that ever changes, restrict
# RUST_COLUMNS to what it supports and say so here.
RUST_COLUMNS = ALL_TYPES.names


def test_all_types_read_by_oracles(catalog, oracle):
    t = catalog.create_table("db.t", ALL_TYPES)
    t.write(all_types_rows(range(0, 12)))
    t.write(all_types_rows(range(12, 20)))
    expected = all_types_rows(range(0, 20))
    assert_same_rows(t.read(), expected, "id", "lakeformat")
    i = oracle.read(catalog.warehouse, "db.t")
    res = oracle.run()
    check_readers(res, i, expected, "id", readers=["pypaimon"])
    rust_expected = expected.select(RUST_COLUMNS)
    got = res.table(i, "rust", expected.schema).select(RUST_COLUMNS)
    assert_same_rows(got, rust_expected, "id", "rust")


PART_TYPES = pa.schema([("id", pa.int64()), ("p_int", pa.int32()), ("p_bool", pa.bool_()),
                        ("p_str", pa.string()), ("v", pa.string())])


def test_typed_and_null_partitions_read_by_oracles(catalog, oracle):
    """Non-string partition keys, escaped characters and null partition values
    (``__DEFAULT_PARTITION__``)."""
    t = catalog.create_table("db.t", PART_TYPES, partition_keys=["p_int", "p_bool", "p_str"])
    data = pa.Table.from_pylist(
        [{"id": i, "p_int": [-5, 0, 7, None][i % 4], "p_bool": [True, False, None][i % 3],
          "p_str": ["x", "a b", None, "ü/=:%"][i % 4 if i % 8 else 0], "v": f"v{i}"} for i in range(48)],
        schema=PART_TYPES)
    t.write(data.slice(0, 30))
    t.write(data.slice(30))
    assert_same_rows(t.read(), data, "id", "lakeformat")
    i = oracle.read(catalog.warehouse, "db.t")
    check_readers(oracle.run(), i, data, "id")


# One partition column per type, values chosen where a naive str()/isoformat() differs from
# Java's legacy partition names.
PARTITION_VALUES = {
    "date": (pa.date32(), [dt.date(2024, 2, 29), dt.date(1969, 7, 20)]),
    "time": (pa.time32("ms"), [dt.time(1, 2, 3)]),
    "ts3": (pa.timestamp("ms"), [dt.datetime(2024, 1, 1, 12, 0), dt.datetime(2024, 1, 1, 12, 0, 5, 123000)]),
    "ts6": (pa.timestamp("us"), [dt.datetime(2024, 1, 1, 12, 0, 0, 1)]),
    "double": (pa.float64(), [0.1, 1.0, 1e20]),
    "float": (pa.float32(), [1.5]),
    "decimal": (pa.decimal128(10, 2), [D("1.50"), D("-0.01")]),
    "bigint": (pa.int64(), [-1, 2**40]),
    "string": (pa.string(), [" ", "a:b", "#?*"]),
}

# pypaimon-rust 0.4.0: "Float/Double type is not supported as partition key".
ORACLES_FOR_PARTITION_TYPE = {"double": ("pypaimon",), "float": ("pypaimon",)}


def test_partition_directories_match_pypaimon(catalog, oracle):
    """With the default ``partition.legacy-name = true`` Java Paimon names a partition directory
    by the ``toString()`` of the internal value: a DATE is days since 1970-01-01
    (``day=19782`` for 2024-02-29), a TIME milliseconds of the day, a TIMESTAMP
    ``LocalDateTime.toString()`` (``2024-01-01T12:00``), a DOUBLE ``Double.toString()``
    (``1.0E20``), and a blank string is the default partition. pypaimon 2.1 and pypaimon-rust do
    the same. Readers derive the directory from the partition value, so a different name is a
    missing file on the other side."""
    wh = catalog.warehouse
    problems, reads = [], {}
    for name, (typ, values) in PARTITION_VALUES.items():
        schema = pa.schema([("id", pa.int64()), ("p", typ)])
        data = pa.table({"id": list(range(len(values) + 1)), "p": [*values, None]}, schema=schema)
        catalog.create_table(f"db.lf_{name}", schema, partition_keys=["p"]).write(data)
        oracle.create(wh, f"db.py_{name}", schema, ["p"])
        oracle.write(wh, f"db.py_{name}", data)
        reads[name] = (oracle.read(wh, f"db.lf_{name}"), data)
    res = oracle.run()
    for name, (i, data) in reads.items():
        lf_dirs = sorted(p.name for p in catalog_path(catalog, f"db.lf_{name}").glob("p=*"))
        py_dirs = sorted(p.name for p in catalog_path(catalog, f"db.py_{name}").glob("p=*"))
        if lf_dirs != py_dirs:
            problems.append(f"{name}: directories lakeformat {lf_dirs}, pypaimon {py_dirs}")
        checks = [("lakeformat reading pypaimon's table",
                   lambda: assert_same_rows(catalog.get_table(f"db.py_{name}").read(), data, "id")),  # noqa: B023
                  *((f"{r} reading lakeformat's table", lambda r=r: check_readers(res, i, data, "id", readers=[r]))  # noqa: B023
                    for r in ORACLES_FOR_PARTITION_TYPE.get(name, ("pypaimon", "rust")))]
        for what, check in checks:
            try:
                check()
            except Exception as e:   # collect every symptom, then fail once
                problems.append(f"{name}: {what}: {type(e).__name__}: {str(e).splitlines()[-1][:200]}")
    assert not problems, "partition directories disagree with pypaimon:\n" + "\n".join(problems)


def catalog_path(catalog, identifier):
    from pathlib import Path
    return Path(catalog.table_path(identifier))


# The oracles prune files by the min/max/null-count statistics lakeformat wrote: a wrong statistic
# shows up as missing rows. Each filter: (oracle predicate, the same condition in Python).
ORACLE_FILTERS = [
    (pred("equal", "id", 13), lambda r: r["id"] == 13),
    (pred("greaterThan", "f_date", dt.date(2026, 1, 1)),
     lambda r: r["f_date"] is not None and r["f_date"] > dt.date(2026, 1, 1)),
    (pred("lessThan", "f_ts3", dt.datetime(2024, 3, 1, 2, 0)),
     lambda r: r["f_ts3"] is not None and r["f_ts3"] < dt.datetime(2024, 3, 1, 2, 0)),
    (pred("greaterThan", "f_ts6", dt.datetime(1970, 1, 1, 0, 0, 0, 20000)),
     lambda r: r["f_ts6"] is not None and r["f_ts6"] > dt.datetime(1970, 1, 1, 0, 0, 0, 20000)),
    (pred("greaterThan", "f_ltz", dt.datetime(2024, 7, 1, tzinfo=dt.UTC)),
     lambda r: r["f_ltz"] is not None and r["f_ltz"] > dt.datetime(2024, 7, 1, tzinfo=dt.UTC)),
    (pred("equal", "f_string", "s17-" + "x" * 17), lambda r: r["f_string"] == "s17-" + "x" * 17),
    (pred("greaterOrEqual", "f_string", "s3"), lambda r: r["f_string"] is not None and r["f_string"] >= "s3"),
    (pred("greaterOrEqual", "f_dec38", D("10000000000000000000000000000030")),
     lambda r: r["f_dec38"] is not None and r["f_dec38"] >= D("10000000000000000000000000000030")),
    (pred("equal", "f_dec10", D("123456.92")), lambda r: r["f_dec10"] == D("123456.92")),
    (pred("lessThan", "f_double", -5.0), lambda r: r["f_double"] is not None and r["f_double"] < -5.0),
    (pred("lessThan", "f_float", 2.0), lambda r: r["f_float"] is not None and r["f_float"] < 2.0),
    (pred("equal", "f_tinyint", -13), lambda r: r["f_tinyint"] == -13),
    (pred("greaterThan", "f_smallint", 9000), lambda r: r["f_smallint"] is not None and r["f_smallint"] > 9000),
    (pred("lessThan", "f_int", -2_000_000), lambda r: r["f_int"] is not None and r["f_int"] < -2_000_000),
    (pred("greaterThan", "f_bigint", 2**40 + 30), lambda r: r["f_bigint"] is not None and r["f_bigint"] > 2**40 + 30),
    (pred("equal", "f_bool", True), lambda r: r["f_bool"] is True),
    (pred("equal", "f_bytes", bytes([5, 0, 255])), lambda r: r["f_bytes"] == bytes([5, 0, 255])),
    (pred("lessThan", "f_time", dt.time(3, 0)), lambda r: r["f_time"] is not None and r["f_time"] < dt.time(3, 0)),
    (pred("isNull", "f_int"), lambda r: r["f_int"] is None),
    (pred("isNotNull", "f_string"), lambda r: r["f_string"] is not None),
    (pred("in", "id", 1, 22, 37), lambda r: r["id"] in (1, 22, 37)),
]


def test_oracle_filters_use_lakeformat_statistics(catalog, oracle):
    t = catalog.create_table("db.t", ALL_TYPES)
    for k in range(0, 40, 10):   # four files with mostly disjoint value ranges
        t.write(all_types_rows(range(k, k + 10)))
    everything = all_types_rows(range(0, 40)).to_pylist()
    reads = [(oracle.read(catalog.warehouse, "db.t", filter=f), keep) for f, keep in ORACLE_FILTERS]
    res = oracle.run()
    for (i, keep), (f, _) in zip(reads, ORACLE_FILTERS):
        expected = pa.Table.from_pylist([r for r in everything if keep(r)], schema=ALL_TYPES)
        assert expected.num_rows > 0 or f["field"] == "f_dec10", f"filter {f} selects nothing"
        for reader in ("pypaimon", "rust"):
            got = res.table(i, reader, ALL_TYPES)
            # the oracles may return extra rows (filtering is best effort); they must not lose any
            kept = pa.Table.from_pylist([r for r in got.to_pylist() if keep(r)], schema=ALL_TYPES)
            assert_same_rows(kept, expected, "id", f"{reader} with filter {f}")


# ---------------------------------------------------------------- 2. bucket agreement

def bucket_rows() -> pa.Table:
    ids = [*range(0, 150), -1, -2, -(2**40), 2**31, 2**31 - 1, 2**62, -(2**63), 2**63 - 1]
    tab = rows(ids, "2024-01-01")
    behaviors = pa.array([["pv", "buy", "a-much-longer-behaviour", "", "ünï", "1234567", "12345678"][k % 7]
                          for k in range(len(ids))])
    return tab.set_column(tab.schema.get_field_index("behavior"), "behavior", behaviors)


def lakeformat_buckets(t: lf.Table) -> pa.Table:
    parts = []
    for split in t.scan().plan():
        got = t.read_splits([split])
        parts.append(got.append_column("__bucket", pa.array([split.bucket] * got.num_rows, pa.int32())))
    return pa.concat_tables(parts)


def bucket_map(t: pa.Table, key) -> dict:
    out = {}
    for r in t.select([*key, "__bucket"]).to_pylist():
        k = tuple(r[c] for c in key)
        assert out.setdefault(k, r["__bucket"]) == r["__bucket"], f"{k} in two buckets"
    return out


@pytest.mark.parametrize("bucket_key", [["user_id"], ["behavior", "user_id"]], ids=["user_id", "behavior+user_id"])
def test_bucket_assignment_agrees_with_pypaimon(catalog, oracle, bucket_key):
    options = {"bucket": "4", "bucket-key": ",".join(bucket_key)}
    data = bucket_rows()
    wh = catalog.warehouse
    lf_table = catalog.create_table("db.lf", SCHEMA, partition_keys=["dt"], options=options)
    lf_table.write(data)
    oracle.create(wh, "db.py", SCHEMA, ["dt"], options)
    oracle.write(wh, "db.py", data)
    b_lf = oracle.buckets(wh, "db.lf")
    b_py = oracle.buckets(wh, "db.py")
    res = oracle.run()
    res.check_all()
    expected = {tuple(r[c] for c in bucket_key) for r in data.to_pylist()}
    by_pypaimon_lf = bucket_map(res.bucket_table(b_lf), bucket_key)
    by_pypaimon_py = bucket_map(res.bucket_table(b_py), bucket_key)
    assert set(by_pypaimon_py) == expected
    assert len(set(by_pypaimon_py.values())) == 4
    diff = {k: (v, by_pypaimon_py[k]) for k, v in by_pypaimon_lf.items() if by_pypaimon_py.get(k) != v}
    assert not diff, f"(lakeformat bucket, pypaimon bucket) differ for {len(diff)} keys: {list(diff.items())[:10]}"
    # the same seen from lakeformat's side, reading both tables' splits
    py_table = catalog.get_table("db.py")
    assert bucket_map(lakeformat_buckets(py_table), bucket_key) == by_pypaimon_py
    assert bucket_map(lakeformat_buckets(lf_table), bucket_key) == by_pypaimon_py


KEY_TYPES = pa.schema([
    ("id", pa.int32()), ("k_bool", pa.bool_()), ("k_tiny", pa.int8()), ("k_small", pa.int16()),
    ("k_int", pa.int32()), ("k_float", pa.float32()), ("k_double", pa.float64()), ("k_date", pa.date32()),
    ("k_dec", pa.decimal128(10, 2)), ("k_dec_wide", pa.decimal128(20, 4)), ("k_ts3", pa.timestamp("ms")),
    ("k_ts6", pa.timestamp("us")), ("k_ltz", pa.timestamp("us", tz="UTC")), ("k_bytes", pa.binary()),
])
# Java's generated projection writes a null DECIMAL(p > 18) / TIMESTAMP(p > 3) through
# writeDecimal/writeTimestamp(pos, null, p), which reserves 16/8 zero bytes in the variable part,
# and the bucket hash covers them (paimon-codegen GenerateUtils.binaryWriterWriteNull).
# lakeformat does the same (lakeformat/format/binary_row.py); pypaimon 2.1 just sets the null bit, so
# rows with such a null key go to other buckets there. Those rows are left out of the comparison.
NON_COMPACT = {"k_dec_wide", "k_ts6", "k_ltz"}
COMPOSITE = ["k_date", "k_dec_wide", "k_ts6", "k_bytes", "k_bool"]


def key_type_rows(n: int = 120) -> pa.Table:
    def value(c, i):
        if i % 9 == 4:
            return None
        return {"k_bool": i % 2 == 0, "k_tiny": i - 60, "k_small": i * 100 - 5000, "k_int": i * 1000003 - 50000000,
                "k_float": i * 0.5 - 10, "k_double": i * 0.37 - 10,
                "k_date": dt.date(2020, 1, 1) + dt.timedelta(days=i * 13),
                "k_dec": D(i * 131 - 5000).scaleb(-2), "k_dec_wide": D(i * 7919 - 300000).scaleb(-4),
                "k_ts3": dt.datetime(2024, 1, 1) + dt.timedelta(milliseconds=i * 98765),
                "k_ts6": dt.datetime(2024, 1, 1) + dt.timedelta(microseconds=i * 1234567),
                "k_ltz": dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=i * 977),
                "k_bytes": bytes(range(i % 20))}[c]
    return pa.Table.from_pylist([{"id": i, **{c: value(c, i) for c in KEY_TYPES.names[1:]}} for i in range(n)],
                                schema=KEY_TYPES)


def test_bucket_assignment_agrees_for_every_key_type(catalog, oracle):
    wh = catalog.warehouse
    data = key_type_rows()
    keys = [[c] for c in KEY_TYPES.names[1:]] + [COMPOSITE]
    ops = {}
    for key in keys:
        name = "_".join(key)
        options = {"bucket": "5", "bucket-key": ",".join(key)}
        catalog.create_table(f"db.lf_{name}", KEY_TYPES, options=options).write(data)
        oracle.create(wh, f"db.py_{name}", KEY_TYPES, [], options)
        oracle.write(wh, f"db.py_{name}", data)
        ops[name] = (key, oracle.buckets(wh, f"db.lf_{name}"), oracle.buckets(wh, f"db.py_{name}"))
    res = oracle.run()
    res.check_all()
    rows_by_id = {r["id"]: r for r in data.to_pylist()}
    for key, b_lf, b_py in ops.values():
        by_lf, by_py = bucket_map(res.bucket_table(b_lf), ["id"]), bucket_map(res.bucket_table(b_py), ["id"])
        assert set(by_lf) == set(by_py) == {(i,) for i in rows_by_id}
        comparable = [k for k in by_py if not any(rows_by_id[k[0]][c] is None for c in NON_COMPACT & set(key))]
        assert len(comparable) > 100
        diff = {k[0]: (by_lf[k], by_py[k]) for k in comparable if by_lf[k] != by_py[k]}
        assert not diff, f"bucket-key {key}: (lakeformat, pypaimon) buckets differ for ids {diff}"
        assert len(set(by_py.values())) == (2 if key == ["k_bool"] else 5)


# ---------------------------------------------------------------- 3. pypaimon -> lakeformat -> oracles

PY_TABLES = {
    "db.part_bucket": (["dt"], {"bucket": "4", "bucket-key": "user_id"}),
    "db.part_unaware": (["dt"], {}),
    "db.unpart_unaware": ([], {}),
}


def test_pypaimon_tables_read_and_extended_by_lakeformat(catalog, oracle):
    wh = catalog.warehouse
    first = concat(rows(range(0, 60), "a"), rows(range(60, 100), "b"))
    second = rows(range(100, 130), "a")
    for name, (parts, options) in PY_TABLES.items():
        oracle.create(wh, name, SCHEMA, parts, options)
        oracle.write(wh, name, first)
        oracle.write(wh, name, second)
    oracle.run().check_all()

    reads = {}
    for name, (parts, _) in PY_TABLES.items():
        t = catalog.get_table(name)
        assert t.partition_keys == parts
        assert_same_rows(t.read(), concat(first, second), "user_id", f"lakeformat reading {name}")
        # append rows that reuse user ids pypaimon wrote (same buckets expected) and new ones
        appended = concat(rows(range(50, 70), "b"), rows(range(200, 230), "c"))
        t.write(appended)
        if parts:
            overwrite = rows(range(300, 310), "a")
            t.write(overwrite, overwrite=True)            # dynamic: replaces partition a
            expected = concat(first.filter(pc.equal(first["dt"], "b")), appended, overwrite)
        else:
            overwrite = rows(range(300, 310), "a")
            t.write(overwrite, overwrite=True)            # unpartitioned: replaces everything
            t.write(appended)
            expected = concat(overwrite, appended)
        assert_same_rows(t.read(), expected, ["user_id", "dt"], f"lakeformat re-reading {name}")
        reads[name] = (oracle.read(wh, name), expected)
    b = oracle.buckets(wh, "db.part_bucket")
    res = oracle.run()
    for name, (i, expected) in reads.items():
        check_readers(res, i, expected, ["user_id", "dt"], what=name)
    bucket_map(res.bucket_table(b), ["user_id"])   # every user id in exactly one bucket


def test_pypaimon_commits_on_top_of_lakeformat_tables(catalog, oracle):
    """The other direction of commits: pypaimon appends to and overwrites tables lakeformat
    created and wrote (it must accept our schema, snapshot, manifest list and manifests)."""
    wh = catalog.warehouse
    t = catalog.create_table("db.events", SCHEMA, partition_keys=["dt"],
                             options={"bucket": "4", "bucket-key": "user_id"})
    t.write(concat(rows(range(0, 40), "a"), rows(range(40, 80), "b")))
    t.write(rows(range(80, 100), "c"))
    typed = catalog.create_table("db.typed", ALL_TYPES)
    typed.write(all_types_rows(range(0, 10)))
    oracle.write(wh, "db.events", rows(range(20, 50), "b"))                        # append
    oracle.write(wh, "db.events", rows(range(500, 510), "c"), overwrite={"dt": "c"})
    oracle.write(wh, "db.typed", all_types_rows(range(10, 20)))
    i = oracle.read(wh, "db.events", readers=["rust"])
    j = oracle.read(wh, "db.typed", readers=["rust"])
    b = oracle.buckets(wh, "db.events")
    res = oracle.run()
    res.check_all()
    expected = concat(rows(range(0, 40), "a"), rows(range(40, 80), "b"), rows(range(20, 50), "b"),
                      rows(range(500, 510), "c"))
    assert_same_rows(t.read(), expected, ["user_id", "dt"], "lakeformat after pypaimon's commits")
    assert_same_rows(typed.read(), all_types_rows(range(0, 20)), "id", "lakeformat after pypaimon's commit")
    check_readers(res, i, expected, ["user_id", "dt"], readers=["rust"])
    check_readers(res, j, all_types_rows(range(0, 20)), "id", readers=["rust"])
    assert [s.commit_kind for s in t.snapshots()] == ["APPEND", "APPEND", "APPEND", "OVERWRITE"]
    bucket_map(res.bucket_table(b), ["user_id"])   # pypaimon put user ids 20..49 where we did
    # and lakeformat can keep committing after pypaimon
    t.write(rows(range(900, 905), "a"))
    assert t.read().num_rows == expected.num_rows + 5


# ---------------------------------------------------------------- 4. pruning without statistics

FILTERS = [   # (predicate, the same condition in plain Python)
    (col("user_id") == 17, lambda r: r["user_id"] == 17),
    (col("user_id") > 250, lambda r: r["user_id"] > 250),
    ((col("price") >= 100.0) & (col("price") < 140.0),
     lambda r: r["price"] is not None and 100.0 <= r["price"] < 140.0),
    (col("behavior") == "buy", lambda r: r["behavior"] == "buy"),
    (col("behavior") >= "ünï", lambda r: r["behavior"] >= "ünï"),
    (col("note").is_null(), lambda r: r["note"] is None),
    (col("price").is_null(), lambda r: r["price"] is None),
    (col("user_id").isin([3, 150, 299, 1000]), lambda r: r["user_id"] in (3, 150, 299, 1000)),
    ((col("user_id") < 10) | (col("note") == "note-201"), lambda r: r["user_id"] < 10 or r["note"] == "note-201"),
    (~(col("user_id") < 290), lambda r: r["user_id"] >= 290),
    ((col("dt") == "b") & (col("price") > 340.0), lambda r: r["dt"] == "b" and (r["price"] or 0) > 340.0),
]


@pytest.mark.parametrize("stats_mode", ["none", "full"])
def test_value_filters_on_pypaimon_table(catalog, oracle, stats_mode):
    wh = catalog.warehouse
    options = {} if stats_mode == "none" else {"metadata.stats-mode": "full"}
    batches = [rows(range(k, k + 60), dt_value) for k, dt_value in
               ((0, "a"), (60, "a"), (120, "b"), (180, "a"), (240, "b"))]
    oracle.create(wh, "db.t", SCHEMA, ["dt"], options)
    for b in batches:
        oracle.write(wh, "db.t", b)
    oracle.run().check_all()
    t = catalog.get_table("db.t")
    assert len(t.files()) == 5
    # with pypaimon's full statistics lakeformat prunes by them; without, it must read everything
    planned = sum(len(s.files) for s in t.scan(filter=col("user_id") == 17).plan())
    assert planned == (1 if stats_mode == "full" else 5)
    everything = concat(*batches)
    for f, keep in FILTERS:
        expected = pa.Table.from_pylist([r for r in everything.to_pylist() if keep(r)], schema=SCHEMA)
        assert_same_rows(t.read(filter=f), expected, "user_id", f"filter {f}")
        got = t.read(columns=["user_id"], filter=f)
        assert sorted(got["user_id"].to_pylist()) == sorted(expected["user_id"].to_pylist()), f"filter {f}"


def test_a_pypaimon_file_of_some_columns_is_refused_not_read_as_rows_with_nulls(catalog, oracle):
    """pypaimon writes a file of some columns ('_WRITE_COLS', data evolution) even into a plain
    table, and reads it back as rows whose other columns are null; lakeformat refuses the snapshot
    that names it, naming the field and the file, and reads the snapshot before it."""
    wh, name = catalog.warehouse, "db.partial"
    first = rows(range(0, 10))
    oracle.create(wh, name, SCHEMA, [], {})
    oracle.write(wh, name, first)
    oracle.write(wh, name, rows(range(10, 12)), write_cols=["user_id", "dt"])
    oracle.run().check_all()
    t = catalog.get_table(name)
    with pytest.raises(UnsupportedMetadataError) as e:
        t.read()
    assert "_WRITE_COLS" in str(e.value) and "['user_id', 'dt']" in str(e.value) and ".parquet" in str(e.value)
    assert_same_rows(t.read(snapshot_id=1), first, "user_id", "lakeformat reading the snapshot before")
    with pytest.raises(UnsupportedMetadataError):
        t.compact(full=True)
