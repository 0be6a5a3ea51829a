"""The destructive operators' templated ``dry_run`` argument lives in ``dry_run_value``, so
``BaseOperator.dry_run()`` (Airflow's render-only check of a task) still works on them, and the
argument still renders from a DAG param."""
from __future__ import annotations

import pytest

from lakeformat.pipeline.airflow.operators import (
    LakeformatCleanConsumersOperator, LakeformatExpirePartitionsOperator, LakeformatExpireSnapshotsOperator,
    LakeformatRemoveOrphanFilesOperator, as_bool)

OPERATORS = [LakeformatCleanConsumersOperator, LakeformatExpirePartitionsOperator,
             LakeformatExpireSnapshotsOperator, LakeformatRemoveOrphanFilesOperator]


@pytest.mark.parametrize("operator", OPERATORS, ids=lambda o: o.__name__)
def test_dry_run_is_a_templated_argument_and_the_base_method_still_works(operator):
    op = operator(task_id="maintain", table="demo.events", dry_run="{{ params.dry_run }}")
    op.dry_run()   # with an attribute named dry_run this was "'str' object is not callable"
    op.render_template_fields({"params": {"dry_run": False}})
    assert op.dry_run_value == "False" and as_bool(op.dry_run_value) is False
    assert as_bool(operator(task_id="maintain", table="demo.events", dry_run=True).dry_run_value)
