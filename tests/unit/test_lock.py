"""The catalog lock on SQLite and on a real PostgreSQL server: exclusion, timeout, stale locks,
release, real processes, and the catalog options that configure it."""
import logging
import multiprocessing
import threading
import time
import uuid

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.errors import LockTimeoutError, OptionError
from lakeformat.commit.lock import PostgresLock, SQLiteLock, lock_from_options
from tests.pg import postgres_dsn  # noqa: F401 (fixture)


@pytest.fixture(params=["sqlite", "postgres"])
def make_lock(request, tmp_path):
    """A factory of locks on one lock database (of either backend); keyword args are timings."""
    if request.param == "sqlite":
        path = str(tmp_path / "locks.sqlite")
        return lambda **timing: SQLiteLock(path, **timing)
    dsn = request.getfixturevalue("postgres_dsn")
    return lambda **timing: PostgresLock(dsn, **timing)


@pytest.fixture
def lock_id():
    return f"db.t-{uuid.uuid4().hex[:8]}"   # tests share the PostgreSQL server


def free(make_lock, lock_id) -> bool:
    """Whether ``lock_id`` can be taken right now (one try, no waiting)."""
    try:
        with make_lock(acquire_timeout=0).hold(lock_id):
            return True
    except LockTimeoutError:
        return False


def test_acquire_and_release(make_lock, lock_id):
    lock = make_lock()
    with lock.hold(lock_id):
        assert not free(make_lock, lock_id)
        assert free(make_lock, lock_id + "-other")   # ids are independent
    assert free(make_lock, lock_id)
    with lock.hold(lock_id):   # and again
        assert not free(make_lock, lock_id)


def test_second_holder_waits_for_release(make_lock, lock_id, caplog):
    caplog.set_level(logging.DEBUG, "lakeformat.commit.lock")
    lock = make_lock(check_max_sleep=0.02)
    held, events = threading.Event(), []

    def first():
        with lock.hold(lock_id):
            held.set()
            time.sleep(0.3)
            events.append(("released", time.monotonic()))

    t = threading.Thread(target=first)
    t.start()
    held.wait(5)
    with make_lock(check_max_sleep=0.02).hold(lock_id):
        events.append(("acquired", time.monotonic()))
    t.join()
    assert [e for e, _ in events] == ["released", "acquired"]
    assert any(r.levelname == "DEBUG" and "held by another committer" in r.getMessage() for r in caplog.records)


def test_timeout_names_the_lock_and_the_wait(make_lock, lock_id, caplog):
    with make_lock().hold(lock_id):
        started = time.monotonic()
        with pytest.raises(LockTimeoutError) as err, make_lock(acquire_timeout=0.3, check_max_sleep=0.05).hold(lock_id):
            pytest.fail("took a held lock")
        waited = time.monotonic() - started
    assert 0.3 <= waited < 1.5
    assert isinstance(err.value, lf.CommitError) and err.value.lock_id == lock_id
    assert lock_id in str(err.value) and "lock.acquire-timeout is 0.3 s" in str(err.value)
    assert any(r.levelname == "WARNING" and lock_id in r.getMessage() for r in caplog.records)


def test_stale_lock_is_taken_over_and_its_release_keeps_the_new_row(make_lock, lock_id):
    crashed = make_lock(ttl=0.2).hold(lock_id)
    crashed.__enter__()   # a holder that never comes back
    started = time.monotonic()
    with make_lock(ttl=0.2, check_max_sleep=0.05, acquire_timeout=5).hold(lock_id):
        assert time.monotonic() - started >= 0.15
        crashed.__exit__(None, None, None)   # late release: must not delete the new holder's row
        assert not free(make_lock, lock_id)
    assert free(make_lock, lock_id)


def test_release_when_the_body_raises(make_lock, lock_id):
    with pytest.raises(RuntimeError), make_lock().hold(lock_id):
        raise RuntimeError("boom")
    assert free(make_lock, lock_id)


def _increment(lock, lock_id: str, counter: str, times: int) -> None:
    for _ in range(times):
        with lock.hold(lock_id):
            with open(counter) as f:
                n = int(f.read())
            time.sleep(0.003)
            with open(counter, "w") as f:
                f.write(str(n + 1))


