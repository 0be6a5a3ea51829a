"""A small warehouse for the page tests, with sorted runs known by construction."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa

import lakeformat as lf
from tests.project import minimal_config

CONFIG = minimal_config("demo.user_behavior", "demo.item_price", "demo.not_yet")

# (table, partition label, bucket) -> sorted runs
EXPECTED_RUNS = {
    ("demo.user_behavior", "dt=2024-06-01", 0): 3,   # three appends, one file each
    ("demo.user_behavior", "dt=2024-06-02", 0): 1,
    ("demo.item_price", "", 0): 2,                   # one level-0 file over a fully compacted level
    ("scratch.notes", "", 0): 1,
}


HOSTILE_NOTE = "<script>document.title='pwned'</script><b>bold?</b>"
BAD_DAY, PENDING_DAY = "2024-06-03", "2024-06-04"
USER = "lakeformat-ingest-user_behavior"


def _stages(table) -> None:
    """Write-audit-publish stages that change no snapshot: one whose audit failed (discarded,
    its failing expectation recorded) and one staged, not audited yet."""
    from lakeformat.table import staging
    from lakeformat.pipeline.quality import parse_expectations
    from lakeformat.pipeline.wap import audit_stage
    rules = parse_expectations([{"expect_column_values_to_be_in_set": {"column": "behavior",
                                                                       "value_set": ["pv", "buy", "cart"]}}])
    for day, behavior in ((BAD_DAY, "oops"), (PENDING_DAY, "pv")):
        w = table.new_write(commit_user=USER)
        w.write(pa.table({"user_id": [7, 8], "behavior": [behavior, "pv"], "dt": [day] * 2}))
        staging.stage(table, w.prepare_commit(), day, commit_user=USER,
                      identifier=staging.identifier_for("ingest", "user_behavior", day))
    audit_stage(table, BAD_DAY, rules, f"demo.user_behavior {BAD_DAY}")


def build_lakehouse(root: Path) -> tuple[str, str]:
    """Returns (warehouse, config path)."""
    wh = str(root / "wh")
    cat = lf.Catalog(wh)
    cat.create_database("demo")
    cat.create_database("scratch")
    ub = cat.create_table("demo.user_behavior",
                          pa.schema([("user_id", pa.int64()), ("behavior", pa.string()), ("dt", pa.string())]),
                          partition_keys=["dt"], options={"bucket": "1", "write-only": "true"})
    for i in range(3):
        ub.write(pa.table({"user_id": [i, i + 10], "behavior": ["pv", "buy"], "dt": ["2024-06-01"] * 2}))
    ub.write(pa.table({"user_id": [99], "behavior": ["cart"], "dt": ["2024-06-02"]}))
    ub.consumers.record("dashboard", 3)
    ub.create_tag("first-day", 3)
    ip = cat.create_table("demo.item_price",
                          pa.schema([pa.field("item_id", pa.int64(), False), ("price", pa.float64())]),
                          primary_keys=["item_id"], options={"bucket": "1", "write-only": "true"})
    ip.write(pa.table({"item_id": [1, 2], "price": [1.0, 2.0]}))
    ip.write(pa.table({"item_id": [2, 3], "price": [2.5, 3.0]}))
    ip.compact(full=True)
    ip.write(pa.table({"item_id": [4], "price": [4.0]}))
    notes = cat.create_table("scratch.notes", pa.schema([("note", pa.string())]), options={"bucket": "1"})
    notes.write(pa.table({"note": ["hello", HOSTILE_NOTE]}))
    _stages(ub)

    config = root / "tables.yaml"
    config.write_text(CONFIG)
    return wh, str(config)
