"""``make demo``: write user_behavior events into an append table in several commits and show
the table's history. Later issues grow this into the whole Spark + Airflow pipeline."""
from __future__ import annotations

import os
import shutil

from rich.console import Console
from rich.table import Table as RichTable

import lakeformat as lf
from lakeformat.demo_data import SCHEMA, user_behavior

DAYS = ["2024-06-01", "2024-06-02", "2024-06-03"]


def main() -> None:
    console = Console()
    warehouse = os.path.abspath(os.environ.get("LAKEFORMAT_WAREHOUSE", "warehouse"))
    if os.path.exists(os.path.join(warehouse, "demo.db")):
        shutil.rmtree(os.path.join(warehouse, "demo.db"))
    cat = lf.Catalog(warehouse)
    cat.create_database("demo", ignore_if_exists=True)
    table = cat.create_table("demo.user_behavior", SCHEMA, partition_keys=["dt"],
                             options={"bucket": "4", "bucket-key": "user_id"})
    console.print(f"[bold]warehouse[/] {warehouse}\n[bold]table[/] demo.user_behavior "
                  "(partitioned by dt, 4 buckets on user_id)")
    for i, day in enumerate(DAYS):
        snap = table.write(user_behavior(200_000, [day], seed=i))
        console.print(f"  day {day}: committed snapshot {snap.id} ({snap.delta_record_count:,} rows)")
    late = user_behavior(50_000, [DAYS[0]], seed=99)
    snap = table.write(late, overwrite={"dt": DAYS[0]})
    console.print(f"  re-delivered {DAYS[0]}: OVERWRITE snapshot {snap.id} replaces that partition")

    snaps = RichTable(title="snapshots")
    for c in ("id", "kind", "schema", "delta rows", "total rows"):
        snaps.add_column(c, justify="right" if c != "kind" else "left")
    for s in table.snapshots():
        snaps.add_row(str(s.id), s.commit_kind, str(s.schema_id), f"{s.delta_record_count:+,}",
                      f"{s.total_record_count:,}")
    console.print(snaps)

    summary = table.read(columns=["dt", "behavior", "price"]).group_by(["dt", "behavior"]).aggregate(
        [("price", "count"), ("price", "sum")]).sort_by([("dt", "ascending"), ("behavior", "ascending")])
    out = RichTable(title="events per day and behavior (latest snapshot)")
    for c in ("dt", "behavior", "events", "revenue"):
        out.add_column(c)
    for r in summary.to_pylist():
        out.add_row(r["dt"], r["behavior"], f"{r['price_count']:,}", f"{r['price_sum']:,.2f}")
    console.print(out)
    first = table.read(snapshot_id=1, columns=["dt"]).num_rows
    console.print(f"time travel: snapshot 1 had {first:,} rows; "
                  f"files now live: {len(table.files())}; "
                  f"inspect with: .venv/bin/lakeformat --warehouse {warehouse} show demo.user_behavior")


if __name__ == "__main__":
    main()
