"""A lakeformat commit on top of a snapshot another engine wrote keeps what Paimon's committer
keeps: the watermark and log offsets, and the statistics file while it describes the table's
current schema (``format/snapshot.inherited``)."""
import json
from pathlib import Path

import pyarrow as pa

import lakeformat as lf


def _edit_snapshot(catalog, t, sid: int, **changes):
    """Snapshot ``sid`` of ``t`` as another engine would have written it; the table reloaded."""
    path = Path(t.path, "snapshot", f"snapshot-{sid}")
    d = json.loads(path.read_text())
    d.update(changes)
    path.write_text(json.dumps(d))
    return catalog.get_table(t.name)


def _statistics(t, name: str, schema_id: int) -> None:
    d = Path(t.path, "statistics")
    d.mkdir(exist_ok=True)
    (d / name).write_text(json.dumps({"snapshotId": 1, "schemaId": schema_id, "mergedRecordCount": 1,
                                      "mergedRecordSize": 10, "colStats": {}}))


def test_watermark_log_offsets_and_statistics_are_carried_forward(catalog):
    t = catalog.create_table("db.t", pa.schema([("id", pa.int64())]))
    t.write(pa.table({"id": [1]}))
    _statistics(t, "stats-a-0", 0)
    t = _edit_snapshot(catalog, t, 1, watermark=1_700_000_000_000, logOffsets={"0": 7}, statistics="stats-a-0")
    t.write(pa.table({"id": [2]}))
    s = t.snapshot_manager.get(2)
    assert (s.watermark, s.log_offsets, s.statistics) == (1_700_000_000_000, {"0": 7}, "stats-a-0")
    t.compact(full=True)   # every kind of commit
    s = t.snapshot_manager.get(3)
    assert (s.watermark, s.statistics) == (1_700_000_000_000, "stats-a-0")


def test_statistics_of_an_older_schema_or_unreadable_are_not_carried_forward(catalog):
    t = catalog.create_table("db.t", pa.schema([("id", pa.int64())]))
    t.write(pa.table({"id": [1]}))
    _statistics(t, "stats-a-0", 0)
    t = _edit_snapshot(catalog, t, 1, watermark=5, statistics="stats-a-0")
    t.alter(lf.AddColumn("note", pa.string()))   # schema 1: the statistics describe schema 0
    t.write(pa.table({"id": [2], "note": ["x"]}))
    s = t.snapshot_manager.get(2)
    assert (s.watermark, s.statistics) == (5, None)
    t = _edit_snapshot(catalog, t, 2, statistics="stats-gone-0")   # names a file that is not there
    t.write(pa.table({"id": [3], "note": ["y"]}))
    assert t.snapshot_manager.get(3).statistics is None
    assert t.read().num_rows == 3
