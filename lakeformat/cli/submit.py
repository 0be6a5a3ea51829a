"""``lakeformat submit JOB [job args]``: run one of lakeformat's Spark jobs from a plain shell,
with the spark-submit command the DAGs build (:mod:`lakeformat.pipeline.submit`, one builder for
both): the venv's interpreter, lakeformat's jar, the pipeline config and the catalog settings
(in the environment, never the arguments). ``lakeformat jar-path`` prints the jar's path for a
spark-submit line of one's own."""
from __future__ import annotations

import argparse
import json
import os
import sys

from lakeformat.errors import LakeformatError
from lakeformat.secrets import mask_options
from lakeformat.table.settings import CATALOG_ENV, option_pairs, resolve


def plan(args):
    """(submission, argv) of ``lakeformat submit`` for parsed ``args``."""
    # the pipeline extra (PyYAML) reads the config: only this verb needs it
    from lakeformat.pipeline import submit
    from lakeformat.pipeline.config import load_config

    config = submit.find_config(args.config)
    cfg = load_config(config) if config else None
    options = option_pairs(args.option + getattr(args, "sub_option", []), "--option")
    settings = resolve(args.warehouse, options, config_warehouse=cfg.warehouse if cfg else None)
    job_args = list(args.job_args)
    if config and "--config" not in job_args:
        job_args = ["--config", config, *job_args]
    py_files = os.path.abspath(args.py_files) if args.py_files else None
    sub = submit.build(args.job, job_args, settings, conf=cfg.spark_conf if cfg else None, py_files=py_files)
    return sub, sub.argv(args.master, submit.spark_submit_binary())


def cmd_submit(_catalog, args) -> None:
    sub, argv = plan(args)
    if args.dry_run:   # a line to copy, credentials masked
        catalog = json.loads(sub.env[CATALOG_ENV])
        catalog["options"] = mask_options(catalog["options"])
        shown = {**sub.env, CATALOG_ENV: json.dumps(catalog)}
        import shlex   # only a dry run prints a command line

        print(" ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(shown.items())), shlex.join(argv))
        return
    sys.stdout.flush()
    os.execve(argv[0], argv, {**os.environ, **sub.env})


def cmd_jar_path(_catalog, _args) -> None:
    from lakeformat.pipeline.submit import jar_path

    jar = jar_path()
    if jar is None:
        raise LakeformatError("lakeformat's Spark jar is not built: run `make setup` (needs a JDK)")
    print(jar)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("submit", help="run a lakeformat Spark job (ingest, compact...) with spark-submit")
    p.add_argument("--config", help="pipeline config (default: $LAKEFORMAT_CONFIG, else ./config/tables.yaml)")
    p.add_argument("--master", default="local[*]", help="Spark master (default: local[*])")
    p.add_argument("--py-files", metavar="ZIP", help="lakeformat zipped for nodes without it (make pyfiles: "
                   "dist/lakeformat.zip)")
    p.add_argument("--dry-run", action="store_true", help="print the command instead of running it")
    p.add_argument("job", help="the job: ingest, compact, expire_snapshots, expire_partitions, clean_consumers, "
                               "remove_orphans")
    p.add_argument("job_args", nargs=argparse.REMAINDER, help="the job's own arguments (its --help lists them)")
    p.set_defaults(fn=cmd_submit, catalog=False)
    j = sub.add_parser("jar-path", help="print the path of lakeformat's Spark jar (for spark-submit --jars)")
    j.set_defaults(fn=cmd_jar_path, catalog=False)
