"""The catalog lock around snapshot creation (Paimon's JDBC catalog lock), on SQLite or PostgreSQL.

Object stores cannot rename atomically. lakeformat normally creates ``snapshot-N`` with a
conditional PUT; for stores without one, ``lock.enabled=true`` makes every committer take a lock
named after the table, check that ``snapshot-N`` is absent and write it plainly. The lock is a
row keyed by the lock id, so taking it is an INSERT only one client can win. The database's clock
(not the clients', which may disagree) decides when a row left behind by a crashed holder is
older than ``lock.ttl``; the next acquirer then deletes it. Every committer of a table must use
the same lock: one that writes with the conditional PUT meanwhile is not excluded.
"""
from __future__ import annotations

import datetime as dt
import logging
import os
import sqlite3
import time
import uuid
from contextlib import contextmanager
from typing import Optional
from collections.abc import Iterator, Mapping
from urllib.parse import urlparse

from lakeformat.errors import LockTimeoutError, OptionError
from lakeformat.format import options as O
from lakeformat.io.fileio import join
from lakeformat.secrets import mask

log = logging.getLogger(__name__)

LOCK_TABLE = "lakeformat_locks"
LOCK_TYPE = O.Option("lock.type", None, O.enum("sqlite", "postgres"),
                     "Lock database; unset: postgres for a postgresql:// lock.uri, else sqlite.")
LOCK_URI = O.Option("lock.uri", None, O.parse_str,
                    "SQLite file path or postgresql:// URI; sqlite default: <warehouse>/lakeformat-lock.sqlite.")
LOCK_TTL = O.Option("lock.ttl", dt.timedelta(minutes=5), O.parse_duration,
                    "A lock held longer than this is stale (its holder crashed) and may be taken over.")
LOCK_OPTIONS = (O.LOCK_ENABLED, LOCK_TYPE, LOCK_URI, O.LOCK_CHECK_MAX_SLEEP, O.LOCK_ACQUIRE_TIMEOUT, LOCK_TTL)
LOCK_OPTION_KEYS = tuple(o.key for o in LOCK_OPTIONS)
FIRST_SLEEP = 0.05   # seconds; doubled after each failed try, up to lock.check-max-sleep


