"""The core benchmarks of the regression guard (``make bench-compare``; driver: ``benchmarks/compare.py``).

Run by pytest-benchmark, one pytest process per block and side: the driver alternates the base
commit's code and the working tree's (ABBA...), each process importing the ``lakeformat`` found
first on ``sys.path`` (the driver starts it with that side's root as working directory and
``PYTHONPATH``). The benchmark definitions are always this file, so both sides run the same code
around the library. Not part of the test suite (``pytest.ini`` beside it keeps it apart).

Environment (set by the driver):
  LF_GUARD_DATA    folder of the input Parquet files, generated once by the driver (same bytes for both sides)
  LF_GUARD_WORK    this side's scratch folder: tables built once per side (first block), reused after
  LF_GUARD_ROUNDS  timed rounds per benchmark per block (default 5); the fast ones (read, commit:
                   tens of ms) run 3 times as many, merge-on-read twice: more samples where they are cheap
  LF_GUARD_CLI     the ``lakeformat`` console script
"""
from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import lakeformat as lf

DATA = Path(os.environ.get("LF_GUARD_DATA", "."))
WORK = Path(os.environ.get("LF_GUARD_WORK", tempfile.gettempdir()))
ROUNDS = int(os.environ.get("LF_GUARD_ROUNDS", "5"))
CLI = os.environ.get("LF_GUARD_CLI", str(Path(sys.executable).with_name("lakeformat")))
META = json.loads((DATA / "meta.json").read_text()) if (DATA / "meta.json").exists() else {}
FAST, MEDIUM = 3 * ROUNDS, 2 * ROUNDS
PK_OPTIONS = {"bucket": "2", "write-only": "true"}   # write-only: the 3 sorted runs stay, the read merges them


def _load(name: str):
    return pq.ParquetFile(DATA / name).read()   # loaded before any timer


def _tables() -> Path:
    """This side's tables, built once (the first block of the side) with this side's lakeformat."""
    root = WORK / "tables"
    done = root / "done"
    if done.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    cat = lf.Catalog(str(root / "wh"))
    cat.create_database("db")
    append = _load("append.parquet")
    cat.create_table("db.append", append.schema, partition_keys=["dt"]).write(append)
    pk = [_load(f"pk-{i}.parquet") for i in range(META.get("pk_batches", 3))]
    t = cat.create_table("db.pk", pk[0].schema, partition_keys=["dt"], primary_keys=["dt", "user_id", "item_id"],
                         options=PK_OPTIONS)
    for batch in pk:
        t.write(batch)
    small = _load("small.parquet")
    cat.create_table("db.small", small.schema, partition_keys=["dt"]).write(small)
    # a commit of many small messages: a warehouse whose table has the files of
    # ``commit_messages`` one-row writes, prepared but not committed; each round commits a copy
    tpl = root / "commit-template"
    c = lf.Catalog(str(tpl))
    c.create_database("db")
    ct = c.create_table("db.c", small.schema, partition_keys=["dt"])
    user = "guard"
    messages = []
    for i in range(META.get("commit_messages", 100)):
        w = ct.new_write(user)
        w.write(small.slice(i % small.num_rows, 1))
        messages += w.prepare_commit()
    (root / "messages.pkl").write_bytes(pickle.dumps(messages))
    done.write_text("ok")
    return root


@pytest.fixture(scope="session")
def tables() -> Path:
    return _tables()


@pytest.fixture(autouse=True)
def _record_import(benchmark):
    # which lakeformat this process measured: the driver checks it is the side's own
    benchmark.extra_info["lakeformat_file"] = lf.__file__


def test_write_append(benchmark):
    data = _load("append.parquet")
    scratch = Path(tempfile.mkdtemp(dir=WORK))
    state = {}

    def setup():
        wh = scratch / uuid.uuid4().hex
        cat = lf.Catalog(str(wh))
        cat.create_database("db")
        state["table"] = cat.create_table("db.t", data.schema, partition_keys=["dt"])   # not timed
        return (), {}

    def run():
        state["table"].write(data)   # conform, split by partition, Parquet files, manifests, snapshot

    benchmark.pedantic(run, setup=setup, rounds=ROUNDS, warmup_rounds=1, iterations=1)
    shutil.rmtree(scratch, ignore_errors=True)


def test_read_append(benchmark, tables):
    rows = META.get("append_rows")
    state = {}

    def setup():
        state["table"] = lf.Catalog(str(tables / "wh")).get_table("db.append")   # a fresh Table, not timed
        return (), {}

    def run():
        state["out"] = state["table"].read()

    benchmark.pedantic(run, setup=setup, rounds=FAST, warmup_rounds=1, iterations=1)
    assert rows is None or state["out"].num_rows == rows


def test_pk_merge_read(benchmark, tables):
    keys = META.get("pk_distinct_keys")
    state = {}

    def setup():
        state["table"] = lf.Catalog(str(tables / "wh")).get_table("db.pk")
        return (), {}

    def run():
        state["out"] = state["table"].read()   # 3 overlapping sorted runs per bucket merged

    benchmark.pedantic(run, setup=setup, rounds=MEDIUM, warmup_rounds=1, iterations=1)
    assert keys is None or state["out"].num_rows == keys


def test_commit_many_messages(benchmark, tables):
    messages_blob = (tables / "messages.pkl").read_bytes()
    scratch = Path(tempfile.mkdtemp(dir=WORK))
    state = {}

    def setup():
        wh = scratch / uuid.uuid4().hex
        shutil.copytree(tables / "commit-template", wh)
        state["table"] = lf.Catalog(str(wh)).get_table("db.c")
        state["messages"] = pickle.loads(messages_blob)
        return (), {}

    def run():
        state["table"].new_commit("guard").commit(state["messages"])

    benchmark.pedantic(run, setup=setup, rounds=FAST, warmup_rounds=1, iterations=1)
    shutil.rmtree(scratch, ignore_errors=True)


def test_cli_read_fresh_process(benchmark, tables):
    argv = [CLI, "--warehouse", str(tables / "wh"), "read", "db.small", "--limit", "20"]

    def run():
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    # the warm-up round also compiles the side's .pyc files (outside the figures)
    benchmark.pedantic(run, rounds=ROUNDS, warmup_rounds=1, iterations=1)
