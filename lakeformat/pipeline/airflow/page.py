"""The "Lakehouse" page: a FastAPI app serving an HTML overview of the tables and a JSON API.

Airflow's API server mounts it under ``/lakehouse`` (see plugin.py); there every request must
carry the Airflow login (the JWT cookie the UI sets, or a bearer token), checked by Airflow's
own auth manager. ``create_app(..., airflow_auth=False)`` serves it alone, for tests and local
use. Handlers are plain functions: FastAPI runs them in its thread pool, so reading metadata
from an object store never blocks the event loop.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Optional
from collections.abc import Callable

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

import lakeformat as lf
from lakeformat.format.human import human_size
from lakeformat.pipeline.airflow.hooks import LakeformatHook
from lakeformat.pipeline.airflow.overview import KINDS, TableOverview, overview, table_list
from lakeformat.pipeline.airflow.page_shell import document, e, two_column_table
from lakeformat.pipeline.airflow.table_page import render_table_page, table_href
from lakeformat.pipeline.airflow.table_view import table_detail
from lakeformat.pipeline.config import configured_tables
from lakeformat.secrets import mask
from lakeformat.table.settings import CATALOG_ENV, WAREHOUSE_ENV, environment_warehouse
from lakeformat.table.settings import resolve as resolve_settings

MAX_BUCKET_ROWS = 200
URL_PREFIX = "/lakehouse"   # under Airflow (plugin.py) and standalone alike
_KIND_COLORS = {"APPEND": "#2f80ed", "COMPACT": "#27ae60", "OVERWRITE": "#eb5757", "ANALYZE": "#9b51e0"}


async def airflow_user(request: Request):
    """The logged-in Airflow user, as Airflow's own API resolves it (bearer token first, then
    the user the UI's JWT middleware already checked, then the JWT cookie); 401/403 otherwise."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.base_auth_manager import (
        COOKIE_NAME_JWT_TOKEN,
    )
    from airflow.api_fastapi.auth.managers.models.resource_details import AccessView
    from airflow.api_fastapi.core_api import security

    header = request.headers.get("authorization", "")
    user: Optional[security.BaseUser]
    if header.lower().startswith("bearer "):
        user = await security.resolve_user_from_token(header[7:].strip())
    else:
        user = getattr(request.state, "user", None)
        if user is None or getattr(request.state, "user_authenticated_via", None) \
                is not security.USER_INJECTED_BY_TRUSTED_MIDDLEWARE:
            user = await security.resolve_user_from_token(request.cookies.get(COOKIE_NAME_JWT_TOKEN))
    if not get_auth_manager().is_authorized_view(access_view=AccessView.WEBSITE, user=user):
        raise HTTPException(status_code=403, detail="not allowed to view the Airflow website")
    return user


def _login_redirect(request: Request) -> RedirectResponse:
    """Where a browser without a valid login is sent: Airflow's login page, back here after."""
    from airflow.api_fastapi.app import get_auth_manager
    return RedirectResponse(get_auth_manager().get_url_login(next_url=str(request.url.path)), status_code=303)


