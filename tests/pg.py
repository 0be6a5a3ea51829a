"""A throwaway PostgreSQL server for tests: initdb into a temp dir, started on a free loopback port.

Test modules import the fixture (``from tests.pg import postgres_dsn``). A server that cannot
start fails the tests with its log, never skips them: the lock must be tested on a real server.
initdb refuses to run as root, so as root the server runs as the ``postgres`` system user in a
directory it owns (under /tmp, since pytest's own temp dirs are private to root).
"""
import glob
import os
import shutil
import socket
import subprocess
import tempfile

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _bindir() -> str:
    found = glob.glob("/usr/lib/postgresql/*/bin/initdb")
    if not found:
        pytest.fail("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): run `make setup`")
    return os.path.dirname(max(found, key=lambda p: int(p.split("/")[4])))


@pytest.fixture(scope="session")
def postgres_dsn():
    bindir, port = _bindir(), _free_port()
    root = tempfile.mkdtemp(prefix="lakeformat-pg-")
    data, logfile = os.path.join(root, "data"), os.path.join(root, "server.log")
    as_user = []
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(as_user + list(args), cwd=root, capture_output=True, text=True, timeout=60)

    def fail(step: str, proc: subprocess.CompletedProcess):
        log = open(logfile).read() if os.path.exists(logfile) else "(no server log)"
        pytest.fail(f"PostgreSQL {step} failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}\n"
                    f"server log:\n{log[-4000:]}", pytrace=False)

    try:
        proc = run(f"{bindir}/initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        if proc.returncode:
            fail("initdb", proc)
        proc = run(f"{bindir}/pg_ctl", "-D", data, "-l", logfile, "-w", "-t", "30", "-o",
                   f"-p {port} -h 127.0.0.1 -k {root} -c fsync=off", "start")
        if proc.returncode:
            fail("start", proc)
        try:
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            run(f"{bindir}/pg_ctl", "-D", data, "-m", "immediate", "-w", "stop")
    finally:
        shutil.rmtree(root, ignore_errors=True)
