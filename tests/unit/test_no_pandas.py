"""lakeformat's read and commit paths keep pandas out of the process.

pyarrow imports pandas (0.4 s with a warm disk cache, over 2 s with a cold one) the first time it
converts Python or numpy values, or a numpy view is asked of an array (see
``lakeformat/format/arrays.py``). Each operation here runs in a fresh interpreter whose meta-path
hook records the stack of the first import of pandas (and of ``pyarrow.dataset``, whose import
imports pandas); the test fails with that stack. The tables are written by this process; a child
only reads, plans, commits messages prepared here, compacts, expires or scans for orphans.

polars: lakeformat decodes manifests with polars' compiled Avro reader only after a process has
decoded ``BEFORE_IMPORT`` (20,000) records with fastavro, or once polars is imported anyway
(``lakeformat/io/avro_columns.py``); these tables are small, so polars must stay out too. The
``[polars]`` cases import polars first, so the compiled reader runs: pandas must stay out there as
well. Beyond those: a library call imports no module at all that ``import lakeformat`` did not (a
lazy import on a first call is a cold-start cost: see ``benchmarks/cold.py``), and a CLI verb only
the CLI's own (``CLI_MODULES``).
"""
import json
import os
import pickle
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.pipeline.demo_data import SCHEMA, user_behavior

ROOT = Path(__file__).resolve().parents[2]
DAYS = ["2024-01-01", "2024-01-02"]
PK_SCHEMA = pa.schema([pa.field(f.name, f.type, nullable=f.name not in ("dt", "user_id", "item_id")) for f in SCHEMA])
KEYS = ["dt", "user_id", "item_id"]

pytestmark = pytest.mark.slow   # ~40 fresh interpreters

CHILD = textwrap.dedent('''
    import json, sys, traceback
    WATCH = ("pandas", "pyarrow.dataset", "polars")
    stacks = {}
    class Hook:
        def find_spec(self, name, path=None, target=None):
            if name in WATCH and name not in stacks:
                frames = traceback.extract_stack()[:-1]
                if len(frames) > 1 and frames[-2].name == "_find_and_load_unlocked":   # an import, not a look-up
                    stacks[name] = "".join(traceback.format_list([f for f in frames if "<frozen" not in f.filename]))
            return None
    sys.meta_path.insert(0, Hook())
    if sys.argv[2] == "polars":
        import polars
    import lakeformat as lf
    before = set(sys.modules)
    WH = sys.argv[3]
    exec(sys.argv[1])
    print("@@" + json.dumps({"stacks": stacks, "modules": sorted(set(sys.modules)),
                             "new": sorted({m.split(".")[0] for m in set(sys.modules) - before})}))
''')

OPS = {
    "append read": "lf.Catalog(WH).get_table('db.a').read()",
    "append read, filtered": "lf.Catalog(WH).get_table('db.a').read(filter=lf.col('dt') == '2024-01-02')",
    "append to_batches": "list(lf.Catalog(WH).get_table('db.a').to_batches())",
    "merge-on-read (deletes, 3 sorted runs)": "lf.Catalog(WH).get_table('db.pk').read()",
    "merge-on-read, filtered": "lf.Catalog(WH).get_table('db.pk').read(filter=lf.col('user_id') > 50000)",
    "merge-on-read, streamed": "list(lf.Catalog(WH).get_table('db.pk').to_batches())",
    "scan plan": "lf.Catalog(WH).get_table('db.pk').scan().plan()",
    "scan plan, partition filter": "lf.Catalog(WH).get_table('db.a').scan(filter=lf.col('dt') == '2024-01-01').plan()",
    "commit of prepared messages": "import pickle; t = lf.Catalog(WH).get_table('db.c'); "
                                   "t.new_commit('u').commit(pickle.load(open(WH + '/messages.pkl', 'rb')))",
    "full compaction": "lf.Catalog(WH).get_table('db.pk2').compact(full=True)",
    "snapshot expiration": "lf.Catalog(WH).get_table('db.e').expire_snapshots(retain_max=2, retain_min=1)",
    "data evolution read": "lf.Catalog(WH).get_table('db.de').read(columns=['_ROW_ID', 'user_id', 'price'])",
    "row-tracking compaction": "lf.Catalog(WH).get_table('db.de').compact(full=True)",
    "BLOB read, streamed": "list(lf.Catalog(WH).get_table('db.blob').to_batches())",
    "branch read": "lf.Catalog(WH).get_table('db.a$branch_b').read()",
    "orphan removal": "import datetime; lf.Catalog(WH).get_table('db.a').remove_orphan_files("
                      "older_than=datetime.timedelta(days=1))",   # the scan of every file; nothing that old
}
CLI_VERBS = ["read db.a --limit 5", "read db.pk --limit 5", "snapshots db.a", "files db.pk", "show db.pk",
             "manifests db.a", "partitions db.a", "buckets db.pk", "schemas db.a", "options db.pk", "tags db.a",
             "tables db"]
