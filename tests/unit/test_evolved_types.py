"""Columns whose type changed: old files are read through Paimon's cast rules (format/casts.py),
on tables Paimon Java wrote and on tables lakeformat altered."""
import datetime as dt
import decimal
import json
import os
from pathlib import Path
import shutil

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.errors import DataError
from lakeformat.format import types as T
from lakeformat.format.casts import cast_column, castable

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "paimon-java")
A = T.atomic


@pytest.mark.parametrize("values, old, new, expected", [
    (["True", "1", "nO", " 0 ", "Yes", "f", None], A("STRING"), A("BOOLEAN"),
     [True, True, False, False, True, False, None]),
    ([1.9, -1.9, float("nan"), 1e20, -1e20], A("DOUBLE"), A("INT"), [1, -1, 0, 2**31 - 1, -2**31]),
    ([300.7, 1e20], A("DOUBLE"), A("TINYINT"), [44, -1]),                  # (byte) (int) d
    ([2**40 + 5, -129], A("BIGINT"), A("TINYINT"), [5, 127]),              # two's complement
    ([decimal.Decimal("1.7"), decimal.Decimal("-1.7")], A("DECIMAL", 5, 1), A("INT"), [1, -1]),
    ([decimal.Decimal("0.02"), decimal.Decimal("999.99")], A("DECIMAL", 5, 2), A("DECIMAL", 6, 3),
     [decimal.Decimal("0.020"), decimal.Decimal("999.990")]),
    ([decimal.Decimal("999.99"), decimal.Decimal("1.005")], A("DECIMAL", 6, 3), A("DECIMAL", 4, 2),
     [None, decimal.Decimal("1.01")]),                                      # overflow -> null, half up
    ([1.005, 123456.0], A("DOUBLE"), A("DECIMAL", 5, 1), [decimal.Decimal("1.0"), None]),
    ([" 12 ", "-3"], A("STRING"), A("INT"), [12, -3]),
    (["1.235", "99999"], A("STRING"), A("DECIMAL", 5, 2), [decimal.Decimal("1.24"), None]),
    (["2024-01-02 03:04:05.123", "2024-01-02"], A("STRING"), A("TIMESTAMP", 3),
     [dt.datetime(2024, 1, 2, 3, 4, 5, 123000), dt.datetime(2024, 1, 2)]),
    (["2024-02-29"], A("STRING"), A("DATE"), [dt.date(2024, 2, 29)]),
    ([True, False], A("BOOLEAN"), A("STRING"), ["true", "false"]),
    ([0, 7], A("INT"), A("BOOLEAN"), [False, True]),
    ([0.1, 1e10, 123.0, 1e-5], A("DOUBLE"), A("STRING"), ["0.1", "1.0E10", "123.0", "1.0E-5"]),
    (["abcdef", "ab"], A("STRING"), A("CHAR", 3), ["abc", "ab "]),
    ([1700000000], A("BIGINT"), A("TIMESTAMP", 3), [dt.datetime(2023, 11, 14, 22, 13, 20)]),
])
def test_cast_rules(values, old, new, expected):
    arr = pa.array(values, T.to_arrow(old))
    assert cast_column(arr, old, new, "c").to_pylist() == expected


def test_timestamp_casts():
    ts = pa.array([1732603136001000001, -1], pa.timestamp("ns"))
    old = A("TIMESTAMP", 9)
    assert cast_column(ts, old, A("STRING"), "c").to_pylist() == [
        "2024-11-26 06:38:56.001000001", "1969-12-31 23:59:59.999999999"]
    assert cast_column(ts, A("TIMESTAMP", 9), A("STRING"), "c").to_pylist()[0].count(".") == 1
    assert cast_column(ts.cast(pa.timestamp("s"), safe=False), A("TIMESTAMP", 0), A("STRING"), "c").to_pylist()[0] \
        == "2024-11-26 06:38:56"
    assert cast_column(ts, old, A("INT"), "c").to_pylist() == [1732603136, -1]          # epoch seconds, floor
    assert cast_column(ts, old, A("DATE"), "c").to_pylist() == [dt.date(2024, 11, 26), dt.date(1969, 12, 31)]
    days = pa.array([4, -44], pa.date32())
    assert cast_column(days, A("DATE"), A("TIMESTAMP", 9), "c").cast(pa.int64()).to_pylist() == [
        345600000000000, -3801600000000000]


