"""The CLI given careless arguments: a warehouse that is not there, values JSON cannot hold,
negative limits. Each fails by name or prints valid output."""
import json

import pyarrow as pa
import pytest

import lakeformat as lf
from tests.conftest import run_cli as run


@pytest.mark.parametrize("verb", [["databases"], ["tables"], ["tables", "db"], ["snapshots", "db.t"]])
def test_a_warehouse_that_does_not_exist_is_an_error(tmp_path, capsys, verb):
    code, out, err = run(capsys, "--warehouse", str(tmp_path / "typo"), *verb)
    assert code == 1 and "warehouse" in err and "does not exist" in err and out == ""


def test_read_json_prints_valid_json_for_nan_and_infinity(catalog, capsys):
    t = catalog.create_table("db.f", pa.schema([("x", pa.float64()), ("y", pa.float32())]))
    t.write(pa.table({"x": [float("nan"), float("inf"), float("-inf"), 1.5],
                      "y": pa.array([float("nan"), 1.0, 2.0, float("inf")], pa.float32())}))
    code, out, _ = run(capsys, "--warehouse", catalog.warehouse, "read", "db.f", "--json")
    assert code == 0
    rows = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
    assert sorted(r["x"] if isinstance(r["x"], str) else str(r["x"]) for r in rows) == \
        ["-Infinity", "1.5", "Infinity", "NaN"]


@pytest.mark.parametrize("limit", ["-1", "-20", "x"])
def test_read_limit_must_not_be_negative(catalog, capsys, limit):
    t = catalog.create_table("db.t", pa.schema([("x", pa.int64())]))
    t.write(pa.table({"x": [1, 2, 3]}))
    code, out, err = run(capsys, "--warehouse", catalog.warehouse, "read", "db.t", "--limit", limit)
    assert code == 2 and "--limit" in err and out == ""


def test_cli_errors_mask_credentials(tmp_path, capsys):
    code, _, err = run(capsys, "--warehouse", str(tmp_path), "--option", "lock.enabled=true",
                       "--option", "lock.type=postgres", "--option", "lock.uri=mysql://u:s3cr3t-pw@h/d", "databases")
    assert code == 1 and "s3cr3t-pw" not in err and "u:***@h" in err


def test_read_limit_zero_prints_all(catalog, capsys):
    t = catalog.create_table("db.t", pa.schema([("x", pa.int64())]))
    t.write(pa.table({"x": list(range(30))}))
    code, out, _ = run(capsys, "--warehouse", catalog.warehouse, "read", "db.t", "--limit", "0", "--json")
    assert code == 0 and len(json.loads(out)) == 30
    assert isinstance(lf.Catalog(catalog.warehouse).get_table("db.t"), lf.Table)
