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
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional
from collections.abc import Mapping

import pyarrow as pa

from lakeformat.errors import LakeformatError, NotFoundError
from lakeformat.format import options as O
from lakeformat.format import types as T
from lakeformat.format.schema import new_schema
from lakeformat.pipeline.quality import Expectation, check_expectations, parse_expectations

CONFIG_ENV = "LAKEFORMAT_CONFIG"
LANDING_FORMATS = ("jsonl", "csv")
PRESETS = {"@hourly": "0 * * * *", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
           "@weekly": "0 0 * * 0", "@monthly": "0 0 1 * *", "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *"}


class PipelineConfigError(LakeformatError):
    """The pipeline config is missing, not valid YAML, or has a bad entry (named in the message)."""


class UnknownTableError(PipelineConfigError, NotFoundError):
    """A table name the config does not have."""


# -- the model -----------------------------------------------------------------------------------
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
        warehouse=r.text(top.get("warehouse", "./warehouse"), "warehouse"),
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
        try:   # as text: a bare number is milliseconds, as in Paimon's options
            d = None if v is None else O.duration(str(v), at)
        except LakeformatError as e:
            raise PipelineConfigError(f"{self.where}: {e}") from None
        if d is None:   # '' or a key left empty: "unset" to the library, a mistake in the config
            raise self.error(at, f"must be a duration like '30 min', '6 h' or '1 d', got {_kind(v)}")
        return d

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


# -- names ---------------------------------------------------------------------------------------
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
