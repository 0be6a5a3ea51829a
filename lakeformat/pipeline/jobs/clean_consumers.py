"""Remove consumers of a table: those idle longer than ``consumer.expiration-time`` (or
``--older-than``), and with ``--including``/``--excluding`` those whose id matches.

    spark-submit jobs/clean_consumers.py --table user_behavior [--older-than "7 d"]
                                         [--including "regex" [--excluding "regex"]]

A removed consumer no longer holds snapshots back from expiration.
"""
from lakeformat.pipeline.jobs import parser, resolve, run
from lakeformat.format.options import duration


def main(argv):
    ap = parser("clean_consumers.py", __doc__)
    ap.add_argument("--older-than", help="remove consumers idle longer than this, e.g. '7 d' "
                                         "(default: the table's consumer.expiration-time)")
    ap.add_argument("--including", help="also remove consumers whose whole id matches this regular expression")
    ap.add_argument("--excluding", help="... except those matching this one")
    a = ap.parse_args(argv)
    if a.excluding and not a.including:
        ap.error("--excluding needs --including")
    jt = resolve(a)
    consumers = jt.open().maintenance.consumers
    expired = consumers.expire(duration(a.older_than, "--older-than"))
    cleared = consumers.clear(a.including, a.excluding) if a.including else []
    print(f"{jt.identifier}: removed {len(expired)} idle consumer(s) {expired} and {len(cleared)} "
          f"matching consumer(s) {cleared}; {len(consumers.list())} left")
    return 0


if __name__ == "__main__":
    run(main)
