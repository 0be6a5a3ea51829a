"""Filters typed by people (``read --filter``, the Lakehouse page's preview) parsed into
lakeformat's predicates, and the preview read (filter, columns, limit, time travel) on real tables."""
import datetime as dt

import pyarrow as pa
import pytest

from lakeformat.format import predicate as P
from lakeformat.format.filter_text import FilterError, parse_filter
from lakeformat.table.preview import read_preview
from tests.conftest import events

SCHEMA = pa.schema([("dt", pa.string()), ("price", pa.float64()), ("id", pa.int64()), ("day", pa.date32()),
                    ("odd name", pa.string()), ("ok", pa.bool_()), ("ts", pa.timestamp("us"))])


@pytest.mark.parametrize("text, expected", [
    ("dt = '2024-06-01' and price >= 10",
     P.And((P.Compare("dt", "==", "2024-06-01"), P.Compare("price", ">=", 10.0)))),
    ("id in (1, 2) or dt is null", P.Or((P.In("id", (1, 2)), P.IsNull("dt")))),
    ("id not in (3) and dt is not null", P.And((P.In("id", (3,), True), P.IsNull("dt", True)))),
    ("not (price < 1.5) and `odd name` <> 'it''s'",
     P.And((P.Compare("price", ">=", 1.5), P.Compare("odd name", "!=", "it's")))),
    ("day >= '2024-01-02'", P.Compare("day", ">=", dt.date(2024, 1, 2))),
    ("ok = TRUE", P.Compare("ok", "==", True)),
    ("ts < '2024-01-01 10:00:00'", P.Compare("ts", "<", dt.datetime(2024, 1, 1, 10))),
    ("id == 2.0", P.Compare("id", "==", 2)),
    ("dt = 2024", P.Compare("dt", "==", "2024")),            # a text column takes the literal's text
    ("(id = 1 and (price > 2 or dt = 'x'))",
     P.And((P.Compare("id", "==", 1), P.Or((P.Compare("price", ">", 2.0), P.Compare("dt", "==", "x")))))),
])
def test_parses_into_predicates(text, expected):
    assert parse_filter(text, SCHEMA) == expected


@pytest.mark.parametrize("text, says", [
    ("price >", "expected a value for 'price' at the end"),
    ("nope = 1", "no column 'nope' (character 1); the columns are dt, price, id"),
    ("id = 1.5", "'1.5' is not a value of column 'id' (int64)"),
    ("id = null", "write 'id is null'"),
    ("day = 'June'", "'June' is not a value of column 'day'"),
    ("id = 1 and", "expected a column name at the end"),
    ("(id = 1", "expected ')' at the end"),
    ("id ~ 2", "cannot read '~ 2' (character 4)"),
    ("id = 'a'", "'a' is not a value of column 'id'"),
    ("dt = 'open", "cannot read"),
    ("   ", None),
])
def test_bad_filters_say_what_and_where(text, says):
    if says is None:
        assert parse_filter(text, SCHEMA) is None
        return
    with pytest.raises(FilterError) as e:
        parse_filter(text, SCHEMA)
    assert f"bad filter {text!r}" in str(e.value) and says in str(e.value)


@pytest.fixture
def table(catalog):
    t = catalog.create_table("db.events", events(0).schema, partition_keys=["dt"], options={"bucket": "1"})
    t.write(events(30, "2024-01-01"))
    t.create_tag("day-1")
    t.write(events(30, "2024-01-02", start=30))
    return t


def test_preview_filters_rows_and_keeps_the_columns_asked(table):
    p = read_preview(table, "dt = '2024-01-02' and behavior = 'buy'", columns=["user_id", "price"], limit=0)
    expected = [i for i in range(30, 60) if i % 3 == 1]
    assert p.rows.column_names == ["user_id", "price"] and sorted(p.rows["user_id"].to_pylist()) == expected
    assert p.snapshot.id == 2 and p.more is False


def test_preview_limit_says_whether_more_rows_follow(table):
    p = read_preview(table, "price >= 0", limit=10)
    assert p.rows.num_rows == 10 and p.more is True
    exact = read_preview(table, "dt = '2024-01-01'", limit=30)
    assert exact.rows.num_rows == 30 and exact.more is False


def test_preview_travels_by_tag_snapshot_and_time(table):
    assert read_preview(table, None, limit=0, tag="day-1").rows.num_rows == 30
    assert read_preview(table, None, limit=0, snapshot_id=1).rows.num_rows == 30
    first = table.snapshot(1)
    at = dt.datetime.fromtimestamp(first.time_millis / 1000)
    assert read_preview(table, None, limit=0, as_of=at).snapshot.id == 1


def test_preview_names_an_unknown_column(table):
    with pytest.raises(Exception) as e:
        read_preview(table, columns=["user_id", "nope"])
    assert "no column 'nope'" in str(e.value) and "user_id, behavior, price, dt" in str(e.value)


def test_preview_of_an_empty_table(catalog):
    t = catalog.create_table("db.empty", events(0).schema)
    p = read_preview(t, "price > 1")
    assert p.snapshot is None and p.rows.num_rows == 0 and p.rows.column_names == list(events(0).schema.names)