CLI = "from lakeformat.cli.main import main; import io, contextlib\n" \
      "with contextlib.redirect_stdout(io.StringIO()): rc = main(['--warehouse', WH] + {argv!r})\n" \
      "assert rc in (0, None), rc"


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    wh = tmp_path_factory.mktemp("no-pandas") / "wh"
    build(wh)
    return wh


@pytest.fixture
def warehouse(template, tmp_path) -> str:
    """A copy of the tables for each child: some change them (compaction, commit, expiration, orphans)."""
    shutil.copytree(template, tmp_path / "wh")
    return str(tmp_path / "wh")


def build(wh: Path) -> None:
    cat = lf.Catalog(str(wh))
    cat.create_database("db")
    a = cat.create_table("db.a", SCHEMA, partition_keys=["dt"])
    for seed in range(2):
        a.write(user_behavior(5_000, DAYS, seed=seed))
    for name in ("db.pk", "db.pk2"):
        t = cat.create_table(name, PK_SCHEMA, partition_keys=["dt"], primary_keys=KEYS,
                             options={"bucket": "2", "write-only": "true"})
        for seed in (0, 1, 0):   # overlapping keys: three sorted runs per bucket to merge
            t.write(user_behavior(5_000, DAYS, seed=seed).cast(PK_SCHEMA))
        t.delete(user_behavior(500, DAYS, seed=0).select(KEYS).cast(pa.schema([PK_SCHEMA.field(k) for k in KEYS])))
    c = cat.create_table("db.c", SCHEMA, partition_keys=["dt"])
    messages = []
    for i in range(10):
        w = c.new_write("u")
        w.write(user_behavior(10, DAYS, seed=100 + i))
        messages += w.prepare_commit()
    (wh / "messages.pkl").write_bytes(pickle.dumps(messages))
    e = cat.create_table("db.e", SCHEMA, partition_keys=["dt"])
    for seed in range(5):
        e.write(user_behavior(100, DAYS, seed=seed), overwrite=True)
    (wh / "db.db" / "a" / "dt=2024-01-01" / "bucket-0" / "orphan.parquet").write_bytes(b"x")
    a.branches.create("b")
    de = cat.create_table("db.de", SCHEMA, options={"row-tracking.enabled": "true", "data-evolution.enabled": "true"})
    for seed in range(2):
        de.write(user_behavior(1_000, DAYS, seed=seed))
    blob = cat.create_table("db.blob", pa.schema([("id", pa.int64()), ("pic", pa.binary())]),
                            options={"row-tracking.enabled": "true", "data-evolution.enabled": "true",
                                     "blob-field": "pic"})
    blob.write(pa.table({"id": pa.array(range(50), pa.int64()), "pic": [bytes([i]) * 1000 for i in range(50)]}))
    de.update_columns(pa.table({"_ROW_ID": pa.array([0, 5, 1_500], pa.int64()), "price": [1.0, 2.0, 3.0]}))


def run_child(code: str, wh: str, polars: bool = False) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-c", CHILD, code, "polars" if polars else "-", wh], cwd="/",
                       capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads([ln for ln in p.stdout.splitlines() if ln.startswith("@@")][-1][2:])


# what the CLI itself imports (argument parsing, rich's tables): nothing else may come with a verb
CLI_MODULES = {"lakeformat", "argparse", "gettext", "locale", "_locale", "rich", "colorsys", "fractions", "mmap"}


def check(res: dict, polars_expected: bool) -> None:
    for name in ("pandas", "pyarrow.dataset"):
        assert name not in res["modules"], f"{name} imported by:\n{res['stacks'].get(name, '(no stack)')}"
    if not polars_expected:
        assert "polars" not in res["modules"], f"polars imported by:\n{res['stacks'].get('polars', '')}"


@pytest.mark.parametrize("polars", [False, True], ids=["", "polars"])
@pytest.mark.parametrize("op", list(OPS))
def test_operation_imports_no_pandas(op, polars, warehouse):
    res = run_child(OPS[op], warehouse, polars)
    check(res, polars_expected=polars)
    # and nothing else first imported by the call: `import lakeformat` brought all it needs
    assert res["new"] == [], f"first imported by {op}: {res['new']}"


@pytest.mark.parametrize("argv", CLI_VERBS)
def test_cli_verb_imports_no_pandas(argv, warehouse):
    res = run_child(CLI.format(argv=argv.split()), warehouse)
    check(res, polars_expected=False)
    assert set(res["new"]) <= CLI_MODULES, \
        f"first imported by lakeformat {argv}: {sorted(set(res['new']) - CLI_MODULES)}"
