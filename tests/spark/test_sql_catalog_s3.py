"""lakeformat's Spark SQL catalog over a warehouse on S3 (moto's server): ``CREATE TABLE``,
``INSERT INTO`` and ``SELECT`` (filters, projections, time travel) through
``spark.sql.catalog.<name>.warehouse = s3://...`` with the ``s3.*`` storage options as
:class:`lakeformat.Catalog` takes them, checked with the library and with pypaimon (on a copy
of the warehouse); the credentials appear in no error, plan or log."""
from __future__ import annotations

import itertools
import json
import logging
import uuid

import pytest

import lakeformat as lf
from lakeformat.pipeline.demo_data import user_behavior
from lakeformat.spark.sql import CatalogPlanner, catalog_confs
from tests.interop.helpers import Oracle, assert_same_rows, check_readers
from tests.s3server import BUCKET, s3_endpoint  # noqa: F401 (fixture)
from tests.spark.test_cluster import download, s3_client

pytestmark = pytest.mark.slow
DAYS = ["2024-06-01", "2024-06-02", "2024-06-03"]
KEY = ["user_id", "item_id", "ts"]
_names = itertools.count()


@pytest.fixture
def s3_sql(spark, s3_endpoint):
    """A catalog of its own over a fresh warehouse in the bucket, with a secret key we can look for."""
    prefix = f"sql-{uuid.uuid4().hex[:8]}"
    secret = f"sql-secret-{uuid.uuid4().hex}"
    options = {"s3.endpoint": s3_endpoint, "s3.access-key": "sql-key", "s3.secret-key": secret,
               "s3.region": "us-east-1"}
    name = f"lfs3_{next(_names)}"
    wh = f"s3://{BUCKET}/{prefix}"
    for k, v in catalog_confs(name, wh, **options).items():
        spark.conf.set(k, v)
    return name, wh, options, prefix


def test_create_insert_and_select_on_s3(spark, s3_sql, tmp_path, caplog):
    name, wh, options, prefix = s3_sql
    secret = options["s3.secret-key"]
    caplog.set_level(logging.DEBUG, logger="lakeformat")
    spark.sql(f"CREATE TABLE {name}.db.ub (user_id BIGINT, item_id BIGINT, behavior STRING, price DOUBLE, "
              "ts TIMESTAMP_NTZ, dt STRING) PARTITIONED BY (dt) TBLPROPERTIES ('bucket' = '2', "
              "'bucket-key' = 'user_id')")
    data = user_behavior(1500, DAYS, seed=7)
    spark.createDataFrame(data.to_pandas(), spark.table(f"{name}.db.ub").schema).createOrReplaceTempView("ub_in")
    spark.sql(f"INSERT INTO {name}.db.ub SELECT * FROM ub_in")
    t = lf.Catalog(wh, **options).get_table("db.ub")
    assert t.latest_snapshot().id == 1
    assert_same_rows(t.read(), data.cast(t.read().schema), KEY, "library after INSERT INTO")
    assert_same_rows(spark.sql(f"SELECT * FROM {name}.db.ub").toArrow(), t.read(), KEY, "SELECT *")
    df = spark.sql(f"SELECT user_id, item_id, ts, price FROM {name}.db.ub WHERE dt = '2024-06-02' AND price > 10")
    expected = t.read(columns=["user_id", "item_id", "ts", "price"],
                      filter=(lf.col("dt") == "2024-06-02") & (lf.col("price") > 10.0))
    assert expected.num_rows > 0
    assert_same_rows(df.toArrow(), expected, KEY, "SELECT with a filter")
    spark.sql(f"INSERT INTO {name}.db.ub SELECT * FROM ub_in WHERE dt = '2024-06-01'")
    assert spark.table(f"{name}.db.ub").count() == data.num_rows + sum(d == DAYS[0] for d in data["dt"].to_pylist())
    assert spark.sql(f"SELECT * FROM {name}.db.ub VERSION AS OF 1").count() == data.num_rows
    plan = (df._jdf.queryExecution().toString()
            + spark.sql(f"EXPLAIN EXTENDED SELECT * FROM {name}.db.ub").collect()[0][0])

    # pypaimon reads the warehouse (a copy: the oracle reads local files)
    local = tmp_path / "copy"
    download(s3_client(options["s3.endpoint"], {"s3.access-key": "sql-key", "s3.secret-key": secret}), prefix, local)
    oracle = Oracle(tmp_path / "oracle")
    i = oracle.read(str(local), "db.ub")
    check_readers(oracle.run(), i, t.read(), KEY, what="INSERT INTO on S3")

    assert "PythonScan" in plan or "Python" in plan, plan   # lakeformat's reader in the Python workers
    assert secret not in plan and secret not in caplog.text


def test_planner_errors_mask_the_credentials(s3_endpoint):
    """An answer that would repeat a credential (here a database named like the secret key, the
    simplest error that echoes one) says ``***``; a wrong option names the key, not its value."""
    secret = f"plan-secret-{uuid.uuid4().hex}"
    opts = {"warehouse": f"s3://{BUCKET}/masked-{uuid.uuid4().hex[:6]}", "s3.endpoint": s3_endpoint,
            "s3.access-key": "k", "s3.secret-key": secret, "s3.region": "us-east-1"}
    planner = CatalogPlanner(None)
    answer = json.loads(planner.dropDatabase(json.dumps(opts), secret, False))
    assert answer == {"dropped": False}
    answer = json.loads(planner.createDatabase(json.dumps(opts), "ok"))
    answer = json.loads(planner.createDatabase(json.dumps(opts), "ok"))
    assert "error" in answer
    answer = json.loads(planner.tables(json.dumps(opts), secret))
    assert "error" in answer and secret not in answer["error"] and "***" in answer["error"], answer
    answer = json.loads(planner.namespaces(json.dumps({**opts, "s3.secret-keys": secret})))
    assert "error" in answer and "s3.secret-keys" in answer["error"] and secret not in answer["error"], answer
