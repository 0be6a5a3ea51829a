"""A warehouse on a disk that fills up: every failing call raises a StorageError naming what it
was writing and saying the disk is full; no temp file or half-written file stays behind; the
table stays readable at its last snapshot and takes writes again once there is room."""
import os
import subprocess
import uuid
from pathlib import Path

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.errors import StorageError

SCHEMA = pa.schema([("id", pa.int64()), ("text", pa.string())])


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MiB tmpfs (needs the right to mount, which CI's root has)."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if done.returncode:
        pytest.skip(f"cannot mount a small tmpfs here ({done.stderr.strip()}): the full-disk test needs it")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def batch(n: int) -> pa.Table:
    # incompressible text: every batch takes real space
    return pa.table({"id": list(range(n * 1000, n * 1000 + 1000)),
                     "text": [uuid.uuid4().hex * 4 for _ in range(1000)]}, schema=SCHEMA)


def leftovers(root: Path) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and p.name.endswith(".tmp")]


def test_a_full_disk_fails_writes_clearly_and_loses_nothing(small_disk):
    cat = lf.Catalog(str(small_disk / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, options={"file.compression": "none"})
    committed = 0
    error = None
    for n in range(200):
        try:
            t.write(batch(n))
            committed += 1
        except StorageError as e:
            error = e
            break
    assert error is not None, "the disk never filled up"
    assert "disk is full" in str(error) and str(small_disk) in str(error), str(error)
    assert leftovers(small_disk) == []
    fresh = cat.get_table("db.t")
    assert fresh.read().num_rows == 1000 * committed
    assert fresh.latest_snapshot().id == committed
    # every kind of metadata write hits the full disk the same way: a clear error, no temp file
    filler = small_disk / "filler"
    with pytest.raises(OSError), open(filler, "wb") as f:
        while True:
            f.write(os.urandom(1 << 16))
    for call in (lambda: fresh.create_tag("full"), lambda: fresh.consumers.reset("reader", 1),
                 lambda: fresh.write(batch(999))):
        with pytest.raises(StorageError, match="disk is full"):
            call()
        assert leftovers(small_disk) == []
    filler.unlink()
    assert {p.name for p in (small_disk / "wh").rglob("data-*.parquet")} == {f["file_name"] for f in fresh.files()}
    subprocess.run(["mount", "-o", "remount,size=16m", str(small_disk)], check=True)   # the disk grows
    assert fresh.write(batch(1000)).id == committed + 1
    assert cat.get_table("db.t").read().num_rows == 1000 * (committed + 1)
