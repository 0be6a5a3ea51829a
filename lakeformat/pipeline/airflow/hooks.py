"""``LakeformatHook``: a lakeformat ``Catalog`` built from an Airflow connection.

The connection holds everything environment-specific, so DAG code names only a connection id:

- warehouse: the connection's host (``s3://bucket/wh``, ``file:///data/wh`` or a path), or
  ``extra["warehouse"]`` when the host cannot hold it (URI-form connections);
- ``login`` / ``password``: the object store's access key and secret key (``s3.access-key``,
  ``s3.secret-key``), kept out of code and masked in logs by Airflow;
- extra: catalog options such as ``s3.endpoint``, ``s3.region``, ``s3.path-style-access``,
  ``lock.enabled``, ``lock.uri``.

Example (environment variable, JSON form)::

    AIRFLOW_CONN_LAKEFORMAT_DEFAULT='{"conn_type": "lakeformat", "host": "s3://lake/wh",
        "login": "...", "password": "...", "extra": {"s3.endpoint": "http://minio:9000"}}'
"""
from __future__ import annotations

from typing import Optional

from airflow.sdk import BaseHook

import lakeformat as lf
from lakeformat.pipeline.config import resolve_table
from lakeformat.table.settings import CatalogSettings, from_connection


class LakeformatHook(BaseHook):
    """Catalogs and tables from the ``lakeformat_default`` (or another) connection. Its
    connection form in the UI is declared in ``provider.py``."""

    conn_name_attr = "conn_id"
    default_conn_name = "lakeformat_default"
    conn_type = "lakeformat"
    hook_name = "Lakeformat"

    def __init__(self, conn_id: str = default_conn_name, **kwargs):
        super().__init__(**kwargs)
        self.conn_id = conn_id
        self._catalog: Optional[lf.Catalog] = None

    def settings(self) -> CatalogSettings:
        conn = self.get_connection(self.conn_id)
        return from_connection(self.conn_id, conn.host, conn.login, conn.password, conn.extra_dejson)

    async def asettings(self) -> CatalogSettings:
        """``settings()`` for triggers: reads the connection without blocking the event loop."""
        conn = await self.aget_connection(self.conn_id)
        return from_connection(self.conn_id, conn.host, conn.login, conn.password, await conn.aextra_dejson())

    def get_catalog(self) -> lf.Catalog:
        if self._catalog is None:
            s = self.settings()
            self.log.info("Opening the lakeformat catalog of connection %r: %s", self.conn_id, s.describe())
            self._catalog = s.catalog()
        return self._catalog

    def get_conn(self) -> lf.Catalog:
        return self.get_catalog()

    def get_table(self, table: str, config: Optional[str] = None) -> lf.Table:
        """A table by ``db.table`` identifier or by its name in ``config/tables.yaml``."""
        return self.get_catalog().get_table(resolve_table(table, config))

    def test_connection(self) -> tuple[bool, str]:
        try:
            cat = self.get_catalog()
            return True, f"warehouse {cat.warehouse}: {len(cat.list_databases())} database(s)"
        except Exception as e:  # the UI shows the message
            return False, str(e)
