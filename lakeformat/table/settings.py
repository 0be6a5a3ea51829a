"""Catalog settings, resolved once: the warehouse and its options from flags, the environment or
an Airflow connection's fields, into one :class:`CatalogSettings`.

Every front end asks here (the ``lakeformat`` command, the jobs, ``lakeformat submit``, the
Airflow hook, the Lakehouse page, ``make demo``/``make airflow``), so they agree on the order:

1. what the caller was given (``--warehouse``, ``--option KEY=VALUE``, a connection);
2. ``$LAKEFORMAT_CATALOG``: one JSON object ``{"warehouse": ..., "options": {...}}``, the form
   settings cross a process boundary in (spark-submit: see :meth:`CatalogSettings.to_env`);
3. ``$LAKEFORMAT_WAREHOUSE``, and S3 credentials in the standard ``AWS_*`` variables;
4. the pipeline config's ``warehouse``, else ``./warehouse``.

Credentials never go on a command line (every user of the machine sees it in ``ps``, and task
logs repeat it): :func:`option_pairs` refuses them; they travel in the environment, which only
the process's owner can read.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Optional
from collections.abc import Mapping, Sequence
from urllib.parse import urlparse

from lakeformat.errors import LakeformatError, OptionError
from lakeformat.commit.lock import LOCK_OPTION_KEYS
from lakeformat.io.fileio import S3_OPTION_KEYS
from lakeformat.table.catalog import Catalog, check_catalog_options
from lakeformat.secrets import is_secret_key, mask, mask_options

WAREHOUSE_ENV = "LAKEFORMAT_WAREHOUSE"
CATALOG_ENV = "LAKEFORMAT_CATALOG"
DEFAULT_WAREHOUSE = "warehouse"
# S3 credentials also taken from the standard AWS_* variables of the environment
AWS_ENV = {"s3.access-key": "AWS_ACCESS_KEY_ID", "s3.secret-key": "AWS_SECRET_ACCESS_KEY",
           "s3.session-token": "AWS_SESSION_TOKEN"}
_CONNECTION_CREDENTIALS = {"login": "s3.access-key", "password": "s3.secret-key"}


def absolute_location(location: str) -> str:
    """A local path made absolute (another process may run in another directory); a URI as it is."""
    if urlparse(location).scheme in ("", "file"):
        return os.path.abspath(location.removeprefix("file://"))
    return location


@dataclass(frozen=True)
class CatalogSettings:
    """A warehouse and its catalog options (``s3.*`` storage, ``lock.*`` the commit lock).
    Secrets are among the options, so ``repr`` and :meth:`describe` mask them."""

    warehouse: str
    options: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self):
        if not self.warehouse:
            raise LakeformatError("a catalog needs a warehouse path or URI")
        object.__setattr__(self, "options", check_catalog_options(self.options))

    @property
    def storage_options(self) -> dict[str, str]:
        return {k: v for k, v in self.options.items() if k in S3_OPTION_KEYS}

    @property
    def lock_options(self) -> dict[str, str]:
        return {k: v for k, v in self.options.items() if k in LOCK_OPTION_KEYS}

    def absolute(self) -> CatalogSettings:
        """The same settings with a local warehouse made absolute."""
        return CatalogSettings(absolute_location(self.warehouse), self.options)

    def catalog(self) -> Catalog:
        return Catalog(self.warehouse, **self.options)

    def to_env(self) -> dict[str, str]:
        """The settings as the environment of a child process (``$LAKEFORMAT_CATALOG``), where
        :func:`resolve` finds them again: one object, credentials included, never arguments."""
        return {CATALOG_ENV: json.dumps({"warehouse": self.warehouse, "options": dict(sorted(self.options.items()))})}

    def describe(self) -> str:
        shown = mask_options(dict(sorted(self.options.items())))
        return f"warehouse {self.warehouse}" + (f" with {shown}" if shown else "")

    def __repr__(self) -> str:
        return f"CatalogSettings({self.describe()})"


def option_pairs(pairs: Sequence[str], flag: str) -> dict[str, str]:
    """``KEY=VALUE`` command-line options; a credential among them is refused: arguments are
    visible to every user of the machine and end up in logs."""
    out = {}
    for kv in pairs:
        k, sep, v = kv.partition("=")
        if not sep or not k.strip():
            raise LakeformatError(f"{flag} {mask(kv)!r}: expected KEY=VALUE")
        k, v = k.strip(), v.strip()
        if is_secret_key(k) or mask(v) != v:
            raise LakeformatError(f"{flag} {k}: a credential on the command line is visible to every "
                                  f"user of the machine and in logs; pass it in ${CATALOG_ENV} "
                                  '(JSON: {"options": {...}}) or the AWS_* variables instead')
        out[k] = v
    return out


def from_environment(env: Optional[Mapping[str, str]] = None) -> tuple[Optional[str], dict[str, str]]:
    """(warehouse or None, options) that the environment gives: ``$LAKEFORMAT_CATALOG`` over
    ``$LAKEFORMAT_WAREHOUSE`` and the ``AWS_*`` credentials."""
    env = os.environ if env is None else env
    options = {k: env[v] for k, v in AWS_ENV.items() if env.get(v)}
    warehouse = env.get(WAREHOUSE_ENV) or None
    raw = env.get(CATALOG_ENV)
    if raw:
        try:
            doc = json.loads(raw)
        except ValueError:
            doc = None
        opts = doc.get("options", {}) if isinstance(doc, dict) else None
        if (not isinstance(doc, dict) or set(doc) - {"warehouse", "options"} or not isinstance(opts, dict)
                or not all(isinstance(v, str) for v in opts.values())
                or not isinstance(doc.get("warehouse", ""), str)):
            raise LakeformatError(f'${CATALOG_ENV} must be a JSON object {{"warehouse": "...", "options": '
                                  '{"key": "value"}} (both optional, values strings)')
        warehouse = doc.get("warehouse") or warehouse
        options.update(opts)
    return warehouse, options


def resolve(warehouse: Optional[str] = None, options: Optional[Mapping[str, str]] = None, *,
            config_warehouse: Optional[str] = None, env: Optional[Mapping[str, str]] = None) -> CatalogSettings:
    """The settings of a front end: ``warehouse`` and ``options`` given (flags), over the
    environment (:func:`from_environment`), over the pipeline config's warehouse, over
    ``./warehouse``. Options merge key by key in the same order."""
    env_warehouse, env_options = from_environment(env)
    chosen = warehouse or env_warehouse or config_warehouse or DEFAULT_WAREHOUSE
    return CatalogSettings(chosen, {**env_options, **(options or {})})


def environment_warehouse(env: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """The warehouse the environment names, if any (front ends with another fallback than
    ``./warehouse``, such as the Lakehouse page's Airflow connection)."""
    return from_environment(env)[0]


def from_connection(conn_id: str, host: Optional[str], login: Optional[str],
                    password: Optional[str], extra: Mapping[str, Any]) -> CatalogSettings:
    """The settings of a lakeformat Airflow connection's fields: the warehouse in ``host`` (or
    ``extra.warehouse``), S3 keys in ``login``/``password``, other options in ``extra``. A clear
    error names what is wrong with the connection."""
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
        key = _CONNECTION_CREDENTIALS[attr]
        if not remote:
            raise LakeformatError(f"connection {conn_id!r} has a {attr} but its warehouse "
                                  f"{warehouse!r} is not on an object store; remove the {attr}")
        if key in options and options[key] != value:
            raise LakeformatError(f"connection {conn_id!r} sets {key} twice ({attr} and extra); keep one")
        options[key] = value
    try:
        return CatalogSettings(warehouse, options)
    except OptionError as e:
        raise LakeformatError(f"connection {conn_id!r}: {e}") from None
