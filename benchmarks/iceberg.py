"""Commit latency with Iceberg metadata published (``metadata.iceberg.storage``) vs without.

Two tables of the same shape (partitioned by ``dt``, bucket-unaware), one with
``metadata.iceberg.storage = table-location``, one without. ``--commits`` rounds; in each round
both tables get one commit of a one-row file (order alternating per round, so neither always
runs first on a noisy machine). Timed: ``new_commit(user).commit(messages)``, which includes the
post-commit steps (snapshot expiration, and for the first table the Iceberg publish); writing the
file and ``prepare_commit`` are not timed. Two retention settings:

- ``default``: Paimon's defaults (10 snapshots at least, 1 hour): nothing expires during the run,
  so every Iceberg snapshot stays in the metadata, which grows with each commit;
- ``retained-50``: ``snapshot.num-retained.max = 50`` for both tables: Paimon expires, and the
  Iceberg snapshots expire with it.

Reported per setting: the median commit time of each table per window of 50 commits, the ratio
on/off per window and overall (median of the per-run medians), and each table's last window /
first window. Goal: on/off <= 1.3x overall and in the last window (flat: the publish does not
get dearer with the table's history; the on/off ratio of the last window is the measure, since
a shared machine's load moves both tables' absolute times alike).

    .venv/bin/python benchmarks/iceberg.py [--commits 500] [--runs 3] [--profile] [--out FILE]
"""
from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
import uuid
from pathlib import Path

from rich.table import Table as RichTable

from common import DAYS, RESULTS, console, lf, median, profiled, ratio
from lakeformat.pipeline.demo_data import SCHEMA, user_behavior

WINDOW = 50
SETTINGS = {"default": {}, "retained-50": {"snapshot.num-retained.max": "50"}}
ON = {"metadata.iceberg.storage": "table-location"}


def one_run(tmp: Path, commits: int, options: dict, profile: bool, profiles: dict) -> dict:
    wh = tmp / f"wh-{uuid.uuid4().hex[:8]}"
    cat = lf.Catalog(str(wh))
    cat.create_database("db")
    tables = {"on": cat.create_table("db.on", SCHEMA, partition_keys=["dt"], options={**options, **ON}),
              "off": cat.create_table("db.off", SCHEMA, partition_keys=["dt"], options=dict(options))}
    user = str(uuid.uuid4())
    rows = user_behavior(commits + 20, DAYS[:1], seed=7)
    times = {"on": [], "off": []}

    def commit(name: str, i: int) -> float:
        t = tables[name]
        w = t.new_write(user)
        w.write(rows.slice(i, 1))
        messages = w.prepare_commit()
        start = time.perf_counter()
        c = t.new_commit(user)
        c.commit(messages)
        elapsed = time.perf_counter() - start
        if name == "on":
            assert c.iceberg is not None and c.iceberg.version == c.table.latest_snapshot().id, c.iceberg
        return elapsed

    for i in range(commits):
        for name in (("on", "off") if i % 2 == 0 else ("off", "on")):
            times[name].append(commit(name, i))
    if profile:
        profiled(True, f"iceberg: 10 commits with the publish ({options or 'default retention'})",
                 lambda: [commit("on", commits + j) for j in range(10)], profiles, sorts=("cumulative", "tottime"))
    meta = tables["on"].path + "/metadata"
    listing = sorted(p.name for p in Path(meta).iterdir())
    result = {"times": times, "metadata_files": len(listing),
              "metadata_json_bytes": sum(Path(meta, n).stat().st_size for n in listing if n.endswith(".metadata.json")),
              "snapshots_on": len(tables["on"].snapshots())}
    shutil.rmtree(wh, ignore_errors=True)
    return result


def summarize(runs: list[dict], commits: int) -> dict:
    windows = {}
    for i in range(0, commits, WINDOW):
        key = f"{i + 1}-{min(i + WINDOW, commits)}"
        on = median([x for r in runs for x in r["times"]["on"][i:i + WINDOW]])
        off = median([x for r in runs for x in r["times"]["off"][i:i + WINDOW]])
        windows[key] = {"on": on, "off": off, "ratio": ratio(on, off)}
    per_run = [ratio(median(r["times"]["on"]), median(r["times"]["off"])) for r in runs]
    first, last = next(iter(windows.values())), list(windows.values())[-1]
    return {"ratio_on_off": median(per_run), "ratio_per_run": per_run,
            "median_on": median([x for r in runs for x in r["times"]["on"]]),
            "median_off": median([x for r in runs for x in r["times"]["off"]]),
            "flat_on_last_over_first": ratio(last["on"], first["on"]),
            "flat_off_last_over_first": ratio(last["off"], first["off"]),
            "ratio_last_window": last["ratio"], "windows": windows,
            "metadata_files": runs[-1]["metadata_files"], "metadata_json_bytes": runs[-1]["metadata_json_bytes"],
            "snapshots": runs[-1]["snapshots_on"],
            "commit_seconds": [{k: v for k, v in r["times"].items()} for r in runs]}


def print_setting(name: str, s: dict) -> None:
    t = RichTable(title=f"commit latency, Iceberg on vs off ({name}): median ms per {WINDOW} commits")
    for col in ("commits", "on", "off", "on / off"):
        t.add_column(col, justify="right")
    for key, w in s["windows"].items():
        t.add_row(key, f"{w['on'] * 1000:.2f}", f"{w['off'] * 1000:.2f}", f"{w['ratio']:.2f}x")
    console.print(t)
    console.print(f"  on/off {s['ratio_on_off']:.2f}x (runs: {', '.join(f'{x:.2f}' for x in s['ratio_per_run'])}); "
                  f"on last/first window {s['flat_on_last_over_first']:.2f}x, off "
                  f"{s['flat_off_last_over_first']:.2f}x; "
                  f"{s['snapshots']} snapshots retained, {s['metadata_files']} files in metadata/, "
                  f"metadata JSON {s['metadata_json_bytes']:,} bytes")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--commits", type=int, default=500)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", choices=sorted(SETTINGS), help="one retention setting")
    ap.add_argument("--profile", action="store_true", help="cProfile 10 extra commits per setting")
    ap.add_argument("--out", type=Path, default=RESULTS / "iceberg.json")
    args = ap.parse_args()
    profiles: dict = {}
    out = {"commits": args.commits, "runs": args.runs, "window": WINDOW, "settings": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name, options in SETTINGS.items():
            if args.only and name != args.only:
                continue
            runs = [one_run(Path(tmp), args.commits, options, args.profile and r == args.runs - 1, profiles)
                    for r in range(args.runs)]
            out["settings"][name] = s = summarize(runs, args.commits)
            print_setting(name, s)
    goals = {name: {"on/off <= 1.3x": s["ratio_on_off"] <= 1.3, "last window on/off <= 1.3x":
                    s["ratio_last_window"] <= 1.3} for name, s in out["settings"].items()}
    out["goals"] = goals
    console.print(f"goals: {goals}")
    if profiles:
        (RESULTS / "iceberg-profile.txt").write_text("\n\n".join(f"== {k}\n{v}" for k, v in profiles.items()))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
