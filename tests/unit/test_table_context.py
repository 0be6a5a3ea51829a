"""The layers below the table façade take a ``TableContext`` and never the ``Table``: read from
their source (no ``table`` parameter, no import of lakeformat.table, no attribute of a context
that ``TableContext`` lacks), plus the behaviour that depends on it (a publish commits through
the table, the context is the one the table's writers see)."""
from __future__ import annotations

import ast
from pathlib import Path

import grimp
import pyarrow as pa
import pytest

from lakeformat.io.table_context import TableContext
from lakeformat.format.schema import AddColumn
from lakeformat.table import staging
from tests.conftest import EVENTS, events

ROOT = Path(__file__).resolve().parents[2] / "lakeformat"
LOWER = ("format", "io", "read", "write", "mergetree", "commit", "maintenance")


def lower_modules():
    for package in LOWER:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield path, ast.parse(path.read_text(), str(path))


def _params(fn: ast.AST) -> list[ast.arg]:
    a = fn.args
    return [*a.posonlyargs, *a.args, *a.kwonlyargs, *(x for x in (a.vararg, a.kwarg) if x)]


def test_no_function_below_the_facade_takes_a_table():
    offenders = []
    for path, tree in lower_modules():
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            for p in _params(fn):
                annotation = ast.unparse(p.annotation) if p.annotation is not None else ""
                if p.arg == "table" or annotation.strip("'\"") in ("Table", "Optional[Table]") \
                        or "table.Table" in annotation:
                    offenders.append(f"{path.relative_to(ROOT.parent)}:{p.lineno} {p.arg}: {annotation or '?'}")
    assert not offenders, "take a ctx: TableContext (a pyarrow table is data, a name a str):\n" + "\n".join(offenders)


def test_no_module_below_the_facade_imports_the_table_package():
    offenders = []
    for path, tree in lower_modules():
        for node in ast.walk(tree):   # also imports inside functions and TYPE_CHECKING blocks
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            offenders += [f"{path.relative_to(ROOT.parent)}:{node.lineno} {n}" for n in names
                          if n == "lakeformat.table" or n.startswith("lakeformat.table.")]
    assert not offenders, "\n".join(offenders)


def _context_attributes() -> set[str]:
    init = next(n for n in ast.walk(ast.parse((ROOT / "io" / "table_context.py").read_text()))
                if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    assigned = {t.attr for n in ast.walk(init) if isinstance(n, (ast.Assign, ast.AnnAssign))
                for target in (n.targets if isinstance(n, ast.Assign) else [n.target])
                for t in (target.elts if isinstance(target, ast.Tuple) else [target])
                if isinstance(t, ast.Attribute)}
    return assigned | {n for n in dir(TableContext) if not n.startswith("__")}


def test_lower_layers_use_only_what_the_context_has():
    """``ctx.live_entries``, ``ctx.new_commit``, ``ctx.tags``... would call back up into Table."""
    known = _context_attributes()
    offenders = []
    for path, tree in lower_modules():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute):
                continue
            v = node.value
            is_ctx = (isinstance(v, ast.Name) and v.id == "ctx") or (
                isinstance(v, ast.Attribute) and v.attr == "ctx" and isinstance(v.value, ast.Name)
                and v.value.id == "self")
            if is_ctx and node.attr not in known:
                offenders.append(f"{path.relative_to(ROOT.parent)}:{node.lineno} ctx.{node.attr}")
    assert not offenders, "not a TableContext attribute:\n" + "\n".join(offenders)


def test_the_library_has_no_import_cycle():
    graph = grimp.build_graph("lakeformat")
    modules = sorted(graph.modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in modules}
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(m):   # Tarjan's strongly connected components
        index[m] = low[m] = len(index)
        stack.append(m)
        on_stack.add(m)
        for n in edges.get(m, ()):
            if n not in index:
                visit(n)
                low[m] = min(low[m], low[n])
            elif n in on_stack:
                low[m] = min(low[m], index[n])
        if low[m] == index[m]:
            scc = []
            while True:
                n = stack.pop()
                on_stack.discard(n)
                scc.append(n)
                if n == m:
                    break
            # a package importing its own submodule and back is how packages are built, not a cycle
            if len(scc) > 1 and not all(a.startswith(b + ".") or b.startswith(a + ".") for a in scc for b in scc
                                        if a != b):
                cycles.append(sorted(scc))

    for m in modules:
        if m not in index:
            visit(m)
    assert not cycles, cycles


@pytest.fixture
def table(catalog):
    return catalog.create_table("db.t", EVENTS, partition_keys=["dt"], options={"bucket": "1"})


def test_the_table_hands_its_context_down(table):
    assert isinstance(table.ctx, TableContext)
    with table.new_write("u") as w:
        assert w.ctx is table.ctx and table.new_commit("u").ctx is table.ctx
    table.write(events(3))
    table.alter(AddColumn("extra", pa.string()))
    assert table.ctx.schema.id == 1 and "extra" in table.ctx.arrow_schema().names   # refreshed in place
    old = table.as_of_schema(table.snapshot(1))
    assert old.ctx is not table.ctx and old.ctx.schema.id == 0 and table.ctx.schema.id == 1


def test_a_publish_commits_through_the_table(catalog):
    """The staging layer only plans and records a publish; the commit is the table's, so what
    follows every commit (here: snapshot expiration by the table's options) follows it too."""
    t = catalog.create_table("db.p", EVENTS, options={"bucket": "1", "snapshot.num-retained.min": "1",
                                                     "snapshot.num-retained.max": "1"})
    t.write(events(2))
    t.write(events(2, start=10))
    w = t.new_write("stager")
    w.write(events(5, start=100))
    staging.stage(t, w.prepare_commit(), "s1", commit_user="stager", identifier=staging.identifier_for("s1"))
    snap = staging.publish(t, "s1")
    assert snap is not None and snap.id == 3
    assert [s.id for s in t.snapshots()] == [3]   # the table commit's expiration ran after the publish
    assert t.read().num_rows == 9
    assert staging.publish(t, "s1").id == 3       # published once: the marker answers
