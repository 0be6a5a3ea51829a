from pathlib import Path

import pyarrow as pa
import pytest

import lakeformat as lf

# The fast loop is `pytest -m "not slow"`. Slow: whatever starts Spark, Airflow, a server (moto,
# PostgreSQL) or other processes: these folders whole, and elsewhere every test using a fixture
# that starts one. A test can also be marked @pytest.mark.slow itself.
SLOW_DIRS = {"spark", "airflow", "airflow_plugin", "integration", "interop"}
SLOW_FIXTURES = {"spark", "s3_endpoint", "postgres_dsn"}


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: starts Spark, Airflow, servers or processes; "
                                       'left out of the fast loop (pytest -m "not slow")')


def pytest_collection_modifyitems(config, items):
    tests = Path(__file__).parent
    for item in items:
        parts = Path(item.fspath).relative_to(tests).parts
        if (len(parts) > 1 and parts[0] in SLOW_DIRS) or SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


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
