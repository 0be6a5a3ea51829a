"""A misspelt verb or table gets the closest names ("did you mean"), from a real warehouse."""
import pytest

import lakeformat as lf
from lakeformat.cli.suggest import closest
from tests.conftest import EVENTS, events, run_cli as run


@pytest.fixture
def wh(tmp_path):
    path = str(tmp_path / "wh")
    cat = lf.Catalog(path)
    cat.create_database("sales")
    for name in ("orders", "order_items", "customers"):
        cat.create_table(f"sales.{name}", EVENTS).write(events(3, "2024-01-01"))
    return path


def test_closest_names_best_first():
    assert closest("snapshot", ["snapshots", "schemas", "expire-snapshots", "read"]) == ["snapshots",
                                                                                        "expire-snapshots"]
    assert closest("ORDERS", ["orders"]) == ["orders"]          # case does not hide a match
    assert closest("zzz", ["orders", "customers"]) == []


@pytest.mark.parametrize("argv, hint", [
    (["snapshots", "sales.ordres"], "(did you mean 'sales.orders'"),
    (["show", "sale.customers"], "(did you mean 'sales.customers'"),
    (["read", "sales.order_item"], "(did you mean 'sales.order_items'"),
    (["files", "shop.zzz"], ""),                                   # nothing close: no guess
])
def test_a_misspelt_table(wh, capsys, argv, hint):
    code, out, err = run(capsys, "--warehouse", wh, *argv)
    assert code == 1 and out == ""
    assert f"table {argv[1]} does not exist" in err
    assert (hint in err) if hint else "did you mean" not in err


def test_a_misspelt_verb(wh, capsys):
    code, _, err = run(capsys, "--warehouse", wh, "snapshot", "sales.orders")
    assert code == 2
    assert "unknown verb 'snapshot' (did you mean 'snapshots'" in err
    code, _, err = run(capsys, "--warehouse", wh, "xyzzy", "sales.orders")
    assert code == 2 and "invalid choice: 'xyzzy'" in err and "did you mean" not in err


def test_an_existing_table_with_a_missing_snapshot_gets_no_table_guess(wh, capsys):
    code, _, err = run(capsys, "--warehouse", wh, "read", "sales.orders", "--snapshot", "99")
    assert code == 1 and "99" in err and "did you mean" not in err
