"""Runs in a fresh interpreter (Airflow reads its configuration at first import): prepares an
embedded Airflow home, parses the project's DAGs, and either reports on the parse or runs DAGs
with dag.test(). Prints one ``RESULT {json}`` line per parse or run.

    python dag_runner.py '{"home": ..., "warehouse": ..., "landing": ..., "config": ...,
                           "parse": true | "runs": [{"dag_id": ..., "logical_date": "2024-06-01",
                                                     "conf": {...}}]}'
"""
from __future__ import annotations

import datetime as dt
import json
import sys
import time

MARK = "RESULT "


def _spy_on_table_io() -> list:
    """Record every catalog or file-system object lakeformat creates (what table IO needs)."""
    import lakeformat.table.catalog
    import lakeformat.io.fileio
    opened: list = []
    for cls in (lakeformat.table.catalog.Catalog, lakeformat.io.fileio.FileIO):
        original = cls.__init__

        def init(self, *a, _original=original, _name=cls.__name__, **k):
            opened.append(f"{_name}{a!r}")
            _original(self, *a, **k)
        cls.__init__ = init
    return opened


def _asset_uris(condition) -> list[str]:
    """The URIs of the Assets a schedule waits for (AssetAny/AssetAll nest them)."""
    if condition is None:
        return []
    if hasattr(condition, "objects"):
        return sorted(u for o in condition.objects for u in _asset_uris(o))
    return [condition.uri]


def parse_report() -> dict:
    from airflow.dag_processing.dagbag import BundleDagBag
    from airflow.utils.dag_cycle_tester import check_cycle

    from lakeformat.pipeline.local.airflow_home import dags_folder
    opened = _spy_on_table_io()
    t0 = time.perf_counter()
    bag = BundleDagBag(dag_folder=str(dags_folder()), bundle_path=dags_folder())
    seconds = time.perf_counter() - t0
    cycles = {}
    dags = {}
    for dag_id, d in bag.dags.items():
        try:
            check_cycle(d)
        except Exception as e:  # reported to the test
            cycles[dag_id] = str(e)
        dags[dag_id] = {
            "tasks": sorted(t.task_id for t in d.tasks),
            "catchup": d.catchup, "params": sorted(d.params.keys()),
            "schedule": type(d.timetable).__name__, "max_active_runs": d.max_active_runs,
            "paused_at_creation": d.is_paused_upon_creation, "start_date": d.start_date.isoformat(),
            "end_date": d.end_date.isoformat() if d.end_date else None,
            "outlets": {t.task_id: [getattr(o, "uri", str(o)) for o in t.outlets] for t in d.tasks if t.outlets},
            "asset_triggers": _asset_uris(getattr(d.timetable, "asset_condition", None)),
            "jars": {t.task_id: t.jars for t in d.tasks if hasattr(t, "jars")},
        }
    return {"import_errors": {k: str(v) for k, v in bag.import_errors.items()}, "dags": dags,
            "cycles": cycles, "table_io": opened, "seconds": seconds}


def main(spec: dict) -> None:
    import os
    os.environ.update(spec.get("env") or {})
    from lakeformat.pipeline.local.airflow_home import load_dags, prepare, run_dag
    prepare(spec["home"], dags=spec["dags"], plugins=spec["plugins"], config=spec["config"],
            warehouse=spec["warehouse"], landing=spec.get("landing"), log_level=spec.get("log_level", "INFO"))
    if spec.get("parse"):
        print(MARK + json.dumps(parse_report()), flush=True)
        return
    load_dags()   # import errors fail here, before any run
    for run in spec["runs"]:
        day = run.get("logical_date")
        when = dt.datetime.fromisoformat(day).replace(tzinfo=dt.UTC) if day else None
        t0 = time.perf_counter()
        r = run_dag(run["dag_id"], when, run.get("conf"))
        print(MARK + json.dumps({"dag_id": r.dag_id, "state": r.state, "tasks": r.tasks, "xcom": r.xcom,
                                 "asset_events": r.asset_events, "labels": r.labels,
                                 "seconds": time.perf_counter() - t0},
                                default=str), flush=True)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
