"""Ingest one day (or hour) of landing files into a table of the pipeline config.

    spark-submit jobs/ingest.py --table user_behavior --date 2024-06-01 [--hour H] [--landing DIR]
                                [--stage ID | --publish ID | --discard ID]

Without a stage flag the rows are committed directly, exactly once per (table, date[, hour]);
``--stage`` writes them without publishing, ``--publish``/``--discard`` finish a stage. The table
is created from the config when it does not exist yet. See lakeformat/pipeline/ingest.py.
"""
import contextlib
import datetime as dt
import os

from lakeformat.pipeline.jobs import parser, resolve, run, spark_session
from lakeformat.errors import LakeformatError
from lakeformat.pipeline import ingest
from lakeformat.spark.progress import StageProgress


def main(argv):
    ap = parser("ingest.py", __doc__)
    ap.add_argument("--date", required=True, type=lambda s: dt.date.fromisoformat(s).isoformat(),
                    help="logical date, YYYY-MM-DD")
    ap.add_argument("--hour", type=int, choices=range(24), metavar="H", help="hour of the day, for hourly landing")
    ap.add_argument("--landing", help="landing root (default: $LAKEFORMAT_LANDING, then the config's)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--stage", metavar="STAGE_ID", help="write and stage, do not publish")
    g.add_argument("--publish", metavar="STAGE_ID", help="publish a staged ingest")
    g.add_argument("--discard", metavar="STAGE_ID", help="discard a staged ingest and delete its files")
    a = ap.parse_args(argv)
    jt = resolve(a)
    if a.publish or a.discard:   # metadata only: no Spark needed
        print(ingest.publish(jt, a.publish) if a.publish else ingest.discard(jt, a.discard))
        return 0
    landing = a.landing or os.environ.get("LAKEFORMAT_LANDING") or (jt.config.landing if jt.config else None)
    if not landing:
        raise LakeformatError(f"no landing folder for {jt.identifier}: give --landing, set $LAKEFORMAT_LANDING "
                              "or landing: in the config")
    sessions = []
    watching = contextlib.ExitStack()   # Spark's stage progress in the log while the write runs

    def spark():
        sessions.append(spark_session(f"lakeformat-ingest-{jt.short_name}-{a.date}", a.master))
        watching.enter_context(StageProgress(sessions[-1], f"ingest {jt.identifier} {a.date}"))
        return sessions[-1]
    try:
        with watching:
            print(ingest.ingest(spark, jt, a.date, a.hour, landing, a.stage))
    finally:
        for s in sessions:
            s.stop()
    return 0


if __name__ == "__main__":
    run(main)
