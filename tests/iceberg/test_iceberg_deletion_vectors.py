"""A primary-key table with deletion vectors: Iceberg readers see every file above level 0 with
each vector as a position delete file, so PyIceberg and DuckDB return exactly lakeformat's rows
at every retained snapshot, between full compactions too."""
import datetime as dt
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.table import StaticTable

import lakeformat as lf
from lakeformat.errors import OptionError
from lakeformat.io.iceberg import index_file_of
from lakeformat.io.index_files import IndexFiles
from lakeformat.maintenance.iceberg import iceberg_files, iceberg_sync
from lakeformat.maintenance.orphans import remove_orphan_files
from tests.iceberg.readers import (
    assert_same_everywhere,
    duckdb_rows,
    lakeformat_rows,
    metadata_path,
    pyiceberg_rows,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "paimon-java" / "parquet"
SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("name", pa.string()), pa.field("dt", pa.string(), False)])
DV = {"metadata.iceberg.storage": "table-location", "deletion-vectors.enabled": "true", "bucket": "2"}


def rows(ids, name, dt="d1"):
    return pa.table({"id": ids, "name": [f"{name}{i}" for i in ids], "dt": [dt] * len(ids)}, schema=SCHEMA)


def table_with_vectors(catalog):
    """A table whose last compaction marked updated rows in deletion vectors."""
    t = catalog.create_table("db.pk", SCHEMA, primary_keys=["id", "dt"], options=DV)
    t.write(rows(range(0, 20), "a"))
    t.compact(full=True)
    t.write(rows(range(0, 5), "b"))
    t.compact()
    return t


def delete_files(t) -> list[str]:
    return sorted(n for n in os.listdir(iceberg_files(t.ctx).dir) if n.endswith(".parquet"))


@pytest.mark.parametrize("bitmap64", ["false", "true"])
def test_updates_and_deletes_are_seen_through_position_deletes(catalog, bitmap64):
    t = catalog.create_table("db.pk", SCHEMA, partition_keys=["dt"], primary_keys=["id", "dt"],
                             options={**DV, "deletion-vectors.bitmap64": bitmap64})
    t.write(rows(range(0, 40), "a"))
    t.write(rows(range(0, 10), "b", "d2"))
    t.compact(full=True)
    t.write(rows(range(5, 15), "c"))              # updates of rows in the compacted files
    t.delete(pa.table({"id": [20, 21], "dt": ["d1", "d1"]}))
    t.compact()                                   # lookup compaction: deletion vectors on the old files
    index = t.latest_snapshot().index_manifest
    assert index, "the compaction wrote deletion vectors"
    assert delete_files(t), "their position delete files are published"
    latest = pyiceberg_rows(t)
    assert latest == lakeformat_rows(t) == duckdb_rows(t)
    assert {"id": 5, "name": "c5", "dt": "d1"} in latest and {"id": 5, "name": "a5", "dt": "d1"} not in latest
    assert not any(r["id"] in (20, 21) and r["dt"] == "d1" for r in latest)
    t.write(rows(range(30, 35), "e"))
    t.compact()
    assert_same_everywhere(t)


