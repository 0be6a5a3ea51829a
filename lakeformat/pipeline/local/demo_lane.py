"""One table's ingests for ``make demo``, in a process of its own: the table's ingest DAG once per
day with ``dag.test()``, on an Airflow home of its own (a copy of the demo's migrated SQLite
database: two processes never share one SQLite file). The demo runs one lane per table side by
side, as Airflow would run the tables' DAGs; each day's outcome is a JSON line in ``--out``.

    python -m lakeformat.pipeline.local.demo_lane --table user_behavior --out lane.jsonl \\
        --log tasks.log 2024-06-01 2024-06-02

The environment is the demo's (:func:`~lakeformat.pipeline.local.airflow_home.airflow_env`)
with ``AIRFLOW_HOME`` and the database pointing at the lane's home.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time

from lakeformat.pipeline.local.airflow_home import output_to, run_dag


def ingest_day(table: str, day: str, log: str) -> dict:
    """Run ``lakeformat_ingest_<table>`` for ``day``; what the demo's report needs of the run."""
    when = dt.datetime.fromisoformat(day).replace(tzinfo=dt.UTC)
    t0 = time.perf_counter()
    with output_to(log):
        r = run_dag(f"lakeformat_ingest_{table}", when)
    return {"day": day, "table": table, "state": r.state, "ok": r.ok, "seconds": time.perf_counter() - t0,
            "published": r.xcoms("ingest.publish"), "audits": r.xcoms("ingest.audit", "audit"),
            "failed_tasks": r.failed_tasks()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lakeformat.pipeline.local.demo_lane", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--table", required=True, help="the table's name in the pipeline config")
    ap.add_argument("--out", required=True, help="file to append each day's outcome to (JSON lines)")
    ap.add_argument("--log", required=True, help="the task log (the runs' and spark-submit's output)")
    ap.add_argument("days", nargs="+", help="logical dates, YYYY-MM-DD")
    args = ap.parse_args(argv)
    plugins = os.environ.get("AIRFLOW__CORE__PLUGINS_FOLDER")
    if plugins and plugins not in sys.path:   # as Airflow's plugin manager does (airflow_home.prepare)
        sys.path.append(plugins)
    for day in args.days:
        outcome = ingest_day(args.table, day, args.log)
        with open(args.out, "a") as f:
            f.write(json.dumps(outcome) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
