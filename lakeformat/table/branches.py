"""A table's branches as users find them: ``t.branches.create(...)``, ``.delete``, ``.list``,
``.fast_forward``, ``.table(name)``; the work is in lakeformat/maintenance/branches.py.

A fast-forward changes main's history, so the Iceberg metadata (which follows main) is
published after it, as after a rollback.
"""
from __future__ import annotations

from typing import Optional

from lakeformat.format.branch import MAIN, branch_identifier, split_branch
from lakeformat.format.snapshot import Snapshot
from lakeformat.maintenance import branches as B
from lakeformat.table import effects


class Branches:
    """The branches of one table (``Table.branches``); ``table`` may be of any of its branches."""

    def __init__(self, table):
        self._table = table
        self.ctx = table.ctx

    def list(self) -> list[str]:
        """The branch names other than ``main``, sorted."""
        return B.list_branches(self.ctx.io, self.ctx.path)

    def __contains__(self, name: str) -> bool:
        return name == MAIN or B.branch_exists(self.ctx.io, self.ctx.path, name)

    def create(self, name: str, from_snapshot: Optional[int] = None, from_tag: Optional[str] = None,
               empty: bool = False) -> Optional[Snapshot]:
        """Create branch ``name`` at this table's snapshot ``from_snapshot``, its tag ``from_tag``
        or (neither) its latest snapshot; ``empty=True``: with the schemas only (Paimon's
        ``create_branch(name)``). Returns the snapshot the branch starts at."""
        return B.create_branch(self.ctx, name, from_snapshot, from_tag, empty)

    def delete(self, name: str) -> None:
        """Delete a branch (its files that nothing else uses are left to orphan-file removal)."""
        B.delete_branch(self.ctx, name)

    def fast_forward(self, name: str) -> Optional[Snapshot]:
        """Make main exactly what branch ``name`` is (its snapshots, schemas and tags); main's
        snapshots from the branch's first one on are replaced. Run on main's table; stop main's
        writers first. Returns main's new latest snapshot."""
        snapshot = B.fast_forward(self.ctx, name)
        self._table.refresh()
        effects.after_change(self.ctx)
        return snapshot

    def table(self, name: str):
        """The table object of branch ``name`` (``main`` too), to read and write it."""
        base, _ = split_branch(self.ctx.name)
        return type(self._table)(self.ctx.io, self.ctx.path, branch_identifier(base, name), None, self.ctx.lock,
                                self.ctx.iceberg_cache, name)
