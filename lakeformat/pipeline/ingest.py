"""The ingest job: landing files of one logical date (or hour) into their table.

Reads the configured landing folder (JSON lines or CSV) with the table's columns as the schema
(malformed records fail the job, naming the file), fills the columns the folder names
(``dt={ds}``), casts to the table's types and writes through the data source. A unit of work is
(table, date[, hour]); its commit carries ``identifier_for("ingest", table, date[, hour])`` under
the commit user ``lakeformat-ingest-<table>``, so:

- a re-run of a unit that is already committed does nothing (it is found among the retained
  snapshots); when the folder names the table's partition (``dt={ds}``) and that partition has
  rows already (a re-run whose earlier commit has been expired since), the rows replace it (an
  OVERWRITE) instead of being added twice; otherwise they are appended;
- ``--stage ID`` writes the files and records the commit as stage ``ID`` without publishing it
  (a leftover stage of an earlier attempt is cleared first); ``--publish ID`` and ``--discard ID``
  finish it later, exactly once (see :mod:`lakeformat.staging`).
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Optional

import lakeformat.spark as lfs
from lakeformat.commit import staging
from lakeformat.commit.staging import find_committed, identifier_for, load_staged
from lakeformat.errors import LakeformatError, NotFoundError
from lakeformat.format import predicate as P
from lakeformat.pipeline.tables import TableDefinition, create_table
from lakeformat.pipeline.wap import clear_leftover
from lakeformat.spark.types import spark_type

log = logging.getLogger("lakeformat.jobs.ingest")


@dataclass(frozen=True)
class IngestPlan:
    """What one ingest run does (pure: decided from the arguments and the table definition)."""

    landing_dir: str
    path_columns: tuple[tuple[str, str], ...]
    commit_user: str
    identifier: int
    overwrite_partition: Optional[tuple[tuple[str, str], ...]]   # replace this partition


def plan(d: TableDefinition, landing_root: str, date: str, hour: Optional[int]) -> IngestPlan:
    parts = ("ingest", d.name, date) + ((f"{hour:02d}",) if hour is not None else ())
    path_cols = d.path_columns(date, hour)
    # the folder is exactly one partition: a re-run may replace it (never for hourly folders,
    # which are a part of a day's partition)
    overwrite = None
    if hour is None and d.partition_keys and set(d.partition_keys) <= set(path_cols):
        overwrite = tuple((k, path_cols[k]) for k in d.partition_keys)
    return IngestPlan(d.landing_dir(landing_root, date, hour), tuple(path_cols.items()),
                      f"lakeformat-ingest-{d.name}", identifier_for(*parts), overwrite)


def read_landing(spark, d: TableDefinition, p: IngestPlan, table):
    """The landing rows as a DataFrame of the table's columns (types cast at write time)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructField, StructType

    given = dict(p.path_columns)
    file_fields = [StructField(f.name, spark_type(f.type), True) for f in table.schema.fields if f.name not in given]
    schema = StructType(file_fields)
    if not os.path.isdir(p.landing_dir) and "://" not in p.landing_dir:
        raise NotFoundError(f"no landing folder {p.landing_dir} for {d.name}")
    if d.landing_format == "jsonl":
        df = spark.read.schema(schema).option("mode", "FAILFAST").json(p.landing_dir)
    else:
        df = spark.read.schema(schema).option("header", True).option("mode", "FAILFAST").csv(p.landing_dir)
    for k, v in given.items():
        df = df.withColumn(k, F.lit(v))
    return df.select(*table.schema.names)


def ingest(spark_factory, jt, date: str, hour: Optional[int], landing_root: str, stage_id: Optional[str]) -> str:
    """Run one unit; returns a one-line account of what happened. ``spark_factory()`` gives
    the SparkSession, only asked for when there is something to write."""
    d = jt.definition
    if d is None:
        raise LakeformatError(f"{jt.identifier} is not in the pipeline config: ingest needs its landing settings")
    if not landing_root:
        raise LakeformatError("no landing root: give --landing or set $LAKEFORMAT_LANDING")
    table = create_table(jt.catalog(), d)
    p = plan(d, landing_root, date, hour)
    unit = date if hour is None else f"{date} hour {hour:02d}"
    done = find_committed(table, p.commit_user, p.identifier)
    if done is not None:
        return f"{d.name} {unit} is already ingested (snapshot {done.id}): nothing to do"
    options = {"commit-user": p.commit_user, "commit-identifier": str(p.identifier)}
    mode = "append"
    if stage_id is not None:
        _clear_stage(table, stage_id)
        options["stage-id"] = stage_id
    elif p.overwrite_partition is not None and _has_rows(table, dict(p.overwrite_partition)):
        mode = "overwrite"   # a replacement; a first ingest appends (streaming readers follow appends)
    df = read_landing(spark_factory(), d, p, table)
    lfs.write(df, jt.identifier, warehouse=jt.warehouse, mode=mode,
              overwrite_partition=dict(p.overwrite_partition) if mode == "overwrite" else None,
              options=options, **jt.catalog_options)
    if stage_id is not None:
        staged = load_staged(table, stage_id)
        return f"staged {staged.row_count} rows of {d.name} {unit} as {stage_id} (not visible until published)"
    snap = find_committed(table, p.commit_user, p.identifier)
    if snap is None:
        return f"{d.name} {unit}: the landing folder had no rows; nothing committed"
    return f"ingested {d.name} {unit}: snapshot {snap.id} ({snap.commit_kind}, {snap.delta_record_count:+,} rows)"


def _has_rows(table, partition: dict) -> bool:
    terms = [P.col(k) == v for k, v in partition.items()]
    return bool(table.scan(filter=terms[0] if len(terms) == 1 else P.And(tuple(terms))).plan())


def _clear_stage(table, stage_id: str) -> None:
    if not any(s.stage_id == stage_id for s in staging.list_staged(table)):
        return
    log.info("stage %s of %s left by an earlier attempt: %s", stage_id, table.name, clear_leftover(table, stage_id))


def publish(jt, stage_id: str) -> str:
    snap = staging.publish(jt.open(), stage_id)
    if snap is None:
        return f"published stage {stage_id} of {jt.identifier}: it had no changes, no snapshot made"
    return f"published stage {stage_id} of {jt.identifier} as snapshot {snap.id} ({snap.delta_record_count:+,} rows)"


def discard(jt, stage_id: str) -> str:
    n = staging.discard(jt.open(), stage_id)
    return f"discarded stage {stage_id} of {jt.identifier}: deleted {n} data file(s)"
