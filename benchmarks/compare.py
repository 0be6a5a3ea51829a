"""The benchmark regression guard: the working tree against a base commit, interleaved, in one run.

    make bench-compare                     # BASE=HEAD: the working tree's changes against HEAD
    make bench-compare BASE=origin/main
    .venv/bin/python benchmarks/compare.py --base HEAD~3 --blocks 8 --rounds 5 --threshold 0.10
    .venv/bin/python benchmarks/compare.py --base HEAD --current /tmp/other-tree --quick

The base commit's code is checked out with ``git worktree add`` into a temp dir (removed at the
end) and runs in the same venv: its processes start in that folder with it as ``PYTHONPATH``, so
``import lakeformat`` finds the base's package before the venv's editable install of this tree
(each side's ``lakeformat.__file__`` is printed and checked). The benchmarks are pytest-benchmark
tests (``benchmarks/guard/bench_core.py``, the same file for both sides): each block is one
pytest process per side running every benchmark ``--rounds`` times (after a warm-up round), and
the sides alternate A B B A A B ... for ``--blocks`` blocks each, so a change of load on the
machine lands on both. The input data is generated once, here, outside every timer.

Decision, per benchmark: the median of each block, the ratio current / base of the two blocks of
each pair (adjacent in time), and the median of those ratios. A benchmark is flagged when that
median ratio **and** the ratio of the pooled medians (all rounds of a side) both exceed
1 + threshold; a flagged benchmark is measured again (``--confirm`` more pairs of blocks, only
those benchmarks) and must stay flagged over all its pairs to fail the guard. The exit status is
1 when any benchmark is slower beyond the threshold (its name is printed on a ``REGRESSION`` line),
2 on an error.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
GUARD = HERE / "guard"
BENCH_FILE = GUARD / "bench_core.py"
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE))

BENCHMARKS = ["test_write_append", "test_read_append", "test_pk_merge_read", "test_commit_many_messages",
              "test_cli_read_fresh_process"]
SHORT = {"test_write_append": "append write + commit", "test_read_append": "append read",
         "test_pk_merge_read": "pk merge-on-read", "test_commit_many_messages": "commit of many messages",
         "test_cli_read_fresh_process": "CLI read, fresh process"}


def log(msg: str) -> None:
    print(msg, flush=True)


def git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def make_data(d: Path, rows: int, pk_rows: int, small_rows: int, messages: int) -> dict:
    """The input of every benchmark, generated once with this tree's generators, saved as Parquet."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    from lakeformat.pipeline.demo_data import user_behavior
    import primary_key as pkb   # benchmarks/primary_key.py: keys distinct per batch, 50% updates in batches 1, 2
    days = ["2024-01-01", "2024-01-02"]
    d.mkdir(parents=True)
    pq.write_table(user_behavior(rows, days, seed=0), d / "append.parquet")
    batches = pkb.pk_batches(pk_rows, 3, days)
    for i, b in enumerate(batches):
        pq.write_table(b, d / f"pk-{i}.parquet")
    keys = pa.concat_tables([b.select(["dt", "user_id", "item_id"]) for b in batches])
    codes = (pc.equal(keys["dt"], days[1]).to_numpy(zero_copy_only=False).astype(np.int64) << 40) \
        | (keys["user_id"].to_numpy() << 20) | keys["item_id"].to_numpy()
    pq.write_table(user_behavior(small_rows, days, seed=3), d / "small.parquet")
    meta = {"append_rows": rows, "pk_rows_per_batch": pk_rows, "pk_batches": 3,
            "pk_distinct_keys": len(np.unique(codes)), "small_rows": small_rows,
            "commit_messages": messages}
    (d / "meta.json").write_text(json.dumps(meta))
    return meta


class Side:
    def __init__(self, name: str, root: Path, work: Path, label: str):
        self.name, self.root, self.work, self.label = name, root, work, label
        self.work.mkdir(parents=True, exist_ok=True)
        self.env = {**os.environ, "PYTHONPATH": str(root), "LF_GUARD_WORK": str(work)}
        self.env.pop("PYTHONHOME", None)
        self.blocks: list[dict] = []   # benchmark name -> list of round times, per block

    def lakeformat_file(self) -> str:
        return subprocess.run([sys.executable, "-c", "import lakeformat; print(lakeformat.__file__)"],
                              cwd=self.root, env=self.env, check=True, capture_output=True, text=True).stdout.strip()

    def run_block(self, rounds: int, only: list[str], out: Path) -> dict:
        cmd = [sys.executable, "-m", "pytest", str(BENCH_FILE), "-q", "-c", str(GUARD / "pytest.ini"),
               "--rootdir", str(GUARD), f"--benchmark-json={out}",
               "--benchmark-disable-gc", "--benchmark-timer=time.perf_counter", "-k", " or ".join(only)]
        env = {**self.env, "LF_GUARD_ROUNDS": str(rounds)}
        p = subprocess.run(cmd, cwd=self.root, env=env, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"{self.name} block failed ({self.label}):\n{p.stdout[-4000:]}\n{p.stderr[-2000:]}")
        res = json.loads(out.read_text())
        block = {}
        for b in res["benchmarks"]:
            got = b["extra_info"].get("lakeformat_file", "")
            if not Path(got).resolve().is_relative_to(self.root.resolve()):
                raise RuntimeError(f"{self.name} side measured {got}, not the package under {self.root}")
            block[b["name"]] = b["stats"]["data"]
        self.blocks.append(block)
        return res


