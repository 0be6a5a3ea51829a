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

from dataclasses import dataclass, field
from typing import Any, Optional
from collections.abc import Mapping
from urllib.parse import urlparse

from airflow.sdk import BaseHook

import lakeformat as lf
from lakeformat.errors import LakeformatError
from lakeformat.pipeline.config import resolve_table
from lakeformat.secrets import mask_options

_CREDENTIAL_KEYS = {"login": "s3.access-key", "password": "s3.secret-key"}


@dataclass(frozen=True)
class CatalogSettings:
    """What a connection resolves to: a warehouse URI and catalog options (secrets included,
    so never log ``options`` whole: ``describe()`` is the loggable form)."""

    warehouse: str
    options: Mapping[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        shown = mask_options(dict(sorted(self.options.items())))
        return f"warehouse {self.warehouse}" + (f" with {shown}" if shown else "")

    def __repr__(self) -> str:
        return f"CatalogSettings({self.describe()})"


def catalog_settings(conn_id: str, host: Optional[str], login: Optional[str],
                     password: Optional[str], extra: Mapping[str, Any]) -> CatalogSettings:
    """Turn a connection's fields into catalog settings; a clear error names what is wrong."""
    extra = dict(extra or {})
    from_extra = extra.pop("warehouse", None)
    if host and from_extra and host != from_extra:
        raise LakeformatError(f"connection {conn_id!r} gives two warehouses: host {host!r} and "
                              f"extra.warehouse {from_extra!r}; keep one")
    warehouse = host or from_extra
    if not warehouse:
        raise LakeformatError(f"connection {conn_id!r} has no warehouse: set its host (or "
                              "extra.warehouse) to a path, file:// or s3:// URI")
    options = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in extra.items()}
    remote = urlparse(warehouse).scheme in ("s3", "s3a")
    for attr, value in (("login", login), ("password", password)):
        if not value:
            continue
        key = _CREDENTIAL_KEYS[attr]
        if not remote:
            raise LakeformatError(f"connection {conn_id!r} has a {attr} but its warehouse "
                                  f"{warehouse!r} is not on an object store; remove the {attr}")
        if key in options and options[key] != value:
            raise LakeformatError(f"connection {conn_id!r} sets {key} twice ({attr} and extra); keep one")
        options[key] = value
    return CatalogSettings(warehouse, options)


class LakeformatHook(BaseHook):
    """Catalogs and tables from the ``lakeformat_default`` (or another) connection."""

    conn_name_attr = "conn_id"
    default_conn_name = "lakeformat_default"
    conn_type = "lakeformat"
    hook_name = "Lakeformat"

    def __init__(self, conn_id: str = default_conn_name, **kwargs):
        super().__init__(**kwargs)
        self.conn_id = conn_id
        self._catalog: Optional[lf.Catalog] = None

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        return {"hidden_fields": ["schema", "port"],
                "relabeling": {"host": "Warehouse URI", "login": "S3 access key",
                               "password": "S3 secret key"},
                "placeholders": {"host": "s3://bucket/warehouse",
                                 "extra": '{"s3.endpoint": "http://minio:9000"}'}}

    def settings(self) -> CatalogSettings:
        conn = self.get_connection(self.conn_id)
        return catalog_settings(self.conn_id, conn.host, conn.login, conn.password, conn.extra_dejson)

    async def asettings(self) -> CatalogSettings:
        """``settings()`` for triggers: reads the connection without blocking the event loop."""
        conn = await self.aget_connection(self.conn_id)
        return catalog_settings(self.conn_id, conn.host, conn.login, conn.password,
                                await conn.aextra_dejson())

    def get_catalog(self) -> lf.Catalog:
        if self._catalog is None:
            s = self.settings()
            self.log.info("Opening the lakeformat catalog of connection %r: %s", self.conn_id, s.describe())
            self._catalog = lf.Catalog(s.warehouse, **s.options)
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
