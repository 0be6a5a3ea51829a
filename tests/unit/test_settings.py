"""Catalog settings resolved once (lakeformat.table.settings): the order flags > $LAKEFORMAT_CATALOG >
$LAKEFORMAT_WAREHOUSE/AWS_* > the config > ./warehouse, one object across a process boundary,
option keys checked in one place, secrets masked and refused on command lines."""
import json
import re
from pathlib import Path

import pytest

import lakeformat as lf
from lakeformat.errors import LakeformatError, OptionError
from lakeformat.table.settings import (CATALOG_ENV, WAREHOUSE_ENV, CatalogSettings, check_catalog_options,
                                       from_connection, option_pairs, resolve)

PACKAGE = Path(lf.__file__).parent


def test_the_warehouse_variable_is_read_in_one_module_only():
    """A second reader would grow its own fallbacks again (the issue found five)."""
    readers = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                     if WAREHOUSE_ENV in p.read_text())
    assert readers == ["table/settings.py"]
    assert re.findall(r"LAKEFORMAT_CATALOG_OPTIONS", "".join(p.read_text() for p in PACKAGE.rglob("*.py"))) == []


def test_catalog_option_keys_are_checked_in_one_place():
    """Catalog, the Spark source's path tables and a connection all refuse the same typo."""
    users = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                   if "unknown catalog option" in p.read_text())
    assert users == ["table/catalog.py"]
    with pytest.raises(OptionError, match=r"unknown catalog option\(s\) \['s3.endpont'\].*did you mean "
                                          r"'s3.endpont' -> 's3.endpoint'"):
        check_catalog_options({"s3.endpont": "http://x"})
    assert check_catalog_options({"s3.path-style-access": True}) == {"s3.path-style-access": "true"}


def test_resolution_order(monkeypatch):
    for k in (WAREHOUSE_ENV, CATALOG_ENV, "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(k, raising=False)
    assert resolve() == CatalogSettings("warehouse")
    assert resolve(config_warehouse="/cfg/wh").warehouse == "/cfg/wh"
    monkeypatch.setenv(WAREHOUSE_ENV, "/env/wh")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "AWSSECRET")
    assert resolve(config_warehouse="/cfg/wh") == CatalogSettings("/env/wh", {"s3.secret-key": "AWSSECRET"})
    monkeypatch.setenv(CATALOG_ENV, json.dumps({"warehouse": "s3://b/wh", "options": {"s3.secret-key": "FROMJSON",
                                                                                         "s3.region": "eu"}}))
    got = resolve(config_warehouse="/cfg/wh")
    assert got.warehouse == "s3://b/wh" and got.options == {"s3.secret-key": "FROMJSON", "s3.region": "eu"}
    got = resolve("/flag/wh", {"s3.region": "us"})
    assert got.warehouse == "/flag/wh" and got.options == {"s3.secret-key": "FROMJSON", "s3.region": "us"}
    monkeypatch.setenv(CATALOG_ENV, json.dumps({"options": {"s3.region": "eu"}}))   # the warehouse is optional
    assert resolve().warehouse == "/env/wh"


@pytest.mark.parametrize("raw", ["[1]", "{not json", '{"options": {"s3.region": 1}}', '{"warehose": "/x"}',
                                 '{"warehouse": 3}'])
def test_a_malformed_catalog_variable_is_a_clear_error(monkeypatch, raw):
    monkeypatch.setenv(CATALOG_ENV, raw)
    with pytest.raises(LakeformatError, match=r"\$LAKEFORMAT_CATALOG must be a JSON object"):
        resolve()


def test_settings_cross_a_process_boundary_as_one_object_and_come_back_equal(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = CatalogSettings("wh", {"s3.endpoint": "http://m:9000", "lock.enabled": "true"})
    env = s.absolute().to_env()
    assert list(env) == [CATALOG_ENV]
    back = resolve(env=env)
    assert back == CatalogSettings(str(tmp_path / "wh"), s.options)
    assert CatalogSettings("file:///data/wh").absolute().warehouse == "/data/wh"
    assert CatalogSettings("s3://b/wh").absolute().warehouse == "s3://b/wh"
    assert back.storage_options == {"s3.endpoint": "http://m:9000"} and back.lock_options == {"lock.enabled": "true"}


def test_secrets_are_masked_in_reprs_and_refused_on_command_lines():
    s = CatalogSettings("s3://b/wh", {"s3.secret-key": "TOPSECRET1", "lock.uri": "postgresql://u:PGPW1@h/d"})
    assert "TOPSECRET1" not in repr(s) and "PGPW1" not in repr(s) and "PGPW1" not in s.describe()
    for bad in ("s3.secret-key=TOPSECRET2", "lock.uri=postgresql://u:PGPW2@h/d"):
        with pytest.raises(LakeformatError, match="credential on the command line") as e:
            option_pairs([bad], "--option")
        assert "TOPSECRET2" not in str(e.value) and "PGPW2" not in str(e.value)
    with pytest.raises(LakeformatError, match="expected KEY=VALUE"):
        option_pairs(["s3.region"], "--option")
    assert option_pairs([" s3.region = eu "], "--option") == {"s3.region": "eu"}


def test_a_connection_with_an_unknown_option_names_the_connection():
    with pytest.raises(LakeformatError, match=r"connection 'c': unknown catalog option\(s\) \['s3.endpont'\]"):
        from_connection("c", "/wh", None, None, {"s3.endpont": "x"})
