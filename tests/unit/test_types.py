import pyarrow as pa
import pytest

from lakeformat.format import types as T
from lakeformat.errors import SchemaError

ATOMIC = ["BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT NOT NULL", "FLOAT", "DOUBLE", "DATE",
          "DECIMAL(10, 2)", "DECIMAL(38, 10)", "CHAR(3)", "VARCHAR(20)", "STRING", "BINARY(4)",
          "VARBINARY(9)", "BYTES", "TIME(0)", "TIMESTAMP(3)", "TIMESTAMP(6)", "TIMESTAMP(9)",
          "TIMESTAMP(3) WITH LOCAL TIME ZONE"]


@pytest.mark.parametrize("text", ATOMIC)
def test_atomic_json_round_trip(text):
    assert T.type_to_json(T.type_from_json(text)) == text


def test_nested_json_round_trip():
    j = {"type": "ROW NOT NULL", "fields": [
        {"id": 7, "name": "a", "type": {"type": "ARRAY", "element": "INT NOT NULL"}},
        {"id": 8, "name": "m", "type": {"type": "MAP", "key": "STRING NOT NULL", "value": "DOUBLE"}}]}
    t = T.type_from_json(j)
    assert T.type_to_json(t) == j
    assert not t.nullable and t.fields[0].type.element.nullable is False


@pytest.mark.parametrize("arrow", [
    pa.bool_(), pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.float32(), pa.float64(),
    pa.date32(), pa.decimal128(12, 3), pa.string(), pa.binary(), pa.time32("ms"),
    pa.timestamp("ms"), pa.timestamp("us"), pa.timestamp("ns"), pa.timestamp("us", tz="UTC"),
    pa.list_(pa.field("element", pa.int64())), pa.struct([("x", pa.int32()), ("y", pa.string())]),
    pa.map_(pa.string(), pa.float64()),
])
def test_arrow_round_trip(arrow):
    back = T.to_arrow(T.from_arrow(arrow))
    assert back.equals(arrow) or (pa.types.is_map(arrow) and str(back) == str(arrow))


def test_aliases_and_defaults():
    assert T.type_from_json("INTEGER") == T.atomic("INT")
    assert T.type_from_json("DECIMAL") == T.atomic("DECIMAL", 10, 0)
    assert T.type_from_json("TIMESTAMP") == T.atomic("TIMESTAMP", 6)


@pytest.mark.parametrize("bad", ["FOO", "DECIMAL(50, 2)", "TIMESTAMP(12)", "INT(3)", 42])
def test_bad_types_are_rejected(bad):
    with pytest.raises(SchemaError):
        T.type_from_json(bad)


@pytest.mark.parametrize("old,new,ok", [
    ("INT", "BIGINT", True), ("TINYINT", "INT", True), ("BIGINT", "INT", False),
    ("FLOAT", "DOUBLE", True), ("DOUBLE", "FLOAT", False), ("INT", "DOUBLE", True),
    ("INT", "STRING", False), ("VARCHAR(5)", "STRING", True), ("STRING", "VARCHAR(5)", False),
    ("DECIMAL(10, 2)", "DECIMAL(12, 2)", True), ("DECIMAL(10, 2)", "DECIMAL(10, 3)", False),
    ("INT", "DECIMAL(12, 2)", True), ("TIMESTAMP(3)", "TIMESTAMP(6)", True),
])
def test_widening(old, new, ok):
    assert T.can_widen(T.type_from_json(old), T.type_from_json(new)) is ok
