"""Every table other Paimon writers made (tests/fixtures/paimon-java, see PROVENANCE.md) takes
lakeformat's appends and a full compaction, reads what it should afterwards, and pypaimon reads
the same rows (the Parquet warehouse: pypaimon reads no ORC manifests, and it does not implement
``scan.fallback-branch``, so fallback tables are checked by lakeformat's own rule)."""
from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

import lakeformat as lf
from tests.interop.helpers import Oracle, conform

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "paimon-java"
TABLES = sorted((wh.name, db.name[:-3]) for wh in FIXTURES.iterdir() if wh.is_dir() for db in wh.glob("*.db"))

pytestmark = pytest.mark.slow


def _rows(t: pa.Table) -> Counter:
    return Counter(json.dumps(r, sort_keys=True, default=str) for r in t.to_pylist())


def _copy(tmp_path: Path, warehouse: str) -> Path:
    wh = tmp_path / warehouse
    shutil.copytree(FIXTURES / warehouse, wh)
    for p in wh.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return wh


def test_the_fixtures_are_all_here():
    assert len(TABLES) == 15, TABLES


@pytest.mark.parametrize("warehouse,name", TABLES, ids=[f"{w}-{n}" for w, n in TABLES])
def test_lakeformat_appends_to_and_compacts_a_foreign_table(tmp_path, warehouse, name):
    wh = _copy(tmp_path, warehouse)
    t = lf.Catalog(str(wh)).get_table(f"{name}.{name}")
    before = t.read()
    fallback = "scan.fallback-branch" in t.schema.options
    # this branch's own rows: appending a fallback branch's rows would move partitions to main
    own = t.read_splits(t.scan(fallback=False).plan()) if fallback else before
    t.write(own)
    if t.schema.primary_keys:
        # the same keys again: the merge keeps one row each; and the compaction the write runs
        # also merges the level-0 files that a deletion-vector table's batch reads skip, so rows
        # may join (pypaimon checks them below), none may go
        t.compact(full=True)
        assert t.latest_snapshot().commit_kind == "COMPACT"
        after = t.read()
        assert not _rows(before) - _rows(after), "rows lost in the append and compaction"
    else:
        want = _rows(before) + _rows(own)
        assert _rows(t.read()) == want, "after the append"
        t.compact(full=True)
        after = t.read()
        assert _rows(after) == want, "after the full compaction"
    if warehouse != "parquet" or fallback:
        return
    oracle = Oracle(tmp_path / "oracle")
    i = oracle.read(str(wh), f"{name}.{name}", readers=("pypaimon",))
    res = oracle.run()
    got = conform(res.table(i, "pypaimon", after.schema), after.schema, "pypaimon")
    assert _rows(got) == _rows(after), "pypaimon reads other rows than lakeformat"
