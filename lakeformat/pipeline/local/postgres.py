"""A PostgreSQL server of this machine's own, from the distribution's binaries (Debian's
``postgresql`` package, ``make postgres``): ``initdb`` into a directory once, then started on
a free loopback port with its socket in that directory, and stopped again.

``make airflow`` keeps Airflow's metadata database in one (SQLite locks up under a scheduler,
a DAG processor and an API server writing at once); the lock tests start a throwaway one.
initdb refuses to run as root, so as root the server runs as the ``postgres`` system user, in a
directory it owns.
"""
from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Optional

from lakeformat.errors import LakeformatError


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bindir() -> str:
    """The newest installed PostgreSQL's bin directory."""
    found = glob.glob("/usr/lib/postgresql/*/bin/initdb")
    if not found:
        raise LakeformatError("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): "
                              "run `make postgres` (Debian package postgresql)")
    return os.path.dirname(max(found, key=lambda p: int(p.split("/")[4])))


class LocalPostgres:
    """One server whose data lives in ``root/data`` (kept between starts) and whose log is
    ``root/server.log``; trust authentication, loopback only."""

    def __init__(self, root: str | os.PathLike, port: Optional[int] = None, durable: bool = True):
        self.durable = durable   # False: fsync off, for throwaway test data
        self.root = Path(root).resolve()
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = port
        self._bin = bindir()
        self._as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str, timeout: int = 120) -> subprocess.CompletedProcess:
        # stdin/out to files or DEVNULL: pg_ctl's server keeps inherited pipes open forever
        return subprocess.run(self._as_user + list(args), cwd=self.root, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout)

    def _fail(self, step: str, proc: subprocess.CompletedProcess):
        log = self.log.read_text()[-4000:] if self.log.exists() else "(no server log)"
        raise LakeformatError(f"PostgreSQL {step} in {self.root} failed (exit {proc.returncode}):\n"
                              f"{proc.stdout}\n{proc.stderr}\nserver log:\n{log}")

    def start(self) -> str:
        """initdb on first use, start the server (``pg_ctl`` detaches it from the terminal, so a
        Ctrl-C meant for its user does not reach it) and return its DSN."""
        self.root.mkdir(parents=True, exist_ok=True)
        if self._as_user:
            shutil.chown(self.root, "postgres", "postgres")
            if self._run("test", "-w", str(self.root)).returncode:
                raise LakeformatError(f"PostgreSQL runs as the postgres user (initdb refuses root), which cannot "
                                      f"reach {self.root}: use a directory whose parents others may enter")
        if not (self.data / "PG_VERSION").exists():
            proc = self._run(f"{self._bin}/initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust",
                             "-E", "UTF8", "--no-sync")
            if proc.returncode:
                self._fail("initdb", proc)
        self.port = self.port or free_port()
        server = f"-p {self.port} -h 127.0.0.1 -k {self.root}" + ("" if self.durable else " -c fsync=off")
        proc = self._run(f"{self._bin}/pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60",
                         "-o", server, "start")
        if proc.returncode:
            self._fail("start", proc)
        return self.dsn

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``fast``: disconnect clients, shut down cleanly; ``immediate``: for
        throwaway data). Stopping a server that is not running does nothing."""
        if (self.data / "postmaster.pid").exists():
            self._run(f"{self._bin}/pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")
