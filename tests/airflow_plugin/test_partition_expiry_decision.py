"""The partition expiration operator decides from the table's own options, not from the YAML
it was created by: a ``partition.expiration-time`` set by ALTER after creation expires
partitions, and a table without one (nor an ``expiration_time`` argument) keeps them all."""
from __future__ import annotations

import pyarrow as pa

import lakeformat as lf
from lakeformat.pipeline.airflow.operators import LakeformatExpirePartitionsOperator
from tests.airflow_plugin.conftest import connection_json

SCHEMA = pa.schema([("user_id", pa.int64()), ("dt", pa.string())])


def test_the_tables_own_expiration_time_decides(tmp_path, monkeypatch):
    wh = str(tmp_path / "wh")
    monkeypatch.setenv("AIRFLOW_CONN_LAKEFORMAT_DEFAULT", connection_json(wh))
    cat = lf.Catalog(wh)
    cat.create_database("demo")
    t = cat.create_table("demo.events", SCHEMA, partition_keys=["dt"],
                         options={"partition.timestamp-formatter": "yyyy-MM-dd"})
    t.write(pa.table({"user_id": [1, 2], "dt": ["2001-01-01", "2999-01-01"]}, schema=SCHEMA))
    op = LakeformatExpirePartitionsOperator(task_id="expire_partitions", table="demo.events")
    assert op.execute({}) == {"table": "demo.events", "dry_run": False, "partitions": [], "snapshot_id": None}
    assert t.snapshot_manager.list_ids() == [1]

    t.alter(lf.SetOption("partition.expiration-time", "30 d"))
    x = op.execute({})
    assert x["partitions"] == [{"dt": "2001-01-01"}] and x["snapshot_id"] == 2
    assert lf.Catalog(wh).get_table("demo.events").read().column("dt").to_pylist() == ["2999-01-01"]
