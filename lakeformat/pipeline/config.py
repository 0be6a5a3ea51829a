"""The pipeline's settings from ``config/tables.yaml`` and the pure decisions the DAGs make.

The DAG files read this at parse time, so it must stay cheap: YAML and string work only, no
table IO, no Airflow, Spark or Great Expectations imports. What it decides:

- which tables exist and how each is ingested (schedule, landing, quality expectations);
- which units (a date, or a date and hour for hourly tables) a run ingests: the run's logical
  date, or every unit of a manual backfill's ``start``..``end`` range;
- the stage id of a unit (stable, so a re-run reuses and replaces its own leftovers) and the
  Airflow Asset of a table.
"""
from __future__ import annotations

import datetime as dt
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional
from urllib.parse import urlparse

from lakeformat.commit.staging import identifier_for
from lakeformat.errors import LakeformatError
from lakeformat.format.options import parse_bool, parse_duration
from lakeformat.pipeline.quality import Expectation, parse_expectations

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CONFIG = PROJECT_ROOT / "config" / "tables.yaml"
MAX_BACKFILL_UNITS = 1000   # a typo in a date range should not start years of Spark jobs


class PipelineConfigError(LakeformatError):
    """The pipeline config is missing, not valid YAML, or has a bad entry (named in the message)."""


@dataclass(frozen=True)
class IngestUnit:
    """One slice of landing data one Spark ingest job stages: a day, or an hour of a day."""
    date: str                      # YYYY-MM-DD
    hour: Optional[int] = None

    @property
    def label(self) -> str:
        return self.date if self.hour is None else f"{self.date}T{self.hour:02d}"

    def job_args(self) -> list[str]:
        return ["--date", self.date] + ([] if self.hour is None else ["--hour", str(self.hour)])


@dataclass(frozen=True)
class TableSpec:
    """One entry of ``tables:``: what the DAGs need to know about a table."""
    name: str                      # the config name (``user_behavior``)
    identifier: str                # ``db.table``
    schedule: Optional[str]
    landing_format: str
    landing_path: str
    quality: tuple[Expectation, ...] = ()
    options: Mapping[str, str] = field(default_factory=dict)
    partition_keys: tuple[str, ...] = ()

    @property
    def hourly(self) -> bool:
        """Hourly tables land one folder per hour (``{hour}`` in the landing path)."""
        return "{hour}" in self.landing_path

    @property
    def database(self) -> str:
        return self.identifier.split(".", 1)[0]

    @property
    def table(self) -> str:
        return self.identifier.split(".", 1)[1]

    @property
    def write_only(self) -> bool:
        return parse_bool(str(self.options.get("write-only", "false")))


@dataclass(frozen=True)
class CompactionSettings:
    schedule: Optional[str] = "@hourly"
    on_publish: bool = True          # also run when an ingest publishes (the tables' Assets)
    full: bool = False


@dataclass(frozen=True)
class MaintenanceSettings:
    schedule: Optional[str] = "@daily"
    dry_run: bool = False
    orphan_older_than: dt.timedelta = dt.timedelta(days=1)


@dataclass(frozen=True)
class PipelineConfig:
    path: str
    warehouse: str
    landing: str
    tables: tuple[TableSpec, ...]
    connection: str = "lakeformat_default"
    spark_connection: str = "spark_default"
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    compaction: CompactionSettings = CompactionSettings()
    maintenance: MaintenanceSettings = MaintenanceSettings()

    def table(self, name: str) -> TableSpec:
        for t in self.tables:
            if name in (t.name, t.identifier):
                return t
        raise PipelineConfigError(f"table {name!r} is not in {self.path} "
                                  f"(configured: {', '.join(t.name for t in self.tables) or 'none'})")


def config_path(path: Optional[str] = None) -> Path:
    """``path``, else ``$LAKEFORMAT_CONFIG``, else the project's ``config/tables.yaml``."""
    return Path(path or os.environ.get("LAKEFORMAT_CONFIG") or DEFAULT_CONFIG)


