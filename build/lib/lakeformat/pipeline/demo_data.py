"""Deterministic ``user_behavior`` events, the demo and benchmark data set."""
from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa

BEHAVIORS = ["pv", "cart", "fav", "buy"]
SCHEMA = pa.schema([
    ("user_id", pa.int64()), ("item_id", pa.int64()), ("behavior", pa.string()),
    ("price", pa.float64()), ("ts", pa.timestamp("ms")), ("dt", pa.string()),
])


def user_behavior(rows: int, days: list[str], seed: int = 0, users: int = 100_000,
                  items: int = 50_000) -> pa.Table:
    """``rows`` events spread evenly over ``days`` (``YYYY-MM-DD``), reproducible for a seed."""
    rng = np.random.default_rng(seed)
    day_idx = np.sort(rng.integers(0, len(days), rows))
    starts = np.array([int(dt.datetime.fromisoformat(d).timestamp() * 1000) for d in days], dtype=np.int64)
    ts = starts[day_idx] + rng.integers(0, 86_400_000, rows)
    behavior = pa.DictionaryArray.from_arrays(
        pa.array(rng.choice(len(BEHAVIORS), rows, p=[0.82, 0.09, 0.06, 0.03]).astype(np.int32)),
        pa.array(BEHAVIORS)).cast(pa.string())
    dts = pa.DictionaryArray.from_arrays(pa.array(day_idx.astype(np.int32)), pa.array(days)).cast(pa.string())
    return pa.table([
        pa.array(rng.integers(1, users + 1, rows)), pa.array(rng.integers(1, items + 1, rows)),
        behavior, pa.array(np.round(rng.gamma(2.0, 20.0, rows), 2)),
        pa.array(ts, pa.timestamp("ms")), dts,
    ], schema=SCHEMA)