def create_app(catalog: Callable[[], lf.Catalog], config: Optional[str] = None,
               airflow_auth: bool = True) -> FastAPI:
    """``catalog`` is called per request (a connection edited in Airflow applies at once)."""
    deps = [Depends(airflow_user)] if airflow_auth else []
    # no OpenAPI schema or docs pages: FastAPI serves those without the routes' login dependency
    app = FastAPI(title="Lakehouse", description="lakeformat tables: snapshots, sorted runs, "
                  "consumers, tags", dependencies=deps, openapi_url=None, docs_url=None, redoc_url=None)

    if airflow_auth:
        @app.exception_handler(StarletteHTTPException)
        async def to_login(request: Request, exc: StarletteHTTPException):
            """A browser asking for a page without a (valid) login goes to the login page, as
            Airflow's own pages do; API clients keep the 401/403."""
            logged_out = exc.status_code == 401 or (exc.status_code == 403 and "JWT" in str(exc.detail))
            if logged_out and "text/html" in request.headers.get("accept", ""):
                return _login_redirect(request)
            return await http_exception_handler(request, exc)

    def load(only=None) -> tuple[lf.Catalog, list[TableOverview]]:
        """The catalog and overviews; 503 naming the cause when the catalog cannot be opened
        (no connection, bad options, store unreachable) or the tables config is broken."""
        try:
            cat = catalog()
            return cat, overview(cat, configured_tables(config), only)
        except Exception as e:  # reported to the user, who can fix the connection
            raise HTTPException(status_code=503,
                                detail=mask(f"cannot read the lakehouse: {type(e).__name__}: {e}")) from e

    @app.get("/", response_class=HTMLResponse)
    def page():
        try:
            cat, tables = load()
        except HTTPException as e:
            return HTMLResponse(render_error(e.detail), status_code=e.status_code)
        return render_page(cat.warehouse, tables)

    @app.get("/table/{table}", response_class=HTMLResponse)
    def table_page(table: str, filter: str = "", limit: Optional[int] = None):
        """One table: schema, data preview (``?filter=...&limit=...``), history chart, partitions,
        buckets against the compaction trigger, consumers, tags, staged commits and audits."""
        try:
            cat = catalog()
            pairs = [(n, i) for n, i in table_list(cat, configured_tables(config)) if table in (n, i)]
            if not pairs or not cat.table_exists(pairs[0][1]):
                what = (f"table {table!r} is configured but not created yet" if pairs
                        else f"no table {table!r} in the config or catalog")
                return HTMLResponse(render_error(what, "Pick one on the tables page.", "../"), status_code=404)
            detail = table_detail(cat, pairs[0][0], pairs[0][1], filter, limit)
        except Exception as e:  # shown to the user (connection, unreadable metadata)
            return HTMLResponse(render_error(mask(f"cannot read {table}: {type(e).__name__}: {e}"), home="../"),
                                status_code=503)
        return render_table_page(cat.warehouse, detail)

    @app.get("/api/tables/{table}/detail")
    def api_table_detail(table: str, filter: str = "", limit: Optional[int] = None) -> dict:
        """What the table's page shows, as JSON (times in ISO 8601)."""
        try:
            cat = catalog()
            pairs = [(n, i) for n, i in table_list(cat, configured_tables(config)) if table in (n, i)]
            found = bool(pairs) and cat.table_exists(pairs[0][1])
            detail = table_detail(cat, pairs[0][0], pairs[0][1], filter, limit) if found else None
        except Exception as e:  # reported to the user, who can fix the connection
            raise HTTPException(status_code=503, detail=mask(f"cannot read {table}: {type(e).__name__}: {e}")) from e
        if detail is None:
            raise HTTPException(status_code=404, detail=f"no table {table!r} in the catalog")
        return dataclasses.asdict(detail)

    @app.get("/api/tables")
    def api_tables() -> list[dict]:
        return [t.to_dict() for t in load()[1]]

    @app.get("/api/tables/{table}")
    def api_table(table: str) -> dict:
        found = load([table])[1]
        if not found:
            raise HTTPException(status_code=404, detail=f"no table {table!r} in the config or catalog")
        return found[0].to_dict()

    return app


