"""A throwaway PostgreSQL server for tests (lakeformat.pipeline.local.postgres.LocalPostgres in a temp dir).

Test modules import the fixture (``from tests.pg import postgres_dsn``). A server that cannot
start fails the tests with its log, never skips them: the lock must be tested on a real server.
The directory is under /tmp: as root the server runs as the ``postgres`` user, and pytest's own
temp dirs are private to root.
"""
import shutil
import tempfile

import pytest

from lakeformat.errors import LakeformatError
from lakeformat.pipeline.local.postgres import LocalPostgres


@pytest.fixture(scope="session")
def postgres_dsn():
    root = tempfile.mkdtemp(prefix="lakeformat-pg-")
    server = LocalPostgres(root, durable=False)
    try:
        try:
            dsn = server.start()
        except LakeformatError as e:
            pytest.fail(str(e), pytrace=False)
        try:
            yield dsn
        finally:
            server.stop("immediate")
    finally:
        shutil.rmtree(root, ignore_errors=True)
