"""Partition directory names follow Java Paimon's spelling (checked against pypaimon in interop)."""
import datetime as dt
from decimal import Decimal

import pytest

from lakeformat.format.partition import java_float_text, partition_path, partition_text
from lakeformat.format.types import DataField, type_from_json as parse_type


@pytest.mark.parametrize("value,text", [
    (1.0, "1.0"), (0.1, "0.1"), (-2.5, "-2.5"), (0.0, "0.0"), (-0.0, "-0.0"), (123456.789, "123456.789"),
    (1e7, "1.0E7"), (1e20, "1.0E20"), (1.5e-4, "1.5E-4"), (0.001, "0.001"), (9999999.0, "9999999.0"),
    (float("nan"), "NaN"), (float("-inf"), "-Infinity"), (12345678.9, "1.23456789E7"),
])
def test_double_text_is_javas(value, text):
    assert java_float_text(value) == text


def test_float_text_uses_single_precision_digits():
    assert java_float_text(0.1, single=True) == "0.1"       # not 0.10000000149011612
    assert java_float_text(3.4e38, single=True) == "3.4E38"


@pytest.mark.parametrize("type_,value,legacy,cast", [
    ("DATE", dt.date(2024, 2, 29), "19782", "2024-02-29"),
    ("DATE", dt.date(1969, 7, 20), "-165", "1969-07-20"),
    ("TIME", dt.time(1, 2, 3), "3723000", "01:02:03"),
    ("TIMESTAMP(3)", dt.datetime(2024, 1, 1, 12), "2024-01-01T12:00", "2024-01-01 12:00:00.000"),
    ("TIMESTAMP(6)", dt.datetime(2024, 1, 1, 12, 0, 5, 123000), "2024-01-01T12:00:05.123",
     "2024-01-01 12:00:05.123000"),
    ("TIMESTAMP(6)", dt.datetime(2024, 1, 1, 0, 0, 0, 1), "2024-01-01T00:00:00.000001", "2024-01-01 00:00:00.000001"),
    ("TIMESTAMP(9)", 1_000_000_007, "1970-01-01T00:00:01.000000007", "1970-01-01 00:00:01.000000007"),
    ("TIMESTAMP(0)", dt.datetime(2024, 1, 1, 0, 0, 30), "2024-01-01T00:00:30", "2024-01-01 00:00:30"),
    ("DECIMAL(10, 2)", Decimal("1.50"), "1.50", "1.50"),
    ("BOOLEAN", True, "true", "true"),
    ("BIGINT", -7, "-7", "-7"),
])
def test_partition_text_legacy_and_cast(type_, value, legacy, cast):
    t = parse_type(type_)
    assert partition_text(value, t, legacy=True) == legacy
    assert partition_text(value, t, legacy=False) == cast


def test_blank_null_and_escaped_values():
    fields = [DataField(0, "dt", parse_type("STRING")), DataField(1, "h/x", parse_type("STRING"))]
    assert partition_path(["a:b", None], fields, "__D__") == "dt=a%3Ab/h%2Fx=__D__"
    assert partition_path(["  ", "../x"], fields, "__D__") == "dt=__D__/h%2Fx=..%2Fx"
    assert partition_path(["\n", "#?*"], fields, "__D__") == "dt=__D__/h%2Fx=%23%3F%2A"
