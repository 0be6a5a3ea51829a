import pyarrow as pa
import pytest

import lakeformat as lf


@pytest.fixture
def catalog(tmp_path):
    cat = lf.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat


EVENTS = pa.schema([("user_id", pa.int64()), ("behavior", pa.string()), ("price", pa.float64()),
                    ("dt", pa.string())])


def events(n: int, dt: str = "2024-01-01", start: int = 0) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"user_id": ids, "behavior": [["pv", "buy", "cart"][i % 3] for i in ids],
                     "price": [i * 1.5 for i in ids], "dt": [dt] * n}, schema=EVENTS)
