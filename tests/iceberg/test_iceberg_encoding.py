"""Manifest entries written field by field (and their reused bytes) are exactly what fastavro
writes from Iceberg's Avro schema, for every partition type and every shape of entry."""
from __future__ import annotations

import datetime as dt
import decimal

import fastavro
import pytest

from lakeformat.format import types as T
from lakeformat.format.iceberg import manifest as M

PARTITION_VALUES = [
    (T.atomic("BOOLEAN"), [True, False]),
    (T.atomic("TINYINT"), [-128, 7]),
    (T.atomic("SMALLINT"), [-300, 300]),
    (T.atomic("INT"), [-(2 ** 31), 2 ** 31 - 1, 0]),
    (T.atomic("BIGINT"), [-(2 ** 63), 2 ** 63 - 1]),
    (T.atomic("FLOAT"), [1.5, float("nan"), -0.0]),
    (T.atomic("DOUBLE"), [2.25, float("inf")]),
    (T.atomic("DATE"), [dt.date(1969, 12, 31), dt.date(2024, 2, 29)]),
    (T.atomic("TIMESTAMP", 6), [dt.datetime(2024, 1, 2, 3, 4, 5, 6)]),
    (T.atomic("TIMESTAMP_LTZ", 3), [dt.datetime(1960, 1, 1, 0, 0, 0, 1000, tzinfo=dt.UTC)]),
    (T.atomic("VARCHAR", 20), ["", "dt=2024-01-01", "ünïcødé"]),
    (T.atomic("CHAR", 3), ["abc"]),
    (T.atomic("VARBINARY", 9), [b"", b"\x00\xff"]),
    (T.atomic("DECIMAL", 10, 2), [decimal.Decimal("-12345678.90"), decimal.Decimal("0.01")]),
    (T.atomic("DECIMAL", 38, 0), [decimal.Decimal(10 ** 37)]),
]


def _fastavro(partition, entry) -> bytes:
    return M.encode(M.manifest_schema(partition), entry)


@pytest.mark.parametrize("t,values", PARTITION_VALUES, ids=[str(t) for t, _ in PARTITION_VALUES])
def test_entries_are_written_as_fastavro_writes_them(t, values):
    partition = (M.PartitionField("p", 1000, t), M.PartitionField("q", 1001, T.atomic("INT")))
    metrics = [({}, {}, {}), ({1: 0, 2: 5}, {1: b"a", 2: b"\x00" * 16}, {1: b"z", 2: b"\xff" * 16})]
    for value in values + [None]:
        for nulls, lower, upper in metrics:
            data = M.data_file(f"/w/db.db/t/p={value}/bucket-0/data-1.parquet", [value, 3], partition,
                               2 ** 40, 7, nulls, lower, upper)
            for status in (M.EXISTING, M.ADDED, M.DELETED):
                for sid, seq in ((1, 1), (2 ** 40, 5), (None, None)):
                    e = {"status": status, "snapshot_id": sid, "sequence_number": seq,
                         "file_sequence_number": seq, "data_file": data}
                    encoder = M.EntryEncoder(partition)
                    assert encoder(e) == _fastavro(partition, e)
                    assert encoder(e) == _fastavro(partition, e)   # its kept bytes


def test_optional_lists_and_maps_of_entries_read_back():
    partition = (M.PartitionField("p", 1000, T.atomic("INT")),)
    data = M.data_file("/x.parquet", [1], partition, 1, 2, {}, {}, {})
    data.update(column_sizes=[{"key": 1, "value": 10}], value_counts=[], split_offsets=[4, 2 ** 33],
                equality_ids=[], sort_order_id=0, key_metadata=b"k")
    e = M.entry(M.ADDED, 1, 1, 1, data)
    assert M.EntryEncoder(partition)(e) == _fastavro(partition, e)
    written = M.write_manifest(partition, [e, {**e, "status": M.EXISTING}], {"format-version": "2"}, "snappy")
    back = list(fastavro.reader(__import__("io").BytesIO(written)))
    assert [r["status"] for r in back] == [M.ADDED, M.EXISTING]
    assert back[0]["data_file"]["split_offsets"] == [4, 2 ** 33]


def test_kept_bytes_follow_a_changed_status_and_snapshot():
    partition = (M.PartitionField("p", 1000, T.atomic("VARCHAR", 10)),)
    encoder = M.EntryEncoder(partition, kept=2)
    data = [M.data_file(f"/f{i}.parquet", ["a"], partition, 1, 1, {1: 0}, {1: b"a"}, {1: b"b"}) for i in range(4)]
    entries = [M.entry(M.ADDED, 1, 1, 1, d) for d in data]
    for e in entries:
        encoder(e)
    for e in entries:   # two were forgotten (kept=2), two are reused
        for changed in ({**e, "status": M.EXISTING}, {**e, "status": M.DELETED, "snapshot_id": 9}, e):
            assert encoder(changed) == _fastavro(partition, changed)