def load_config(path: Optional[str] = None) -> PipelineConfig:
    """Parse and check the whole config; every error names the file and the entry."""
    p = config_path(path)
    try:
        import yaml
        doc = yaml.safe_load(p.read_text()) or {}
    except FileNotFoundError:
        raise PipelineConfigError(f"pipeline config {p} does not exist (set $LAKEFORMAT_CONFIG)") from None
    except Exception as e:   # yaml.YAMLError and friends
        raise PipelineConfigError(f"pipeline config {p} is not valid YAML: {e}") from None
    if not isinstance(doc, dict):
        raise PipelineConfigError(f"pipeline config {p} must be a mapping")
    raw_tables = doc.get("tables") or {}
    if not isinstance(raw_tables, dict) or not raw_tables:
        raise PipelineConfigError(f"pipeline config {p}: 'tables' must map table names to settings")
    tables = tuple(_table(p, str(n), spec) for n, spec in raw_tables.items())
    pipe = doc.get("pipeline") or {}
    if not isinstance(pipe, dict):
        raise PipelineConfigError(f"pipeline config {p}: 'pipeline' must be a mapping")
    comp, maint = pipe.get("compaction") or {}, pipe.get("maintenance") or {}
    where = f"pipeline config {p}"
    try:
        compaction = CompactionSettings(
            schedule=comp.get("schedule", CompactionSettings.schedule),
            on_publish=_bool(comp.get("on_publish", True)), full=_bool(comp.get("full", False)))
        maintenance = MaintenanceSettings(
            schedule=maint.get("schedule", MaintenanceSettings.schedule),
            dry_run=_bool(maint.get("dry_run", False)),
            orphan_older_than=parse_duration(str(maint.get("orphan_older_than", "1 d"))))
    except (ValueError, AttributeError) as e:
        raise PipelineConfigError(f"{where}: bad 'pipeline' setting: {e}") from None
    return PipelineConfig(
        path=str(p),
        warehouse=os.environ.get("LAKEFORMAT_WAREHOUSE") or str(doc.get("warehouse") or "./warehouse"),
        landing=os.environ.get("LAKEFORMAT_LANDING") or str(doc.get("landing") or "./landing"),
        tables=tables,
        connection=str(pipe.get("connection", "lakeformat_default")),
        spark_connection=str(pipe.get("spark_connection", "spark_default")),
        spark_conf={str(k): str(v) for k, v in (pipe.get("spark_conf") or {}).items()},
        compaction=compaction, maintenance=maintenance)


def _bool(v: Any) -> bool:
    return v if isinstance(v, bool) else parse_bool(str(v))


_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_\-]*$")


def _table(p: Path, name: str, spec: Any) -> TableSpec:
    where = f"pipeline config {p}, table {name!r}"
    if not _NAME.match(name):
        raise PipelineConfigError(f"{where}: use letters, digits, '_' and '-' in table names")
    if not isinstance(spec, dict):
        raise PipelineConfigError(f"{where}: settings must be a mapping")
    ident = spec.get("identifier")
    if not isinstance(ident, str) or ident.count(".") != 1 or not all(map(_NAME.match, ident.split("."))):
        raise PipelineConfigError(f"{where}: 'identifier' must look like 'database.table', got {ident!r}")
    landing = spec.get("landing") or {}
    fmt, path = landing.get("format", "jsonl"), landing.get("path")
    if fmt not in ("jsonl", "csv"):
        raise PipelineConfigError(f"{where}: landing format must be jsonl or csv, got {fmt!r}")
    if not isinstance(path, str) or "{ds}" not in path:
        raise PipelineConfigError(f"{where}: landing path must contain {{ds}} (the day), got {path!r}")
    try:
        quality = parse_expectations(spec.get("quality"), f"table {name!r} in {p}")
    except LakeformatError as e:
        raise PipelineConfigError(str(e)) from None
    return TableSpec(name=name, identifier=ident, schedule=spec.get("schedule"),
                     landing_format=fmt, landing_path=path, quality=quality,
                     options={str(k): str(v) for k, v in (spec.get("options") or {}).items()},
                     partition_keys=tuple(str(k) for k in spec.get("partition_keys") or ()))


