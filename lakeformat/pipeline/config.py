"""The pipeline config (``tables.yaml``): the one loader and its typed model.

Every reader (the jobs, the DAGs, the plugin, the landing generator, ``lakeformat
validate-config``) calls :func:`load_config`, which checks the whole file before anyone acts on
it, so a mistake is an error at load time (an import error on Airflow's DAG page), never a
silent default or a failure after Spark ran:

- unknown keys are errors with a did-you-mean suggestion; types and ranges are checked;
- a table's columns, keys and options are built into a table schema exactly as ``create_table``
  would (the option registry of :mod:`lakeformat.format.options`, bucket keys naming columns...);
- quality rules are checked against Great Expectations' catalogue (:mod:`.quality`) and must
  name the table's columns;
- an ingest schedule must fire once per landing unit: an hourly landing path (``{hour}``) needs
  an hourly schedule, a daily one a daily schedule (an ``@hourly`` run of a daily table would
  skip 23 times a day; a ``@daily`` run of an hourly table would load one hour in 24).

The file is the argument, else ``$LAKEFORMAT_CONFIG``: never a path found from this package's
location. The keys are documented in ``config/README.md``. Loading is YAML and string work only
(no table IO, no Airflow, Spark or Great Expectations import): the DAG files call it at parse
time.
"""
from __future__ import annotations

import datetime as dt
import difflib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional
from collections.abc import Mapping, Sequence
from urllib.parse import urlparse

import pyarrow as pa

from lakeformat.commit.staging import identifier_for
from lakeformat.errors import LakeformatError, NotFoundError
from lakeformat.format import options as O
from lakeformat.format import types as T
from lakeformat.format.schema import new_schema
from lakeformat.pipeline.quality import Expectation, check_expectations, parse_expectations
from lakeformat.secrets import is_secret_key, mask

CONFIG_ENV = "LAKEFORMAT_CONFIG"
MAX_BACKFILL_UNITS = 1000   # a typo in a date range should not start years of Spark jobs
LANDING_FORMATS = ("jsonl", "csv")
PRESETS = {"@hourly": "0 * * * *", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
           "@weekly": "0 0 * * 0", "@monthly": "0 0 1 * *", "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *"}


class PipelineConfigError(LakeformatError):
    """The pipeline config is missing, not valid YAML, or has a bad entry (named in the message)."""


class UnknownTableError(PipelineConfigError, NotFoundError):
    """A table name the config does not have."""


# -- the model -----------------------------------------------------------------------------------
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
    """One entry of ``tables:``: the table's shape, its landing files, schedule and quality rules."""
    name: str                                  # the config name (``user_behavior``)
    identifier: str                            # ``db.table``
    columns: tuple[tuple[str, str], ...]       # (name, Paimon type string)
    landing_path: str                          # under the landing root, with {ds} and maybe {hour}
    landing_format: str = "jsonl"
    schedule: Optional[str] = None
    partition_keys: tuple[str, ...] = ()
    primary_keys: tuple[str, ...] = ()
    options: Mapping[str, str] = field(default_factory=dict)
    quality: tuple[Expectation, ...] = ()

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
        return bool(O.Options(self.options).get(O.WRITE_ONLY))

    def arrow_schema(self) -> pa.Schema:
        fields = [(n, T.type_from_json(t)) for n, t in self.columns]
        return pa.schema([pa.field(n, T.to_arrow(t), t.nullable) for n, t in fields])

    def landing_dir(self, landing_root: str, date: str, hour: Optional[int] = None) -> str:
        if self.hourly and hour is None:
            raise PipelineConfigError(f"the landing path of {self.name} ({self.landing_path}) has an {{hour}}: "
                                      "give --hour")
        rel = self.landing_path.format(ds=date, hour=f"{hour:02d}" if hour is not None else "")
        return os.path.join(landing_root, rel)

    def path_columns(self, date: str, hour: Optional[int] = None) -> dict[str, str]:
        """Columns whose value the landing path gives (Hive style ``dt={ds}``): they are not in
        the files themselves."""
        names = {n for n, _ in self.columns}
        out = {}
        for seg in self.landing_path.split("/"):
            key, sep, value = seg.partition("=")
            if sep and key in names and value in ("{ds}", "{hour}"):
                out[key] = date if value == "{ds}" else f"{hour:02d}"
        return out


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
class LandingWait:
    """How long an ingest run waits for landing data that is not there yet (``pipeline.landing``):
    scheduled runs wait, manual runs and backfills only when asked (the ``wait_for_landing`` param)."""
    wait_timeout: dt.timedelta = dt.timedelta(hours=6)     # 0: never wait, skip at once
    poke_interval: dt.timedelta = dt.timedelta(minutes=5)  # how often the triggerer looks


