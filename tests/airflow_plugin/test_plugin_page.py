"""The Lakehouse page and its JSON API over real tables: served alone (TestClient), and mounted
by Airflow's own API server from the plugin manager, behind Airflow's login."""
from __future__ import annotations

import json
import re
import subprocess

import pytest
from fastapi.testclient import TestClient

import lakeformat as lf

from tests.airflow_plugin.conftest import PYTHON, airflow_env
from tests.airflow_plugin.lakehouse import EXPECTED_RUNS, build_lakehouse

from lakeformat.pipeline.airflow.overview import bucket_runs, kinds_count
from lakeformat.pipeline.airflow.page import create_app


@pytest.fixture(scope="module")
def lakehouse(tmp_path_factory):
    return build_lakehouse(tmp_path_factory.mktemp("lakehouse"))


@pytest.fixture(scope="module")
def client(lakehouse):
    wh, config = lakehouse
    return TestClient(create_app(lambda: lf.Catalog(wh), config=config, airflow_auth=False))


def _runs_in_html(html: str) -> dict:
    """(identifier, partition, bucket) -> sorted runs, read back from the rendered rows."""
    out = {}
    for ident, body in re.findall(r'<section class="card" data-identifier="([^"]+)"(.*?)</section>', html, re.S):
        for part, bucket, runs in re.findall(r'<tr class="bucket"><td>([^<]*)</td><td class="num">(\d+)</td>'
                                             r'<td class="num">\d+</td><td class="runs num" data-runs="(\d+)"', body):
            out[(ident, "" if part == "(unpartitioned)" else part, int(bucket))] = int(runs)
    return out


def test_plugin_page_lists_tables_with_sorted_runs_consumers_and_tags(client):
    r = client.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    html = r.text
    assert _runs_in_html(html) == EXPECTED_RUNS
    # configured tables first, in config order, then the rest of the catalog
    order = re.findall(r'data-identifier="([^"]+)"', html)
    assert order == ["demo.user_behavior", "demo.item_price", "demo.not_yet", "scratch.notes"]
    assert 'data-kind="APPEND" data-count="4"' in html                       # user_behavior
    assert 'data-kind="COMPACT" data-count="1"' in html                      # item_price
    assert '<tr class="consumer"><td>dashboard</td><td class="num">3</td>' in html
    assert '<tr class="tag"><td>first-day</td><td class="num">3</td>' in html
    assert "not created yet" in html
    assert "primary key (item_id)" in html and "partitioned by dt" in html


def test_plugin_json_api_matches_the_tables(client, lakehouse):
    tables = {t["identifier"]: t for t in client.get("/api/tables").json()}
    ub = tables["demo.user_behavior"]
    assert ub["latest_snapshot"] == 4 and ub["rows"] == 7 and ub["kind"] == "append"
    assert ub["snapshots_by_kind"] == {"APPEND": 4}
    assert ub["consumers"] == {"dashboard": 3}
    assert ub["tags"] == [{"name": "first-day", "snapshot_id": 3}]
    assert [s["id"] for s in ub["recent_snapshots"]] == [4, 3, 2, 1]
    ip = tables["demo.item_price"]
    assert ip["kind"] == "primary-key" and ip["snapshots_by_kind"] == {"APPEND": 3, "COMPACT": 1}
    assert ip["max_sorted_runs"] == 2
    assert tables["demo.not_yet"]["exists"] is False
    one = client.get("/api/tables/item_price").json()
    assert one["identifier"] == "demo.item_price" and one == client.get("/api/tables/demo.item_price").json()
    missing = client.get("/api/tables/nope")
    assert missing.status_code == 404 and "nope" in missing.json()["detail"]
    # the page agrees with the table's own metadata
    t = lf.Catalog(lakehouse[0]).get_table("demo.user_behavior")
    assert kinds_count(s.commit_kind for s in t.snapshots()) == ub["snapshots_by_kind"]
    assert [b.sorted_runs for b in bucket_runs(t)] == [b["sorted_runs"] for b in ub["buckets"]] == [3, 1]


def test_plugin_page_reports_an_unreadable_table_and_still_renders_the_rest(tmp_path):
    wh, config = build_lakehouse(tmp_path)
    snap = lf.Catalog(wh).get_table("demo.item_price").snapshot_manager.path(4)
    with open(snap, "w") as f:
        f.write("{ truncated")
    html = TestClient(create_app(lambda: lf.Catalog(wh), config=config, airflow_auth=False)).get("/").text
    assert 'class="error">could not be read' in html
    assert _runs_in_html(html)[("demo.user_behavior", "dt=2024-06-01", 0)] == 3


def test_plugin_page_explains_a_catalog_that_cannot_be_opened(tmp_path, monkeypatch):
    from lakeformat.pipeline.airflow.page import standalone_app
    monkeypatch.delenv("AIRFLOW_CONN_LAKEFORMAT_DEFAULT", raising=False)
    monkeypatch.delenv("LAKEFORMAT_WAREHOUSE", raising=False)
    client = TestClient(standalone_app())
    r = client.get("/")                      # redirected to /lakehouse/, the path Airflow serves it at
    assert r.status_code == 503 and "cannot read the lakehouse" in r.text and "lakeformat_default" in r.text
    assert str(r.url).endswith("/lakehouse/")
    assert client.get("/lakehouse/api/tables").status_code == 503
    monkeypatch.setenv("AIRFLOW_CONN_LAKEFORMAT_DEFAULT", json.dumps({"conn_type": "lakeformat"}))
    assert "has no warehouse" in client.get("/lakehouse/api/tables").json()["detail"]


