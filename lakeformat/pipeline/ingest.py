"""The ingest job: landing files of one logical date (or hour) into their table.

Reads the configured landing folder (JSON lines or CSV; a local folder or one on an object store,
see :mod:`.landing_files`) with the table's columns as the schema (malformed records fail the
job, naming the file), fills the columns the folder names
(``dt={ds}``), casts to the table's types and writes through the data source. A unit of work is
(table, date[, hour]); it is always written as the unit's stage (``stage_id_for``) with the
unit's commit identity (``ingest_identity``), the same the ingest DAG uses, so a job and a DAG
run agree on what is loaded:

- a unit is loaded once its commit is among the retained snapshots or its stage has been
  published (``staging``'s published marker, which outlives snapshot expiration): a re-run
  of a loaded unit, by the job or by the DAG, with any expiration in between, does nothing;
- without a stage flag the job stages and publishes at once; ``--stage ID`` only stages (the
  DAG audits, then publishes) and clears what an earlier attempt left under the same id first;
  ``--publish ID`` and ``--discard ID`` finish a stage (see :mod:`lakeformat.pipeline.wap`).
"""
from __future__ import annotations

import logging
from typing import Optional
from collections.abc import Mapping

import lakeformat.spark as lfs
from lakeformat.table import staging
from lakeformat.errors import LakeformatError, NotFoundError
from lakeformat.pipeline import landing_files
from lakeformat.pipeline.config import TableSpec
from lakeformat.pipeline.units import IngestUnit, ingest_identity, stage_id_for
from lakeformat.pipeline.wap import clear_leftover, create_table, loaded
from lakeformat.spark.types import spark_arrow_schema, spark_type

log = logging.getLogger("lakeformat.jobs.ingest")


def read_landing(spark, d: TableSpec, unit: IngestUnit, landing_root: str, table,
                 options: Optional[Mapping[str, str]] = None):
    """The landing rows as a DataFrame of the table's columns (types cast at write time): a
    local folder through Spark's own reader, one on an object store (``s3://``, reached with
    the warehouse's storage ``options``) through :func:`remote_landing`."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructField, StructType

    folder = d.landing_dir(landing_root, unit.date, unit.hour)
    given = d.path_columns(unit.date, unit.hour)
    file_fields = [StructField(f.name, spark_type(f.type), True) for f in table.schema.fields if f.name not in given]
    schema = StructType(file_fields)
    if landing_files.is_remote(folder):
        df = remote_landing(spark, landing_files.list_files(folder, options), d.landing_format, schema, options)
    elif not landing_files.folder_present(folder):
        raise NotFoundError(f"no landing folder {folder} for {d.name}")
    elif d.landing_format == "jsonl":
        df = spark.read.schema(schema).option("mode", "FAILFAST").json(folder)
    else:
        df = spark.read.schema(schema).option("header", True).option("mode", "FAILFAST").csv(folder)
    for k, v in given.items():
        df = df.withColumn(k, F.lit(v))
    return df.select(*table.schema.names)


def remote_landing(spark, files: list[str], fmt: str, schema, options: Optional[Mapping[str, str]]):
    """A DataFrame of ``schema`` from landing ``files`` on an object store: the driver lists,
    each executor task parses its share of the files with pyarrow (``landing_files.read_file``).
    The storage options travel inside the task, like the data source's."""
    arrow = spark_arrow_schema(schema)
    if not files:
        return spark.createDataFrame([], schema)
    zone = spark.conf.get("spark.sql.session.timeZone")
    opts = dict(options or {})

    def parse(batches):
        for b in batches:
            for i in b.column(0).to_pylist():   # file numbers: one loop step per file
                t = landing_files.read_file(files[i], fmt, arrow, opts, zone)
                yield from t.to_batches()

    tasks = min(len(files), spark.sparkContext.defaultParallelism)
    return spark.range(len(files), numPartitions=tasks).mapInArrow(parse, schema)


def ingest(spark_factory, jt, date: str, hour: Optional[int], landing_root: str,
           stage_id: Optional[str]) -> str:
    """Run one unit; returns a one-line account of what happened. ``spark_factory()`` gives
    the SparkSession, only asked for when there is something to write. ``stage_id`` None:
    stage under the unit's own stage id and publish at once."""
    d = jt.definition
    if d is None:
        raise LakeformatError(f"{jt.identifier} is not in the pipeline config: ingest needs its landing settings")
    if not landing_root:
        raise LakeformatError("no landing root: give --landing or set $LAKEFORMAT_LANDING")
    table = create_table(jt.catalog(), d)
    unit = IngestUnit(date, hour)
    user, identifier = ingest_identity(d, unit)
    own = stage_id_for(d, unit)
    sid = stage_id or own
    done = loaded(table, sid, user, identifier) or loaded(table, own, user, identifier)
    if done is not None:
        return f"{d.name} {unit.label} is already ingested ({done}): nothing to do"
    left = clear_leftover(table, sid)
    if left:
        log.info("%s", left)
    df = read_landing(spark_factory(), d, unit, landing_root, table, jt.catalog_options)
    lfs.write(df, jt.identifier, warehouse=jt.warehouse, mode="append",
              options={"commit-user": user, "commit-identifier": str(identifier), "stage-id": sid},
              **jt.catalog_options)
    if sid not in {s.stage_id for s in staging.list_staged(table)}:
        return f"{d.name} {unit.label}: the landing folder had no rows; nothing staged"
    if stage_id is not None:
        staged = staging.load_staged(table, sid)
        return f"staged {staged.row_count} rows of {d.name} {unit.label} as {sid} (not visible until published)"
    snap = staging.publish(table, sid)
    if snap is None:
        return f"{d.name} {unit.label}: the landing folder had no rows; nothing committed"
    return f"ingested {d.name} {unit.label}: snapshot {snap.id} ({snap.commit_kind}, {snap.delta_record_count:+,} rows)"


def publish(jt, stage_id: str) -> str:
    snap = staging.publish(jt.open(), stage_id)
    if snap is None:
        return f"published stage {stage_id} of {jt.identifier}: it had no changes, no snapshot made"
    return f"published stage {stage_id} of {jt.identifier} as snapshot {snap.id} ({snap.delta_record_count:+,} rows)"


def discard(jt, stage_id: str) -> str:
    n = staging.discard(jt.open(), stage_id)
    return f"discarded stage {stage_id} of {jt.identifier}: deleted {n} data file(s)"