def pair_stats(base: Side, cur: Side, name: str) -> dict:
    pairs = [(a[name], b[name]) for a, b in zip(base.blocks, cur.blocks) if name in a and name in b]
    ratios = [statistics.median(b) / statistics.median(a) for a, b in pairs]
    pooled_a = [x for a, _ in pairs for x in a]
    pooled_b = [x for _, b in pairs for x in b]
    ma, mb = statistics.median(pooled_a), statistics.median(pooled_b)
    return {"pairs": len(pairs), "rounds_per_side": len(pooled_a), "base_median": ma, "current_median": mb,
            "pooled_ratio": mb / ma, "median_pair_ratio": statistics.median(ratios), "pair_ratios": ratios,
            "base_iqr": _iqr(pooled_a), "current_iqr": _iqr(pooled_b),
            "base_rounds": pooled_a, "current_rounds": pooled_b}


def _iqr(xs: list[float]) -> float:
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    return q[2] - q[0]


def flagged(s: dict, threshold: float) -> bool:
    return s["median_pair_ratio"] > 1 + threshold and s["pooled_ratio"] > 1 + threshold


def run_pairs(base: Side, cur: Side, blocks: int, rounds: int, only: list[str], tmp: Path, start: int) -> None:
    for i in range(blocks):
        order = (base, cur) if (start + i) % 2 == 0 else (cur, base)   # A B, B A, A B, ...
        for side in order:
            t0 = time.perf_counter()
            side.run_block(rounds, only, tmp / f"{side.name}-{start + i}.json")
            last = side.blocks[-1]
            log(f"  block {start + i + 1:>2} {side.name:<7} {time.perf_counter() - t0:5.1f}s  " + "  ".join(
                f"{SHORT[n].split(',')[0]} {statistics.median(v) * 1000:.1f}" for n, v in last.items()) + "  (ms)")


