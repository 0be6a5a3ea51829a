"""Runs a DAG with dag.test() inside a test's subprocess and prints, per run, the run state, the
task states and the XComs, as one JSON line each (read by conftest.run_dag)."""
from __future__ import annotations

import json

RESULT_MARK = "AIRFLOW_RUN_RESULT "


def main(dag, runs: int = 1) -> None:
    from sqlalchemy import select

    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    for _ in range(runs):
        dr = dag.test()
        with create_session() as session:
            xcoms = {x.task_id: x.value for x in session.scalars(
                select(XComModel).where(XComModel.dag_id == dag.dag_id, XComModel.run_id == dr.run_id,
                                        XComModel.key == "return_value"))}
            tasks = {ti.task_id: str(ti.state) for ti in dr.get_task_instances(session=session)}
        print(RESULT_MARK + json.dumps({"state": str(dr.state), "tasks": tasks, "xcom": xcoms},
                                       default=str), flush=True)