def standalone_app(warehouse: Optional[str] = None, options: Optional[dict] = None,
                   config: Optional[str] = None) -> FastAPI:
    """The page without Airflow's API server and without a login, for local use only, at the
    same path as under Airflow (``/lakehouse/``; ``/`` redirects there). The catalog: the
    ``warehouse`` given (default the environment's, as the ``lakeformat`` command), else
    that of connection ``$LAKEFORMAT_PLUGIN_CONN_ID`` (default ``lakeformat_default``, e.g. from
    ``AIRFLOW_CONN_LAKEFORMAT_DEFAULT``); tables from ``config`` or ``$LAKEFORMAT_CONFIG``.
    Run it with ``.venv/bin/python -m lakeformat.pipeline.airflow.page`` (see ``main``)."""
    warehouse = warehouse or environment_warehouse()
    if warehouse:
        settings = resolve_settings(warehouse, options)

        def catalog() -> lf.Catalog:
            return settings.catalog()
    else:
        conn_id = os.environ.get("LAKEFORMAT_PLUGIN_CONN_ID", LakeformatHook.default_conn_name)

        def catalog() -> lf.Catalog:
            return LakeformatHook(conn_id).get_catalog()
    app = FastAPI(title="Lakehouse", openapi_url=None, docs_url=None, redoc_url=None)

    @app.get("/")
    @app.get(URL_PREFIX)
    def home():
        return RedirectResponse(URL_PREFIX + "/", status_code=307)

    app.mount(URL_PREFIX, create_app(catalog, config, airflow_auth=False))
    return app