class CatalogLock:
    """Mutual exclusion by lock id among every process that uses the same lock database.

    Subclasses supply a DB-API connection and their SQL dialect. A ``hold`` uses one connection
    of its own, so one instance can be shared by threads.
    """

    #: SQL, with the dialect's placeholders: create the table; delete the id's row if stale;
    #: insert (lock_id, lock_owner, expire_time_ms); delete (lock_id, lock_owner).
    create_sql = delete_stale_sql = insert_sql = release_sql = ""

    def __init__(self, acquire_timeout: float = 480.0, check_max_sleep: float = 8.0, ttl: float = 300.0):
        self.acquire_timeout, self.check_max_sleep, self.ttl = acquire_timeout, check_max_sleep, ttl
        self._table_ready = False

    def _connect(self):
        raise NotImplementedError

    def _is_duplicate(self, error: Exception) -> bool:
        raise NotImplementedError

    def _create_table(self, conn) -> None:
        conn.execute(self.create_sql)

    @contextmanager
    def hold(self, lock_id: str) -> Iterator[None]:
        """Hold the lock ``lock_id`` for the body; released even when the body raises."""
        owner = str(uuid.uuid4())
        conn = self._connect()
        try:
            if not self._table_ready:
                self._create_table(conn)
                self._table_ready = True
            self._acquire(conn, lock_id, owner)
            try:
                yield
            finally:
                self._release(conn, lock_id, owner)
        finally:
            conn.close()

    def _acquire(self, conn, lock_id: str, owner: str) -> None:
        started, sleep = time.monotonic(), min(FIRST_SLEEP, self.check_max_sleep)
        while not self._try_acquire(conn, lock_id, owner):
            waited = time.monotonic() - started
            if waited >= self.acquire_timeout:
                log.warning("gave up waiting for the catalog lock %r after %.1f s: another committer "
                            "kept holding it (lock.acquire-timeout=%s)", lock_id, waited, _secs(self.acquire_timeout))
                raise LockTimeoutError(lock_id, waited, self.acquire_timeout, self.ttl)
            log.debug("catalog lock %r is held by another committer; trying again in %.0f ms",
                      lock_id, sleep * 1000)
            time.sleep(min(sleep, self.acquire_timeout - waited))
            sleep = min(sleep * 2, self.check_max_sleep)
        waited = time.monotonic() - started
        if waited >= FIRST_SLEEP:
            log.debug("took the catalog lock %r after waiting %.2f s", lock_id, waited)

    def _try_acquire(self, conn, lock_id: str, owner: str) -> bool:
        """One INSERT of our row, after removing a stale row. The stale condition is re-checked
        by the DELETE itself, so a row an acquirer inserted just now is never removed."""
        if conn.execute(self.delete_stale_sql, (lock_id,)).rowcount:
            log.warning("removed the catalog lock %r: it was held longer than lock.ttl=%s, so its "
                        "holder probably crashed", lock_id, _secs(self.ttl))
        try:
            conn.execute(self.insert_sql, (lock_id, owner, int(self.ttl * 1000)))
            return True
        except Exception as e:
            if self._is_duplicate(e):
                return False
            raise

    def _release(self, conn, lock_id: str, owner: str) -> None:
        """Delete our row only: if it outlived the TTL, another committer may own the lock now.
        A failed release is logged, not raised, so it never hides the body's outcome; the row
        then expires after the TTL."""
        try:
            released = conn.execute(self.release_sql, (lock_id, owner)).rowcount
        except Exception as e:
            log.warning("could not release the catalog lock %r (%s); it frees itself after lock.ttl=%s",
                        lock_id, e, _secs(self.ttl))
            return
        if not released:
            log.warning("the catalog lock %r was no longer ours on release: it was held longer than "
                        "lock.ttl=%s and another committer may have taken it over", lock_id, _secs(self.ttl))


class SQLiteLock(CatalogLock):
    """The lock table in a SQLite file, for committers on one machine (or one shared disk
    with working POSIX locks)."""

    create_sql = (f"CREATE TABLE IF NOT EXISTS {LOCK_TABLE} ("
                  "lock_id VARCHAR(255) NOT NULL PRIMARY KEY, lock_owner VARCHAR(36) NOT NULL, "
                  "acquired_at TIMESTAMP NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')), "
                  "expire_time_ms BIGINT NOT NULL)")
    delete_stale_sql = (f"DELETE FROM {LOCK_TABLE} WHERE lock_id = ? AND "
                        "(julianday('now') - julianday(acquired_at)) * 86400000 > expire_time_ms")
    insert_sql = f"INSERT INTO {LOCK_TABLE} (lock_id, lock_owner, expire_time_ms) VALUES (?, ?, ?)"
    release_sql = f"DELETE FROM {LOCK_TABLE} WHERE lock_id = ? AND lock_owner = ?"
    BUSY_TIMEOUT = 30.0   # seconds a statement waits for another connection's write to finish

    def __init__(self, path: str, **timing: float):
        super().__init__(**timing)
        self.path = path

    def _connect(self) -> sqlite3.Connection:
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        return sqlite3.connect(self.path, timeout=self.BUSY_TIMEOUT, isolation_level=None)

    def _is_duplicate(self, error: Exception) -> bool:
        return isinstance(error, sqlite3.IntegrityError)

    def __repr__(self) -> str:
        return f"SQLiteLock({self.path!r})"


