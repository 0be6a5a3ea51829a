"""What every spark-submit job in ``jobs/`` shares: arguments, the table, the Spark session.

Common arguments: ``--table`` (a name in the pipeline config or ``db.table``), ``--warehouse``,
``--config``, ``--catalog-option KEY=VALUE`` (``s3.endpoint``, ``lock.enabled``...), ``--master``
(default: what spark-submit was given, else ``local[*]``). The catalog settings are resolved by
:func:`lakeformat.table.settings.resolve`: the arguments, then ``$LAKEFORMAT_CATALOG`` (which
the DAGs and ``lakeformat submit`` set), the environment's warehouse, the config's.
Credentials (``s3.secret-key``, a ``lock.uri`` with a password) are refused on the command line,
which every user of the machine sees: they come in ``$LAKEFORMAT_CATALOG`` or the ``AWS_*``
variables. Jobs log in plain words, with credentials masked, and exit non-zero with a one-line
reason on bad input.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
from dataclasses import dataclass
from typing import Optional
from collections.abc import Callable

import lakeformat.spark as lfs
from lakeformat.errors import LakeformatError
from lakeformat.format.progress import ProgressReporter
from lakeformat.pipeline.config import CONFIG_ENV, PipelineConfig, TableSpec, load_config
from lakeformat.secrets import MaskingFilter, register_options
from lakeformat.spark.jar import JAR
from lakeformat.spark.options import TableRef
from lakeformat.table.settings import CATALOG_ENV, WAREHOUSE_ENV, CatalogSettings, option_pairs
from lakeformat.table.settings import resolve as resolve_settings

log = logging.getLogger("lakeformat.jobs")


def parser(prog: str, description: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog, description=description,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--table", required=True, help="table: a name in the config (user_behavior) or db.table")
    ap.add_argument("--warehouse", help=f"warehouse path or URI (default: ${CATALOG_ENV}'s, ${WAREHOUSE_ENV}, "
                                        "then the config's)")
    ap.add_argument("--config", help="pipeline config (default: $LAKEFORMAT_CONFIG; without either, name the "
                                     "table as db.table)")
    ap.add_argument("--catalog-option", action="append", default=[], metavar="KEY=VALUE",
                    help="catalog option such as s3.endpoint=http://minio:9000 (repeatable)")
    ap.add_argument("--master", help="Spark master (default: spark-submit's, else local[*])")
    return ap


@dataclass(frozen=True)
class JobTable:
    identifier: str
    settings: CatalogSettings
    definition: Optional[TableSpec]   # None: the table is not in the config
    config: Optional[PipelineConfig]

    @property
    def short_name(self) -> str:
        return self.definition.name if self.definition else self.identifier

    @property
    def warehouse(self) -> str:
        return self.settings.warehouse

    @property
    def catalog_options(self) -> dict[str, str]:
        return dict(self.settings.options)

    def catalog(self):
        return self.settings.catalog()

    def open(self):
        return self.catalog().get_table(self.identifier)

    def ref(self) -> TableRef:
        """The table as Spark tasks open it."""
        return TableRef(self.warehouse, self.identifier, None, tuple(sorted(self.catalog_options.items())))


def resolve(args) -> JobTable:
    """The table the arguments name. A name not in the config must be ``db.table``."""
    flags = option_pairs(args.catalog_option, "--catalog-option")
    # the whole config is checked before any work; no config at all: tables are named db.table
    cfg = load_config(args.config) if args.config or os.environ.get(CONFIG_ENV) else None
    settings = resolve_settings(args.warehouse, flags, config_warehouse=cfg.warehouse if cfg else None)
    register_options(settings.options)   # masked wherever a message or log line repeats one
    definition = cfg.find(args.table) if cfg else None
    if definition is None and "." not in args.table:
        where = f"in {cfg.path}" if cfg else f"known: no --config or ${CONFIG_ENV} given"
        raise LakeformatError(f"table {args.table!r} is not {where}; name it as db.table")
    return JobTable(definition.identifier if definition else args.table, settings, definition, cfg)


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


def progress_logger(what: str, every: float = 5.0) -> ProgressReporter:
    """The jobs' ``progress(done, total, what)`` callback: the one reporter, into the job's log."""
    return ProgressReporter(what, every=every, emit=log.info)


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
