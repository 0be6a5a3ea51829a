"""Table definitions from the pipeline config (``config/tables.yaml``): what a table looks like
and where its landing files are. The ingest job creates a missing table from here; the landing
generator writes files in the configured shape.

Only the ``tables:`` entries and the ``warehouse``/``landing`` roots are read here (the DAGs read
the rest, see :mod:`lakeformat.pipeline`). Column types are Paimon type strings.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pyarrow as pa

from lakeformat.errors import LakeformatError, SchemaError
from lakeformat.format import types as T

DEFAULT_CONFIG = Path(__file__).resolve().parents[2] / "config" / "tables.yaml"
FORMATS = ("jsonl", "csv")


class ConfigError(LakeformatError):
    """The config file is missing or an entry is wrong (named in the message)."""


@dataclass(frozen=True)
class TableDefinition:
    name: str                                 # key under ``tables:`` (user_behavior)
    identifier: str                           # db.table
    columns: tuple[tuple[str, str], ...]      # (name, Paimon type string)
    partition_keys: tuple[str, ...] = ()
    primary_keys: tuple[str, ...] = ()
    options: tuple[tuple[str, str], ...] = ()
    landing_format: str = "jsonl"
    landing_path: str = ""                    # relative to the landing root, with {ds} and maybe {hour}

    def fields(self) -> list[tuple[str, T.DataType]]:
        return [(n, T.type_from_json(t)) for n, t in self.columns]

    def arrow_schema(self) -> pa.Schema:
        return pa.schema([pa.field(n, T.to_arrow(t), t.nullable) for n, t in self.fields()])

    def landing_dir(self, landing_root: str, date: str, hour: Optional[int] = None) -> str:
        if "{hour}" in self.landing_path and hour is None:
            raise ConfigError(f"the landing path of {self.name} ({self.landing_path}) has an {{hour}}: give --hour")
        rel = self.landing_path.format(ds=date, hour=f"{hour:02d}" if hour is not None else "")
        return os.path.join(landing_root, rel)

    def path_columns(self, date: str, hour: Optional[int] = None) -> dict[str, str]:
        """Columns whose value the landing path gives (Hive style ``dt={ds}``): they are not in
        the files themselves."""
        out = {}
        for seg in self.landing_path.split("/"):
            key, sep, value = seg.partition("=")
            if sep and key in dict(self.columns) and value in ("{ds}", "{hour}"):
                out[key] = date if value == "{ds}" else f"{hour:02d}"
        return out


@dataclass(frozen=True)
class PipelineTables:
    path: str
    warehouse: str
    landing: str
    tables: tuple[TableDefinition, ...]

    def get(self, name: str) -> TableDefinition:
        for t in self.tables:
            if name in (t.name, t.identifier):
                return t
        raise ConfigError(f"table {name!r} is not in {self.path} (configured: {', '.join(t.name for t in self.tables)})")

    def find(self, name: str) -> Optional[TableDefinition]:
        try:
            return self.get(name)
        except ConfigError:
            return None


def config_file(path: Optional[str] = None) -> Path:
    """``path``, else ``$LAKEFORMAT_CONFIG``, else ``config/tables.yaml`` here or in the project."""
    if path:
        return Path(path)
    if os.environ.get("LAKEFORMAT_CONFIG"):
        return Path(os.environ["LAKEFORMAT_CONFIG"])
    local = Path("config/tables.yaml")
    return local if local.exists() else DEFAULT_CONFIG


def load(path: Optional[str] = None) -> PipelineTables:
    p = config_file(path)
    try:
        import yaml
        doc = yaml.safe_load(p.read_text())
    except FileNotFoundError:
        raise ConfigError(f"config file {p} does not exist") from None
    except Exception as e:
        raise ConfigError(f"config file {p} is not valid YAML: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("tables"), dict):
        raise ConfigError(f"config file {p} has no 'tables:' mapping")
    tables = tuple(_definition(p, str(name), spec) for name, spec in doc["tables"].items())
    return PipelineTables(str(p), os.environ.get("LAKEFORMAT_WAREHOUSE") or str(doc.get("warehouse") or "./warehouse"),
                          os.environ.get("LAKEFORMAT_LANDING") or str(doc.get("landing") or "./landing"), tables)


def _definition(p: Path, name: str, spec) -> TableDefinition:
    where = f"{p}, table {name!r}"
    if not isinstance(spec, dict):
        raise ConfigError(f"{where}: expected a mapping")
    ident = spec.get("identifier")
    if not isinstance(ident, str) or ident.count(".") != 1:
        raise ConfigError(f"{where}: 'identifier' must look like 'database.table', got {ident!r}")
    cols = spec.get("columns")
    if not isinstance(cols, dict) or not cols:
        raise ConfigError(f"{where}: 'columns' must map column names to Paimon types")
    for col, typ in cols.items():
        try:
            T.type_from_json(str(typ))
        except SchemaError as e:
            raise ConfigError(f"{where}, column {col!r}: {e}") from None
    names = [str(c) for c in cols]
    keys = {}
    for k in ("partition_keys", "primary_keys"):
        v = spec.get(k) or []
        if not isinstance(v, list) or any(str(x) not in names for x in v):
            raise ConfigError(f"{where}: {k} {v!r} must list columns of the table ({names})")
        keys[k] = tuple(str(x) for x in v)
    landing = spec.get("landing") or {}
    fmt, lpath = landing.get("format", "jsonl"), landing.get("path", "")
    if fmt not in FORMATS:
        raise ConfigError(f"{where}: landing format must be one of {FORMATS}, got {fmt!r}")
    if not isinstance(lpath, str) or "{ds}" not in lpath:
        raise ConfigError(f"{where}: landing path must contain {{ds}}, got {lpath!r}")
    return TableDefinition(name, ident, tuple((str(c), str(t)) for c, t in cols.items()), keys["partition_keys"],
                           keys["primary_keys"], tuple((str(k), str(v)) for k, v in (spec.get("options") or {}).items()),
                           fmt, lpath)


def create_table(catalog, d: TableDefinition):
    """The table, created from its definition when missing."""
    if catalog.table_exists(d.identifier):
        return catalog.get_table(d.identifier)
    catalog.create_database(d.identifier.split(".")[0], ignore_if_exists=True)
    return catalog.create_table(d.identifier, d.arrow_schema(), list(d.partition_keys), list(d.primary_keys),
                                dict(d.options), ignore_if_exists=True)