@dataclass(frozen=True)
class DagSettings:
    paused_at_creation: Optional[bool] = None   # None: Airflow's [core] dags_are_paused_at_creation
    start_date: dt.date = dt.date(2024, 1, 1)    # catchup is off: the earliest day a backfill can run


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
    dags: DagSettings = DagSettings()
    landing_wait: LandingWait = LandingWait()

    def table(self, name: str) -> TableSpec:
        found = self.find(name)
        if found is None:
            raise UnknownTableError(f"table {name!r} is not in {self.path} "
                                      f"(configured: {', '.join(t.name for t in self.tables) or 'none'})")
        return found

    def find(self, name: str) -> Optional[TableSpec]:
        return next((t for t in self.tables if name in (t.name, t.identifier)), None)


# -- loading -------------------------------------------------------------------------------------
def config_path(path: Optional[str] = None) -> Path:
    """``path``, else ``$LAKEFORMAT_CONFIG``; neither is an error."""
    chosen = path or os.environ.get(CONFIG_ENV)
    if not chosen:
        raise PipelineConfigError(f"no pipeline config: pass --config or set ${CONFIG_ENV} "
                                  "(for example to config/tables.yaml of the checkout)")
    return Path(chosen)


def load_config(path: Optional[str] = None) -> PipelineConfig:
    """Parse and check the whole config; every error names the file and the entry."""
    p = config_path(path)
    try:
        import yaml   # the pipeline extra; the library never reads YAML
        doc = yaml.safe_load(p.read_text())
    except FileNotFoundError:
        raise PipelineConfigError(f"pipeline config {p} does not exist") from None
    except Exception as e:   # yaml.YAMLError, IsADirectoryError, UnicodeDecodeError
        raise PipelineConfigError(f"pipeline config {p} is not valid YAML: {e}") from None
    r = _Reader(f"pipeline config {p}")
    top = r.mapping(doc, "", {"warehouse", "landing", "tables", "pipeline"})
    raw_tables = r.mapping(top.get("tables"), "tables")
    if not raw_tables:
        raise r.error("tables", "must map table names to their settings (none configured)")
    tables = tuple(_table(r, str(n), spec) for n, spec in raw_tables.items())
    idents = [t.identifier for t in tables]
    if dup := sorted({i for i in idents if idents.count(i) > 1}):
        raise r.error("tables", f"two entries name the same table {dup[0]!r}")
    pipe = r.mapping(top.get("pipeline") or {}, "pipeline",
                     {"connection", "spark_connection", "spark_conf", "compaction", "maintenance", "dags", "landing"})
    dags = r.mapping(pipe.get("dags") or {}, "pipeline.dags", {"paused_at_creation", "start_date"})
    paused = dags.get("paused_at_creation")
    comp = r.mapping(pipe.get("compaction") or {}, "pipeline.compaction", {"schedule", "on_publish", "full"})
    maint = r.mapping(pipe.get("maintenance") or {}, "pipeline.maintenance",
                      {"schedule", "dry_run", "orphan_older_than"})
    spark_conf = r.mapping(pipe.get("spark_conf") or {}, "pipeline.spark_conf")
    older = r.duration(maint.get("orphan_older_than", "1 d"), "pipeline.maintenance.orphan_older_than")
    wait = r.mapping(pipe.get("landing") or {}, "pipeline.landing", {"wait_timeout", "poke_interval"})
    poke = r.duration(wait.get("poke_interval", "5 min"), "pipeline.landing.poke_interval")
    if poke <= dt.timedelta(0):
        raise r.error("pipeline.landing.poke_interval", f"must be more than 0, got {wait['poke_interval']!r}")
    return PipelineConfig(
        path=str(p),
        warehouse=os.environ.get("LAKEFORMAT_WAREHOUSE") or r.text(top.get("warehouse", "./warehouse"), "warehouse"),
        landing=os.environ.get("LAKEFORMAT_LANDING") or r.text(top.get("landing", "./landing"), "landing"),
        tables=tables,
        connection=r.text(pipe.get("connection", "lakeformat_default"), "pipeline.connection"),
        spark_connection=r.text(pipe.get("spark_connection", "spark_default"), "pipeline.spark_connection"),
        spark_conf={str(k): r.scalar(v, f"pipeline.spark_conf.{k}") for k, v in spark_conf.items()},
        compaction=CompactionSettings(
            schedule=r.schedule(comp.get("schedule", CompactionSettings.schedule), "pipeline.compaction.schedule"),
            on_publish=r.bool(comp.get("on_publish", True), "pipeline.compaction.on_publish"),
            full=r.bool(comp.get("full", False), "pipeline.compaction.full")),
        maintenance=MaintenanceSettings(
            schedule=r.schedule(maint.get("schedule", MaintenanceSettings.schedule), "pipeline.maintenance.schedule"),
            dry_run=r.bool(maint.get("dry_run", False), "pipeline.maintenance.dry_run"),
            orphan_older_than=older),
        dags=DagSettings(
            paused_at_creation=None if paused is None else r.bool(paused, "pipeline.dags.paused_at_creation"),
            start_date=r.date(dags.get("start_date", DagSettings.start_date), "pipeline.dags.start_date")),
        landing_wait=LandingWait(
            wait_timeout=r.duration(wait.get("wait_timeout", "6 h"), "pipeline.landing.wait_timeout"),
            poke_interval=poke))


