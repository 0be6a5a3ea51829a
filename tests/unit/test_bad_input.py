"""Bad input gets a clear error naming what is wrong, and loses nothing."""
import os
from pathlib import Path

import pyarrow as pa
import pytest

import lakeformat as lf
from tests.conftest import EVENTS, events


def data_files(root) -> list[Path]:
    return [p for p in Path(root).rglob("*.parquet")]


@pytest.fixture
def table(catalog):
    t = catalog.create_table("db.t", EVENTS, partition_keys=["dt"])
    t.write(events(10))
    return t


def test_missing_and_extra_columns_name_them(table):
    bad = events(3).drop_columns(["price"]).append_column("oops", pa.array([1, 2, 3]))
    with pytest.raises(lf.DataError, match=r"missing \['price'\].*unexpected \['oops'\]"):
        table.write(bad)
    assert len(table.snapshots()) == 1 and len(data_files(table.path)) == 1


def test_wrong_type_names_the_column(table):
    bad = events(3).set_column(0, "user_id", pa.array(["a", "b", "c"]))
    with pytest.raises(lf.DataError, match="column 'user_id': expected BIGINT"):
        table.write(bad)
    assert len(data_files(table.path)) == 1


def test_safe_widening_casts_are_accepted(table):
    ok = events(3).set_column(0, "user_id", pa.array([1, 2, 3], pa.int32()))
    table.write(ok)
    assert table.read().num_rows == 13


def test_null_into_not_null_column(catalog):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = catalog.create_table("db.nn", schema)
    with pytest.raises(lf.DataError, match=r"'id' is NOT NULL.*1 null"):
        t.write(pa.table({"id": [1, None], "v": ["a", "b"]}))
    assert t.snapshots() == [] and data_files(t.path) == []


def test_failure_in_a_later_batch_leaves_no_files(catalog):
    t = catalog.create_table("db.t", EVENTS, partition_keys=["dt"])
    good = events(5).to_batches()[0]
    bad = pa.RecordBatch.from_arrays([*good.columns[:2], pa.array(["x"] * 5), good.column(3)],
                                     names=good.schema.names)
    with pytest.raises(lf.DataError, match="price"):
        t.write(pa.RecordBatchReader.from_batches(good.schema, iter([good, bad])))
    assert t.snapshots() == [] and data_files(t.path) == []


@pytest.mark.parametrize("name", ["", "a/b", "..", ".", "a b", "x\x00", "../etc", "a.b", "/abs"])
def test_invalid_database_names(catalog, name):
    with pytest.raises(lf.InvalidNameError):
        catalog.create_database(name)


@pytest.mark.parametrize("ident", ["db", "db.", "db.a/b", "db...", "db.../x", "../db.t", "db. t"])
def test_invalid_table_identifiers(catalog, ident, tmp_path):
    with pytest.raises(lf.InvalidNameError):
        catalog.create_table(ident, EVENTS)
    assert sorted(os.listdir(tmp_path / "wh")) == ["db.db"]


def test_unknown_database_and_table(catalog):
    with pytest.raises(lf.NotFoundError, match="database 'nope'"):
        catalog.create_table("nope.t", EVENTS)
    with pytest.raises(lf.NotFoundError, match=r"db.missing"):
        catalog.get_table("db.missing")
    with pytest.raises(lf.NotFoundError):
        catalog.list_tables("nope")
    with pytest.raises(lf.AlreadyExistsError):
        catalog.create_database("db")


def test_options_are_validated(catalog):
    with pytest.raises(lf.OptionError, match=r"'bukcet'.*did you mean 'bucket'"):
        catalog.create_table("db.t", EVENTS, options={"bukcet": "2"})
    with pytest.raises(lf.OptionError, match="option 'bucket': 'abc' is not an integer"):
        catalog.create_table("db.t", EVENTS, options={"bucket": "abc"})
    with pytest.raises(lf.OptionError, match="target-file-size"):
        catalog.create_table("db.t", EVENTS, options={"target-file-size": "big"})
    assert not catalog.table_exists("db.t")
    t = catalog.create_table("db.t", EVENTS, options={"bucket": 2, "bucket-key": "user_id",
                                                      "fields.price.aggregate-function": "sum"})
    assert t.options["bucket"] == "2"


