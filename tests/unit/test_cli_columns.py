"""Listings on an 80-column terminal keep the commit time whole; ``schema_id`` shows only once a
table has more than one schema; ``show`` prints options as a table (in-process runner, a real
table, rich as it draws for a terminal)."""
import re

import pyarrow as pa
import pytest

import lakeformat as lf
from tests.conftest import EVENTS, events, run_cli as run

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
TIME = re.compile(r"\b\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\b")


@pytest.fixture
def terminal(monkeypatch):
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("NO_COLOR", "1")


@pytest.fixture
def wh(tmp_path):
    path = str(tmp_path / "wh")
    cat = lf.Catalog(path)
    cat.create_database("db")
    t = cat.create_table("db.t", EVENTS, partition_keys=["dt"],
                         options={"bucket": "2", "bucket-key": "user_id", "snapshot.time-retained": "2 d"})
    for i in range(3):
        t.write(events(5, "2024-01-01", start=i * 10))
    return path


def shown(capsys, wh, *argv) -> list[str]:
    code, out, err = run(capsys, "--warehouse", wh, *argv)
    assert code == 0, err
    lines = ANSI.sub("", out).splitlines()
    assert max(len(ln) for ln in lines) <= 80
    return lines


def rows_of(lines: list[str]) -> list[str]:
    return [ln for ln in lines if ln.startswith("│")]


def test_snapshots_keep_the_commit_time_whole_and_drop_the_single_schema(wh, capsys, terminal):
    lines = shown(capsys, wh, "snapshots", "db.t")
    header = next(ln for ln in lines if "snapshot_id" in ln)
    assert "commit_time" in header and "schema_id" not in header
    rows = rows_of(lines)
    assert len(rows) == 3 and all(TIME.search(r) for r in rows), rows   # milliseconds and all, no "…"
    assert not any("…" in r for r in rows)


def test_schema_id_shows_once_the_table_has_two_schemas(wh, capsys, terminal):
    t = lf.Catalog(wh).get_table("db.t")
    t.alter(lf.AddColumn("note", pa.string()))
    t.write(pa.table({**{n: events(1, "2024-01-02", start=99).column(n) for n in EVENTS.names},
                      "note": ["x"]}))
    lines = shown(capsys, wh, "snapshots", "db.t")
    header = next(ln for ln in lines if "snapshot_id" in ln)
    assert "schema_id" in header
    rows = rows_of(lines)
    assert len(rows) == 4 and all(TIME.search(r) for r in rows)
    assert re.search(r"│\s+4 │ APPEND\s+│\s+1 │", rows[-1])      # the new snapshot is of schema 1


def test_show_prints_options_as_a_table(wh, capsys, terminal):
    lines = shown(capsys, wh, "show", "db.t")
    text = "\n".join(lines)
    assert "{" not in text and "'bucket'" not in text                     # no Python dict
    assert "partition keys: dt   primary keys: -" in text
    options = {m.group(1): m.group(2) for m in (re.match(r"│ (\S+)\s+│ (\S+(?: \S+)*)\s+│$", ln) for ln in lines) if m}
    assert options == {"bucket": "2", "bucket-key": "user_id", "snapshot.time-retained": "2 d"}
    assert re.search(r"latest snapshot: 3 \(APPEND, 15 rows, \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\)", text)
