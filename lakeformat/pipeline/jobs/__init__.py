"""What every spark-submit job in ``jobs/`` shares: arguments, the table, the Spark session.

Common arguments: ``--table`` (a name in the pipeline config or ``db.table``), ``--warehouse``
(default ``$LAKEFORMAT_WAREHOUSE``, then the config's), ``--config``, ``--catalog-option
KEY=VALUE`` (``s3.endpoint``, ``lock.enabled``...), ``--master`` (default: what spark-submit was
given, else ``local[*]``). Credentials (``s3.secret-key``, a ``lock.uri`` with a password) are
refused on the command line, which every user of the machine sees: they come in
``$LAKEFORMAT_CATALOG_OPTIONS``, a JSON object (the DAGs set it). Jobs log in plain words, with
credentials masked, and exit non-zero with a one-line reason on bad input.
"""
from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import sys
import time
from dataclasses import dataclass
from typing import Optional
from collections.abc import Callable

import lakeformat.spark as lfs
from lakeformat.errors import LakeformatError
from lakeformat.pipeline.config import (CONFIG_ENV, PipelineConfig, TableSpec, catalog_options_from_env,
                                        load_config, option_args)
from lakeformat.secrets import MaskingFilter, register_options
from lakeformat.spark.jar import JAR
from lakeformat.spark.options import TableRef
from lakeformat.table.catalog import Catalog

log = logging.getLogger("lakeformat.jobs")


def parser(prog: str, description: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog, description=description,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--table", required=True, help="table: a name in the config (user_behavior) or db.table")
    ap.add_argument("--warehouse", help="warehouse path or URI (default: $LAKEFORMAT_WAREHOUSE, then the config's)")
    ap.add_argument("--config", help="pipeline config (default: $LAKEFORMAT_CONFIG; without either, name the "
                                     "table as db.table)")
    ap.add_argument("--catalog-option", action="append", default=[], metavar="KEY=VALUE",
                    help="catalog option such as s3.endpoint=http://minio:9000 (repeatable)")
    ap.add_argument("--master", help="Spark master (default: spark-submit's, else local[*])")
    return ap


@dataclass(frozen=True)
class JobTable:
    identifier: str
    warehouse: str
    catalog_options: dict
    definition: Optional[TableSpec]   # None: the table is not in the config
    config: Optional[PipelineConfig]

    @property
    def short_name(self) -> str:
        return self.definition.name if self.definition else self.identifier

    def catalog(self):
        return Catalog(self.warehouse, **self.catalog_options)

    def open(self):
        return self.catalog().get_table(self.identifier)

    def ref(self) -> TableRef:
        """The table as Spark tasks open it."""
        return TableRef(self.warehouse, self.identifier, None, tuple(sorted(self.catalog_options.items())))


def resolve(args) -> JobTable:
    """The table the arguments name. A name not in the config must be ``db.table``."""
    opts = {**catalog_options_from_env(), **option_args(args.catalog_option, "--catalog-option")}
    register_options(opts)   # masked wherever a message or log line repeats one
    # the whole config is checked before any work; no config at all: tables are named db.table
    cfg = load_config(args.config) if args.config or os.environ.get(CONFIG_ENV) else None
    definition = cfg.find(args.table) if cfg else None
    if definition is None and "." not in args.table:
        where = f"in {cfg.path}" if cfg else f"known: no --config or ${CONFIG_ENV} given"
        raise LakeformatError(f"table {args.table!r} is not {where}; name it as db.table")
    warehouse = args.warehouse or os.environ.get("LAKEFORMAT_WAREHOUSE") or (cfg.warehouse if cfg else None)
    if not warehouse:
        raise LakeformatError("no warehouse: give --warehouse or set $LAKEFORMAT_WAREHOUSE")
    return JobTable(definition.identifier if definition else args.table, warehouse, opts, definition, cfg)


def spark_session(app: str, master: Optional[str]):
    """The job's SparkSession with the lakeformat source registered. The master is the
    ``--master`` argument, else spark-submit's, else ``local[*]`` (plain ``python jobs/x.py``,
    which also puts lakeformat's jar on the classpath where it is built)."""
    from pyspark.sql import SparkSession

    submitted = "PYSPARK_GATEWAY_PORT" in os.environ   # spark-submit started the JVM (and took --jars)
    b = SparkSession.builder.appName(app).config("spark.log.level", "WARN")
    if master:
        b = b.master(master)
    elif not submitted:
        b = b.master("local[*]")
    if not submitted and JAR.is_file():
        b = b.config("spark.jars", str(JAR))
    spark = b.getOrCreate()
    lfs.register(spark)
    return spark


def progress_logger(what: str, every: float = 5.0) -> Callable[[int, int, str], None]:
    """A ``progress(done, total, item)`` callback that logs at most every ``every`` seconds."""
    last = [0.0]

    def progress(done: int, total: int, item: str) -> None:
        now = time.monotonic()
        if done == total or now - last[0] >= every:
            last[0] = now
            log.info("%s: %d of %d (%s)", what, done, total, item)
    return progress


def run(main: Callable[[list], int], argv: Optional[list] = None) -> None:
    """Run a job's ``main``: logging set up, errors of the user's making as one line, exit code."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        stream=sys.stderr)
    for handler in logging.getLogger().handlers:
        handler.addFilter(MaskingFilter())
    for noisy in ("py4j", "pyspark"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        code = main(sys.argv[1:] if argv is None else argv)
    except LakeformatError as e:
        log.error("%s", e)
        code = 2
    sys.exit(code)


def job_file(name: str) -> str:
    """The file spark-submit runs for job ``name`` (``ingest``, ``compact``...): the job's module
    in the installed package, so DAGs need no checkout."""
    spec = importlib.util.find_spec(f"lakeformat.pipeline.jobs.{name}")
    if spec is None or not spec.origin:
        raise LakeformatError(f"no job {name!r} in lakeformat.pipeline.jobs")
    return spec.origin