def test_plugin_page_serves_no_api_schema_or_docs(client):
    """FastAPI would serve /openapi.json and /docs without the routes' login: they are off."""
    assert client.get("/api/tables").status_code == 200
    for path in ("/openapi.json", "/docs", "/redoc"):
        assert client.get(path).status_code == 404, path


def test_plugin_kinds_count_keeps_paimon_order():
    assert kinds_count(["COMPACT", "APPEND", "APPEND", "ODD"]) == {"APPEND": 2, "COMPACT": 1, "ODD": 1}
    assert list(kinds_count(["OVERWRITE", "COMPACT", "APPEND"])) == ["APPEND", "COMPACT", "OVERWRITE"]


AIRFLOW_API = """
import json
from fastapi.testclient import TestClient
from airflow import plugins_manager as pm
from airflow.api_fastapi.app import create_app, get_auth_manager
from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

plugins, errors = pm._get_plugins()
external, _ = pm._get_ui_plugins()
app = create_app("core")
with TestClient(app) as c:
    token = get_auth_manager().generate_jwt(SimpleAuthManagerUser(username="admin", role="admin"))
    bearer = {"Authorization": "Bearer " + token}
    out = {"plugins": [p.name for p in plugins], "errors": errors, "external_views": external,
           "anonymous": c.get("/lakehouse/").status_code,
           "browser": [c.get("/lakehouse/", headers={"Accept": "text/html"}, follow_redirects=False).status_code,
                       c.get("/lakehouse/", headers={"Accept": "text/html"},
                             follow_redirects=False).headers.get("location")],
           "anonymous_docs": [c.get(f"/lakehouse/{p}").status_code for p in ("openapi.json", "docs", "redoc")],
           "bad_token": c.get("/lakehouse/api/tables", headers={"Authorization": "Bearer nonsense"}).status_code,
           "cookie": c.get("/lakehouse/", cookies={"_token": token}).text,
           "bearer": c.get("/lakehouse/api/tables", headers=bearer).json(),
           "plugins_api": c.get("/api/v2/plugins", headers=bearer).json(),
           "table_browser": [c.get("/lakehouse/table/demo.user_behavior", headers={"Accept": "text/html"},
                                   follow_redirects=False).headers.get("location")],
           "table_cookie": c.get("/lakehouse/table/demo.user_behavior", params={"filter": "user_id >= 10"},
                                 cookies={"_token": token}).text}
print("RESULT " + json.dumps(out))
"""


def test_plugin_loads_in_airflow_and_its_page_requires_the_airflow_login(lakehouse, airflow_home):
    wh, config = lakehouse
    env = airflow_env(airflow_home, wh)
    env.update({"LAKEFORMAT_CONFIG": config, "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin",
                "AIRFLOW__CORE__AUTH_MANAGER":
                    "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager",
                "AIRFLOW__API_AUTH__JWT_SECRET": "a-test-secret-that-is-long-enough-for-hs512-signing"})
    proc = subprocess.run([PYTHON, "-c", AIRFLOW_API], env=env, capture_output=True, text=True, timeout=180)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = json.loads(lines[0][len("RESULT "):])
    assert out["plugins"] == ["lakeformat"] and out["errors"] == {}
    assert out["external_views"] == [{"name": "Lakehouse", "href": "lakehouse/", "destination": "nav",
                                      "category": "browse", "url_route": "lakehouse"}]
    assert out["anonymous"] == 401 and out["bad_token"] == 403
    assert out["browser"] == [303, "/auth/login?next=%2Flakehouse%2F"]   # a logged-out browser: the login page
    assert all(code in (401, 403, 404) for code in out["anonymous_docs"]), out["anonymous_docs"]   # no API schema
    assert _runs_in_html(out["cookie"]) == EXPECTED_RUNS
    assert [t["identifier"] for t in out["bearer"]] == ["demo.user_behavior", "demo.item_price", "demo.not_yet",
                                                        "scratch.notes"]
    # a table's own page: behind the same login, at the same path as standalone
    assert out["table_browser"] == ["/auth/login?next=%2Flakehouse%2Ftable%2Fdemo.user_behavior"]
    table = out["table_cookie"]
    assert '<tr class="column">' in table and "<svg class=\"history\"" in table
    ids = re.findall(r"<tr><td>(\d+)</td><td>\w+</td><td>2024-06-0\d</td></tr>", table)
    assert sorted(ids, key=int) == ["10", "11", "12", "99"]
    (listed,) = [p for p in out["plugins_api"]["plugins"] if p["name"] == "lakeformat"]
    assert listed["fastapi_apps"][0]["url_prefix"] == "/lakehouse"
    assert listed["external_views"][0]["href"] == "lakehouse/"


def test_plugin_page_error_masks_the_lock_password(tmp_path):
    """A catalog that cannot be opened (lock.uri naming no PostgreSQL) is explained without
    its password, on the page and in the JSON API."""
    secret = "pg-Pa55word-xyz"

    def catalog():
        return lf.Catalog(str(tmp_path), **{"lock.enabled": "true", "lock.type": "postgres",
                                            "lock.uri": f"mysql://etl:{secret}@db/locks"})
    client = TestClient(create_app(catalog, airflow_auth=False))
    page, api = client.get("/"), client.get("/api/tables")
    assert page.status_code == api.status_code == 503
    assert "lock.uri" not in page.text or "etl:***@db" in page.text
    assert secret not in page.text and secret not in api.text and "etl:***@db" in api.text
