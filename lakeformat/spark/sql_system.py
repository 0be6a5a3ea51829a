"""Procedures and system tables of lakeformat's Spark SQL catalog, named as in Paimon's connector:

    spark.sql("CALL lf.sys.compact(table => 'db.t')")
    spark.sql("CALL lf.sys.expire_snapshots(table => 'db.t', retain_max => 5)")
    spark.sql("CALL lf.sys.create_tag(table => 'db.t', tag => 'x', snapshot => 3)")
    spark.sql("SELECT * FROM lf.db.`t$snapshots`")

The jar's ``SparkCatalog`` is a Spark ``ProcedureCatalog`` (Spark 4's own ``CALL``, no session
extension); its ``LakeformatProcedure`` and ``SystemTable`` ask :class:`SystemAnswers` here,
through PySpark's callback server. Each procedure is the same façade call the CLI makes
(``t.maintenance``, ``t.branches``); compaction runs as a Spark job
(:func:`lakeformat.spark.compaction.compact_on_spark`, the Spark jobs' compaction). A system table
is the library's own (``Table.system_table``) with Paimon's column names, sent as rows
(metadata-sized, read on the driver). An argument lakeformat does not take (``order_strategy``,
``options``, ...), a procedure or a ``t$name`` it does not have, is refused
by name.
"""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any, ClassVar, Optional
from collections.abc import Callable, Mapping, Sequence

import pyarrow as pa

from lakeformat.errors import DataError, LakeformatError, NotFoundError, OptionError, UnsupportedError
from lakeformat.format import options as O
from lakeformat.format.partition import parse_partition_spec
from lakeformat.secrets import mask
from lakeformat.spark.options import TableRef
from lakeformat.spark.tables import catalog_of
from lakeformat.table.catalog import Catalog
from lakeformat.table.system_tables import SYSTEM_TABLES

STRING, INT, LONG, BOOLEAN = "string", "integer", "long", "boolean"
_EPOCH = dt.datetime(1970, 1, 1)


# ---------------------------------------------------------------- rows as the jar's LocalRows takes them

def _field(name: str, typ: str) -> dict:
    return {"name": name, "type": typ, "nullable": True, "metadata": {}}


def rows_answer(fields: Sequence[tuple[str, str]], rows: Sequence[Sequence[Any]]) -> dict:
    return {"schema": {"type": "struct", "fields": [_field(n, t) for n, t in fields]}, "rows": [list(r) for r in rows]}


