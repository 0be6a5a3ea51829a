"""``Catalog.rename_table`` (Spark's ``ALTER TABLE ... RENAME TO``): the table's directory moves,
its snapshots, files and tags come along (all named relative to the table); what cannot move in
one step is refused by name."""
import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.errors import UnsupportedError, UnsupportedOptionError
from tests.s3server import BUCKET, CREDS, s3_endpoint  # noqa: F401 (fixture)

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])


def test_rename_moves_the_table_with_its_history(catalog):
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["dt"])
    t.write(pa.table({"id": [1, 2], "dt": ["x", "y"]}, schema=SCHEMA))
    t.create_tag("v1")
    catalog.get_table("db.t").write(pa.table({"id": [3], "dt": ["x"]}, schema=SCHEMA))
    catalog.create_database("other")
    catalog.rename_table("db.t", "other.u")
    assert not catalog.table_exists("db.t") and catalog.list_tables("other") == ["u"]
    u = catalog.get_table("other.u")
    assert sorted(u.read()["id"].to_pylist()) == [1, 2, 3]
    assert sorted(u.read(tag="v1")["id"].to_pylist()) == [1, 2]
    u.write(pa.table({"id": [4], "dt": ["z"]}, schema=SCHEMA))
    assert catalog.get_table("other.u").read().num_rows == 4


def test_rename_refusals(catalog):
    catalog.create_table("db.t", SCHEMA)
    catalog.create_table("db.taken", SCHEMA)
    with pytest.raises(lf.AlreadyExistsError, match=r"db\.taken exists already"):
        catalog.rename_table("db.t", "db.taken")
    with pytest.raises(lf.NotFoundError, match="database 'nodb' does not exist"):
        catalog.rename_table("db.t", "nodb.t")
    with pytest.raises(lf.NotFoundError):
        catalog.rename_table("db.nope", "db.t2")
    with pytest.raises(lf.LakeformatError, match="names a branch"):
        catalog.rename_table("db.t$branch_b", "db.t2")
    catalog.create_table("db.ice", SCHEMA, options={"metadata.iceberg.storage": "table-location"})
    with pytest.raises(UnsupportedOptionError, match=r"metadata\.iceberg\.storage"):
        catalog.rename_table("db.ice", "db.ice2")
    assert catalog.list_tables("db") == ["ice", "t", "taken"]


@pytest.mark.slow
def test_rename_on_an_object_store_is_refused(s3_endpoint):
    cat = lf.Catalog(f"s3://{BUCKET}/wh-rename", **{"s3.endpoint": s3_endpoint, **CREDS})
    cat.create_database("db")
    cat.create_table("db.t", SCHEMA)
    with pytest.raises(UnsupportedError, match="object store"):
        cat.rename_table("db.t", "db.u")
    assert cat.table_exists("db.t") and not cat.table_exists("db.u")
