"""``lakeformat validate-config``: check a pipeline config the way every job and DAG loads it,
plus what only Great Expectations can check (argument values), before anything runs."""
from __future__ import annotations

import argparse
import os

from lakeformat.cli.output import emit


def cmd_validate_config(_catalog, args) -> None:
    # the pipeline extra (PyYAML, Great Expectations) is optional: only this verb needs it
    from lakeformat.pipeline.config import CONFIG_ENV, load_config
    from lakeformat.pipeline.quality import build

    cfg = load_config(args.config or os.environ.get(CONFIG_ENV))
    for spec in cfg.tables:
        build(spec.quality, f"tables.{spec.name}.quality in {cfg.path}")
    rows = [{"table": t.name, "identifier": t.identifier, "schedule": t.schedule or "manual",
             "landing": f"{t.landing_format} {t.landing_path}", "quality rules": len(t.quality)}
            for t in cfg.tables]
    emit(args, f"{cfg.path} is valid: {len(rows)} table(s)", rows,
         ["table", "identifier", "schedule", "landing", "quality rules"])


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("validate-config", help="check a pipeline config (tables.yaml) without running anything")
    p.add_argument("config", nargs="?", help="the config file (default: $LAKEFORMAT_CONFIG)")
    p.set_defaults(fn=cmd_validate_config, catalog=False)