# -- what a run ingests ------------------------------------------------------------------------
def _day(value: Any, what: str) -> dt.date:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(str(value).strip())
    except ValueError:
        raise PipelineConfigError(f"{what} {value!r} is not a date like 2024-06-01") from None


def ingest_units(spec: TableSpec, logical_date: Optional[dt.datetime],
                 start: Any = None, end: Any = None) -> list[IngestUnit]:
    """The units one run ingests. With ``start`` (and optionally ``end``, inclusive; it
    defaults to ``start``) every day, or every hour of every day for hourly tables, of the
    range; else the unit of the logical date (its day, or its hour)."""
    if start in (None, "") and end not in (None, ""):
        raise PipelineConfigError(f"backfill of {spec.name}: 'end' {end!r} given without 'start'")
    if start in (None, ""):
        if logical_date is None:
            raise PipelineConfigError(f"run of {spec.name} has no logical date: give 'start' and 'end'")
        d = logical_date.date().isoformat()
        return [IngestUnit(d, logical_date.hour if spec.hourly else None)]
    first = _day(start, f"backfill of {spec.name}: 'start'")
    last = _day(end, f"backfill of {spec.name}: 'end'") if end not in (None, "") else first
    if last < first:
        raise PipelineConfigError(f"backfill of {spec.name}: 'end' {last} is before 'start' {first}")
    days = [first + dt.timedelta(days=i) for i in range((last - first).days + 1)]
    units = [IngestUnit(d.isoformat(), h) for d in days for h in (range(24) if spec.hourly else [None])]
    if len(units) > MAX_BACKFILL_UNITS:
        raise PipelineConfigError(f"backfill of {spec.name} from {first} to {last} is {len(units)} runs "
                                  f"of the ingest job; split it (at most {MAX_BACKFILL_UNITS} at once)")
    return units


def stage_id_for(spec: TableSpec, unit: IngestUnit) -> str:
    """The stage id of one unit of a table: the same for every run and retry of that unit, so
    a new attempt replaces the leftovers of an old one instead of piling up next to them."""
    return f"ingest-{spec.name}-{unit.label.replace(':', '')}"


def ingest_identity(spec: TableSpec, unit: IngestUnit) -> tuple[str, int]:
    """(commit user, commit identifier) of a unit's commit: what makes it exactly-once. The
    ingest job (lakeformat/pipeline/ingest.py) stamps these on the stage it writes."""
    parts = ("ingest", spec.name, unit.date) + (() if unit.hour is None else (f"{unit.hour:02d}",))
    return f"lakeformat-ingest-{spec.name}", identifier_for(*parts)


# catalog options that are secrets: they reach Spark as AWS_* environment variables of the driver
# and the executors (read through the default AWS credential chain), never as job arguments
SECRET_ENV = {"s3.access-key": "AWS_ACCESS_KEY_ID", "s3.secret-key": "AWS_SECRET_ACCESS_KEY",
              "s3.session-token": "AWS_SESSION_TOKEN"}


def submit_settings(warehouse: str, options: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """(job arguments, environment) that give a Spark job a connection's catalog: the warehouse
    (absolute when local: spark-submit may run in another directory) and the non-secret
    options as arguments, the secrets as environment variables."""
    scheme = urlparse(warehouse).scheme
    if scheme in ("", "file"):
        warehouse = os.path.abspath(warehouse.removeprefix("file://"))
    args = ["--warehouse", warehouse]
    env = {}
    for k, v in sorted(options.items()):
        if k in SECRET_ENV:
            env[SECRET_ENV[k]] = v
        else:
            args.append(f"--catalog-option={k}={v}")
    return args, env


def asset_uri(spec: TableSpec, connection: str = "lakeformat_default") -> str:
    """The Airflow Asset URI of a table: the connection names the warehouse."""
    return f"lakeformat://{connection}/{spec.database}/{spec.table}"


def asset_name(spec: TableSpec) -> str:
    return f"lakeformat.{spec.identifier}"