_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_\-]*$")
_TABLE_KEYS = {"identifier", "columns", "partition_keys", "primary_keys", "options", "landing", "schedule", "quality"}


def _table(r: _Reader, name: str, spec: Any) -> TableSpec:
    at = f"tables.{name}"
    if not _NAME.match(name):
        raise r.error(at, "use letters, digits, '_' and '-' in table names")
    spec = r.mapping(spec, at, _TABLE_KEYS)
    ident = spec.get("identifier")
    if not isinstance(ident, str) or ident.count(".") != 1 or not all(map(_NAME.match, ident.split("."))):
        raise r.error(f"{at}.identifier", f"must look like 'database.table', got {ident!r}")
    cols = r.mapping(spec.get("columns"), f"{at}.columns")
    if not cols:
        raise r.error(f"{at}.columns", "must map column names to Paimon types, e.g. 'user_id: BIGINT NOT NULL'")
    columns = tuple((str(c), r.text(t, f"{at}.columns.{c}")) for c, t in cols.items())
    part = r.names(spec.get("partition_keys"), f"{at}.partition_keys")
    pk = r.names(spec.get("primary_keys"), f"{at}.primary_keys")
    opts = {str(k): r.scalar(v, f"{at}.options.{k}") for k, v in r.mapping(spec.get("options") or {},
                                                                             f"{at}.options").items()}
    landing = r.mapping(spec.get("landing"), f"{at}.landing", {"format", "path"})
    fmt = landing.get("format", "jsonl")
    if fmt not in LANDING_FORMATS:
        raise r.error(f"{at}.landing.format", f"must be one of {', '.join(LANDING_FORMATS)}, got {fmt!r}"
                      + _hint(str(fmt), LANDING_FORMATS))
    path = _landing_path(r, landing.get("path"), f"{at}.landing.path")
    t = TableSpec(name=name, identifier=ident, columns=columns, landing_path=path, landing_format=fmt,
                  partition_keys=part, primary_keys=pk, options=opts)
    try:   # exactly what create_table checks: types, keys, every option against the registry
        new_schema(t.arrow_schema(), part, pk, O.validate(opts))
    except LakeformatError as e:
        raise r.error(at, str(e)) from None
    schedule = r.schedule(spec.get("schedule"), f"{at}.schedule", unit="hour" if t.hourly else "day")
    try:
        quality = parse_expectations(spec.get("quality"), f"{at}.quality")
        check_expectations(quality, [n for n, _ in columns], f"{at}.quality")
    except LakeformatError as e:
        raise r.error(at, str(e)) from None
    return TableSpec(**{**t.__dict__, "schedule": schedule, "quality": quality})


def _landing_path(r: _Reader, path: Any, at: str) -> str:
    if not isinstance(path, str) or "{ds}" not in path:
        raise r.error(at, f"must contain {{ds}} (the day), e.g. 'events/dt={{ds}}', got {path!r}")
    extra = set(re.findall(r"{([^}]*)}", path)) - {"ds", "hour"}
    if extra:
        raise r.error(at, f"only {{ds}} and {{hour}} may be filled in, not {{{sorted(extra)[0]}}}")
    if path.startswith("/") or ".." in path.split("/"):
        raise r.error(at, f"must be relative to the landing root and stay under it, got {path!r}")
    return path


def _hint(word: str, choices) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