def test_schema_definition_errors(catalog):
    with pytest.raises(lf.SchemaError, match="partition key 'nope'"):
        catalog.create_table("db.t", EVENTS, partition_keys=["nope"])
    with pytest.raises(lf.SchemaError, match="must include all partition keys"):
        catalog.create_table("db.t", EVENTS, partition_keys=["dt"], primary_keys=["user_id"])
    with pytest.raises(lf.SchemaError, match="bucket key"):
        catalog.create_table("db.t", EVENTS, options={"bucket": "2", "bucket-key": "nope"})
    with pytest.raises(lf.SchemaError, match="duplicate"):
        catalog.create_table("db.t", pa.schema([("a", pa.int32()), ("a", pa.int64())]))


def test_bad_schema_changes(table):
    with pytest.raises(lf.SchemaError, match="partition"):
        table.alter(lf.DropColumn("dt"))
    with pytest.raises(lf.SchemaError, match="Paimon has no cast between them"):
        table.alter(lf.UpdateColumnType("user_id", pa.date32()))
    with pytest.raises(lf.SchemaError, match="exists already"):
        table.alter(lf.AddColumn("price", pa.int32()))
    with pytest.raises(lf.OptionError):
        table.alter(lf.SetOption("bucket", "x"))
    assert table.schema.id == 0 and table.read().num_rows == 10


@pytest.fixture
def three_snapshots(catalog):
    t = catalog.create_table("db.t", EVENTS, partition_keys=["dt"])
    for i in range(3):
        t.write(events(10, f"d{i}", start=i * 10))
    return t


def fresh(t):
    return lf.Catalog(str(Path(t.path).parents[1])).get_table("db.t")


def test_corrupt_latest_snapshot_names_the_file(three_snapshots):
    t = three_snapshots
    Path(t.snapshot_manager.path(3)).write_text("{not json")
    with pytest.raises(lf.CorruptFileError, match="snapshot-3"):
        fresh(t).read()
    assert fresh(t).read(snapshot_id=2).num_rows == 20


def test_missing_manifest_names_the_file(three_snapshots):
    t = three_snapshots
    s3 = t.snapshot(3)
    from lakeformat.io.manifests import ManifestList
    metas = ManifestList(t.io, t.path).read(s3.delta_manifest_list)
    victim = Path(t.path) / "manifest" / metas[0].file_name
    victim.unlink()
    with pytest.raises(lf.CorruptFileError, match=metas[0].file_name):
        fresh(t).read()
    assert fresh(t).read(snapshot_id=2).num_rows == 20


def test_corrupt_manifest_list_names_the_file(three_snapshots):
    t = three_snapshots
    victim = Path(t.path) / "manifest" / t.snapshot(3).delta_manifest_list
    victim.write_bytes(b"garbage")
    with pytest.raises(lf.CorruptFileError, match=victim.name):
        fresh(t).read()
    assert fresh(t).read(snapshot_id=2).num_rows == 20


def test_missing_or_corrupt_data_file_names_the_file(three_snapshots):
    t = three_snapshots
    files = {f["partition"]["dt"]: f["path"] for f in t.files()}
    Path(files["d2"]).unlink()
    with pytest.raises(lf.CorruptFileError, match=Path(files["d2"]).name):
        fresh(t).read()
    Path(files["d1"]).write_bytes(b"not parquet at all")
    with pytest.raises(lf.CorruptFileError, match=Path(files["d1"]).name):
        fresh(t).read(snapshot_id=2)
    assert fresh(t).read(snapshot_id=1).num_rows == 10
    assert fresh(t).read(filter=lf.col("dt") == "d0").num_rows == 10


def test_commit_of_missing_files_is_refused(catalog):
    t = catalog.create_table("db.t", EVENTS)
    w = t.new_write()
    w.write(events(3))
    msgs = w.prepare_commit()
    for f in Path(t.path).rglob("*.parquet"):
        f.unlink()
    with pytest.raises(lf.CommitError, match="does not exist"):
        t.new_commit().commit(msgs)
    assert t.snapshots() == []
