"""The Airflow 3 plugin: the Lakehouse page mounted in the API server at ``/lakehouse`` and a
"Lakehouse" entry in the UI's Browse menu that shows it inside Airflow (an external view).

The page reads the catalog of the ``lakeformat_default`` connection (another one with
``$LAKEFORMAT_PLUGIN_CONN_ID``) and lists the tables of ``config/tables.yaml`` first, then every
other table of the catalog. It requires the Airflow login.
"""
from __future__ import annotations

import os

from airflow.plugins_manager import AirflowPlugin

from lakeformat.pipeline.airflow.hooks import LakeformatHook
from lakeformat.pipeline.airflow.page import URL_PREFIX, create_app


def _catalog():
    return LakeformatHook(os.environ.get("LAKEFORMAT_PLUGIN_CONN_ID", LakeformatHook.default_conn_name)).get_catalog()


class LakeformatPlugin(AirflowPlugin):
    name = "lakeformat"
    # AirflowPlugin's own class attributes (not ClassVars there), read by Airflow from the class
    fastapi_apps = [{"app": create_app(_catalog, airflow_auth=True), "url_prefix": URL_PREFIX,  # noqa: RUF012
                     "name": "Lakehouse"}]
    external_views = [{"name": "Lakehouse", "href": URL_PREFIX.lstrip("/") + "/", "destination": "nav",  # noqa: RUF012
                       "category": "browse", "url_route": "lakehouse"}]
