"""Compact a table on Spark: merge small files of append tables, run the merge tree's compaction
(or a full compaction) on primary-key tables, committed as one COMPACT snapshot.

    spark-submit jobs/compact.py --table user_behavior [--full] [--partition dt=2024-06-01 ...]

The driver plans, each (partition, bucket) is rewritten by a Spark task on the executors, the
driver commits once (``lakeformat.spark.compaction``). The dedicated compaction job of tables
written with ``write-only = true``: it also expires snapshots afterwards, as any commit of a
table that is not write-only does.
"""
from lakeformat.pipeline.jobs import parser, resolve, run, spark_session
from lakeformat.spark.compaction import compact_on_spark
from lakeformat.spark.options import parse_partition_spec
from lakeformat.spark.progress import StageProgress


def main(argv):
    ap = parser("compact.py", __doc__)
    ap.add_argument("--full", action="store_true", help="rewrite everything (primary keys: into the top level)")
    ap.add_argument("--partition", action="append", default=[], metavar="K=V[,K=V]",
                    help="compact only this partition (repeatable); default: every partition")
    a = ap.parse_args(argv)
    jt = resolve(a)
    table = jt.open()
    partitions = [dict(parse_partition_spec(p)) for p in a.partition] or None
    for p in partitions or []:
        table.partition_matcher(p)   # unknown keys: a clear error before any work
    spark = spark_session(f"lakeformat-compact-{jt.short_name}", a.master)
    with StageProgress(spark, f"compact {jt.identifier}"):
        snap, report = compact_on_spark(spark, jt.ref(), full=a.full, partitions=partitions,
                                        commit_user=f"lakeformat-compact-{jt.short_name}")
    print(f"compacted {jt.identifier}: snapshot {snap.id} ({snap.commit_kind}); {report.summary()}"
          if snap is not None else f"{jt.identifier}: {report.summary()}")
    return 1 if report.expire_error is not None else 0   # compacted; the failed expiration fails the job


if __name__ == "__main__":
    run(main)
