"""Expire old snapshots of a table and delete the files only they referenced.

    spark-submit jobs/expire_snapshots.py --table user_behavior [--retain-min N] [--retain-max N]
                                          [--older-than "1 h"] [--step N] [--max-deletes N] [--dry-run]

Unset limits come from the table's options (snapshot.num-retained.min/max, snapshot.time-retained,
snapshot.expire.limit as the step). Every snapshot due goes, --step per run, up to --max-deletes.
Tagged snapshots and those a consumer still needs are kept.
"""
from lakeformat.pipeline.jobs import parser, progress_logger, resolve, run
from lakeformat.format.options import duration


def main(argv):
    ap = parser("expire_snapshots.py", __doc__)
    ap.add_argument("--retain-min", type=int)
    ap.add_argument("--retain-max", type=int)
    ap.add_argument("--older-than", help="expire snapshots older than this duration, e.g. '1 h' or '7 d'")
    ap.add_argument("--step", type=int, help="snapshots per step (default: snapshot.expire.limit)")
    ap.add_argument("--max-deletes", type=int, help="expire at most this many snapshots in all")
    ap.add_argument("--dry-run", action="store_true", help="only say what would be expired")
    a = ap.parse_args(argv)
    jt = resolve(a)
    table = jt.open()
    result = table.maintenance.expire_snapshots(
        retain_min=a.retain_min, retain_max=a.retain_max, older_than=duration(a.older_than, "--older-than"),
        step=a.step, max_deletes=a.max_deletes, dry_run=a.dry_run,
        progress=progress_logger(f"expiring snapshots of {jt.identifier}"))
    print(result.summary(jt.identifier))
    return 0


if __name__ == "__main__":
    run(main)
