"""One spark-submit of a lakeformat job, built in one place for its two callers: the Airflow
operator (``LakeformatSparkSubmitOperator``, which hands it to the Spark provider's hook) and
``lakeformat submit`` (which runs spark-submit itself).

A submission carries everything a job needs from its submitter, so a job runs the same from
a DAG, from ``lakeformat submit`` and from a plain shell:

- the interpreter: ``$PYSPARK_PYTHON`` of the environment, else this Python (the venv's), which
  spark-submit also needs to find its own Spark home;
- lakeformat's Spark jar (``--jars``), when it is built; on a cluster whose nodes do not have
  lakeformat installed, the package zipped by ``make pyfiles`` (``--py-files``);
- the catalog settings as one object in ``$LAKEFORMAT_CATALOG`` (warehouse made absolute,
  options, credentials among them), never in the arguments: arguments are visible to every
  user of the machine (``ps``) and end up in task logs; a process's environment is readable by
  its owner only. The job resolves them again with :func:`lakeformat.table.settings.resolve`.

Importing this module costs nothing (no Spark, no Airflow): the DAG files use it at parse time.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional
from collections.abc import Mapping, Sequence

from lakeformat.errors import LakeformatError
from lakeformat.secrets import mask
from lakeformat.table.settings import CatalogSettings

DEFAULT_CONFIG = os.path.join("config", "tables.yaml")
DEFAULT_MASTER = "local[*]"


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)   # finds the folder without importing it (no pyspark)
    if spec is None or not spec.submodule_search_locations:   # a broken install only
        raise LakeformatError(f"{name} is missing from the installed lakeformat package")
    return Path(spec.submodule_search_locations[0])


def jar_path() -> Optional[str]:
    """lakeformat's Spark jar if it is built (``make setup``), else None."""
    jar = _package_dir("lakeformat.spark") / "lakeformat-spark.jar"
    return str(jar) if jar.is_file() else None


def jobs() -> list[str]:
    """The names of lakeformat's jobs (``ingest``, ``compact``...)."""
    return sorted(p.stem for p in (_package_dir("lakeformat.pipeline") / "jobs").glob("*.py")
                  if not p.name.startswith("_"))


def job_file(name: str) -> str:
    """The file spark-submit runs for job ``name``: the job's module in the installed package,
    so neither a DAG nor ``lakeformat submit`` needs a checkout."""
    path = _package_dir("lakeformat.pipeline") / "jobs" / f"{name}.py"
    if name.startswith("_") or not path.is_file():
        raise LakeformatError(f"no lakeformat job {name!r}; the jobs are: {', '.join(jobs())}")
    return str(path)


def spark_submit_binary() -> str:
    """The spark-submit next to this Python (the venv's, installed with pyspark), else the
    one on the PATH."""
    beside = Path(sys.executable).parent / "spark-submit"
    if beside.is_file():
        return str(beside)
    found = shutil.which("spark-submit")
    if found is None:
        raise LakeformatError(f"no spark-submit next to {sys.executable} or on the PATH: install the "
                              "'spark' extra (make setup)")
    return found


@dataclass(frozen=True)
class Submission:
    """What one spark-submit of a job is: the application and its arguments, Spark's settings
    and the environment spark-submit runs in (the catalog settings, credentials included)."""

    application: str
    application_args: tuple[str, ...]
    env: Mapping[str, str]
    name: str
    jars: Optional[str] = None
    conf: Mapping[str, str] = field(default_factory=dict)
    py_files: Optional[str] = None

    def argv(self, master: str, spark_submit: str = "spark-submit", verbose: bool = False) -> list[str]:
        """The command line, flag for flag in the order the Spark provider's hook writes it for
        a client-mode submit, so ``lakeformat submit`` and the DAGs run the same command."""
        out = [spark_submit, "--master", master]
        for k, v in self.conf.items():
            out += ["--conf", f"{k}={v}"]
        if self.py_files:
            out += ["--py-files", self.py_files]
        if self.jars:
            out += ["--jars", self.jars]
        out += ["--name", self.name]
        if verbose:
            out.append("--verbose")
        return out + [self.application, *self.application_args]

    def __repr__(self) -> str:   # the environment holds the credentials
        return f"Submission({self.name}: {self.application} {' '.join(self.application_args)})"


def build(job: str, args: Sequence[str], settings: CatalogSettings, *, name: Optional[str] = None,
          conf: Optional[Mapping[str, str]] = None, jars: Optional[str] = None, py_files: Optional[str] = None,
          environ: Optional[Mapping[str, str]] = None) -> Submission:
    """The submission of ``job`` (a job name such as ``ingest``, or a job's file) with ``args``.
    Empty arguments (an optional flag a template left out) are dropped; a credential among the
    arguments is refused. ``jars`` defaults to lakeformat's jar; ``environ`` (default this
    process's) decides the interpreter."""
    environ = os.environ if environ is None else environ
    application = job if job.endswith(".py") else job_file(job)
    kept = tuple(str(a) for a in args if str(a) != "")
    for a in kept:
        if mask(a) != a:
            raise LakeformatError(f"a job argument holds a credential ({mask(a)}): arguments are visible to "
                                  "every user of the machine and in logs; give it in the catalog settings "
                                  "(the connection, $LAKEFORMAT_CATALOG or the AWS_* variables)")
    env = {**settings.absolute().to_env(), "PYSPARK_PYTHON": environ.get("PYSPARK_PYTHON") or sys.executable}
    job_name = Path(application).stem
    return Submission(application, kept, env, name or f"lakeformat-{job_name}", jars or jar_path(),
                      dict(conf or {}), py_files or None)


def find_config(path: Optional[str] = None, environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """The pipeline config of an ad-hoc submit, absolute: ``path``, else ``$LAKEFORMAT_CONFIG``,
    else ``./config/tables.yaml`` when there is one (a checkout); None without any."""
    from lakeformat.pipeline.config import CONFIG_ENV

    environ = os.environ if environ is None else environ
    chosen = path or environ.get(CONFIG_ENV) or (DEFAULT_CONFIG if os.path.isfile(DEFAULT_CONFIG) else None)
    return os.path.abspath(chosen) if chosen else None