def java_duration(d: dt.timedelta) -> str:
    """A (non-negative) duration as Java's ``Duration.toString`` prints it (``PT24H``,
    ``PT1M30S``), as Paimon's tags table shows ``time_retained``."""
    micros = max(0, d // dt.timedelta(microseconds=1))
    hours, rest = divmod(micros, 3_600_000_000)
    minutes, rest = divmod(rest, 60_000_000)
    seconds, fraction = divmod(rest, 1_000_000)
    out = (f"{hours}H" if hours else "") + (f"{minutes}M" if minutes else "")
    if seconds or fraction or not out:
        out += f"{seconds}" + (f".{fraction:06d}".rstrip("0") if fraction else "") + "S"
    return "PT" + out


_SPARK_TYPES: dict[str, str] = {"int64": LONG, "int32": INT, "string": STRING, "large_string": STRING, "bool": BOOLEAN}


def _micros(v: Optional[dt.datetime]) -> Optional[int]:
    return None if v is None else (v.replace(tzinfo=None) - _EPOCH) // dt.timedelta(microseconds=1)


def arrow_answer(table: pa.Table) -> dict:
    """A system table as rows: Arrow's timestamps (wall-clock, as Paimon's LocalDateTime) as
    TIMESTAMP_NTZ microseconds, durations as Java's text (pure)."""
    fields: list[tuple[str, str]] = []
    converters: list[Callable[[Any], Any]] = []
    for f in table.schema:
        if pa.types.is_timestamp(f.type):
            fields.append((f.name, "timestamp_ntz"))
            converters.append(_micros)
        elif pa.types.is_duration(f.type):
            fields.append((f.name, STRING))
            converters.append(lambda v: None if v is None else java_duration(v))
        elif str(f.type) in _SPARK_TYPES:
            fields.append((f.name, _SPARK_TYPES[str(f.type)]))
            converters.append(lambda v: v)
        else:
            raise UnsupportedError(f"system table column {f.name} of type {f.type} has no Spark type here")
    columns = [[conv(v) for v in table.column(i).to_pylist()] for i, conv in enumerate(converters)]
    return rows_answer(fields, list(zip(*columns)) if columns else [])


# ---------------------------------------------------------------- system tables

def split_system_name(name: str) -> Optional[tuple[str, str]]:
    """``t$snapshots`` → (``t``, ``snapshots``); ``t$branch_b$files`` → (``t$branch_b``, ``files``);
    None for a table or a branch (``t``, ``t$branch_b``), which the catalog loads as tables."""
    parts = name.split("$")
    if len(parts) == 1 or (len(parts) == 2 and parts[1].startswith("branch_")):
        return None
    if len(parts) == 3 and parts[1].startswith("branch_"):
        return f"{parts[0]}${parts[1]}", parts[2]
    if len(parts) == 2:
        return parts[0], parts[1]
    raise UnsupportedError(f"{name!r}: a system table is t$<name> or t$branch_<b>$<name>")


def system_table_answer(catalog: Catalog, database: str, name: str, version: str, millis: int) -> Optional[dict]:
    split = split_system_name(name)
    if split is None:
        return None
    base, system = split
    if not catalog.table_exists(f"{database}.{base}"):
        return {"missing": True}   # the catalog says TABLE_OR_VIEW_NOT_FOUND as for any missing table
    if system.lower() not in SYSTEM_TABLES:
        raise UnsupportedError(f"lakeformat has no system table {system!r} ({database}.{name}); "
                               f"it has {sorted(SYSTEM_TABLES)}")
    t = catalog.get_table(f"{database}.{base}")
    snapshot_id: Optional[int] = None
    if version:
        snapshot_id = int(version) if version.isdigit() else t.tags.snapshot_of(version).id
    elif millis >= 0:
        snapshot_id = t.snapshot_as_of(millis).id
    return arrow_answer(t.system_table(system.lower(), snapshot_id))


# ---------------------------------------------------------------- procedures

@dataclass(frozen=True)
class Param:
    name: str
    type: str
    required: bool = False


@dataclass(frozen=True)
class Procedure:
    name: str
    params: tuple[Param, ...]
    run: Callable[[Call], dict]
    description: str
    refused: tuple[str, ...] = ()   # Paimon's arguments lakeformat does not take: refused when given

    def spec(self) -> dict:
        return {"description": self.description,
                "parameters": [{"name": p.name, "type": p.type, "required": p.required} for p in self.params]}


class Call:
    """One ``CALL``: its arguments by name (those given), the catalog, the session."""

    def __init__(self, procedure: Procedure, catalog: Catalog, catalog_options: Mapping[str, str],
                 args: Mapping[str, Any], spark):
        self.procedure, self.catalog, self.catalog_options, self.args, self.spark = \
            procedure, catalog, catalog_options, dict(args), spark
        for name in procedure.refused:
            if self.args.get(name) not in (None, ""):
                raise UnsupportedError(f"sys.{procedure.name}: lakeformat does not take argument {name!r} yet")

    def text(self, name: str) -> Optional[str]:
        v = self.args.get(name)
        return None if v is None else str(v)

    def int(self, name: str) -> Optional[int]:
        v = self.args.get(name)
        if v is None or (isinstance(v, int) and not isinstance(v, bool)):
            return v
        if isinstance(v, str) and v.strip().lstrip("-").isdigit():
            return int(v)
        raise OptionError(f"sys.{self.procedure.name}: {name} must be an integer, not {v!r}")

    def bool(self, name: str) -> bool:
        v = self.args.get(name)
        if v is None or isinstance(v, bool):
            return bool(v)
        if str(v).strip().lower() in ("true", "false"):
            return str(v).strip().lower() == "true"
        raise OptionError(f"sys.{self.procedure.name}: {name} must be true or false, not {v!r}")

    def timestamp(self, name: str) -> Optional[dt.datetime]:
        """A local timestamp ('2024-06-01 12:00:00'), as Paimon's procedures take ``older_than``."""
        v = self.text(name)
        if v is None:
            return None
        try:
            return dt.datetime.fromisoformat(v.strip())
        except ValueError:
            raise OptionError(f"sys.{self.procedure.name}: {name} is a timestamp like '2024-06-01 12:00:00', "
                              f"not {v!r}") from None

    def names(self, name: str) -> list[str]:
        return [n.strip() for n in (self.text(name) or "").split(",") if n.strip()]

    @property
    def identifier(self) -> str:
        ident = (self.text("table") or "").strip()
        if "." not in ident or ident.endswith(".*"):
            raise UnsupportedError(f"sys.{self.procedure.name}: table must be 'database.table' "
                                   f"(or 'database.table$branch_b'), not {ident!r}")
        return ident

    def table(self):
        return self.catalog.get_table(self.identifier)


RESULT = (("result", BOOLEAN),)


def _done() -> dict:
    return rows_answer(RESULT, [[True]])


def _compact(c: Call) -> dict:
    from lakeformat.spark.compaction import compact_on_spark
    strategy = (c.text("compact_strategy") or "full").strip().lower()
    if strategy not in ("full", "minor"):
        raise OptionError(f"sys.compact: compact_strategy is 'full' or 'minor', not {strategy!r}")
    if (c.text("order_strategy") or "none").strip().lower() != "none":
        raise UnsupportedError("sys.compact: lakeformat does not sort while compacting (order_strategy "
                               f"{c.text('order_strategy')!r}); only 'none'")
    try:
        partitions = [parse_partition_spec(p) for p in (c.text("partitions") or "").split(";") if p.strip()]
    except DataError as e:
        raise OptionError(f"sys.compact: partitions {c.text('partitions')!r}: {e}") from None
    if c.text("where"):
        if partitions:
            raise OptionError("sys.compact: give partitions or where, not both")
        partitions = where_partitions(c.spark, c.table(), c.text("where") or "")
        if not partitions:
            return _done()   # no partition matches: nothing to compact
    ref = TableRef(warehouse=c.catalog.warehouse, identifier=c.identifier,
                   catalog_options=tuple(sorted(c.catalog_options.items())))
    _, report = compact_on_spark(c.spark, ref, full=strategy == "full", partitions=partitions or None)
    if report.expire_error is not None:
        raise LakeformatError(f"sys.compact {c.identifier}: {report.summary()}")
    return _done()


def where_partitions(spark, t, where: str) -> list[dict]:
    """The partitions of ``t``'s latest snapshot that Spark's predicate ``where`` (over the
    partition columns, as Paimon's ``compact`` takes it) keeps, as {key: value}."""
    from pyspark.errors import AnalysisException, ParseException

    from lakeformat.spark.types import spark_schema
    keys = list(t.partition_keys)
    snap = t.latest_snapshot()
    if not keys or snap is None:
        raise OptionError(f"sys.compact: where {where!r} needs a partitioned table with a snapshot ({t.name})")
    values = {t.partition_values(e.partition) for e in t.live_entries(snap)}
    try:
        df = spark.createDataFrame([list(v) for v in values], spark_schema(t.schema.partition_fields)).where(where)
        return [dict(zip(keys, r)) for r in df.collect()]
    except (AnalysisException, ParseException) as e:
        raise OptionError(f"sys.compact: where {where!r} must be a predicate over the partition columns "
                          f"{keys}: {e}") from None


def _expire_snapshots(c: Call) -> dict:
    r = c.table().maintenance.expire_snapshots(retain_max=c.int("retain_max"), retain_min=c.int("retain_min"),
                                               older_than=c.timestamp("older_than"),
                                               max_deletes=c.int("max_deletes"))
    return rows_answer((("deleted_snapshots_count", INT),), [[len(r.expired)]])


def _remove_orphan_files(c: Call) -> dict:
    mode = (c.text("mode") or "local").strip().lower()
    if mode not in ("local", "distributed"):
        raise OptionError(f"sys.remove_orphan_files: mode is 'local' or 'distributed', not {mode!r}")
    cutoff = c.timestamp("older_than")
    kwargs = {} if cutoff is None else {"older_than": max(dt.timedelta(0), dt.datetime.now() - cutoff)}
    r = c.table().maintenance.remove_orphan_files(dry_run=c.bool("dry_run"), **kwargs)
    if r.skipped:
        raise LakeformatError(f"sys.remove_orphan_files {c.identifier}: {r.summary(c.identifier)}")
    return rows_answer((("result", STRING),), [[p] for p in r.orphans])


def _create_tag(c: Call) -> dict:
    c.table().maintenance.create_tag(c.text("tag") or "", snapshot_id=c.int("snapshot"),
                                     time_retained=O.duration(c.text("time_retained"), "time_retained"))
    return _done()


def _delete_tag(c: Call) -> dict:
    t = c.table()
    names = c.names("tag")
    for name in names:
        t.maintenance.tags.get(name)   # a missing tag fails by name, before any is deleted
    for name in names:
        t.maintenance.delete_tag(name)
    return _done()


def _rollback(c: Call) -> dict:
    given = [(k, c.args[k]) for k in ("version", "snapshot", "tag") if c.args.get(k) not in (None, "")]
    if len(given) != 1:
        raise OptionError("sys.rollback: give exactly one of version, snapshot, tag")
    key, value = given[0]
    text = str(value)
    target: int | str = int(text) if key == "snapshot" or text.isdigit() else text
    c.table().maintenance.rollback_to(target)
    return _done()


def _create_branch(c: Call) -> dict:
    t, branch = c.table(), c.text("branch") or ""
    if c.bool("ignoreIfExists") and branch in t.branches:
        return _done()
    t.branches.create(branch, from_tag=c.text("tag"), empty=c.text("tag") is None)
    return _done()


def _delete_branch(c: Call) -> dict:
    t = c.table()
    names = c.names("branch")
    for name in names:   # a missing branch fails by name, before any is deleted
        if name not in t.branches:
            raise NotFoundError(f"branch {name!r} of {t.name} does not exist (branches: {t.branches.list()})")
    for name in names:
        t.branches.delete(name)
    return _done()


def _fast_forward(c: Call) -> dict:
    c.table().branches.fast_forward(c.text("branch") or "")
    return _done()


TABLE = Param("table", STRING, True)
PROCEDURES: dict[str, Procedure] = {p.name: p for p in (
    Procedure("compact", (TABLE, Param("partitions", STRING), Param("compact_strategy", STRING),
                          Param("order_strategy", STRING), Param("order_by", STRING), Param("where", STRING),
                          Param("options", STRING), Param("partition_idle_time", STRING)), _compact,
              "compact buckets as a Spark job, one COMPACT snapshot ('full', the default, or 'minor')",
              refused=("order_by", "options", "partition_idle_time")),
    Procedure("expire_snapshots", (TABLE, Param("retain_max", INT), Param("retain_min", INT),
                                   Param("older_than", STRING), Param("max_deletes", INT), Param("options", STRING)),
              _expire_snapshots, "expire snapshots and the files only they use", refused=("options",)),
    Procedure("remove_orphan_files", (TABLE, Param("older_than", STRING), Param("dry_run", BOOLEAN),
                                      Param("parallelism", INT), Param("mode", STRING)),
              _remove_orphan_files, "delete files nothing reaches, older than older_than (default: 1 day)"),
    Procedure("create_tag", (TABLE, Param("tag", STRING, True), Param("snapshot", LONG),
                             Param("time_retained", STRING)), _create_tag, "tag a snapshot (default: the latest)"),
    Procedure("delete_tag", (TABLE, Param("tag", STRING, True)), _delete_tag, "delete tags (names, comma-separated)"),
    Procedure("rollback", (TABLE, Param("version", STRING), Param("snapshot", LONG), Param("tag", STRING)),
              _rollback, "make a snapshot or tag the latest again"),
    Procedure("create_branch", (TABLE, Param("branch", STRING, True), Param("tag", STRING),
                                Param("ignoreIfExists", STRING)), _create_branch,
              "create a branch from a tag, or empty (the schema only)"),
    Procedure("delete_branch", (TABLE, Param("branch", STRING, True)), _delete_branch,
              "delete branches (names, comma-separated)"),
    Procedure("fast_forward", (TABLE, Param("branch", STRING, True)), _fast_forward,
              "make main what the branch is"),
)}


def procedure(name: str) -> Procedure:
    p = PROCEDURES.get(name.lower())
    if p is None:
        raise UnsupportedError(f"lakeformat has no procedure sys.{name}; it has {sorted(PROCEDURES)}")
    return p


class SystemAnswers:
    """``lakeformat.spark.SystemPlanner`` in Python: procedures and system tables by the library."""

    class Java:
        implements: ClassVar[list[str]] = ["lakeformat.spark.SystemPlanner"]

    def __init__(self, spark) -> None:
        self.spark = spark   # the session whose driver runs CALL (compaction's Spark job)

    def procedures(self) -> str:
        return json.dumps(sorted(PROCEDURES))

    def procedure(self, name: str) -> str:
        return _answer(lambda: procedure(name).spec())

    def call(self, catalog: str, name: str, args: str) -> str:
        def run() -> dict:
            p = procedure(name)
            opts = dict(json.loads(catalog))
            opts.pop("warehouse")
            return p.run(Call(p, catalog_of(catalog), opts, json.loads(args), self.spark))
        return _answer(run)

    def systemTable(self, catalog: str, database: str, name: str, version: str,   # camelCase: Java
                    millis: int) -> str:
        try:
            answer = system_table_answer(catalog_of(catalog), database, name, version, int(millis))
        except LakeformatError as e:
            return _error(e)
        return "" if answer is None else json.dumps(answer)


def _answer(fn: Callable[[], dict]) -> str:
    """JSON of ``fn()``; lakeformat's own errors as ``{"error", "kind"}`` (the jar throws them)."""
    try:
        return json.dumps(fn())
    except LakeformatError as e:
        return _error(e)


def _error(e: LakeformatError) -> str:
    """An error answer, masked: the catalog's options hold the storage credentials."""
    return json.dumps({"error": mask(str(e)), "kind": type(e).__name__})


_INSTALLED: dict[int, SystemAnswers] = {}   # one per gateway, kept alive while it is installed


def install(spark) -> None:
    """Install :class:`SystemAnswers` for the jar's procedures and system tables (after
    :func:`lakeformat.spark.sql.install` started the callback server)."""
    answers = _INSTALLED[id(spark.sparkContext._gateway)] = SystemAnswers(spark)
    spark._jvm.lakeformat.spark.LakeformatProcedure.install(answers)