def report(stats: dict, threshold: float) -> None:
    log("")
    log(f"{'benchmark':<26} {'base ms':>9} {'current ms':>10} {'pooled':>8} {'pairs':>8}  {'IQR base/cur ms':>16}  "
        f"verdict (threshold +{threshold:.0%})")
    for name, s in stats.items():
        verdict = "REGRESSION" if s["flagged"] else ("faster" if s["median_pair_ratio"] < 1 - threshold else "ok")
        log(f"{SHORT[name]:<26} {s['base_median'] * 1000:9.1f} {s['current_median'] * 1000:10.1f} "
            f"{s['pooled_ratio']:7.3f}x {s['median_pair_ratio']:7.3f}x  "
            f"{s['base_iqr'] * 1000:7.1f}/{s['current_iqr'] * 1000:<7.1f}  {verdict}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default="HEAD", help="base commit (default HEAD)")
    ap.add_argument("--current", default=str(ROOT),
                    help="the tree to measure against the base (default: this working tree)")
    ap.add_argument("--blocks", type=int, default=8, help="blocks per side (pytest processes), interleaved")
    ap.add_argument("--rounds", type=int, default=5, help="timed rounds per benchmark per block")
    ap.add_argument("--confirm", type=int, default=4, help="extra pairs of blocks for a flagged benchmark")
    ap.add_argument("--threshold", type=float, default=0.10, help="slowdown that fails (0.10 = 10%%)")
    ap.add_argument("--rows", type=int, default=300_000, help="append benchmarks: rows")
    ap.add_argument("--pk-rows", type=int, default=100_000, help="primary-key table: rows per batch (3 batches)")
    ap.add_argument("--small-rows", type=int, default=1_000, help="the CLI's small table: rows")
    ap.add_argument("--messages", type=int, default=100, help="commit benchmark: messages (one-row files)")
    ap.add_argument("--only", default=",".join(BENCHMARKS), help="comma list of benchmark names")
    ap.add_argument("--quick", action="store_true", help="small sizes, 3 blocks of 3 rounds: the guard's own test")
    ap.add_argument("--out", default=str(RESULTS / "partial-compare.json"))
    ap.add_argument("--scratch", default="/dev/shm" if os.access("/dev/shm", os.W_OK) else None,
                    help="where the data and tables go (default: /dev/shm, a tmpfs: the shared disk's fsync "
                         "latency is noise to a guard of the code)")
    args = ap.parse_args()
    if args.quick:
        args.rows, args.pk_rows, args.messages, args.blocks, args.rounds, args.confirm = 30_000, 10_000, 20, 3, 3, 2
    only = [b for b in args.only.split(",") if b]
    unknown = set(only) - set(BENCHMARKS)
    if unknown:
        ap.error(f"unknown benchmarks {sorted(unknown)}; known: {BENCHMARKS}")
    current_root = Path(args.current).resolve()
    base_commit = git("rev-parse", "--verify", args.base + "^{commit}")
    tmp = Path(tempfile.mkdtemp(prefix="lakeformat-compare-"))
    scratch = Path(tempfile.mkdtemp(prefix="lakeformat-compare-", dir=args.scratch))
    worktree = tmp / "base"
    started = time.perf_counter()
    load_start = os.getloadavg()
    out: dict = {}
    try:
        git("worktree", "add", "--detach", "--quiet", str(worktree), base_commit)
        base = Side("base", worktree, scratch / "work-base", f"{args.base} = {base_commit[:12]}")
        dirty = git("status", "--porcelain", "--untracked-files=no", cwd=current_root)
        cur = Side("current", current_root, scratch / "work-current",
                   f"{current_root} at {git('rev-parse', '--short=12', 'HEAD', cwd=current_root)}"
                   + (f" + uncommitted changes in {len(dirty.splitlines())} files" if dirty else ", clean"))
        for s in (base, cur):
            log(f"{s.name:<7}: {s.label}\n         lakeformat.__file__ = {s.lakeformat_file()}")
        t0 = time.perf_counter()
        meta = make_data(scratch / "data", args.rows, args.pk_rows, args.small_rows, args.messages)
        log(f"data generated once in {time.perf_counter() - t0:.1f}s: {meta}")
        for s in (base, cur):
            s.env["LF_GUARD_DATA"] = str(scratch / "data")
            s.env["LF_GUARD_CLI"] = str(Path(sys.executable).with_name("lakeformat"))
        log(f"{args.blocks} blocks per side x {args.rounds} rounds, interleaved; tables in {scratch}; "
            f"load average {load_start[0]:.2f}")
        run_pairs(base, cur, args.blocks, args.rounds, only, tmp, 0)
        stats = {n: pair_stats(base, cur, n) for n in only}
        suspects = [n for n, s in stats.items() if flagged(s, args.threshold)]
        if suspects and args.confirm:
            log(f"flagged {', '.join(SHORT[n] for n in suspects)}: {args.confirm} more pairs of blocks to confirm")
            run_pairs(base, cur, args.confirm, args.rounds, suspects, tmp, args.blocks)
            stats.update({n: pair_stats(base, cur, n) for n in suspects})
        for s in stats.values():
            s["flagged"] = flagged(s, args.threshold)
        report(stats, args.threshold)
        regressions = [n for n, s in stats.items() if s["flagged"]]
        load_end = os.getloadavg()
        log(f"\nload average {load_start[0]:.2f} -> {load_end[0]:.2f}; {time.perf_counter() - started:.0f}s in all")
        for n in regressions:
            s = stats[n]
            log(f"REGRESSION: {n} ({SHORT[n]}) {s['median_pair_ratio']:.3f}x the base "
                f"({s['base_median'] * 1000:.1f} -> {s['current_median'] * 1000:.1f} ms, threshold "
                f"+{args.threshold:.0%})")
        if not regressions:
            log(f"no benchmark slower than the base by more than {args.threshold:.0%}")
        out = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "base": args.base,
               "base_commit": base_commit, "current": cur.label, "config": vars(args), "data": meta,
               "lakeformat_files": {"base": base.lakeformat_file(), "current": cur.lakeformat_file()},
               "loadavg_start": list(load_start), "loadavg_end": list(load_end), "cpu_count": os.cpu_count(),
               "benchmarks": stats, "regressions": regressions}
        return 1 if regressions else 0
    except Exception as e:
        log(f"error: {e}")
        out = {"error": str(e)}
        return 2
    finally:
        if out:
            p = Path(args.out)
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(json.dumps(out, indent=2) + "\n")
            log(f"results written to {p}")
        subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