class PostgresLock(CatalogLock):
    """The lock table in PostgreSQL, for committers on many machines."""

    create_sql = (f"CREATE TABLE IF NOT EXISTS {LOCK_TABLE} ("
                  "lock_id VARCHAR(255) NOT NULL PRIMARY KEY, lock_owner VARCHAR(36) NOT NULL, "
                  "acquired_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(), "
                  "expire_time_ms BIGINT NOT NULL)")
    delete_stale_sql = (f"DELETE FROM {LOCK_TABLE} WHERE lock_id = %s AND "
                        "clock_timestamp() > acquired_at + expire_time_ms * INTERVAL '1 millisecond'")
    insert_sql = f"INSERT INTO {LOCK_TABLE} (lock_id, lock_owner, expire_time_ms) VALUES (%s, %s, %s)"
    release_sql = f"DELETE FROM {LOCK_TABLE} WHERE lock_id = %s AND lock_owner = %s"

    def __init__(self, dsn: str, **timing: float):
        super().__init__(**timing)
        self.dsn = dsn

    def _connect(self):
        import psycopg  # lazy: only PostgreSQL locks need the driver
        return psycopg.connect(self.dsn, autocommit=True, connect_timeout=10)

    def _create_table(self, conn) -> None:
        import psycopg.errors

        try:
            conn.execute(self.create_sql)
        except (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateTable):
            pass   # IF NOT EXISTS is not race-free in PostgreSQL: another client created it

    def _is_duplicate(self, error: Exception) -> bool:
        import psycopg.errors

        return isinstance(error, psycopg.errors.UniqueViolation)

    def __repr__(self) -> str:
        u = urlparse(self.dsn)
        return f"PostgresLock('{u.scheme}://{u.hostname}:{u.port or 5432}{u.path}')"   # no password


def _secs(seconds: float) -> str:
    return O.to_option_string("", dt.timedelta(seconds=seconds))


def _is_postgres_uri(uri: Optional[str]) -> bool:
    return bool(uri) and urlparse(uri).scheme in ("postgresql", "postgres")


def lock_from_options(warehouse: str, options: Mapping[str, str]) -> Optional[CatalogLock]:
    """The catalog lock the catalog options ask for, or None when ``lock.enabled`` is not true."""
    o = O.Options({k: v for k, v in options.items() if k in LOCK_OPTION_KEYS})
    if not o.get(O.LOCK_ENABLED):
        return None
    uri = o.get(LOCK_URI)
    kind = o.get(LOCK_TYPE) or ("postgres" if _is_postgres_uri(uri) else "sqlite")
    timing = dict(acquire_timeout=o.required(O.LOCK_ACQUIRE_TIMEOUT).total_seconds(),
                  check_max_sleep=o.required(O.LOCK_CHECK_MAX_SLEEP).total_seconds(),
                  ttl=o.required(LOCK_TTL).total_seconds())
    if timing["check_max_sleep"] <= 0 or timing["ttl"] <= 0:
        raise OptionError("options 'lock.check-max-sleep' and 'lock.ttl' must be longer than 0")
    if kind == "postgres":
        if uri is None or not _is_postgres_uri(uri):
            raise OptionError(f"lock.type=postgres needs lock.uri=postgresql://user@host:port/database, "
                              f"got {mask(repr(uri))}")
        return PostgresLock(uri, **timing)
    if uri is None:
        w = urlparse(warehouse)
        if w.scheme not in ("", "file"):
            raise OptionError(f"lock.enabled=true for the {w.scheme}:// warehouse {warehouse!r} needs lock.uri: "
                              "a local SQLite file path, or postgresql://... for a lock shared by machines")
        uri = join(w.path if w.scheme == "file" else warehouse, "lakeformat-lock.sqlite")
    elif urlparse(uri).scheme not in ("", "file"):
        raise OptionError(f"lock.uri {mask(repr(uri))} is not a local SQLite file path (lock.type=sqlite)")
    return SQLiteLock(urlparse(uri).path if uri.startswith("file:") else uri, **timing)