class _Reader:
    """Typed access to the parsed YAML; every error names the file and the key's dotted path."""

    def __init__(self, where: str):
        self.where = where

    def error(self, at: str, problem: str) -> PipelineConfigError:
        return PipelineConfigError(f"{self.where}: {at + ': ' if at else ''}{problem}")

    def mapping(self, v: Any, at: str, allowed: Optional[set] = None) -> dict:
        if not isinstance(v, dict):
            raise self.error(at, f"must be a mapping, got {_kind(v)}")
        if allowed is not None:
            for k in v:
                if k not in allowed:
                    key = f"{at}.{k}" if at else str(k)
                    raise self.error(key, f"unknown key{_hint(str(k), allowed)}; "
                                          f"known here: {', '.join(sorted(allowed))}")
        return v

    def text(self, v: Any, at: str) -> str:
        if not isinstance(v, str) or not v.strip():
            raise self.error(at, f"must be a non-empty string, got {_kind(v)}")
        return v

    def scalar(self, v: Any, at: str) -> str:
        """A value Paimon and Spark keep as a string: strings, numbers and booleans."""
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (str, int, float)):
            return str(v)
        raise self.error(at, f"must be a string, number or boolean, got {_kind(v)}")

    def bool(self, v: Any, at: str) -> bool:
        if isinstance(v, bool):
            return v
        raise self.error(at, f"must be true or false, got {v!r}")

    def date(self, v: Any, at: str) -> dt.date:
        if isinstance(v, dt.datetime):
            raise self.error(at, f"must be a day like 2024-01-01, not a time ({v})")
        if isinstance(v, dt.date):   # YAML reads an unquoted 2024-01-01 as a date
            return v
        try:
            return dt.date.fromisoformat(str(v).strip())
        except ValueError:
            raise self.error(at, f"must be a day like 2024-01-01, got {_kind(v)}") from None

    def duration(self, v: Any, at: str) -> dt.timedelta:
        try:
            return O.parse_duration(str(v))
        except ValueError as e:
            raise self.error(at, f"{v!r} is {e}") from None

    def names(self, v: Any, at: str) -> tuple[str, ...]:
        if v is None:
            return ()
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise self.error(at, f"must be a list of column names, got {v!r}")
        return tuple(v)

    def schedule(self, v: Any, at: str, unit: Optional[str] = None) -> Optional[str]:
        """A cron expression or preset (None: manual runs only). For an ingest schedule, ``unit``
        is the landing granularity the schedule must match: one run per day or per hour."""
        if v is None:
            return None
        if not isinstance(v, str):
            raise self.error(at, f"must be a cron expression or preset such as '@daily', got {_kind(v)}")
        fields = PRESETS.get(v.strip(), v).split()
        if v.startswith("@") and v.strip() not in PRESETS:
            raise self.error(at, f"unknown preset {v!r}{_hint(v, PRESETS)}; known: {', '.join(PRESETS)}")
        from croniter import croniter   # Airflow's own cron parser (the pipeline extra)
        if len(fields) != 5 or not croniter.is_valid(" ".join(fields)):
            raise self.error(at, f"{v!r} is not a cron expression ('minute hour day month weekday') or a preset")
        if unit is not None:
            fixed = [re.fullmatch(r"\d+", f) is not None for f in fields]
            every = [f == "*" for f in fields]
            hourly = fixed[0] and all(every[1:])
            daily = fixed[0] and fixed[1] and all(every[2:])
            if unit == "hour" and not hourly:
                raise self.error(at, f"{v!r} does not run once an hour, but the landing path has {{hour}}: "
                                     "each run loads the hour of its logical date, so other hours would "
                                     "never be loaded; use '@hourly' (or 'M * * * *')")
            if unit == "day" and not daily:
                raise self.error(at, f"{v!r} does not run once a day, but the landing path is per day "
                                     f"({{ds}} without {{hour}}): each run loads the day of its logical date, "
                                     "so runs would repeat or miss days; use '@daily' (or 'M H * * *'), "
                                     "or add {hour} to the landing path")
        return v


def _kind(v: Any) -> str:
    return "nothing" if v is None else f"{type(v).__name__} {v!r}"


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
    """The stage id of one unit of a table, for the job and the DAG alike: the same for every
    run and retry of that unit, so a new attempt replaces the leftovers of an old one, and the
    stage's published marker tells every later run that the unit is loaded."""
    return f"ingest-{spec.name}-{unit.label.replace(':', '')}"