def main(argv=None) -> None:
    """``python -m lakeformat.pipeline.airflow.page [--warehouse W] [--port 8090]``: serve the
    page on localhost at http://127.0.0.1:PORT/lakehouse/ until Ctrl-C."""
    import argparse

    import uvicorn

    p = argparse.ArgumentParser(prog="python -m lakeformat.pipeline.airflow.page",
                                description="Serve the Lakehouse page without Airflow (no login: keep it on "
                                            "localhost).", epilog="example: .venv/bin/python -m "
                                "lakeformat.pipeline.airflow.page --warehouse warehouse --port 8090")
    p.add_argument("--warehouse", help=f"warehouse path or URI (default: ${CATALOG_ENV}'s or "
                   f"${WAREHOUSE_ENV}, else the "
                   "lakeformat_default Airflow connection from $AIRFLOW_CONN_LAKEFORMAT_DEFAULT)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help="catalog option (repeatable)")
    p.add_argument("--config", help="tables config listed first (default: $LAKEFORMAT_CONFIG)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8090)
    a = p.parse_args(argv)
    options = dict(kv.split("=", 1) for kv in a.option if "=" in kv)
    print(f"Lakehouse page: http://{a.host}:{a.port}{URL_PREFIX}/ (Ctrl-C stops it)", flush=True)
    uvicorn.run(standalone_app(a.warehouse, options, a.config), host=a.host, port=a.port, log_level="warning")


# -- HTML -------------------------------------------------------------------------------
_e = e


def _kinds(t: TableOverview) -> str:
    total = sum(t.snapshots_by_kind.values()) or 1
    bar = "".join(f'<span class="seg" style="width:{100 * n / total:.1f}%;background:{_KIND_COLORS.get(k, "#888")}" '
                  f'title="{_e(k)}: {n}"></span>' for k, n in t.snapshots_by_kind.items())
    legend = "".join(f'<span class="kind" data-kind="{_e(k)}" data-count="{n}">'
                     f'<i style="background:{_KIND_COLORS.get(k, "#888")}"></i>{_e(k)} {n}</span>'
                     for k, n in t.snapshots_by_kind.items())
    return f'<div class="bar">{bar}</div><div class="legend">{legend or "no snapshots yet"}</div>'


def _buckets(t: TableOverview) -> str:
    if not t.buckets:
        return '<p class="muted">no data files</p>'
    most = t.max_sorted_runs or 1
    rows = "".join(
        f'<tr class="bucket"><td>{_e(b.partition or "(unpartitioned)")}</td><td class="num">{b.bucket}</td>'
        f'<td class="num">{b.files}</td><td class="runs num" data-runs="{b.sorted_runs}">{b.sorted_runs}</td>'
        f'<td class="barcell"><span class="runbar" style="width:{100 * b.sorted_runs / most:.0f}%"></span></td>'
        f'<td class="num">{b.rows:,}</td><td class="num">{human_size(b.bytes)}</td></tr>'
        for b in t.buckets[:MAX_BUCKET_ROWS])
    more = (f'<p class="muted">and {len(t.buckets) - MAX_BUCKET_ROWS} more buckets (see the JSON API)</p>'
            if len(t.buckets) > MAX_BUCKET_ROWS else "")
    return ('<table><thead><tr><th>partition</th><th>bucket</th><th>files</th><th>sorted runs</th><th></th>'
            f'<th>records</th><th>size</th></tr></thead><tbody>{rows}</tbody></table>{more}')


def _recent(t: TableOverview) -> str:
    rows = "".join(f'<tr><td class="num">{s.id}</td><td><span class="pill" style="background:'
                   f'{_KIND_COLORS.get(s.kind, "#888")}">{_e(s.kind)}</span></td><td class="t">{_e(s.time)}</td>'
                   f'<td class="num">{s.delta_rows:+,}</td><td class="num">{s.total_rows:,}</td></tr>'
                   for s in t.recent_snapshots)
    return ('<h3>Recent snapshots</h3><table><thead><tr><th>id</th><th>kind</th><th>committed</th>'
            f'<th>delta</th><th>records</th></tr></thead><tbody>{rows}</tbody></table>') if rows else ""


def render_table(t: TableOverview) -> str:
    head = (f'<section class="card" data-identifier="{_e(t.identifier)}" data-max-runs="{t.max_sorted_runs}">'
            + (f'<h2><a class="open" href="{_e(table_href(t.identifier))}">{_e(t.name)}</a>' if t.exists
               else f'<h2>{_e(t.name)}')
            + (f' <small>{_e(t.identifier)}</small>' if t.name != t.identifier else "")
            + (' <small>schema, data, history, audits →</small>' if t.exists else "") + '</h2>')
    if not t.exists:
        return head + '<p class="muted">not created yet (configured, no schema in the warehouse)</p></section>'
    if t.error:
        return head + f'<p class="error">could not be read: {_e(t.error)}</p></section>'
    keys = (f'primary key ({", ".join(map(_e, t.primary_keys))})' if t.primary_keys else "append")
    parts = f'partitioned by {", ".join(map(_e, t.partition_keys))}' if t.partition_keys else "unpartitioned"
    facts = (f'<p class="facts"><b>{keys}</b> · {parts} · <b>{t.rows:,}</b> records · latest snapshot '
             f'<b>{t.latest_snapshot if t.latest_snapshot is not None else "none"}</b> · '
             f'{len(t.buckets)} buckets, at most <b>{t.max_sorted_runs}</b> sorted runs</p>')
    return (head + facts + '<div class="grid"><div>'
            f'<h3>Snapshots by kind</h3>{_kinds(t)}{_recent(t)}'
            + two_column_table("Consumers", ("consumer", "next snapshot"), list(t.consumers.items()),
                           "no consumers", "consumer")
            + two_column_table("Tags", ("tag", "snapshot"), [(g.name, g.snapshot_id) for g in t.tags],
                           "no tags", "tag")
            + f'</div><div><h3>Sorted runs per bucket</h3>{_buckets(t)}</div></div></section>')


def render_error(message: str, hint: str = "Check the lakeformat connection (lakeformat_default) and "
                 "config/tables.yaml.", home: str = "") -> str:
    back = f' <a href="{_e(home)}">all tables</a>' if home else ""
    return document("Lakehouse", "<h1>Lakehouse</h1>", f'<section class="card"><p class="error">{_e(message)}</p>'
                    f'<p class="muted">{_e(hint)}{back}</p></section>')


def render_page(warehouse: str, tables: list[TableOverview]) -> str:
    cards = "".join(render_table(t) for t in tables) or '<p class="muted">no tables configured or in the catalog</p>'
    return document("Lakehouse", f'<h1>Lakehouse</h1><p>warehouse {_e(warehouse)} · {len(tables)} tables · '
                    '<a href="api/tables">JSON</a></p>', cards)


__all__ = ["create_app", "standalone_app", "main", "URL_PREFIX", "render_page", "render_table", "airflow_user", "KINDS"]


if __name__ == "__main__":
    main()
