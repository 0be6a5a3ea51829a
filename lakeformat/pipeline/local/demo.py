"""``make demo``: the whole pipeline on embedded defaults, then a report.

- landing files for three days of both configured tables, the middle day with rows that break
  the quality rules (``python -m lakeformat.pipeline.landing``);
- Airflow with a temporary SQLite home and no server: each ingest DAG runs once per day with
  ``dag.test()``, the real SparkSubmitOperator submitting ``jobs/ingest.py`` to local Spark, a
  Great Expectations audit and a publish; the bad day fails its audit and publishes nothing;
- the compaction DAG (a full compaction, as a manual run with ``full`` would) and the
  maintenance DAG;
- a report: tables, snapshots by kind, rows, sorted runs per bucket before and after
  compaction, expired snapshots, consumers; and pypaimon (in ``.venv-oracle``) reads every
  table and must count the same rows.

    python -m lakeformat.pipeline.local.demo --config config/tables.yaml --dags dags --plugins plugins \\
        --oracle-python .venv-oracle/bin/python

The warehouse is the environment's (see :mod:`lakeformat.table.settings`) or ``./warehouse``
(its ``demo`` database is replaced); Airflow's home, the landing files and the task logs go to
a temporary directory.
Exits non-zero when anything turns out other than described above.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.table import Table as RichTable

import lakeformat as lf
from lakeformat.pipeline.config import CONFIG_ENV, load_config
from lakeformat.pipeline.local.airflow_home import (
    load_dags,
    migrate,
    output_to,
    prepare,
    run_dag,
)
from lakeformat.table.settings import resolve as resolve_settings

DAYS = ["2024-06-01", "2024-06-02", "2024-06-03"]
BAD_DAY = DAYS[1]
ROWS_PER_DAY = 100_000
CONSUMER = "price-report"   # a downstream reader whose progress the report shows
STILL_RUNNING_EVERY = 15.0  # seconds between "still running" lines of a long step
# a ProgressReporter line in the task log ("... lakeformat.progress: ingest demo.t 2024-06-01: 3 of
# 4 tasks of stage 2 ..."); other "N of M" lines (an audit's "25 of 4,770 rows unexpected") are not
PROGRESS_LINE = re.compile(r"lakeformat\.progress:? ([^\n]*: [\d,]+ of [\d,]+ [^\n]*)$", re.M)


class Demo:
    def __init__(self, console: Console, args: argparse.Namespace):
        self.console = console
        self.args = args
        self.warehouse = os.path.abspath(resolve_settings().warehouse)
        self.work = Path(tempfile.mkdtemp(prefix="lakeformat-demo-"))
        self.landing = self.work / "landing"
        self.log = self.work / "airflow-tasks.log"
        self.problems: list[str] = []
        self.started = time.perf_counter()

    def step(self, text: str) -> None:
        self.console.print(f"[dim]{time.perf_counter() - self.started:6.1f} s[/]  {text}")

    def expect(self, ok: bool, problem: str) -> None:
        if not ok:
            self.problems.append(problem)
            self.console.print(f"[bold red]unexpected:[/] {problem}")

    # -- the pipeline --------------------------------------------------------------------
    def setup(self) -> None:
        self.config = load_config(self.args.config)   # a broken config stops the demo here, clearly
        prepare(str(self.work / "airflow"), dags=self.args.dags, plugins=self.args.plugins,
                config=self.config.path, warehouse=self.warehouse, landing=str(self.landing),
                log_level="WARNING")
        self.catalog = lf.Catalog(self.warehouse)
        for db in {t.database for t in self.config.tables}:
            if self.catalog.database_exists(db):
                self.catalog.drop_database(db, cascade=True)
        self.console.print(f"[bold]warehouse[/] {self.warehouse}   [bold]airflow home[/] {self.work / 'airflow'}"
                           f"\n[bold]task logs[/] {self.work}/airflow-tasks*.log (kept when something goes wrong)")
        self.step(f"landing files for {DAYS[0]}..{DAYS[-1]} ({ROWS_PER_DAY:,} events a day; "
                  f"{BAD_DAY} with rows that break the quality rules)")
        subprocess.run([sys.executable, "-m", "lakeformat.pipeline.landing", "--landing", str(self.landing),
                        "--start", DAYS[0], "--end", DAYS[-1], "--bad-day", BAD_DAY,
                        "--rows-per-day", str(ROWS_PER_DAY), "--config", self.config.path],
                       check=True, capture_output=True)
        self.step("airflow db migrate (SQLite) and parse the DAGs")
        migrate()
        with output_to(str(self.log)):
            load_dags()   # import errors stop the demo here

    def run(self, dag_id: str, logical_date=None, conf=None):
        with self.still_running(), output_to(str(self.log)):
            return run_dag(dag_id, logical_date, conf)

    @contextmanager
    def still_running(self):
        """While a DAG runs (its output going to the task log), a line every
        STILL_RUNNING_EVERY seconds on the screen: how long so far and the task log's latest
        progress line, so a long ingest is never a silent minute."""
        screen = self.console.file   # the terminal, kept before output_to redirects fds 1 and 2
        out = Console(file=os.fdopen(os.dup(screen.fileno()), "w"), width=self.console.width,
                      force_terminal=self.console.is_terminal, no_color=self.console.no_color)
        stop, began = threading.Event(), time.perf_counter()
        since = self.log.stat().st_size if self.log.exists() else 0   # this step's lines only

        def beat() -> None:
            while not stop.wait(STILL_RUNNING_EVERY):
                latest = _latest_progress(self.log, since)
                out.print(f"[dim]{time.perf_counter() - self.started:6.1f} s[/]    still running "
                          f"({time.perf_counter() - began:.0f} s)" + (f": {latest}" if latest else ""),
                          highlight=False, markup=True)
        thread = threading.Thread(target=beat, name="demo-still-running", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            out.file.close()

    def ingest(self) -> None:
        """Each table's days in a process of its own (:mod:`.demo_lane`), the tables side by side
        as Airflow runs their DAGs; a line per finished day, and while they run a "still
        running" line with each lane's latest progress."""
        self.step("ingest DAGs, the tables side by side: " + ", ".join(
            f"lakeformat_ingest_{s.name}" for s in self.config.tables) + f" for {DAYS[0]}..{DAYS[-1]}")
        lanes = {spec.name: self.start_lane(spec.name) for spec in self.config.tables}
        outcomes: dict[tuple[str, str], dict] = {}
        since = dict.fromkeys(lanes, 0)   # each lane's log offset where its current day began
        began, beat = time.perf_counter(), time.perf_counter()
        while True:
            running = [n for n, (proc, *_) in lanes.items() if proc.poll() is None]
            for name, (_, out, log) in lanes.items():
                for o in _outcomes(out):
                    if (o["day"], name) not in outcomes:
                        outcomes[(o["day"], name)] = o
                        since[name] = log.stat().st_size
                        self.step(f"lakeformat_ingest_{name} for {o['day']}: {_outcome_words(o)} "
                                  f"({o['seconds']:.0f} s)")
            if not running:
                break
            if time.perf_counter() - beat >= STILL_RUNNING_EVERY:
                beat = time.perf_counter()
                latest = "; ".join(p for n in running if (p := _latest_progress(lanes[n][2], since[n])))
                self.console.print(f"[dim]{beat - self.started:6.1f} s[/]    still running "
                                   f"({beat - began:.0f} s)" + (f": {latest}" if latest else ""), highlight=False)
            time.sleep(0.5)
        for name, (proc, _, log) in lanes.items():
            self.expect(proc.returncode == 0, f"the ingest lane of {name} exited with {proc.returncode}: see {log}")
        self.report_ingest(outcomes)

    def start_lane(self, table: str):
        """Start :mod:`.demo_lane` for ``table`` on a copy of the migrated Airflow database."""
        home = self.work / f"airflow-{table}"
        home.mkdir()
        shutil.copy(self.work / "airflow" / "airflow.db", home / "airflow.db")
        out, log = self.work / f"ingest-{table}.jsonl", self.work / f"airflow-tasks-{table}.log"
        # the hooks' loggers at INFO: the log then holds spark-submit's output (which the hook
        # logs at INFO), Spark stage progress among it, for the "still running" lines; the rest
        # of Airflow stays at WARNING (all of it at INFO costs seconds a run)
        env = dict(os.environ, AIRFLOW_HOME=str(home), AIRFLOW__LOGGING__NAMESPACE_LEVELS="airflow.task.hooks=INFO",
                   AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=f"sqlite:///{home / 'airflow.db'}")
        with open(log, "ab") as err:
            proc = subprocess.Popen([sys.executable, "-m", "lakeformat.pipeline.local.demo_lane", "--table", table,
                                     "--out", str(out), "--log", str(log), *DAYS],
                                    env=env, stdin=subprocess.DEVNULL, stdout=err, stderr=err)
        return proc, out, log

    def report_ingest(self, outcomes: dict[tuple[str, str], dict]) -> None:
        out = RichTable(title="ingest: one dag.test() run per table and day (spark-submit jobs/ingest.py)")
        for c in ("day", "table", "run", "rows", "snapshot", "seconds"):
            out.add_column(c, justify="right" if c in ("rows", "snapshot", "seconds") else "left")
        failures = []
        for day in DAYS:
            for spec in self.config.tables:
                o = outcomes.get((day, spec.name))
                if o is None:
                    out.add_row(day, spec.identifier, "[red]not run[/]", "-", "-", "-")
                    self.expect(False, f"no ingest of {spec.name} for {day}: see "
                                       f"{self.work / f'airflow-tasks-{spec.name}.log'}")
                    continue
                secs = f"{o['seconds']:.1f}"
                if o["ok"] and o["published"]:
                    p = o["published"][0]
                    out.add_row(day, spec.identifier, "[green]published[/]", f"{p['rows']:,}",
                                str(p["snapshot_id"]), secs)
                elif o["audits"]:
                    out.add_row(day, spec.identifier, "[red]audit failed[/]", f"{o['audits'][0]['rows']:,}", "-", secs)
                    failures.append(o["audits"][0])
                else:
                    out.add_row(day, spec.identifier, f"[red]{o['state']}[/]", "-", "-", secs)
                    self.expect(False, f"ingest of {spec.name} for {day} {o['state']} outside the audit: failed "
                                       f"tasks {o['failed_tasks']}; see {self.work / f'airflow-tasks-{spec.name}.log'}")
                    continue
                self.expect(o["ok"] == (day != BAD_DAY),
                            f"ingest of {spec.name} for {day} {'passed' if o['ok'] else 'failed'} its audit")
        self.console.print(out)
        for a in failures:
            self.console.print(f"[red]audit failed[/] (stage discarded, {a['discarded_files']} files deleted):\n"
                               + textwrap.indent(a["summary"], "  "))

    def consume(self) -> None:
        """A downstream reader follows item_price's changes as a consumer."""
        spec = self.config.table("item_price")
        t = self.catalog.get_table(spec.identifier)
        rows = t.read_incremental(consumer_id=CONSUMER).num_rows
        self.step(f"consumer {CONSUMER!r} read {rows:,} changes of {spec.identifier}")

    def compact_and_maintain(self):
        before = {s.identifier: self.state(s.identifier) for s in self.config.tables}
        self.step("lakeformat_compaction (full=true: every bucket into one sorted run)")
        comp = self.run("lakeformat_compaction", conf={"full": True})
        self.expect(comp.ok, f"compaction {comp.state}: failed tasks {comp.failed_tasks()}")
        compacted = {s.identifier: self.state(s.identifier) for s in self.config.tables}
        self.step("lakeformat_maintenance (dry_run=false)")
        maint = self.run("lakeformat_maintenance", conf={"dry_run": False})
        self.expect(maint.ok, f"maintenance {maint.state}: failed tasks {maint.failed_tasks()}")
        after = {s.identifier: self.state(s.identifier) for s in self.config.tables}
        return before, compacted, after, comp, maint

    # -- the report ----------------------------------------------------------------------
    def state(self, ident: str) -> dict:
        t = self.catalog.get_table(ident)
        snaps = t.snapshots()
        buckets = t.system_table("buckets").to_pylist()
        return {"snapshots": [s.id for s in snaps], "kinds": Counter(s.commit_kind for s in snaps),
                "rows": t.read(columns=t.arrow_schema().names[:1]).num_rows if snaps else 0,
                "runs": {(b["partition"], b["bucket"]): b["sorted_runs"] for b in buckets},
                "consumers": t.consumers.list()}

    def report(self, before: dict, compacted: dict, after: dict, maint) -> None:
        tables = RichTable(title="tables after compaction and maintenance")
        for c in ("table", "snapshots by kind", "rows", "expired snapshots", "consumers"):
            tables.add_column(c)
        for ident, a in after.items():
            expired = sorted((set(before[ident]["snapshots"]) | set(compacted[ident]["snapshots"]))
                             - set(a["snapshots"]))
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(a["kinds"].items()))
            tables.add_row(ident, f"{kinds} (ids {_ids(a['snapshots'])})", f"{a['rows']:,}",
                           _ids(expired) or "none",
                           ", ".join(f"{c} → next {n}" for c, n in a["consumers"].items()) or "none")
            self.expect(a["rows"] == before[ident]["rows"], f"{ident}: rows changed in maintenance")
        self.console.print(tables)
        runs = RichTable(title="sorted runs per bucket, before and after compaction")
        for c in ("table", "partition", "bucket", "before", "after"):
            runs.add_column(c, justify="right" if c in ("bucket", "before", "after") else "left")
        for ident in after:
            b, c = before[ident]["runs"], compacted[ident]["runs"]
            for key in sorted(set(b) | set(c)):
                runs.add_row(ident, key[0] or "-", str(key[1]), str(b.get(key, 0)), str(c.get(key, 0)))
            self.expect(max(c.values(), default=0) <= 1, f"{ident}: more than one sorted run after full compaction")
        self.console.print(runs)
        orphans = [v for k, v in maint.xcom.items() if k.startswith(tuple(f"{s.name}.remove_orphan_files"
                                                                          for s in self.config.tables))
                   and k.endswith(":return_value")]
        if orphans:
            self.step("orphan files removed: " + ", ".join(f"{o['table']} {o.get('orphan_files', 0)}"
                                                          for o in orphans))

    def check_with_pypaimon(self, after: dict) -> None:
        self.step("pypaimon (.venv-oracle) reads every table")
        oracle = Path(self.args.oracle_python)
        if not oracle.exists():
            self.expect(False, f"the oracle venv is missing ({oracle}): run make setup")
            return
        code = textwrap.dedent("""
            import json, sys
            from pypaimon import CatalogFactory
            cat = CatalogFactory.create({"warehouse": sys.argv[1]})
            out = {}
            for ident in sys.argv[2:]:
                rb = cat.get_table(ident).new_read_builder()
                out[ident] = rb.new_read().to_arrow(rb.new_scan().plan().splits()).num_rows
            print(json.dumps(out))
        """)
        proc = subprocess.run([str(oracle), "-c", code, self.warehouse, *after], capture_output=True,
                              text=True, timeout=300)
        if proc.returncode != 0:
            self.expect(False, f"pypaimon could not read the warehouse:\n{proc.stderr[-2000:]}")
            return
        counts = json.loads(proc.stdout.strip().splitlines()[-1])
        out = RichTable(title="pypaimon reads the same tables")
        for c in ("table", "lakeformat rows", "pypaimon rows", ""):
            out.add_column(c)
        for ident, a in after.items():
            same = counts.get(ident) == a["rows"]
            out.add_row(ident, f"{a['rows']:,}", f"{counts.get(ident, 0):,}", "[green]✓[/]" if same else "[red]✗[/]")
            self.expect(same, f"pypaimon reads {counts.get(ident)} rows of {ident}, lakeformat {a['rows']}")
        self.console.print(out)


