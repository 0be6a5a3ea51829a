"""Sorted runs spilled to local disk when the write buffer fills (``write-buffer-spillable``).

Instead of a small level-0 file per full buffer, each sorted and merged buffer goes to a local
Arrow IPC file; at the flush they are merged into one level-0 run. The spill files are
memory-mapped, so merging reads them in key slices (as :mod:`lakeformat.mergetree.slices`
does for data files) without holding them in process memory.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from lakeformat.mergetree.slices import _less_than, boundaries

MAX_SPILLED_RUNS = 64   # then merge early, as Paimon's local-sort.max-num-file-handles


class SpilledRuns:
    def __init__(self):
        self.dir = None
        self.paths: list[str] = []
        self.bytes = 0

    def __len__(self) -> int:
        return len(self.paths)

    def add(self, run: pa.Table) -> None:
        if self.dir is None:
            self.dir = tempfile.mkdtemp(prefix="lakeformat-spill-")
        path = os.path.join(self.dir, f"run-{len(self.paths)}.arrow")
        with ipc.new_file(path, run.schema) as w:
            w.write_table(run)
        self.paths.append(path)
        self.bytes += run.nbytes

    def slices(self, extra: Sequence[pa.Table], keys: Sequence[str], budget: int) -> Iterator[pa.Table]:
        """Every version of the spilled runs and ``extra`` runs, in key slices of ~``budget``."""
        runs = [ipc.open_file(pa.memory_map(p)).read_all() for p in self.paths] + [t for t in extra if t.num_rows]
        total = sum(r.nbytes for r in runs)
        count = max(1, -(-total // max(budget, 1)))
        bounds = boundaries([r.select(keys) for r in runs], count)
        cuts = [[0] + [int(np.count_nonzero(_less_than(r.select(keys), b))) for b in bounds] + [r.num_rows]
                for r in runs]
        for j in range(len(bounds) + 1):
            parts = [r.slice(c[j], c[j + 1] - c[j]) for r, c in zip(runs, cuts) if c[j + 1] > c[j]]
            if parts:
                yield pa.concat_tables(parts)

    def clear(self) -> None:
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
        self.dir, self.paths, self.bytes = None, [], 0
