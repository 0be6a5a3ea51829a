"""Landing files for the pipeline's tables, as an upstream system would drop them.

    python -m lakeformat.pipeline.landing --landing ./landing --start 2024-06-01 --end 2024-06-03 \\
        [--seed 0] [--rows-per-day 100000] [--bad-day 2024-06-02] [--config config/tables.yaml]
    python -m lakeformat.pipeline.landing --landing s3://lakehouse/landing \\
        --option s3.endpoint=http://127.0.0.1:9000 --start 2024-06-01     # keys in AWS_* variables

Writes, for every day (and hour, for tables whose landing path has ``{hour}``), the configured
format at the configured path: ``user_behavior`` events (the demo data set: timestamps inside the
day, plus about 0.5 % late events from the day before) and ``item_price`` updates (several per
item and day, as CSV). The same seed gives the same bytes. ``--bad-day`` adds rows that break the
tables' quality rules on that day: negative prices and an unknown behavior. Columns the landing
path gives (``dt={ds}``) are not repeated inside the files. The landing root may be on an object
store (``s3://bucket/prefix``): its storage options are the warehouse's, from the environment
(``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, ``$LAKEFORMAT_CATALOG``) and
``--option`` (no credentials on the command line).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from typing import Optional
from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from lakeformat.pipeline.demo_data import user_behavior
from lakeformat.errors import LakeformatError
from lakeformat.io.fileio import join
from lakeformat.pipeline.config import TableSpec, load_config
from lakeformat.pipeline.landing_files import landing_io
from lakeformat.secrets import mask, register_options
from lakeformat.table.settings import from_environment, option_pairs

LATE_FRACTION = 0.005
BAD_ROWS = 25
DAY_MS = 86_400_000


def _naive_start(day: dt.date) -> int:
    """Midnight of ``day`` as epoch milliseconds of a zone-less (wall-clock) timestamp."""
    return (day.toordinal() - dt.date(1970, 1, 1).toordinal()) * DAY_MS


def _rng(seed: int, day: dt.date, salt: int) -> np.random.Generator:
    return np.random.default_rng([seed, day.toordinal(), salt])


def user_behavior_rows(day: dt.date, rows: int, seed: int, bad: bool) -> pa.Table:
    """One day of events: ``ts`` inside the day except a few late ones from the day before."""
    iso = day.isoformat()
    t = user_behavior(rows, [iso], seed=seed * 100_003 + day.toordinal())
    rng = _rng(seed, day, 1)
    late = rng.random(rows) < LATE_FRACTION
    ts = t.column("ts").cast(pa.int64()).to_numpy()
    local_start = int(dt.datetime.fromisoformat(iso).timestamp() * 1000)   # demo data: local midnight
    ts = ts - local_start + _naive_start(day)                             # as wall-clock time
    ts = np.where(late, ts - DAY_MS, ts)
    t = t.set_column(t.schema.get_field_index("ts"), "ts", pa.array(ts).cast(pa.timestamp("ms")))
    t = t.sort_by("ts")
    if bad:
        n = min(BAD_ROWS, rows)
        idx = rng.choice(rows, n, replace=False)
        price = t.column("price").to_numpy().copy()
        price[idx[: n // 2]] = -price[idx[: n // 2]] - 1.0
        behavior = t.column("behavior").to_pylist()
        for i in idx[n // 2:]:
            behavior[i] = "click"
        t = t.set_column(t.schema.get_field_index("price"), "price", pa.array(price))
        t = t.set_column(t.schema.get_field_index("behavior"), "behavior", pa.array(behavior))
    return t


def item_price_rows(day: dt.date, rows: int, seed: int, bad: bool, items: int = 50_000) -> pa.Table:
    """Price updates: items change price during the day, some several times."""
    rng = _rng(seed, day, 2)
    n = max(1, rows)
    start = _naive_start(day)
    item = rng.integers(1, items + 1, n)
    price = np.round(rng.gamma(2.0, 20.0, n), 2)
    if bad:
        price[: min(BAD_ROWS, n)] *= -1
    updated = start + rng.integers(0, DAY_MS, n)
    currency = np.where(rng.random(n) < 0.9, "EUR", "USD")
    t = pa.table({"item_id": item, "price": price, "currency": currency,
                  "updated_at": pa.array(updated).cast(pa.timestamp("ms"))})
    return t.sort_by("updated_at")


def _ts_text(col: pa.ChunkedArray) -> pa.ChunkedArray:
    return pc.strftime(col, format="%Y-%m-%d %H:%M:%S").cast(pa.string())


def jsonl_bytes(t: pa.Table) -> bytes:
    cols = {n: (_ts_text(t.column(n)) if pa.types.is_timestamp(t.schema.field(n).type) else t.column(n)).to_pylist()
            for n in t.column_names}
    return "".join(json.dumps({n: v[i] for n, v in cols.items()}) + "\n" for i in range(t.num_rows)).encode()


def csv_bytes(t: pa.Table) -> bytes:
    arrays = [_ts_text(t.column(n)) if pa.types.is_timestamp(t.schema.field(n).type) else t.column(n)
              for n in t.column_names]
    out = pa.BufferOutputStream()
    pcsv.write_csv(pa.Table.from_arrays(arrays, names=t.column_names), out)
    return out.getvalue().to_pybytes()


GENERATORS = {"user_behavior": (user_behavior_rows, 1.0), "item_price": (item_price_rows, 0.05)}


def generate(d: TableSpec, landing: str, day: dt.date, rows: int, seed: int, bad: bool,
             options: Optional[Mapping[str, str]] = None) -> list[str]:
    """Write one day of ``d``'s landing files under ``landing`` (a path or a URI, reached with
    the storage ``options``); returns their paths."""
    make, share = GENERATORS[d.name]
    hours = range(24) if "{hour}" in d.landing_path else [None]
    data = make(day, max(1, int(rows * share)), seed, bad)
    fio = landing_io(landing, options)
    written = []
    for hour in hours:
        part = data
        if hour is not None:
            hours_of = pc.hour(data.column(data.column_names[-1] if d.name == "item_price" else "ts"))
            part = data.filter(pc.equal(hours_of, hour))
        drop = [c for c in d.path_columns(day.isoformat(), hour) if c in part.column_names]
        part = part.drop_columns(drop)
        path = join(d.landing_dir(landing, day.isoformat(), hour),
                    f"part-0.{'jsonl' if d.landing_format == 'jsonl' else 'csv'}")
        fio.write_bytes(path, (jsonl_bytes if d.landing_format == "jsonl" else csv_bytes)(part))
        written.append(path)
    return written


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lakeformat.pipeline.landing", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--landing", help="landing root (default: the config's 'landing')")
    ap.add_argument("--start", required=True, type=dt.date.fromisoformat, help="first day, YYYY-MM-DD")
    ap.add_argument("--end", type=dt.date.fromisoformat, help="last day (default: --start)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rows-per-day", type=int, default=100_000, help="user_behavior events per day")
    ap.add_argument("--bad-day", type=dt.date.fromisoformat, help="a day whose rows break the quality rules")
    ap.add_argument("--config", help="pipeline config (default: $LAKEFORMAT_CONFIG)")
    ap.add_argument("--table", action="append", help="only these tables (default: every one the generator knows)")
    ap.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                    help="storage option of an s3:// landing root, such as s3.endpoint=http://127.0.0.1:9000 "
                         "(repeatable; credentials only from the environment)")
    a = ap.parse_args(argv)
    end = a.end or a.start
    if end < a.start:
        ap.error(f"--end {end} is before --start {a.start}")
    if a.rows_per_day < 1:
        ap.error("--rows-per-day must be at least 1")
    try:
        options = {**from_environment()[1], **option_pairs(a.option, "--option")}
        register_options(options)   # masked in any message that repeats one
        cfg = load_config(a.config)
        tables = [cfg.table(n) for n in a.table] if a.table else [t for t in cfg.tables if t.name in GENERATORS]
    except LakeformatError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    unknown = [t.name for t in tables if t.name not in GENERATORS]
    if unknown:
        print(f"error: no landing generator for {unknown} (known: {sorted(GENERATORS)})", file=sys.stderr)
        return 2
    landing = a.landing or cfg.landing
    day, files = a.start, 0
    try:
        while day <= end:
            for d in tables:
                files += len(generate(d, landing, day, a.rows_per_day, a.seed, day == a.bad_day, options))
            day += dt.timedelta(days=1)
    except (LakeformatError, OSError) as e:   # an unreachable store, refused credentials
        print(f"error: writing landing files under {landing}: {mask(e)}", file=sys.stderr)
        return 2
    print(f"wrote {files} landing file(s) for {', '.join(t.name for t in tables)} under {landing} "
          f"({a.start} .. {end}, seed {a.seed})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
