"""Delete files of a table that no snapshot, tag, changelog or staged commit references and that
are older than ``--older-than`` (default 1 day: younger files may belong to a running writer).

    spark-submit jobs/remove_orphans.py --table user_behavior [--older-than "1 d"] [--dry-run]
"""
import datetime as dt

from lakeformat.pipeline.jobs import parser, progress_logger, resolve, run
from lakeformat.format.options import parse_duration
from lakeformat.maintenance.orphans import remove_orphan_files


def main(argv):
    ap = parser("remove_orphans.py", __doc__)
    ap.add_argument("--older-than", default="1 d", help="only files older than this (default '1 d')")
    ap.add_argument("--dry-run", action="store_true", help="only list what would be deleted")
    ap.add_argument("--allow-deleting-in-flight-files", action="store_true",
                    help="allow --older-than under 1 d, which also deletes files of writes still running")
    a = ap.parse_args(argv)
    jt = resolve(a)
    older = parse_duration(a.older_than)
    if older < dt.timedelta(0):
        ap.error("--older-than must not be negative")
    r = remove_orphan_files(jt.open(), older_than=older, dry_run=a.dry_run,
                            allow_deleting_in_flight_files=a.allow_deleting_in_flight_files,
                            progress=progress_logger(f"looking for orphan files of {jt.identifier}"))
    print(r.summary(jt.identifier, a.older_than))
    return 0


if __name__ == "__main__":
    run(main)
