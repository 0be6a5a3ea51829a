"""Which tables the plugin knows: names from ``config/tables.yaml`` or ``db.table`` identifiers.

The same file drives the Spark jobs and the DAGs, so an operator given ``table="user_behavior"``
acts on the table that config names ``demo.user_behavior``.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from lakeformat.errors import LakeformatError, NotFoundError

PROJECT_ROOT = Path(__file__).resolve().parents[3]


def config_path(path: Optional[str] = None) -> Path:
    """The tables config: ``path``, else ``$LAKEFORMAT_CONFIG``, else the project's own."""
    return Path(path or os.environ.get("LAKEFORMAT_CONFIG") or PROJECT_ROOT / "config" / "tables.yaml")


def configured_tables(path: Optional[str] = None) -> dict[str, str]:
    """Config name -> table identifier, in config order; {} if there is no config file."""
    p = config_path(path)
    if not p.exists():
        return {}
    import yaml
    try:
        doc = yaml.safe_load(p.read_text()) or {}
    except yaml.YAMLError as e:
        raise LakeformatError(f"tables config {p} is not valid YAML: {e}") from e
    tables = doc.get("tables") or {}
    if not isinstance(tables, dict):
        raise LakeformatError(f"tables config {p}: 'tables' must be a mapping of name -> table")
    out = {}
    for name, spec in tables.items():
        ident = (spec or {}).get("identifier") if isinstance(spec, dict) else None
        if not ident:
            raise LakeformatError(f"tables config {p}: table {name!r} has no identifier")
        out[str(name)] = str(ident)
    return out


def resolve_table(table: str, path: Optional[str] = None) -> str:
    """``db.table`` stays as given; a bare name is looked up in the tables config."""
    if not table:
        raise LakeformatError("no table given: pass a config name or 'database.table'")
    if "." in table:
        return table
    tables = configured_tables(path)
    if table not in tables:
        known = ", ".join(tables) or "none"
        raise NotFoundError(f"table {table!r} is not in {config_path(path)} (configured: {known}); "
                            "give a config name or 'database.table'")
    return tables[table]