def test_unparseable_text_names_the_column_and_no_cast_is_refused():
    with pytest.raises(DataError, match=r"column 'flag'.*'maybe' is not a BOOLEAN"):
        cast_column(pa.array(["maybe"]), A("STRING"), A("BOOLEAN"), "flag")
    for text in ("NaN", "Infinity"):   # no such decimal: refused like other text that is not one
        with pytest.raises(DataError, match=r"column 'price'.*DECIMAL\(5, 2\)"):
            cast_column(pa.array(["1.5", text]), A("STRING"), A("DECIMAL", 5, 2), "price")
    assert castable(A("STRING"), A("BOOLEAN")) and castable(A("TIMESTAMP", 9), A("INT"))
    assert not castable(A("BIGINT"), A("DATE")) and not castable(A("BOOLEAN"), A("TIMESTAMP", 3))


def _fixture_table(tmp_path, name):
    shutil.copytree(os.path.join(FIXTURES, "parquet"), tmp_path / "parquet")
    return lf.Catalog(str(tmp_path / "parquet")).get_table(f"{name}.{name}")


def _expected(name):
    cases = json.loads(Path(FIXTURES, "expected.json").read_text())
    return next(c for c in cases if c["table"] == f"{name}.{name}" and c["warehouse"] == "parquet")


def _plain(v):
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, dt.datetime):
        return None
    return v


@pytest.mark.parametrize("name", ["append_table_alter_table_with_cast", "append_table_with_alter_table"])
def test_java_tables_with_changed_types_read_as_paimon_states(tmp_path, name):
    t = _fixture_table(tmp_path, name)
    case = _expected(name)
    got = t.read(columns=case["columns"])
    cols = []
    for c in case["columns"]:
        col = got.column(c)
        if pa.types.is_timestamp(col.type):   # expected.json holds epoch nanoseconds
            col = col.cast(pa.timestamp("ns")).cast(pa.int64())
        cols.append([_plain(v) for v in col.to_pylist()])
    assert sorted(zip(*cols), key=repr) == sorted(map(tuple, case["rows"]), key=repr)


def test_lakeformat_alter_follows_paimon_casts(catalog):
    schema = pa.schema([("id", pa.int32()), ("flag", pa.string()), ("amount", pa.float64()),
                        ("at", pa.timestamp("us"))])
    t = catalog.create_table("db.t", schema)
    t.write(pa.table({"id": [1, 2], "flag": ["Yes", "nO"], "amount": [2.9, -2.9],
                      "at": [dt.datetime(2024, 1, 1, 0, 0, 1), dt.datetime(1969, 12, 31, 23, 59, 59, 500000)]},
                     schema=schema))
    t.alter(lf.UpdateColumnType("flag", pa.bool_()), lf.UpdateColumnType("amount", pa.int32()),
            lf.UpdateColumnType("at", pa.int64()))
    t.write(pa.table({"id": [3], "flag": [True], "amount": [5], "at": [7]}, schema=t.arrow_schema()))
    rows = sorted(t.read().to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": 1, "flag": True, "amount": 2, "at": 1704067201},
                    {"id": 2, "flag": False, "amount": -2, "at": -1},
                    {"id": 3, "flag": True, "amount": 5, "at": 7}]
    assert t.read(snapshot_id=1).num_rows == 2


def test_time_travel_tags_and_incremental_reads_use_each_snapshots_schema(catalog):
    t = catalog.create_table("db.t", pa.schema([("id", pa.int32()), ("name", pa.string())]))
    t.write(pa.table({"id": [1], "name": ["a"]}, schema=t.arrow_schema()))
    t.create_tag("before")
    t.write(pa.table({"id": [2], "name": ["b"]}, schema=t.arrow_schema()))
    t.alter(lf.RenameColumn("name", "label"), lf.AddColumn("score", pa.float64()))
    t.write(pa.table({"id": [3], "label": ["c"], "score": [1.5]}, schema=t.arrow_schema()))
    assert t.read(snapshot_id=1).to_pylist() == [{"id": 1, "name": "a"}]
    assert t.read(tag="before").column_names == ["id", "name"]
    assert sorted(t.read_incremental(0, 2).to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "label": "a", "score": None}, {"id": 2, "label": "b", "score": None},
        {"id": 3, "label": "c", "score": 1.5}]
    assert t.read_incremental(2, 3).to_pylist() == [{"id": 3, "label": "c", "score": 1.5}]
    with pytest.raises(lf.SchemaError, match="label"):
        t.read(columns=["label"], snapshot_id=2)
    assert t.read(columns=["name"], snapshot_id=2).num_rows == 2