def test_processes_increment_a_counter_under_the_lock(make_lock, lock_id, tmp_path):
    counter = tmp_path / "counter"
    counter.write_text("0")
    lock = make_lock(check_max_sleep=0.02, acquire_timeout=30)
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_increment, args=(lock, lock_id, str(counter), 20)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * 4
    assert counter.read_text() == "80"


# -- options ---------------------------------------------------------------------------------------
def test_no_lock_unless_enabled(tmp_path):
    wh = str(tmp_path / "wh")
    assert lock_from_options(wh, {}) is None
    assert lock_from_options(wh, {"lock.enabled": "false", "lock.uri": "/x.sqlite"}) is None
    assert lf.Catalog(wh).lock is None
    assert lf.Catalog(wh, **{"lock.enabled": "false"}).lock is None


def test_local_warehouse_defaults_to_a_sqlite_file_in_it(tmp_path):
    wh = str(tmp_path / "wh")
    lock = lock_from_options(wh, {"lock.enabled": "true", "lock.acquire-timeout": "2 s",
                                  "lock.check-max-sleep": "100 ms", "lock.ttl": "1 min"})
    assert isinstance(lock, SQLiteLock) and lock.path == f"{wh}/lakeformat-lock.sqlite"
    assert (lock.acquire_timeout, lock.check_max_sleep, lock.ttl) == (2, 0.1, 60)
    assert lock_from_options("file://" + wh, {"lock.enabled": "true"}).path == f"{wh}/lakeformat-lock.sqlite"
    default = lock_from_options(wh, {"lock.enabled": "true"})
    assert (default.acquire_timeout, default.check_max_sleep, default.ttl) == (480, 8, 300)


def test_lock_type_follows_the_uri():
    pg = lock_from_options("s3://b/wh", {"lock.enabled": "true", "lock.uri": "postgresql://u:secret@h:5433/db"})
    assert isinstance(pg, PostgresLock) and "secret" not in repr(pg)
    lite = lock_from_options("s3://b/wh", {"lock.enabled": "true", "lock.uri": "/var/lock/lf.sqlite"})
    assert isinstance(lite, SQLiteLock) and lite.path == "/var/lock/lf.sqlite"


@pytest.mark.parametrize("options, message", [
    ({"lock.type": "mysql"}, "'lock.type': 'mysql' is not one of sqlite, postgres"),
    ({"lock.type": "postgres"}, "lock.type=postgres needs lock.uri"),
    ({"lock.type": "sqlite", "lock.uri": "postgresql://h/db"}, "is not a local SQLite file path"),
    ({"lock.enabled": "yes"}, "'lock.enabled': 'yes' is not 'true' or 'false'"),
    ({"lock.ttl": "5 parsecs"}, "'lock.ttl': '5 parsecs' is not a duration"),
    ({"lock.check-max-sleep": "0 s"}, "must be longer than 0"),
])
def test_bad_lock_options(tmp_path, options, message):
    with pytest.raises(OptionError, match=message):
        lock_from_options(str(tmp_path), {"lock.enabled": "true", **options})


def test_s3_warehouse_needs_an_explicit_lock_uri():
    with pytest.raises(OptionError, match=r"s3:// warehouse 's3://bucket/wh' needs lock.uri"):
        lf.Catalog("s3://bucket/wh", **{"lock.enabled": "true", "s3.endpoint": "http://127.0.0.1:1"})


def test_catalog_accepts_lock_options_and_rejects_unknown_ones(tmp_path):
    cat = lf.Catalog(str(tmp_path / "wh"), **{"lock.enabled": "true", "lock.ttl": "1 min"})
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("x", pa.int64())]))
    assert t.lock is cat.lock and cat.get_table("db.t").lock is cat.lock
    with pytest.raises(lf.LakeformatError, match=r"unknown catalog option\(s\) \['lock.timeout'\]; known: .*"
                                                 r"'lock.acquire-timeout'.*'lock.ttl'"):
        lf.Catalog(str(tmp_path / "wh"), **{"lock.timeout": "1 s"})
