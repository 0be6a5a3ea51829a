import pyarrow as pa
import pytest

from lakeformat.format import predicate as P
from lakeformat.format.predicate import col


def stats(**cols):
    return lambda name: cols.get(name)


@pytest.mark.parametrize("pred,expected", [
    (col("x") == 5, True), (col("x") == 50, False), (col("x") > 10, False), (col("x") >= 10, True),
    (col("x") < 1, False), (col("x") <= 1, True), (col("x") != 3, True),
    (col("x").isin([20, 30]), False), (col("x").isin([20, 3]), True),
    ((col("x") == 50) | (col("x") == 2), True), ((col("x") == 5) & (col("x") == 50), False),
    (~(col("x") < 20), False), (col("x").is_null(), False), (col("x").is_not_null(), True),
    (col("unknown") == 1, True),
])
def test_may_match_on_ranges(pred, expected):
    assert P.may_match(pred, stats(x=(1, 10, 0, 100))) is expected


def test_constant_column_not_equal_prunes():
    assert P.may_match(col("x") != 3, stats(x=(3, 3, 0, 10))) is False
    assert P.may_match(~col("x").isin([3]), stats(x=(3, 3, 0, 10))) is False


def test_all_null_column_prunes_comparisons_but_not_is_null():
    s = stats(x=(None, None, 10, 10))
    assert P.may_match(col("x") == 1, s) is False
    assert P.may_match(col("x").is_null(), s) is True


def test_incomparable_stats_keep_the_file():
    assert P.may_match(col("x") == "a", stats(x=(1, 10, 0, 10))) is True


def test_only_on_splits_and_tree():
    p = (col("dt") == "a") & (col("x") > 1) & (col("dt") != "b")
    part = P.only_on(p, {"dt"})
    assert P.columns(part) == {"dt"}
    assert P.only_on((col("dt") == "a") | (col("x") > 1), {"dt"}) is None


def test_to_arrow_filters_rows_with_sql_null_semantics():
    t = pa.table({"x": [1, 2, None, 4], "s": ["a", "b", "c", None]})
    assert t.filter(P.to_arrow(col("x") > 1)).column("x").to_pylist() == [2, 4]
    assert t.filter(P.to_arrow(~col("s").isin(["a"]))).column("s").to_pylist() == ["b", "c"]
    assert t.filter(P.to_arrow(col("x").is_null() | (col("s") == "a"))).num_rows == 2


def test_compare_with_none_is_an_error():
    with pytest.raises(ValueError):
        col("x") == None  # noqa: E711, B015
