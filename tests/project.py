"""Where the checkout's pipeline files are, for tests (the package never looks for them)."""
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "config" / "tables.yaml"
DAGS = ROOT / "dags"
PLUGINS = ROOT / "plugins"
JOBS = ROOT / "jobs"


def minimal_config(*identifiers: str) -> str:
    """A valid pipeline config (YAML) naming these ``db.table``s, each under its table name."""
    return yaml.safe_dump({"tables": {i.split(".")[1]: {
        "identifier": i, "columns": {"id": "BIGINT"}, "landing": {"path": f"{i.split('.')[1]}/{{ds}}"}}
        for i in identifiers}}, sort_keys=False)
