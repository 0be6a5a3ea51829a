"""Iceberg metadata follows main only: commits to a branch publish nothing, and a fast-forward
(which replaces main's snapshots from the branch's first one on) is published so that Iceberg
readers read what lakeformat reads at every snapshot."""
import pytest
from pyiceberg.table import StaticTable

from lakeformat.maintenance.iceberg import iceberg_files
from tests.conftest import EVENTS, events
from tests.iceberg.readers import lakeformat_rows, metadata_path, pyiceberg_rows

ON = {"metadata.iceberg.storage": "table-location"}
pytestmark = pytest.mark.slow


def _same(rows_a, rows_b):
    return sorted(map(str, rows_a)) == sorted(map(str, rows_b))


def test_branch_commits_publish_nothing_and_fast_forward_is_published(catalog):
    t = catalog.create_table("db.t", EVENTS, partition_keys=["dt"], options=ON)
    t.write(events(2))
    t.write(events(2, start=10))
    t.branches.create("b", from_snapshot=1)
    b = t.branches.table("b")
    b.write(events(3, start=100))
    b.write(events(1, start=200))
    assert iceberg_files(t.ctx).current_version() == 2          # the branch's snapshots 2 and 3 are not main's
    t.branches.fast_forward("b")
    st = StaticTable.from_metadata(metadata_path(t))
    assert st.current_snapshot().snapshot_id == 3
    for sid in (1, 2, 3):
        assert _same(pyiceberg_rows(t, sid), lakeformat_rows(t, sid)), sid