def ingest_identity(spec: TableSpec, unit: IngestUnit) -> tuple[str, int]:
    """(commit user, commit identifier) of a unit's commit: what makes it exactly-once."""
    parts = ("ingest", spec.name, unit.date) + (() if unit.hour is None else (f"{unit.hour:02d}",))
    return f"lakeformat-ingest-{spec.name}", identifier_for(*parts)


# the catalog options of a Spark job (JSON): credentials included, so never on its command line
CATALOG_OPTIONS_ENV = "LAKEFORMAT_CATALOG_OPTIONS"
# S3 credentials a job also takes from the standard AWS_* variables of its environment
SECRET_ENV = {"s3.access-key": "AWS_ACCESS_KEY_ID", "s3.secret-key": "AWS_SECRET_ACCESS_KEY",
              "s3.session-token": "AWS_SESSION_TOKEN"}


def catalog_options_from_env() -> dict[str, str]:
    """The catalog options of a process's environment: S3 credentials in the standard ``AWS_*``
    variables, then ``$LAKEFORMAT_CATALOG_OPTIONS`` (a JSON object) over them. A Spark job hands
    them to the executors inside the tasks, whatever the nodes' environment."""
    from_aws = {k: os.environ[v] for k, v in SECRET_ENV.items() if os.environ.get(v)}
    raw = os.environ.get(CATALOG_OPTIONS_ENV)
    if not raw:
        return from_aws
    try:
        opts = json.loads(raw)
    except ValueError:
        opts = None
    if not isinstance(opts, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in opts.items()):
        raise LakeformatError(f"${CATALOG_OPTIONS_ENV} must be a JSON object of string options")
    return {**from_aws, **opts}


def option_args(pairs: Sequence[str], flag: str) -> dict[str, str]:
    """``KEY=VALUE`` command-line options; a credential among them is refused: arguments are
    visible to every user of the machine and end up in logs."""
    out = {}
    for kv in pairs:
        k, sep, v = kv.partition("=")
        if not sep or not k:
            raise LakeformatError(f"{flag} {mask(kv)!r}: expected KEY=VALUE")
        k, v = k.strip(), v.strip()
        if is_secret_key(k) or mask(v) != v:
            raise LakeformatError(f"{flag} {k}: a credential on the command line is visible to every "
                                  f"user of the machine and in logs; pass it in ${CATALOG_OPTIONS_ENV} "
                                  "(a JSON object of catalog options) or the AWS_* variables instead")
        out[k] = v
    return out


def absolute_location(location: str) -> str:
    """A local path made absolute (a job may run in another directory); a URI as it is."""
    if urlparse(location).scheme in ("", "file"):
        return os.path.abspath(location.removeprefix("file://"))
    return location


def submit_settings(warehouse: str, options: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """(job arguments, environment) that give a Spark job a connection's catalog: the warehouse
    (absolute when local: spark-submit may run in another directory) as an argument, the
    catalog options, credentials among them, in ``$LAKEFORMAT_CATALOG_OPTIONS``. Arguments are
    visible to every user of the machine (``ps``) and end up in task logs; the environment of a
    process is readable by its owner only. The job hands the options to the executors inside
    the data source (Spark's task serialization), not through ``spark.executorEnv`` settings,
    which would be arguments again."""
    warehouse = absolute_location(warehouse)
    env = {CATALOG_OPTIONS_ENV: json.dumps(dict(sorted(options.items())))} if options else {}
    return ["--warehouse", warehouse], env


def asset_uri(spec: TableSpec, connection: str = "lakeformat_default") -> str:
    """The Airflow Asset URI of a table: the connection names the warehouse."""
    return f"lakeformat://{connection}/{spec.database}/{spec.table}"


def asset_name(spec: TableSpec) -> str:
    return f"lakeformat.{spec.identifier}"


def resolve_table(table: str, path: Optional[str] = None) -> str:
    """The identifier of ``table``: ``db.table`` as given, a bare name looked up in the config
    (``path`` or ``$LAKEFORMAT_CONFIG``)."""
    if not table:
        raise PipelineConfigError("no table given: pass a config name or 'database.table'")
    if "." in table:
        return table
    return load_config(path).table(table).identifier


def configured_tables(path: Optional[str] = None) -> dict[str, str]:
    """Config name -> identifier in config order; {} when no config is given at all or the
    file given does not exist (the Lakehouse page then lists the catalog's tables)."""
    path = path or os.environ.get(CONFIG_ENV)
    if not path or not os.path.exists(path):
        return {}
    return {t.name: t.identifier for t in load_config(path).tables}