def test_full_compaction_and_expiration_remove_old_delete_files(catalog):
    t = catalog.create_table("db.pk", SCHEMA, partition_keys=["dt"], primary_keys=["id", "dt"], options={
        **DV, "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "3"})
    t.write(rows(range(0, 30), "a"))
    t.compact(full=True)
    for i in range(3):
        t.write(rows(range(i * 5, i * 5 + 5), f"u{i}"))
        t.compact()
        assert_same_everywhere(t)
    t.compact(full=True)                          # rewrites every vector away
    assert_same_everywhere(t)
    for i in range(3):                            # plain writes: the compacted view expires the rest
        t.write(rows([100 + i], "x", "d2"))
    assert_same_everywhere(t)
    assert delete_files(t) == []                  # no retained snapshot names a delete file any more
    # and orphan removal deletes nothing a version needs
    remove_orphan_files(t.ctx, older_than=dt.timedelta(0), allow_deleting_in_flight_files=True)
    assert_same_everywhere(t)


def test_orphan_removal_keeps_published_delete_files(catalog):
    t = table_with_vectors(catalog)
    before = delete_files(t)
    assert before
    leftover = os.path.join(iceberg_files(t.ctx).dir, "00000000-0000-0000-0000-000000000000-index-x-0.parquet")
    Path(leftover).write_bytes(b"left by a killed publish")
    remove_orphan_files(t.ctx, older_than=dt.timedelta(0), allow_deleting_in_flight_files=True)
    assert delete_files(t) == before
    assert pyiceberg_rows(t) == lakeformat_rows(t) == duckdb_rows(t)


def test_deletion_vectors_with_data_files_elsewhere_are_refused(catalog, tmp_path):
    with pytest.raises(OptionError, match=r"deletion-vectors\.enabled.*data-file\.external-paths"):
        catalog.create_table("db.pk", SCHEMA, primary_keys=["id", "dt"],
                             options={**DV, "data-file.external-paths": f"file://{tmp_path}/ext"})


def test_a_new_process_reuses_the_published_delete_files(catalog):
    t = table_with_vectors(catalog)
    before = delete_files(t)
    t.iceberg_cache.forget()                               # what a fresh process has not seen
    t.write(rows([50], "c", "d2"))                         # the vectors stay: their files are listed again
    assert delete_files(t) == before
    assert_same_everywhere(t)
    t.iceberg_cache.forget()
    index = t.latest_snapshot().index_manifest
    t.write(rows(range(0, 10), "d"))
    t.compact()                                            # the vectors change
    assert t.latest_snapshot().index_manifest != index
    live = {e.file.file_name for e in IndexFiles(t.io, t.path).read_manifest(t.latest_snapshot().index_manifest)}
    listed = {index_file_of(d.file_path) for task in StaticTable.from_metadata(metadata_path(t)).scan().plan_files()
              for d in task.delete_files}
    assert listed == live                                  # one delete file per live index file
    assert_same_everywhere(t)


@pytest.mark.parametrize("name", ["pk_table_scan_and_read_dv", "pk_table_with_dv_cardinality"])
def test_deletion_vectors_paimon_java_wrote_are_published(tmp_path, name):
    shutil.copytree(FIXTURES, tmp_path / "wh")
    t = lf.Catalog(str(tmp_path / "wh")).get_table(f"{name}.{name}")
    assert IndexFiles(t.io, t.path).read_manifest(t.latest_snapshot().index_manifest), "the fixture has vectors"
    t.alter(lf.SetOption("metadata.iceberg.storage", "table-location"))
    iceberg_sync(t.ctx)
    assert delete_files(t)
    assert_same_everywhere(t)


def test_switching_deletion_vectors_on_rebuilds_the_view(catalog):
    t = catalog.create_table("db.pk", SCHEMA, primary_keys=["id", "dt"],
                             options={"metadata.iceberg.storage": "table-location", "bucket": "2"})
    t.write(rows(range(0, 20), "a"))
    compacted = t.compact(full=True).id
    t.write(rows(range(0, 5), "b"))
    t.compact()                                   # files at levels below the top: not in this view
    assert pyiceberg_rows(t) == lakeformat_rows(t, compacted) != lakeformat_rows(t)
    t.alter(lf.SetOption("deletion-vectors.enabled", "true"))
    t.write(rows(range(10, 15), "c"))
    assert pyiceberg_rows(t) == lakeformat_rows(t) == duckdb_rows(t)
    # every retained snapshot was published again by the rule of deletion vectors
    summaries = [s.summary for s in StaticTable.from_metadata(metadata_path(t)).snapshots()]
    assert len(summaries) == len(t.snapshots()) and all(s.get("paimon.index-manifest") is not None for s in summaries)
