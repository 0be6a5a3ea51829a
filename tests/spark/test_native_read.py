"""Native reads (``lfs.read_table``): Spark's Parquet reader over the files lakeformat planned
returns exactly the rows of lakeformat's own reader, for append tables, primary-key tables with
compacted and overlapping runs, deletion vectors (dropped by lakeformat's jar as Spark's reader
reads, or, in a session without the jar, by a filter on Spark's row index), evolved schemas and
filters."""
from __future__ import annotations

import datetime as dt
import json
import re
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pyarrow.compute as pc
import pytest

import lakeformat as lf
import lakeformat.spark as lfs
from lakeformat.pipeline.demo_data import SCHEMA as UB_SCHEMA, user_behavior
from lakeformat.spark import deleted_rows, jar
from lakeformat.spark.native_read import native_available, plan_read
from lakeformat.spark.native_write import session_confs
from tests.interop.helpers import assert_same_rows
from tests.spark.tables import deletion_vector_table
from tests.s3server import BUCKET, CREDS, s3_endpoint  # noqa: F401 (fixture)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "paimon-java"
DAYS = ["2024-06-01", "2024-06-02"]
KEY = ["user_id", "item_id", "ts"]


def no_nan(t: pa.Table) -> pa.Table:
    """NaN as -1 (NaN != NaN would fail a row comparison of equal rows)."""
    for i, f in enumerate(t.schema):
        if pa.types.is_floating(f.type):
            c = t.column(i)
            t = t.set_column(i, f, pc.if_else(pc.is_nan(c), -1.0, c))
    return t


def both_paths(spark, wh, name, **kw) -> tuple[pa.Table, pa.Table]:
    native = lfs.read_table(spark, name, warehouse=wh, **kw)
    python = lfs.read_table(spark, name, warehouse=wh, native=False, **kw)
    return no_nan(native.toArrow()), no_nan(python.toArrow())


