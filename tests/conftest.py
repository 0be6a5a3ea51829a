from pathlib import Path

import polars  # noqa: F401  -- imported, so the tests decode with the compiled reader from the first manifest on
import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.cli.main import main as cli_main

# The fast loop is `pytest -m "not slow"`. Slow: whatever starts Spark, Airflow, a server (moto,
# PostgreSQL) or other processes: these folders whole, and elsewhere every test using a fixture
# that starts one; and the long property and crash tests of tests/unit named here (each takes
# 15-60 s: together they would double the loop). A test can also be marked @pytest.mark.slow.
SLOW_DIRS = {"spark", "airflow", "airflow_plugin", "integration", "interop"}
SLOW_FIXTURES = {"spark", "s3_endpoint", "postgres_dsn"}
SLOW_TESTS = {
    "unit/test_merge_tree_model.py::test_primary_key_table_matches_model",
    "unit/test_merge_function.py::test_matches_row_by_row_model",
    "unit/test_merge_function.py::test_merging_runs_separately_then_together_is_the_same",
    "unit/test_staging.py::test_crash_between_stage_and_publish_leaves_nothing_visible",   # a process dies
    "unit/test_rollback.py::test_a_kill_at_any_step_leaves_a_readable_table_and_a_rerun_finishes",
    "unit/test_bucket.py::test_buckets_match_pypaimon_fixed_bucket_extractor",   # pypaimon in .venv-oracle
}


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: starts Spark, Airflow, servers or processes; "
                                       'left out of the fast loop (pytest -m "not slow")')


def pytest_collection_modifyitems(config, items):
    tests = Path(__file__).parent
    for item in items:
        parts = Path(item.fspath).relative_to(tests).parts
        name = "/".join(parts) + "::" + getattr(item, "originalname", item.name)
        if ((len(parts) > 1 and parts[0] in SLOW_DIRS) or name in SLOW_TESTS
                or SLOW_FIXTURES & set(getattr(item, "fixturenames", ()))):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _short_in_flight_grace(monkeypatch):
    """Orphan removal without an age limit waits IN_FLIGHT_GRACE (5 s) for commits in flight
    before deleting; tests that run it in-process have no writer beside it. The race tests run
    it in processes of their own, with the real wait."""
    from lakeformat.maintenance import orphans
    monkeypatch.setattr(orphans, "IN_FLIGHT_GRACE", 0.05)


@pytest.fixture(autouse=True)
def _own_secrets():
    """Each test starts with the secrets registered before it and leaves none behind: a process
    masks every value it was given as a credential, so one test's secret (a word like the
    project's name) would mask another test's expected message."""
    from lakeformat import secrets
    before = set(secrets._registered)
    yield
    with secrets._lock:
        secrets._registered.intersection_update(before)


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


def id_rows(schema: pa.Schema, ids, **columns) -> pa.Table:
    """Test rows of ``schema``, one per id in its ``id`` column. Every other column named in
    ``columns`` holds that constant, or a text with ``{i}`` made for each id (``v="v{i}"``);
    columns not named are null."""
    ids = list(ids)
    data = {"id": ids}
    for name, value in columns.items():
        data[name] = ([value.format(i=i) for i in ids] if isinstance(value, str) and "{i}" in value
                      else [value] * len(ids))
    return pa.table({f.name: data.get(f.name, [None] * len(ids)) for f in schema}, schema=schema)


def run_cli(capsys, *argv) -> tuple:
    """The CLI in this process: (exit code, stdout, stderr); usage errors exit through
    argparse's SystemExit, whose code is returned like any other."""
    try:
        code = cli_main(list(argv))
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err
