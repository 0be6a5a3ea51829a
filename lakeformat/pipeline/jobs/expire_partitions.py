"""Drop the partitions of a table whose time (parsed from their values) is older than the
table's ``partition.expiration-time`` (or ``--expiration-time``), in one OVERWRITE commit.

    spark-submit jobs/expire_partitions.py --table user_behavior [--expiration-time "30 d"] [--dry-run]
"""
from lakeformat.pipeline.jobs import parser, progress_logger, resolve, run


def main(argv):
    ap = parser("expire_partitions.py", __doc__)
    ap.add_argument("--expiration-time", help="override partition.expiration-time, e.g. '30 d'")
    ap.add_argument("--dry-run", action="store_true", help="only list the partitions that would be dropped")
    a = ap.parse_args(argv)
    jt = resolve(a)
    table = jt.open()
    dropped = table.maintenance.expire_partitions(expiration_time=a.expiration_time, dry_run=a.dry_run,
                                              progress=progress_logger(f"expiring partitions of {jt.identifier}"))
    verb = "would drop" if a.dry_run else "dropped"
    print(f"{jt.identifier}: {verb} {len(dropped)} partition(s)" +
          (": " + ", ".join(",".join(f"{k}={v}" for k, v in p.items()) for p in dropped) if dropped else ""))
    return 0


if __name__ == "__main__":
    run(main)
