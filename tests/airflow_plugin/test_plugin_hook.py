"""LakeformatHook builds a working catalog from an Airflow connection given by environment
variable (JSON form): a local warehouse, and an S3 one (a real S3-compatible server) whose
credentials come from the connection's login and password."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.errors import LakeformatError, NotFoundError

from tests.airflow_plugin.conftest import connection_json
from tests.s3server import BUCKET, CREDS, s3_endpoint  # noqa: F401 (fixture)

from lakeformat.pipeline.airflow.hooks import LakeformatHook
from lakeformat.table.settings import from_connection as catalog_settings
from lakeformat.pipeline.config import resolve_table
from tests.project import minimal_config


def test_plugin_hook_builds_a_catalog_from_a_json_connection(tmp_path, monkeypatch):
    wh = str(tmp_path / "wh")
    monkeypatch.setenv("AIRFLOW_CONN_LAKEFORMAT_DEFAULT", connection_json(wh))
    cat = LakeformatHook().get_catalog()
    assert isinstance(cat, lf.Catalog) and cat.warehouse == wh
    cat.create_database("demo")
    cat.create_table("demo.user_behavior", pa.schema([("user_id", pa.int64())]))
    config = tmp_path / "tables.yaml"
    config.write_text(minimal_config("demo.user_behavior"))
    t = LakeformatHook().get_table("user_behavior", str(config))      # by config name
    t.write(pa.table({"user_id": [1, 2]}))
    assert LakeformatHook().get_table("demo.user_behavior").read().num_rows == 2
    assert lf.Catalog(wh).get_table("demo.user_behavior").read().num_rows == 2
    assert LakeformatHook().test_connection() == (True, f"warehouse {wh}: 1 database(s)")


def test_plugin_hook_reads_an_s3_warehouse_with_credentials_from_the_connection(monkeypatch, s3_endpoint):
    conn = {"conn_type": "lakeformat", "host": f"s3://{BUCKET}/plugin-wh",
            "login": CREDS["s3.access-key"], "password": CREDS["s3.secret-key"],
            "extra": {"s3.endpoint": s3_endpoint, "s3.region": CREDS["s3.region"]}}
    monkeypatch.setenv("AIRFLOW_CONN_LAKE_S3", json.dumps(conn))
    hook = LakeformatHook("lake_s3")
    settings = hook.settings()
    assert settings.options["s3.access-key"] == CREDS["s3.access-key"]
    assert CREDS["s3.secret-key"] not in settings.describe() and "***" in settings.describe()
    cat = hook.get_catalog()
    cat.create_database("demo", ignore_if_exists=True)
    t = cat.create_table("demo.events", pa.schema([("id", pa.int64())]), ignore_if_exists=True)
    t.write(pa.table({"id": [1, 2, 3]}))
    again = lf.Catalog(f"s3://{BUCKET}/plugin-wh", **{"s3.endpoint": s3_endpoint, **CREDS})
    assert again.get_table("demo.events").read().num_rows == 3


def test_plugin_hook_names_a_missing_connection(monkeypatch):
    monkeypatch.delenv("AIRFLOW_CONN_NO_SUCH_LAKE", raising=False)
    with pytest.raises(Exception, match="no_such_lake"):
        LakeformatHook("no_such_lake").get_catalog()


def test_plugin_catalog_settings_from_connection_fields():
    s = catalog_settings("c", "s3://b/wh", "AK", "SK", {"s3.endpoint": "http://m:9000", "s3.path-style-access": True})
    assert s.warehouse == "s3://b/wh"
    assert s.options == {"s3.endpoint": "http://m:9000", "s3.path-style-access": "true",
                         "s3.access-key": "AK", "s3.secret-key": "SK"}
    assert catalog_settings("c", None, None, None, {"warehouse": "/data/wh"}).warehouse == "/data/wh"
    assert catalog_settings("c", "/data/wh", None, None, {"warehouse": "/data/wh"}).options == {}


@pytest.mark.parametrize("host, login, extra, message", [
    (None, None, {}, "has no warehouse"),
    ("/a", None, {"warehouse": "/b"}, "two warehouses"),
    ("/local/wh", "AK", {}, "not on an object store"),
    ("s3://b/wh", "AK", {"s3.access-key": "OTHER"}, "sets s3.access-key twice"),
])
def test_plugin_catalog_settings_reject_unclear_connections(host, login, extra, message):
    with pytest.raises(LakeformatError, match=message):
        catalog_settings("my_conn", host, login, None, extra)


def test_plugin_catalog_rejects_unknown_options_from_a_connection(tmp_path, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_LAKEFORMAT_DEFAULT",
                       json.dumps({"conn_type": "lakeformat", "host": str(tmp_path), "extra": {"s3.endpont": "x"}}))
    with pytest.raises(LakeformatError, match="unknown catalog option"):
        LakeformatHook().get_catalog()


def test_plugin_resolve_table_by_config_name(tmp_path):
    config = tmp_path / "tables.yaml"
    config.write_text(minimal_config("db.a"))
    assert resolve_table("a", str(config)) == "db.a"
    assert resolve_table("other.b", str(config)) == "other.b"
    with pytest.raises(NotFoundError, match=r"'b' is not in .*configured: a"):
        resolve_table("b", str(config))
    config.write_text("tables:\n  a: {}\n")
    with pytest.raises(LakeformatError, match=r"tables.a.identifier: must look like 'database.table'"):
        resolve_table("a", str(config))