def _latest_progress(log: Path, since: int = 0) -> str:
    """The last progress line in the tail of the task log after offset ``since`` (empty if none
    yet): an earlier step's last line must not pass for this one's."""
    try:
        with open(log, "rb") as f:
            f.seek(max(since, f.seek(0, os.SEEK_END) - 65536))
            tail = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    found = PROGRESS_LINE.findall(tail)
    return found[-1].strip() if found else ""


def _outcomes(path: Path) -> list[dict]:
    """The days a lane has finished (its complete JSON lines so far)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.splitlines(keepends=True) if line.endswith("\n")]


def _outcome_words(o: dict) -> str:
    if o["ok"] and o["published"]:
        p = o["published"][0]
        return f"published as snapshot {p['snapshot_id']} ({p['rows']:,} rows)"
    if o["audits"]:
        return f"audit failed ({o['audits'][0]['rows']:,} rows staged and discarded)"
    return f"{o['state']} (failed tasks: {', '.join(o['failed_tasks']) or 'none'})"


def _ids(ids) -> str:
    ids = sorted(ids)
    if len(ids) > 2 and ids == list(range(ids[0], ids[-1] + 1)):
        return f"{ids[0]}..{ids[-1]}"
    return ", ".join(map(str, ids))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lakeformat.pipeline.local.demo", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=os.environ.get(CONFIG_ENV),
                    help=f"the pipeline config (default: ${CONFIG_ENV})")
    ap.add_argument("--dags", required=True, help="the project's dags/ folder")
    ap.add_argument("--plugins", required=True, help="the project's plugins/ folder")
    ap.add_argument("--oracle-python", required=True, help="the Python of the pypaimon venv (.venv-oracle)")
    args = ap.parse_args(argv)
    if not args.config:
        ap.error(f"give --config or set ${CONFIG_ENV}")
    console = Console() if sys.stdout.isatty() else Console(width=110)
    demo = Demo(console, args)
    try:
        demo.setup()
        demo.ingest()
        demo.consume()
        before, compacted, after, _, maint = demo.compact_and_maintain()
        demo.report(before, compacted, after, maint)
        demo.check_with_pypaimon(after)
    finally:
        total = time.perf_counter() - demo.started
    verdict = "[green]as expected[/]" if not demo.problems else f"[red]{len(demo.problems)} problem(s)[/]"
    console.print(f"\n[bold]demo finished in {total:.0f} s[/]: {verdict}. Inspect with: "
                  f".venv/bin/lakeformat --warehouse {demo.warehouse} snapshots demo.user_behavior")
    if not demo.problems:
        shutil.rmtree(demo.work, ignore_errors=True)
    return 1 if demo.problems else 0


if __name__ == "__main__":
    sys.exit(main())
