"""Paimon's row tracking and data evolution (issue 32): the paimon-cpp fixtures read as pypaimon
reads them at every snapshot, with ``_ROW_ID`` / ``_SEQUENCE_NUMBER`` selectable; lakeformat's
appends, compactions and overwrites number rows as Paimon does, and pypaimon agrees both ways."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.errors import OptionError, SchemaError, UnsupportedError, UnsupportedOptionError
from lakeformat.read.scan import FileScan
from tests.oracle import run_oracle

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "paimon-java" / "parquet"
RT = "append_table_row_tracking_with_compact"
DE = "data_evolution_with_dense_stats"
FIXTURE_COLUMNS = ["f0", "f1", "f2", "f3", "_ROW_ID", "_SEQUENCE_NUMBER"]

# Operations run by pypaimon in one oracle process; rows come back as JSON lists of dicts.
ORACLE = r'''
import json, sys
import pyarrow as pa
import pyarrow.parquet as pq
from pypaimon import CatalogFactory, Schema

out = []
for op in json.load(open(sys.argv[1])):
    cat = CatalogFactory.create({"warehouse": op["warehouse"]})
    if op["op"] == "create":
        cat.create_database(op["table"].split(".")[0], True)
        cat.create_table(op["table"], Schema.from_pyarrow_schema(pq.read_schema(op["schema"]),
                         options=op["options"]), False)
        out.append(None)
        continue
    t = cat.get_table(op["table"])
    if op["op"] == "read":
        if op.get("snapshot") is not None:
            t = t.copy({"scan.snapshot-id": str(op["snapshot"])})
        rb = t.new_read_builder()
        if op.get("columns"):
            rb = rb.with_projection(op["columns"])
        out.append(rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist())
    elif op["op"] == "write":
        wb = t.new_batch_write_builder()
        if op.get("overwrite"):
            wb = wb.overwrite({})
        w, c = wb.new_write(), wb.new_commit()
        data = pq.read_table(op["data"])
        if op.get("write_cols"):
            w = w.with_write_type(op["write_cols"])
        w.write_arrow(data)
        c.commit(w.prepare_commit())
        w.close(); c.close()
        out.append(None)
    elif op["op"] == "update":   # some columns of existing rows, by _ROW_ID (pypaimon's data-evolution update)
        wb = t.new_batch_write_builder()
        data = pq.read_table(op["data"])
        msgs = wb.new_update().with_update_type(op["columns"]).update_by_arrow_with_row_id(data)
        c = wb.new_commit()
        c.commit(msgs)
        c.close()
        out.append(None)
print(json.dumps(out))
'''


def oracle(tmp_path: Path, ops: list[dict]) -> list:
    spec = tmp_path / f"ops-{len(list(tmp_path.glob('ops-*')))}.json"
    spec.write_text(json.dumps(ops))
    got = run_oracle(ORACLE, str(spec), timeout=240)
    assert isinstance(got, list), got
    return got


def copy_fixture(tmp_path: Path, name: str) -> lf.Table:
    shutil.copytree(FIXTURES / f"{name}.db", tmp_path / "wh" / f"{name}.db")
    return lf.Catalog(str(tmp_path / "wh")).get_table(f"{name}.{name}")


def rows(t: pa.Table) -> list[dict]:
    return t.to_pylist()


# ---------------------------------------------------------------- the paimon-cpp fixtures

@pytest.mark.slow
def test_row_tracking_fixture_reads_what_pypaimon_reads_at_every_snapshot(tmp_path):
    t = copy_fixture(tmp_path, RT)
    wh = str(tmp_path / "wh")
    snaps = [1, 2, 3, 4]
    theirs = oracle(tmp_path, [{"op": "read", "warehouse": wh, "table": f"{RT}.{RT}", "snapshot": s,
                                "columns": FIXTURE_COLUMNS} for s in snaps])
    for s, their in zip(snaps, theirs):
        ours = rows(t.read(columns=FIXTURE_COLUMNS, snapshot_id=s))
        if s == 4:
            # the compaction (snapshot 4) stored the rows' ids in the file and left _FIRST_ROW_ID unset:
            # Paimon's rule reads the stored ids; pypaimon 2.1 reads them as null
            assert [r["_ROW_ID"] for r in their] == [None] * 4
            their = [dict(r, _ROW_ID=i) for i, r in enumerate(their)]
        assert ours == their, s
    assert rows(t.read(snapshot_id=4)) == [
        {"f0": "Lily", "f1": 2, "f2": 12, "f3": 2.1}, {"f0": "Alice", "f1": 3, "f2": 13, "f3": 3.1},
        {"f0": "Bob", "f1": 4, "f2": 14, "f3": 4.1}, {"f0": "David", "f1": 5, "f2": 15, "f3": 5.1}]
    assert rows(t.read(columns=["_ROW_ID", "_SEQUENCE_NUMBER"])) == [
        {"_ROW_ID": i, "_SEQUENCE_NUMBER": 1 + i // 2} for i in range(4)]


@pytest.mark.slow
def test_data_evolution_fixture_merges_column_files_by_row_id_as_pypaimon(tmp_path):
    t = copy_fixture(tmp_path, DE)
    wh = str(tmp_path / "wh")
    theirs = oracle(tmp_path, [{"op": "read", "warehouse": wh, "table": f"{DE}.{DE}", "snapshot": s,
                                "columns": FIXTURE_COLUMNS} for s in (1, 2)])
    for s, their in zip((1, 2), theirs):
        assert rows(t.read(columns=FIXTURE_COLUMNS, snapshot_id=s)) == their, s
    # snapshot 2 wrote f2 and f3 of rows 0..1: f2 from the newer file, f0/f1 from the older one
    assert rows(t.read()) == [{"f0": "Lily", "f1": 2, "f2": 102, "f3": 2.1},
                              {"f0": "Alice", "f1": 4, "f2": 104, "f3": 3.1}]
    assert rows(t.read(snapshot_id=1, columns=["f3"])) == [{"f3": None}, {"f3": None}]
    # a filter applies to the merged rows (file statistics of a partial file do not prune)
    assert rows(t.read(columns=["f0"], filter=lf.col("f2") == 104)) == [{"f0": "Alice"}]


def test_system_columns_need_row_tracking(catalog):
    t = catalog.create_table("db.plain", pa.schema([("id", pa.int64())]))
    t.write(pa.table({"id": [1]}))
    with pytest.raises(SchemaError, match="_ROW_ID"):
        t.read(columns=["id", "_ROW_ID"])


# ---------------------------------------------------------------- writing row ids

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def batch(ids) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


@pytest.mark.slow
def test_lakeformat_appends_compacts_and_overwrites_with_paimons_row_ids(catalog, tmp_path):
    t = catalog.create_table("db.rt", SCHEMA, options={"row-tracking.enabled": "true"})
    t.write(batch(range(3)))
    t.write(batch(range(3, 5)))
    cols = ["id", "_ROW_ID", "_SEQUENCE_NUMBER"]
    expected = [{"id": i, "_ROW_ID": i, "_SEQUENCE_NUMBER": 1 if i < 3 else 2} for i in range(5)]
    assert rows(t.read(columns=cols)) == expected
    assert t.snapshot_manager.latest().next_row_id == 5
    t.compact(full=True)
    t = catalog.get_table("db.rt")
    latest = t.snapshot_manager.latest()
    assert latest.commit_kind == "COMPACT" and latest.next_row_id == 5
    live = [e.file for e in FileScan(t.ctx).live_entries(latest)]
    assert len(live) == 1 and live[0].first_row_id == 0 and "_ROW_ID" in live[0].write_cols
    assert rows(t.read(columns=cols)) == expected           # ids and versions survive the compaction
    t.write(batch([5]))
    expected.append({"id": 5, "_ROW_ID": 5, "_SEQUENCE_NUMBER": 4})
    assert rows(t.read(columns=cols)) == expected
    wh = str(Path(t.path).parents[1])
    theirs = oracle(tmp_path, [{"op": "read", "warehouse": wh, "table": "db.rt", "columns": cols}])
    assert sorted(theirs[0], key=lambda r: r["_ROW_ID"]) == expected
    # an overwrite's rows are new rows: new ids, after the highest given
    t.write(batch([7, 8]), overwrite=True)
    assert rows(t.read(columns=cols)) == [{"id": 7, "_ROW_ID": 6, "_SEQUENCE_NUMBER": 5},
                                          {"id": 8, "_ROW_ID": 7, "_SEQUENCE_NUMBER": 5}]
    assert t.snapshot_manager.latest().next_row_id == 8
    theirs = oracle(tmp_path, [{"op": "read", "warehouse": wh, "table": "db.rt", "columns": cols}])
    assert theirs[0] == rows(t.read(columns=cols))


@pytest.mark.slow
def test_lakeformat_reads_and_continues_pypaimons_row_tracking_table(tmp_path):
    wh = str(tmp_path / "wh")
    schema_file = tmp_path / "schema.parquet"
    import pyarrow.parquet as pq
    pq.write_table(SCHEMA.empty_table(), schema_file)
    for i, ids in enumerate((range(3), range(3, 7))):
        pq.write_table(batch(ids), tmp_path / f"d{i}.parquet")
    oracle(tmp_path, [{"op": "create", "warehouse": wh, "table": "db.p", "schema": str(schema_file),
                       "options": {"row-tracking.enabled": "true"}}]
           + [{"op": "write", "warehouse": wh, "table": "db.p", "data": str(tmp_path / f"d{i}.parquet")}
              for i in range(2)])
    t = lf.Catalog(wh).get_table("db.p")
    cols = ["id", "_ROW_ID", "_SEQUENCE_NUMBER"]
    assert rows(t.read(columns=cols)) == [{"id": i, "_ROW_ID": i, "_SEQUENCE_NUMBER": 1 if i < 3 else 2}
                                          for i in range(7)]
    t.write(batch([7]))
    t.compact(full=True)
    theirs = oracle(tmp_path, [{"op": "read", "warehouse": wh, "table": "db.p", "columns": cols}])
    ours = rows(lf.Catalog(wh).get_table("db.p").read(columns=cols))
    assert ours == sorted(theirs[0], key=lambda r: r["_ROW_ID"])
    assert [r["_ROW_ID"] for r in ours] == list(range(8)) and ours[-1]["_SEQUENCE_NUMBER"] == 3


def test_row_tracking_is_refused_on_primary_key_tables_and_data_evolution_needs_it(catalog):
    with pytest.raises(UnsupportedOptionError, match="primary-key"):
        catalog.create_table("db.pk", SCHEMA, primary_keys=["id"], options={"row-tracking.enabled": "true"})
    with pytest.raises(OptionError, match=r"row-tracking\.enabled"):
        catalog.create_table("db.de", SCHEMA, options={"data-evolution.enabled": "true"})
    with pytest.raises(OptionError, match="_ROW_ID"):
        catalog.create_table("db.clash", pa.schema([("_ROW_ID", pa.int64())]),
                             options={"row-tracking.enabled": "true"})


def test_compacting_a_data_evolution_table_merges_each_row_range_into_one_file(tmp_path):
    t = copy_fixture(tmp_path, DE)
    before = rows(t.read(columns=FIXTURE_COLUMNS))
    t.compact(full=True)
    latest = t.snapshot_manager.latest()
    assert latest.commit_kind == "COMPACT" and latest.next_row_id == 2
    live = [e.file for e in FileScan(t.ctx).live_entries(latest)]
    assert [(f.first_row_id, f.row_count, f.write_cols) for f in live] == [
        (0, 2, ("f0", "f1", "f2", "f3", "_ROW_ID", "_SEQUENCE_NUMBER"))]
    assert rows(t.read(columns=FIXTURE_COLUMNS)) == before
    t.compact(full=True)   # nothing left to merge
    assert t.snapshot_manager.latest().id == latest.id


# ---------------------------------------------------------------- data evolution: some columns of rows

WIDE = pa.schema([("id", pa.int64()), ("v", pa.string()), ("x", pa.float64())])
DE_OPTIONS = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}


def wide(ids) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "v": [f"v{i}" for i in ids], "x": [i / 2 for i in ids]}, schema=WIDE)


@pytest.mark.slow
def test_update_columns_writes_column_files_that_pypaimon_merges_the_same_way(catalog, tmp_path):
    t = catalog.create_table("db.de", WIDE, options=DE_OPTIONS)
    t.write(wide(range(3)))
    t.write(wide(range(3, 5)))
    t.update_columns(pa.table({"_ROW_ID": pa.array([4, 1], pa.int64()), "v": ["E", "B"]}))
    t.update_columns({"_ROW_ID": pa.array([1], pa.int64()), "x": [-1.0], "v": ["BB"]})
    cols = ["id", "v", "x", "_ROW_ID", "_SEQUENCE_NUMBER"]
    ours = rows(t.read(columns=cols))
    assert [(r["id"], r["v"], r["x"], r["_ROW_ID"]) for r in ours] == [
        (0, "v0", 0.0, 0), (1, "BB", -1.0, 1), (2, "v2", 1.0, 2), (3, "v3", 1.5, 3), (4, "E", 2.0, 4)]
    assert [r["_SEQUENCE_NUMBER"] for r in ours] == [4, 4, 4, 3, 3]   # the newest file of each range
    assert rows(t.read(columns=["_ROW_ID"])) == [{"_ROW_ID": i} for i in range(5)]   # from metadata alone
    assert t.read(columns=[]).num_rows == 5
    latest = t.snapshot_manager.latest()
    assert latest.next_row_id == 5 and latest.total_record_count == 5 + 5 + 3
    added = [e.file for e in FileScan(t.ctx).delta_entries(latest)]
    assert [(f.first_row_id, f.row_count, set(f.write_cols)) for f in added] == [(0, 3, {"v", "x"})]
    wh = str(Path(t.path).parents[1])
    theirs = oracle(tmp_path, [{"op": "read", "warehouse": wh, "table": "db.de", "columns": cols}])
    assert sorted(theirs[0], key=lambda r: r["_ROW_ID"]) == ours
    assert rows(t.read(columns=["id"], filter=lf.col("v") == "BB")) == [{"id": 1}]
    t.compact(full=True)   # each range's files merged into one; rows, ids and versions unchanged
    assert len(t.files()) == 2 and rows(t.read(columns=cols)) == ours
    t.update_columns({"_ROW_ID": pa.array([0], pa.int64()), "x": [8.0]})   # a compacted range takes updates
    ours = rows(t.read(columns=cols))
    assert ours[0]["x"] == 8.0 and ours[0]["_SEQUENCE_NUMBER"] == 6 and ours[1]["_SEQUENCE_NUMBER"] == 6
    theirs = oracle(tmp_path, [{"op": "read", "warehouse": wh, "table": "db.de", "columns": cols}])
    assert sorted(theirs[0], key=lambda r: r["_ROW_ID"]) == ours


@pytest.mark.slow
def test_lakeformat_reads_pypaimons_partial_column_writes(tmp_path):
    import pyarrow.parquet as pq
    wh = str(tmp_path / "wh")
    pq.write_table(WIDE.empty_table(), tmp_path / "schema.parquet")
    pq.write_table(wide(range(4)), tmp_path / "all.parquet")
    pq.write_table(pa.table({"_ROW_ID": pa.array([0, 3], pa.int64()), "x": [9.0, 9.5]}), tmp_path / "upd.parquet")
    pq.write_table(wide(range(4, 6)).select(["id", "v"]), tmp_path / "some.parquet")
    oracle(tmp_path, [
        {"op": "create", "warehouse": wh, "table": "db.p", "schema": str(tmp_path / "schema.parquet"),
         "options": DE_OPTIONS},
        {"op": "write", "warehouse": wh, "table": "db.p", "data": str(tmp_path / "all.parquet")},
        {"op": "update", "warehouse": wh, "table": "db.p", "data": str(tmp_path / "upd.parquet"), "columns": ["x"]},
        {"op": "write", "warehouse": wh, "table": "db.p", "data": str(tmp_path / "some.parquet"),
         "write_cols": ["id", "v"]}])
    cols = ["id", "v", "x", "_ROW_ID", "_SEQUENCE_NUMBER"]
    theirs = oracle(tmp_path, [{"op": "read", "warehouse": wh, "table": "db.p", "columns": cols, "snapshot": s}
                               for s in (1, 2, 3)])
    t = lf.Catalog(wh).get_table("db.p")
    for s, their in zip((1, 2, 3), theirs):
        assert rows(t.read(columns=cols, snapshot_id=s)) == sorted(their, key=lambda r: r["_ROW_ID"]), s
    assert [r["x"] for r in rows(t.read(columns=["x"]))] == [9.0, 0.5, 1.0, 9.5, None, None]
    # and lakeformat updates pypaimon's table in turn
    t.update_columns({"_ROW_ID": pa.array([5], pa.int64()), "x": [7.0]})
    assert rows(t.read(columns=["id", "x"], filter=lf.col("id") == 5)) == [{"id": 5, "x": 7.0}]
    theirs = oracle(tmp_path, [{"op": "read", "warehouse": wh, "table": "db.p", "columns": ["id", "x"]}])
    assert sorted(theirs[0], key=lambda r: r["id"]) == rows(t.read(columns=["id", "x"]))


def test_update_columns_refuses_what_it_cannot_do(catalog):
    t = catalog.create_table("db.de", WIDE, options=DE_OPTIONS)
    t.write(wide(range(3)))
    with pytest.raises(lf.errors.DataError, match="not rows"):
        t.update_columns({"_ROW_ID": pa.array([3], pa.int64()), "v": ["x"]})
    with pytest.raises(lf.errors.DataError, match="unique"):
        t.update_columns({"_ROW_ID": pa.array([1, 1], pa.int64()), "v": ["x", "y"]})
    with pytest.raises(SchemaError, match="nope"):
        t.update_columns({"_ROW_ID": pa.array([1], pa.int64()), "nope": ["x"]})
    plain = catalog.create_table("db.rt", WIDE, options={"row-tracking.enabled": "true"})
    plain.write(wide(range(2)))
    with pytest.raises(UnsupportedError, match=r"data-evolution\.enabled"):
        plain.update_columns({"_ROW_ID": pa.array([0], pa.int64()), "v": ["x"]})
    assert t.snapshot_manager.latest().id == 1


@pytest.mark.slow
def test_lakeformat_appends_to_and_compacts_the_fixtures_and_pypaimon_reads_them(tmp_path):
    wh = str(tmp_path / "wh")
    new = pa.table({"f0": ["Eve", "Finn"], "f1": pa.array([6, 7], pa.int32()), "f2": pa.array([16, 17], pa.int32()),
                    "f3": [6.1, 7.1]})
    rt = copy_fixture(tmp_path, RT)
    rt.write(new)
    rt.compact(full=True)
    de = copy_fixture(tmp_path, DE)
    de.write(new)
    de.compact(full=True)
    ours_rt = rows(lf.Catalog(wh).get_table(f"{RT}.{RT}").read(columns=FIXTURE_COLUMNS))
    ours_de = rows(lf.Catalog(wh).get_table(f"{DE}.{DE}").read(columns=FIXTURE_COLUMNS))
    assert [r["_ROW_ID"] for r in ours_rt] == list(range(6)) and [r["f0"] for r in ours_rt][-2:] == ["Eve", "Finn"]
    assert [(r["_ROW_ID"], r["_SEQUENCE_NUMBER"]) for r in ours_rt] == [(0, 1), (1, 1), (2, 2), (3, 2), (4, 5), (5, 5)]
    assert [(r["f2"], r["_ROW_ID"], r["_SEQUENCE_NUMBER"]) for r in ours_de] == [
        (102, 0, 2), (104, 1, 2), (16, 2, 3), (17, 3, 3)]
    theirs = oracle(tmp_path, [{"op": "read", "warehouse": wh, "table": f"{n}.{n}", "columns": FIXTURE_COLUMNS}
                               for n in (RT, DE)])
    assert sorted(theirs[0], key=lambda r: r["_ROW_ID"]) == ours_rt
    assert sorted(theirs[1], key=lambda r: r["_ROW_ID"]) == ours_de


def test_streamed_reads_and_what_data_evolution_refuses(catalog):
    t = catalog.create_table("db.de", WIDE, options=DE_OPTIONS)
    t.write(wide(range(3)))
    t.update_columns({"_ROW_ID": pa.array([2], pa.int64()), "v": ["C"]})
    batches = list(t.to_batches(columns=["v", "_ROW_ID"]))
    assert pa.Table.from_batches(batches).to_pylist() == [
        {"v": "v0", "_ROW_ID": 0}, {"v": "v1", "_ROW_ID": 1}, {"v": "C", "_ROW_ID": 2}]
    assert rows(t.read_incremental(0, 1)) == rows(wide(range(3)))   # an append of whole rows
    with pytest.raises(UnsupportedError, match="some columns of rows"):
        t.read_incremental(1, 2)   # a file of some columns alone is no rows
    with pytest.raises(OptionError, match="Iceberg"):
        catalog.create_table("db.ice", WIDE, options={**DE_OPTIONS, "metadata.iceberg.storage": "table-location"})


def test_an_update_whose_rows_an_overwrite_replaced_meanwhile_conflicts(catalog):
    from lakeformat.errors import CommitConflictError
    from lakeformat.write.update_columns import update_messages
    t = catalog.create_table("db.de", WIDE, options=DE_OPTIONS)
    t.write(wide(range(3)))
    messages = update_messages(t.ctx, t.latest_snapshot(), pa.table({"_ROW_ID": pa.array([1], pa.int64()),
                                                                       "v": ["B"]}))
    t.write(wide(range(10, 12)), overwrite=True)   # rows 0..2 are gone; 3..4 are new rows
    commit = t.new_commit()
    with pytest.raises(CommitConflictError, match="no live file holds"):
        commit.commit(messages)
    commit.abort(messages)
    assert rows(t.read(columns=["id", "v", "_ROW_ID"])) == [{"id": 10, "v": "v10", "_ROW_ID": 3},
                                                             {"id": 11, "v": "v11", "_ROW_ID": 4}]


def test_filters_on_the_system_columns_prune_files_by_row_id_range(catalog, tmp_path):
    t = catalog.create_table("db.rt", SCHEMA, options={"row-tracking.enabled": "true"})
    for lo in range(0, 9, 3):
        t.write(batch(range(lo, lo + 3)))
    plan = t.scan(filter=lf.col("_ROW_ID") >= 4).plan()
    assert sum(len(s.files) for s in plan) == 2   # ids 0..2 pruned by the file's row id range
    assert rows(t.read(columns=["id"], filter=lf.col("_ROW_ID") >= 4)) == [{"id": i} for i in range(4, 9)]
    assert rows(t.read(columns=["id", "_SEQUENCE_NUMBER"], filter=lf.col("_SEQUENCE_NUMBER") == 2)) == [
        {"id": i, "_SEQUENCE_NUMBER": 2} for i in range(3, 6)]
    t.compact(full=True)   # ids stored in the file: no pruning from metadata, same rows
    assert rows(t.read(columns=["id"], filter=(lf.col("_ROW_ID") > 6) | (lf.col("id") == 0))) == [
        {"id": 0}, {"id": 7}, {"id": 8}]
    de = catalog.create_table("db.de", WIDE, options=DE_OPTIONS)
    de.write(wide(range(3)))
    de.update_columns({"_ROW_ID": pa.array([1], pa.int64()), "v": ["B"]})
    assert rows(de.read(columns=["v"], filter=lf.col("_ROW_ID") == 1)) == [{"v": "B"}]


@pytest.mark.slow
def test_fixed_bucket_partitioned_tables_keep_row_ids_through_the_writers_compactions(catalog):
    """Row ids run across partitions and buckets in commit order, so a bucket's files are not
    contiguous: its compaction stores the ids in the file (Paimon's rule; pypaimon 2.1 reads such
    ids as null, as it does in the paimon-cpp fixture's compacted file)."""
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string())])
    t = catalog.create_table("db.fb", schema, partition_keys=["dt"], options={
        "row-tracking.enabled": "true", "bucket": "2", "bucket-key": "id", "compaction.min.file-num": "2"})
    seen = {}
    for k in range(5):
        t.write(pa.table({"id": list(range(k * 4, k * 4 + 4)), "dt": ["a", "b"] * 2}, schema=schema))
        now = {r["id"]: r["_ROW_ID"] for r in rows(t.read(columns=["id", "_ROW_ID"]))}
        assert all(now[i] == seen[i] for i in seen)   # ids never change
        seen = now
    assert sorted(seen.values()) == list(range(20)) and t.snapshot_manager.latest().next_row_id == 20
    kinds = [t.snapshot(i).commit_kind for i in range(1, t.snapshot_manager.latest().id + 1)]
    assert "COMPACT" in kinds


