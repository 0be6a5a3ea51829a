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


def config_waiting(copy: Path, wait_timeout: str, poke_interval: str, source: Path = CONFIG) -> Path:
    """``source`` (default: the shipped config, which waits hours for late landing data) with
    another ``pipeline.landing`` wait, written to ``copy``."""
    doc = yaml.safe_load(source.read_text())
    doc.setdefault("pipeline", {})["landing"] = {"wait_timeout": wait_timeout, "poke_interval": poke_interval}
    copy.write_text(yaml.safe_dump(doc, sort_keys=False))
    return copy