def scan_text(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


@pytest.fixture(params=["jar", "row-index"])
def dv_reader(request, monkeypatch, spark) -> str:
    """How the native read drops deleted rows: through the jar's reader, or, as in a session
    without the jar, by Spark's row index and a bitmap literal."""
    if request.param == "row-index":
        monkeypatch.setattr(jar, "DELETION_VECTOR_READER", "lakeformat.spark.NoSuchReader")
    assert jar.loadable(spark, jar.DELETION_VECTOR_READER) == (request.param == "jar")
    return request.param


def test_append_table_native_read_equals_lakeformat_with_filters_and_evolution(spark, catalog):
    wh = catalog.warehouse
    t = catalog.create_table("db.ub", UB_SCHEMA, partition_keys=["dt"])
    first = user_behavior(2000, DAYS, seed=1)
    t.write(first)
    t.alter(lf.RenameColumn("behavior", "action"), lf.AddColumn("score", pa.float64()))
    second = user_behavior(1000, DAYS, seed=2).rename_columns(
        ["user_id", "item_id", "action", "price", "ts", "dt"]).append_column(
        "score", pa.array([float(i) if i % 7 else float("nan") for i in range(1000)]))
    t.write(second)
    t = catalog.get_table("db.ub")
    assert {f.schema_id for f in (e.file for e in t.live_entries(t.latest_snapshot()))} == {0, 1}

    native, python = both_paths(spark, wh, "db.ub")
    assert native.num_rows == 3000
    assert_same_rows(native, no_nan(t.read()), KEY, "native vs library")
    assert_same_rows(python, no_nan(t.read()), KEY, "python path vs library")

    f = (lf.col("dt") == "2024-06-02") & (lf.col("score") > 10.0) & lf.col("action").isin(["pv", "buy"])
    native, python = both_paths(spark, wh, "db.ub", filter=f, columns=["user_id", "action", "score"])
    expected = no_nan(t.read(filter=f, columns=["user_id", "action", "score"]))
    assert 0 < expected.num_rows < 1000
    assert_same_rows(native, expected, ["user_id", "action", "score"], "filtered native")
    assert_same_rows(python, expected, ["user_id", "action", "score"], "filtered python")

    # one partition's files only, and the filter pushed into Spark's Parquet scan
    df = lfs.read_table(spark, "db.ub", warehouse=wh, filter=lf.col("dt") == "2024-06-01")
    plan = scan_text(df)
    assert "FileScan parquet" in plan and "PushedFilters: [IsNotNull(dt), EqualTo(dt,2024-06-01)]" in plan
    assert "dt=2024-06-02" not in plan


def test_primary_key_native_read_of_compacted_and_overlapping_runs(spark, catalog):
    wh = catalog.warehouse
    schema = pa.schema([pa.field("id", pa.int64(), False), ("name", pa.string()), ("ts", pa.timestamp("ms"))])
    t = catalog.create_table("db.pk", schema, primary_keys=["id"], options={"bucket": "2"})
    base = dt.datetime(2024, 6, 1)

    def rows(ids, tag):
        return pa.table({"id": ids, "name": [f"{tag}{i}" for i in ids],
                         "ts": [base + dt.timedelta(seconds=i) for i in ids]}, schema=schema)
    t.write(rows(list(range(100)), "a"))
    t.delete(pa.table({"id": pa.array([3, 4], pa.int64())}))
    t.compact(full=True)
    t = catalog.get_table("db.pk")
    plan = plan_read(t, t.scan().plan())
    assert plan.native_files == 2 and not plan.merged    # compacted: one run per bucket
    native, python = both_paths(spark, wh, "db.pk")
    assert native.num_rows == 98
    assert_same_rows(native, t.read(), ["id"], "compacted native")
    assert_same_rows(python, t.read(), ["id"], "compacted python")

    t.write(rows(list(range(50, 150)), "b"))   # overlaps the compacted run: merged in Python
    t.delete(pa.table({"id": pa.array([60], pa.int64())}))
    t = catalog.get_table("db.pk")
    plan = plan_read(t, t.scan().plan())
    assert plan.merged
    native, python = both_paths(spark, wh, "db.pk", filter=lf.col("id") >= 40)
    expected = t.read(filter=lf.col("id") >= 40)
    assert expected.num_rows == 109
    assert_same_rows(native, expected, ["id"], "merged native")
    assert_same_rows(python, expected, ["id"], "merged python")


def test_only_files_that_may_hold_deletes_read_and_filter_their_row_kind(spark, catalog):
    """A compacted run holds no retractions (its manifest says 0): Spark reads its values alone.
    A level-0 file holding only the delete of a key no other file has is one sorted run read
    natively too, and its row kind drops that delete."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
    t = catalog.create_table("db.kinds", schema, primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": list(range(100)), "v": [f"a{i}" for i in range(100)]}, schema=schema))
    t.compact(full=True)
    t.delete(pa.table({"id": pa.array([1000], pa.int64())}))
    t = catalog.get_table("db.kinds")
    plan = plan_read(t, t.scan().plan())
    assert not plan.merged and sorted((g.key_value, len(g.paths)) for g in plan.native) == [(False, 1), (True, 1)]
    df = lfs.read_table(spark, "db.kinds", warehouse=catalog.warehouse)
    assert scan_text(df).count("_VALUE_KIND") >= 1 and scan_text(df).count("FileScan parquet") == 2
    assert sorted(df.toArrow()["id"].to_pylist()) == list(range(100))


def test_deletion_vector_tables_are_read_natively_with_their_vectors_applied(spark, catalog, dv_reader):
    """Spark reads the compacted files itself and drops the rows the vectors delete by their row
    index; with a filter pushed into the reader the positions still line up."""
    t = deletion_vector_table(catalog)
    plan = plan_read(t, t.scan().plan())
    assert plan.native_files > 0 and any(g.deletion_files for g in plan.native)
    expected = t.read()
    assert expected.num_rows == 2998
    assert expected.filter(pc.equal(expected["id"], 2))["v"].to_pylist() == ["B"]
    native, python = both_paths(spark, catalog.warehouse, "db.dv")
    assert_same_rows(native, expected, ["id"], "deletion vectors native")
    assert_same_rows(python, expected, ["id"], "deletion vectors python")
    where = lf.col("id") >= 1000
    native, _ = both_paths(spark, catalog.warehouse, "db.dv", filter=where)
    assert_same_rows(native, t.read(filter=where), ["id"], "deletion vectors native, filtered")


def test_unknown_column_is_refused(spark, catalog):
    catalog.create_table("db.e", UB_SCHEMA)
    with pytest.raises(lf.SchemaError, match="nope"):
        lfs.read_table(spark, "db.e", warehouse=catalog.warehouse, columns=["nope"])


def test_type_changes_beyond_widening_are_left_to_lakeformats_casts(catalog):
    """Spark's cast of 'nO' to BOOLEAN or of 2.9 to INT is not Paimon's: such files are merged."""
    schema = pa.schema([("id", pa.int32()), ("flag", pa.string()), ("n", pa.int32())])
    t = catalog.create_table("db.cast", schema)
    t.write(pa.table({"id": [1], "flag": ["nO"], "n": [1]}, schema=schema))
    t.alter(lf.UpdateColumnType("n", pa.int64()))                     # widening: Spark reads it
    t.write(pa.table({"id": [2], "flag": ["x"], "n": [2]}, schema=t.arrow_schema()))
    plan = plan_read(t, t.scan().plan())
    assert plan.native_files == 2 and not plan.merged
    t.alter(lf.UpdateColumnType("flag", pa.bool_()))
    plan = plan_read(t, t.scan().plan())
    assert plan.native_files == 0 and len(plan.merged) == 2


def test_tables_on_object_stores_are_read_through_lakeformat(spark, s3_endpoint):
    options = {**CREDS, "s3.endpoint": s3_endpoint, "s3.path-style-access": "true"}
    wh = f"s3://{BUCKET}/native-read"
    cat = lf.Catalog(wh, **options)
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table("db.s3", UB_SCHEMA, partition_keys=["dt"])
    t.write(user_behavior(500, DAYS, seed=4))
    assert native_available(t) is not None
    got = lfs.read_table(spark, "db.s3", warehouse=wh, filter=lf.col("dt") == DAYS[0], **options).toArrow()
    assert_same_rows(got, t.read(filter=lf.col("dt") == DAYS[0]), KEY, "s3")


def test_a_deletion_vector_table_written_by_paimon_java_is_read_natively(spark, tmp_path, dv_reader):
    """tests/fixtures/paimon-java (PROVENANCE.md): the rows paimon-cpp's
    TestWithPKWithDvBatchScanSnapshot6 states, through Spark's reader and the vectors Java wrote."""
    wh = tmp_path / "parquet"
    shutil.copytree(FIXTURES / "parquet", wh)
    name = "pk_table_scan_and_read_dv.pk_table_scan_and_read_dv"
    case = next(c for c in json.loads((FIXTURES / "expected.json").read_text())
                if c["table"] == name and c["snapshot"] == 6)
    catalog = lf.Catalog(str(wh))
    t = catalog.get_table(name)
    scan = t.scan(snapshot_id=6)
    plan = plan_read(scan.table, scan.plan())
    assert plan.native_files > 0 and any(g.deletion_files for g in plan.native)
    got = lfs.read_table(spark, name, warehouse=str(wh), snapshot_id=6, columns=case["columns"]).toArrow()
    assert sorted(map(tuple, (r.values() for r in got.to_pylist()))) == sorted(map(tuple, case["rows"]))


def test_deletion_vectors_beside_the_data_files_are_read_natively(spark, tmp_path, dv_reader):
    """``index-file-in-data-file-dir`` (paimon-cpp's pk_dv_index_in_data_no_external): the vector
    files sit in the bucket directories; Spark's read applies them as lakeformat's own read does."""
    wh = tmp_path / "parquet"
    name = "pk_dv_index_in_data_no_external"
    shutil.copytree(FIXTURES / "parquet" / f"{name}.db", wh / f"{name}.db")
    t = lf.Catalog(str(wh)).get_table(f"{name}.{name}")
    scan = t.scan()
    plan = plan_read(scan.table, scan.plan())
    assert plan.native_files > 0 and any(g.deletion_files for g in plan.native)
    got = lfs.read_table(spark, f"{name}.{name}", warehouse=str(wh)).toArrow()
    assert_same_rows(got, t.read(), ["f0", "f1", "f2"], name)
    assert "Tony" not in got.column("f0").to_pylist()


def test_deleted_positions_apply_to_their_own_file_only(spark, catalog, dv_reader):
    """One row deleted: its position is dropped in its file, and the row at the same position of
    the other bucket's file stays (a key of the position alone would drop both)."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
    t = catalog.create_table("db.dv1", schema, primary_keys=["id"],
                             options={"bucket": "2", "deletion-vectors.enabled": "true"})
    t.write(pa.table({"id": list(range(200)), "v": [f"a{i}" for i in range(200)]}, schema=schema))
    t.compact(full=True)
    t.delete(pa.table({"id": pa.array([0], pa.int64())}))
    t = catalog.get_table("db.dv1")
    plan = plan_read(t, t.scan().plan())
    assert [len(g.paths) for g in plan.native] == [2] and plan.native[0].deletion_files
    native = lfs.read_table(spark, "db.dv1", warehouse=catalog.warehouse).toArrow()
    assert sorted(native["id"].to_pylist()) == list(range(1, 200))


def test_the_vectors_are_not_printed_into_the_plan(spark, catalog, dv_reader):
    """The vectors of 200,000 rows (3,126 words) go into the plan as a read option of the jar's
    reader, or as one unsafe array literal: a boxed array literal printed every word into the plan
    description Spark builds on each execution."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.int64())])
    t = catalog.create_table("db.dvbig", schema, primary_keys=["id"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true"})
    n = 200_000
    t.write(pa.table({"id": pa.array(range(n), pa.int64()), "v": pa.array(range(n), pa.int64())}))
    t.compact(full=True)
    gone = list(range(5, n, 7))
    t.delete(pa.table({"id": pa.array(gone, pa.int64())}))
    df = lfs.read_table(spark, "db.dvbig", warehouse=catalog.warehouse)
    described = df._jdf.queryExecution().toString()
    assert len(described) < 20_000, len(described)
    assert (jar.DELETED_COLUMN if dv_reader == "jar" else "UnsafeArrayData") in described
    ids = df.toArrow()["id"].to_numpy()
    assert len(ids) == n - len(gone) and not set(gone) & set(ids.tolist())


def test_a_column_named_like_sparks_row_index_keeps_its_values(spark, catalog):
    """Spark's reader gives a file's own column of the row-index name instead of the positions,
    so files with one are read through lakeformat, and the column keeps its values."""
    name = deleted_rows.ROW_INDEX.upper()
    schema = pa.schema([pa.field("id", pa.int64(), False), (name, pa.int64())])
    t = catalog.create_table("db.dvname", schema, primary_keys=["id"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write(pa.table({"id": pa.array(range(100), pa.int64()), name: pa.array(range(1000, 1100), pa.int64())}))
    t.compact(full=True)
    t.delete(pa.table({"id": pa.array([0, 50], pa.int64())}))
    t = catalog.get_table("db.dvname")
    plan = plan_read(t, t.scan().plan())
    assert plan.native_files == 0 and plan.merged
    got = lfs.read_table(spark, "db.dvname", warehouse=catalog.warehouse).toArrow().sort_by("id")
    assert got["id"].to_pylist() == [i for i in range(100) if i not in (0, 50)]
    assert got[name].to_pylist() == [1000 + i for i in range(100) if i not in (0, 50)]


def test_bitmaps_set_the_bits_of_the_deleted_positions_and_refuse_positions_outside_the_file():
    words = deleted_rows.bitmap([0, 63, 64, 129], 130)
    assert len(words) == 3 and words.dtype == "int64"
    assert words[0] == (1 | (1 << 63)) - (1 << 64) and words[1] == 1 and words[2] == 2
    assert not deleted_rows.bitmap([], 64).any() and len(deleted_rows.bitmap([], 64)) == 2
    with pytest.raises(lf.LakeformatError, match="outside"):
        deleted_rows.bitmap([130], 130, "f.parquet")


def test_files_are_packed_into_scans_of_bounded_files_and_words_and_distinct_sizes():
    files = [("a", 10, 1), ("b", 10, 2), ("c", 10, 3), ("d", 50, 4), ("e", 1, 5)]
    assert deleted_rows.pack(files, max_files=2, max_words=100) == [["a", "b"], ["c", "d"], ["e"]]
    assert deleted_rows.pack(files, max_files=10, max_words=25) == [["a", "b"], ["c"], ["d"], ["e"]]
    same = [("a", 1, 7), ("b", 1, 8), ("c", 1, 7), ("d", 1, 9)]
    assert deleted_rows.pack(same, max_files=10, max_words=100) == [["a", "b"], ["c", "d"]]
    assert deleted_rows.pack([], max_files=2, max_words=10) == []


def test_many_files_with_vectors_read_in_several_scans_drop_positions_at_word_and_row_group_edges(
        spark, catalog, monkeypatch, dv_reader):
    """Six buckets, each file with a vector, packed four files to a scan: positions 0, 63, 64, the
    last row and those around the row-group boundary go, in the vectorised reader and the
    row-by-row one, with a filter Spark would push into the reader. By row index, every scan's
    bitmap offsets line up with Spark splitting each file into a task per row group (row indexes
    counted across row groups); the jar's reader, which counts positions, reads each file whole
    and pushes no filter into it. A file that is not the size its manifest records fails the read."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
    t = catalog.create_table("db.dvmany", schema, primary_keys=["id"],
                             options={"bucket": "6", "deletion-vectors.enabled": "true"})
    n = 120_000
    t.write(pa.table({"id": list(range(n)), "v": [f"a{i}" for i in range(n)]}, schema=schema))
    t.compact(full=True)
    t = catalog.get_table("db.dvmany")
    gone = set()
    for f in t.files():
        groups = pq.ParquetFile(f["path"]).metadata
        assert groups.num_row_groups == 2, "compaction wrote two row groups"
        edge = groups.row_group(0).num_rows
        ids = pq.read_table(f["path"], columns=["id"])["id"].to_pylist()
        gone.update(ids[p] for p in (0, 63, 64, edge - 1, edge, edge + 1, len(ids) - 1))
    t.delete(pa.table({"id": pa.array(sorted(gone), pa.int64())}))
    t = catalog.get_table("db.dvmany")
    plan = plan_read(t, t.scan().plan())
    assert plan.native_files == 6 and not plan.merged
    monkeypatch.setattr(deleted_rows, "MAX_FILES_PER_SCAN", 4)
    spark.conf.set("spark.sql.files.maxPartitionBytes", "2048")
    spark.conf.set("spark.sql.files.openCostInBytes", "0")
    try:
        df = lfs.read_table(spark, "db.dvmany", warehouse=catalog.warehouse)
        if dv_reader == "jar":
            assert scan_text(df).count("deleted rows marked by lakeformat") == 2
            assert df.rdd.getNumPartitions() == 6, "each file read whole"
        else:
            assert scan_text(df).count("FileScan parquet") == 2
            assert df.rdd.getNumPartitions() >= 12, "each file split into its row groups"
        native = df.toArrow()
        where = lf.col("id") < n // 2
        filtered = lfs.read_table(spark, "db.dvmany", warehouse=catalog.warehouse, filter=where)
        if dv_reader == "jar":   # Spark filters the rows the reader returns
            assert re.search(rf"Filter .*\(id#\d+L < {n // 2}\)", scan_text(filtered))
        else:
            assert f"LessThan(id,{n // 2})" in scan_text(filtered)
        filtered_ids = filtered.toArrow()["id"].to_pylist()
        spark.conf.set("spark.sql.parquet.enableVectorizedReader", "false")   # the row-by-row reader
        row_reader_ids = lfs.read_table(spark, "db.dvmany", warehouse=catalog.warehouse).toArrow()["id"].to_pylist()
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
        spark.conf.unset("spark.sql.files.openCostInBytes")
        spark.conf.unset("spark.sql.parquet.enableVectorizedReader")
    assert len(gone) == 42 and sorted(native["id"].to_pylist()) == sorted(set(range(n)) - gone)
    assert sorted(row_reader_ids) == sorted(set(range(n)) - gone)
    assert_same_rows(native, t.read(), ["id"], "many vectors")
    assert sorted(filtered_ids) == sorted(set(range(n // 2)) - gone)
    victim = t.files()[0]["path"]
    pq.write_table(pq.read_table(victim), victim, compression="zstd", row_group_size=100)   # another size
    with pytest.raises(Exception, match="not the size its manifest records"):
        lfs.read_table(spark, "db.dvmany", warehouse=catalog.warehouse).count()


def test_paths_with_spaces_quotes_and_escaped_partition_values_reach_sparks_reader(spark, tmp_path):
    """The scan's files cross into the JVM as one string split there: a warehouse path with
    spaces, quotes and non-ASCII letters, and partition values that the layout escapes ('/', '=',
    '%', ' '), read the same rows natively as through lakeformat."""
    wh = tmp_path / "ware house 'ü\"q"
    cat = lf.Catalog(str(wh))
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    t = cat.create_table("db.odd", schema, partition_keys=["p"])
    values = ["a/b", "k=v", "50%", "x y", "plain"]
    t.write(pa.table({"id": list(range(50)), "p": [values[i % 5] for i in range(50)]}, schema=schema))
    plan = plan_read(t, t.scan().plan())
    assert plan.native_files == 5 and not plan.merged
    native, python = both_paths(spark, str(wh), "db.odd")
    assert sorted(native["id"].to_pylist()) == list(range(50))
    assert_same_rows(native, python, ["id"], "odd paths")
    filtered = lfs.read_table(spark, "db.odd", warehouse=str(wh), filter=lf.col("p") == "a/b").toArrow()
    assert sorted(filtered["id"].to_pylist()) == list(range(0, 50, 5))


@pytest.mark.parametrize("mode", ["LEGACY", "EXCEPTION"])
def test_dates_and_instants_before_the_gregorian_switch_read_as_they_are_in_any_session(spark, catalog, mode):
    """Files lakeformat (or Paimon Java) writes carry no Spark version, so Spark's reader takes
    their calendar from the session: in LEGACY mode it shifted a date of 1500 nine days and an
    instant of the year 1000 six days back. The native read says the files are proleptic Gregorian."""
    schema = pa.schema([("id", pa.int64()), ("d", pa.date32()), ("ts", pa.timestamp("us")),
                        ("tz", pa.timestamp("us", tz="UTC"))])
    t = catalog.create_table("db.old", schema)
    t.write(pa.table({"id": [1, 2], "d": [dt.date(1500, 3, 1), dt.date(2024, 6, 1)],
                      "ts": [dt.datetime(1200, 1, 1, 12), dt.datetime(2024, 6, 1)],
                      "tz": [dt.datetime(1000, 6, 1, tzinfo=dt.UTC), dt.datetime(2024, 6, 1, tzinfo=dt.UTC)]},
                     schema=schema))
    assert plan_read(t, t.scan().plan()).native_files == 1
    with session_confs(spark, {"spark.sql.parquet.datetimeRebaseModeInRead": mode}):
        native = lfs.read_table(spark, "db.old", warehouse=catalog.warehouse).toArrow().sort_by("id")
    assert native["d"].to_pylist() == [dt.date(1500, 3, 1), dt.date(2024, 6, 1)]
    assert native["ts"].to_pylist() == [dt.datetime(1200, 1, 1, 12), dt.datetime(2024, 6, 1)]
    assert [v.replace(tzinfo=None) for v in native["tz"].to_pylist()] == [dt.datetime(1000, 6, 1),
                                                                          dt.datetime(2024, 6, 1)]


def test_a_corrupt_planned_file_fails_the_read_in_a_session_that_ignores_corrupt_files(spark, catalog):
    """Spark's ``ignoreCorruptFiles`` would return the rest of the table without a word: a file the
    snapshot lists is read or the read fails."""
    t = catalog.create_table("db.corrupt", pa.schema([("id", pa.int64())]))
    t.write(pa.table({"id": [1, 2]}))
    t.write(pa.table({"id": [3]}))
    victim = t.files()[0]["path"]
    Path(victim).write_bytes(b"not parquet" * 100)
    with session_confs(spark, {"spark.sql.files.ignoreCorruptFiles": "true"}), \
            pytest.raises(Exception, match=Path(victim).name):
        lfs.read_table(spark, "db.corrupt", warehouse=catalog.warehouse).collect()


def flip_in_dictionary(path: Path, column: str) -> None:
    """Flip a bit inside the dictionary page of ``column``: uncompressed, it still decodes, one value wrong."""
    rg = pq.ParquetFile(path).metadata.row_group(0)
    [chunk] = [rg.column(i) for i in range(rg.num_columns) if rg.column(i).path_in_schema == column]
    data = bytearray(path.read_bytes())
    data[chunk.dictionary_page_offset + 1000] ^= 1
    path.write_bytes(data)


def test_a_flipped_byte_in_a_page_fails_the_native_read(spark, catalog):
    """lakeformat writes page checksums and Spark's reader verifies them when a scan asks: a flip
    that would read as a wrong id fails the read, naming the file."""
    t = catalog.create_table("db.flipped", pa.schema([("id", pa.int64())]), options={"file.compression": "none"})
    t.write(pa.table({"id": list(range(5000))}))
    path = Path(t.files()[0]["path"])
    flip_in_dictionary(path, "id")
    with pytest.raises(Exception) as e:
        lfs.read_table(spark, "db.flipped", warehouse=catalog.warehouse).collect()
    assert path.name in str(e.value) and "checksum" in str(e.value).lower()


def test_a_flipped_byte_fails_the_native_read_of_a_file_with_a_deletion_vector(spark, catalog, dv_reader):
    schema = pa.schema([pa.field("id", pa.int64(), False)])
    t = catalog.create_table("db.flipped_dv", schema, primary_keys=["id"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true", "file.compression": "none"})
    t.write(pa.table({"id": list(range(5000))}, schema=schema))
    t.compact(full=True)
    t.delete(pa.table({"id": pa.array([0], pa.int64())}))
    t = catalog.get_table("db.flipped_dv")
    assert any(g.deletion_files for g in plan_read(t, t.scan().plan()).native)
    [path] = [Path(f["path"]) for f in t.files()]
    flip_in_dictionary(path, "id")
    with pytest.raises(Exception) as e:
        lfs.read_table(spark, "db.flipped_dv", warehouse=catalog.warehouse).collect()
    assert path.name in str(e.value) and "checksum" in str(e.value).lower()


@pytest.mark.slow
def test_a_data_evolution_table_reads_merged_by_row_id_on_both_paths(spark, tmp_path):
    """Files of some columns are never handed to Spark's reader as rows: the units are row id
    ranges, merged by lakeformat's reader."""
    wh = str(tmp_path / "wh")
    cat = lf.Catalog(wh)
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = cat.create_table("db.de", schema, options={"row-tracking.enabled": "true", "data-evolution.enabled": "true"})
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=schema))
    t.update_columns({"_ROW_ID": pa.array([1], pa.int64()), "v": ["B"]})
    plan = plan_read(t, t.scan().plan())
    assert plan.native == () and [len(u.files) for u in plan.merged] == [2]
    native, python = both_paths(spark, wh, "db.de")
    expected = t.read()
    assert expected.to_pylist() == [{"id": 1, "v": "a"}, {"id": 2, "v": "B"}, {"id": 3, "v": "c"}]
    for got in (native, python):
        assert sorted(got.to_pylist(), key=lambda r: r["id"]) == expected.to_pylist()
    df = spark.read.format("lakeformat").option("warehouse", wh).option("table", "db.de").load()
    assert sorted((r["id"], r["v"]) for r in df.collect()) == [(1, "a"), (2, "B"), (3, "c")]