def test_row_tracking_is_chosen_at_creation(catalog):
    t = catalog.create_table("db.plain", SCHEMA)
    with pytest.raises(OptionError, match="cannot be changed"):
        t.alter(lf.SetOption("row-tracking.enabled", "true"))
    rt = catalog.create_table("db.rt", SCHEMA, options={"row-tracking.enabled": "true"})
    with pytest.raises(OptionError, match="cannot be changed"):
        rt.alter(lf.SetOption("data-evolution.enabled", "true"))
    with pytest.raises(SchemaError, match="_SEQUENCE_NUMBER"):
        rt.alter(lf.AddColumn("_SEQUENCE_NUMBER", pa.int64()))
    rt.alter(lf.SetOption("snapshot.num-retained.max", "50"))   # other options change as usual


def test_to_batches_streams_a_row_tracking_file_in_batches(catalog, monkeypatch):
    from lakeformat.read import split_read
    monkeypatch.setattr(split_read, "BATCH_ROWS", 1000)
    t = catalog.create_table("db.rt", SCHEMA, options={"row-tracking.enabled": "true"})
    t.write(batch(range(2500)))
    t.write(batch(range(2500, 2600)))
    got = list(t.to_batches(columns=["id", "_ROW_ID", "_SEQUENCE_NUMBER"]))
    assert [b.num_rows for b in got] == [1000, 1000, 500, 100]
    data = pa.Table.from_batches(got)
    assert data.column("_ROW_ID").to_pylist() == list(range(2600)) == data.column("id").to_pylist()
    assert set(data.column("_SEQUENCE_NUMBER").to_pylist()[2500:]) == {2}
