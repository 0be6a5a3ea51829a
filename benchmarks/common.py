"""Helpers shared by ``run.py`` and ``primary_key.py``: paths, the lakeformat import, the oracle
worker, medians and ratios, file descriptions, cProfile and number formatting."""
from __future__ import annotations

import cProfile
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from pathlib import Path
from collections.abc import Callable

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
ORACLE_PY = ROOT / ".venv-oracle" / "bin" / "python"
ORACLE_SCRIPT = Path(__file__).resolve().parent / "oracle_bench.py"
RESULTS = Path(__file__).resolve().parent / "results"

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from rich.console import Console  # noqa: E402


def _import_lakeformat():
    """lakeformat is edited concurrently; a half-written module is retried for a few minutes."""
    for attempt in range(10):
        try:
            import lakeformat
            return lakeformat
        except (ModuleNotFoundError, ImportError) as e:
            if attempt == 9:
                raise
            print(f"import lakeformat failed ({e}); retrying in 30 s", file=sys.stderr)
            time.sleep(30)


lf = _import_lakeformat()

console = Console(width=160)
DAYS = ["2024-01-01", "2024-01-02"]
LF, PYPAIMON, RUST = "lakeformat", "pypaimon", "pypaimon-rust"
RAW_ZSTD, RAW_SNAPPY = "raw pyarrow (zstd)", "raw pyarrow (snappy)"
ORACLE_IMPL = {PYPAIMON: "pypaimon", RUST: "rust"}


def median(xs):
    return statistics.median(xs) if xs else None


def ratio(a, b):
    return a / b if a is not None and b else None


class OracleError(RuntimeError):
    pass


class Oracle:
    """A benchmark worker (``oracle_bench.py``): one JSON command per line, one ``@@RESULT`` line back."""

    def __init__(self, log_path: Path, python: Path = ORACLE_PY):
        """``python``: the oracle venv's (pypaimon, pypaimon-rust) or ``sys.executable`` (lakeformat,
        raw pyarrow: this tree's lakeformat, wherever the worker starts)."""
        if not python.exists():
            raise OracleError(f"benchmark worker's python missing at {python}: run `make setup`")
        self.log = open(log_path, "w")  # noqa: SIM115 -- the worker's stderr for its whole life
        env = {**os.environ, "PYTHONPATH": str(ROOT)} if python != ORACLE_PY else None
        self.proc = subprocess.Popen([str(python), str(ORACLE_SCRIPT)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, text=True, bufsize=1,
                                     cwd=str(ROOT), env=env)
        self.log_path = log_path

    def call(self, cmd: str, **kw) -> dict:
        self.proc.stdin.write(json.dumps({"cmd": cmd, **kw}) + "\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                self.log.flush()
                tail = self.log_path.read_text()[-3000:]
                raise OracleError(f"oracle worker died during {cmd!r}; stderr tail:\n{tail}")
            if line.startswith("@@RESULT "):
                out = json.loads(line[len("@@RESULT "):])
                if not out.pop("ok"):
                    raise OracleError(f"{cmd} failed in oracle: {out['error']}\n{out.get('trace', '')}")
                return out

    def close(self) -> None:
        try:
            self.call("quit")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()   # our own child, by handle
        self.log.close()


def raw_write(out: Path, batches: list[pa.Table], **kw) -> list[float]:
    out.mkdir(parents=True)
    per = []
    for i, tab in enumerate(batches):
        start = time.perf_counter()
        pq.write_table(tab, out / f"batch-{i}.parquet", **kw)
        per.append(time.perf_counter() - start)
    return per


def lf_read(wh: Path) -> tuple[float, pa.Table]:
    t = lf.Catalog(str(wh)).get_table("db.t")   # not timed (nor is the oracles' get_table)
    start = time.perf_counter()
    out = t.read()
    return time.perf_counter() - start, out


def data_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.parquet") if p.is_file())


def describe_files(root: Path) -> dict:
    files = data_files(root)
    codec = None
    if files:
        md = pq.ParquetFile(files[0]).metadata
        if md.num_row_groups:
            codec = md.row_group(0).column(0).compression
    return {"files": len(files), "bytes": sum(f.stat().st_size for f in files), "codec": codec}


def profiled(enabled: bool, name: str, fn: Callable, profiles: dict, sorts=("cumulative",), threads: bool = False):
    """Run ``fn``; with ``enabled``, under cProfile, keeping the top of the listing by each of
    ``sorts`` (cumulative: where the time goes; tottime: the functions that spend it).

    cProfile sees only the calling thread; with ``threads``, every task submitted to a
    ``ThreadPoolExecutor`` meanwhile runs under a profiler of its own and their stats are added
    to the caller's (which then also shows the time it waited for them, in ``lock.acquire``)."""
    if not enabled:
        return fn()
    from concurrent.futures import ThreadPoolExecutor
    prof, task_profs = cProfile.Profile(), []
    original = ThreadPoolExecutor.submit

    def submit(self, task, /, *args, **kwargs):
        def run(*a, **kw):
            p = cProfile.Profile()
            try:
                return p.runcall(task, *a, **kw)
            finally:
                task_profs.append(p)
        return original(self, run, *args, **kwargs)

    if threads:
        ThreadPoolExecutor.submit = submit
    try:
        out = prof.runcall(fn)
    finally:
        ThreadPoolExecutor.submit = original
    s = io.StringIO()
    if task_profs:
        s.write(f"(stats of {len(task_profs)} thread-pool tasks added to the caller's)\n")
    for key in sorts:
        s.write(f"--- sorted by {key}\n")
        stats = pstats.Stats(prof, stream=s)
        for p in task_profs:
            stats.add(p)
        stats.sort_stats(key).print_stats(45 if key == "cumulative" else 25)
    profiles.setdefault(name, s.getvalue())
    return out


def fmt_s(x, digits=3):
    return "—" if x is None else f"{x:.{digits}f}"


def fmt_x(x):
    return "—" if x is None else f"{x:.2f}×"


def fmt_ms(x):
    return "—" if x is None else f"{x * 1000:.1f}"
