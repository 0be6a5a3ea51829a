"""The ``lakeformat`` command: in-process through ``cli.main`` plus one run of the console script."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.cli.main import main
from tests.conftest import EVENTS, events, run_cli as run


@pytest.fixture
def wh(tmp_path):
    """db.t: partitioned by dt, bucket=2, three snapshots; db.empty has no snapshot; other.u."""
    path = str(tmp_path / "wh")
    cat = lf.Catalog(path)
    cat.create_database("db")
    cat.create_database("other")
    t = cat.create_table("db.t", EVENTS, partition_keys=["dt"], options={"bucket": "2", "bucket-key": "user_id"})
    t.write(events(6, "2024-01-01"))
    t.write(events(4, "2024-01-02", start=100))
    t.write(events(2, "2024-01-01", start=200), overwrite=True)
    cat.create_table("db.empty", pa.schema([("x", pa.int64())]))
    cat.create_table("other.u", pa.schema([("x", pa.int64())])).write(pa.table({"x": [1]}))
    return path


def run_json(capsys, *argv):
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    return json.loads(out)


# ------------------------------------------------------------------ listings

def test_databases(wh, capsys):
    assert run_json(capsys, "--warehouse", wh, "--json", "databases") == [{"database": "db"}, {"database": "other"}]
    code, out, _ = run(capsys, "--warehouse", wh, "databases")
    assert code == 0 and "db" in out and "other" in out


def test_tables_all_and_per_database(wh, capsys):
    assert run_json(capsys, "--warehouse", wh, "--json", "tables") == \
        [{"table": "db.empty"}, {"table": "db.t"}, {"table": "other.u"}]
    assert run_json(capsys, "--warehouse", wh, "--json", "tables", "db") == [{"table": "db.empty"}, {"table": "db.t"}]
    code, out, _ = run(capsys, "--warehouse", wh, "tables", "other")
    assert code == 0 and "other.u" in out and "db.t" not in out


def test_empty_warehouse_lists_nothing(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert run_json(capsys, "--warehouse", str(tmp_path / "empty"), "--json", "databases") == []
    assert run_json(capsys, "--warehouse", str(tmp_path / "empty"), "--json", "tables") == []
    code, _, err = run(capsys, "--warehouse", str(tmp_path / "none"), "--json", "databases")
    assert code == 1 and "does not exist" in err   # a typo must not look like an empty warehouse


# ------------------------------------------------------------------ show

def test_show_readable(wh, capsys):
    code, out, err = run(capsys, "--warehouse", wh, "show", "db.t")
    assert code == 0 and err == ""
    for name in EVENTS.names:
        assert name in out
    assert "latest snapshot: 3 (OVERWRITE" in out
    assert "partition keys: dt " in out and "bucket-key" in out


def test_show_json(wh, capsys):
    info = run_json(capsys, "--warehouse", wh, "--json", "show", "db.t")
    assert info["table"] == "db.t" and info["schema_id"] == 0
    assert info["partition_keys"] == ["dt"] and info["primary_keys"] == []
    assert info["options"] == {"bucket": "2", "bucket-key": "user_id"}
    assert [c["name"] for c in info["columns"]] == EVENTS.names
    assert [c["id"] for c in info["columns"]] == [0, 1, 2, 3]
    assert info["latest_snapshot"]["id"] == 3 and info["latest_snapshot"]["kind"] == "OVERWRITE"
    assert info["latest_snapshot"]["total_record_count"] == 6


def test_show_table_without_snapshots(wh, capsys):
    assert run_json(capsys, "--warehouse", wh, "--json", "show", "db.empty")["latest_snapshot"] is None
    code, out, _ = run(capsys, "--warehouse", wh, "show", "db.empty")
    assert code == 0 and "latest snapshot: none" in out


# ------------------------------------------------------------------ snapshots, files, read

def test_snapshots_json(wh, capsys):
    snaps = run_json(capsys, "--warehouse", wh, "--json", "snapshots", "db.t")
    assert [s["snapshot_id"] for s in snaps] == [1, 2, 3]
    assert [s["commit_kind"] for s in snaps] == ["APPEND", "APPEND", "OVERWRITE"]
    assert [s["total_record_count"] for s in snaps] == [6, 10, 6]
    code, out, _ = run(capsys, "--warehouse", wh, "snapshots", "db.t")
    assert code == 0 and "OVERWRITE" in out and "APPEND" in out


def test_files_of_a_snapshot(wh, capsys):
    files = run_json(capsys, "--warehouse", wh, "--json", "files", "db.t", "--snapshot", "1")
    live = lf.Catalog(wh).get_table("db.t").files(1)
    assert len(files) == len(live) >= 1
    assert sorted(f["file_path"] for f in files) == sorted(f["path"] for f in live)
    assert len({f["file_path"] for f in files}) == len(files)    # one entry per file
    assert all(f["bucket"] in (0, 1) and f["partition"] == "dt=2024-01-01" for f in files)
    assert sum(f["record_count"] for f in files) == 6
    assert all(Path(f["file_path"]).is_file() for f in files)
    # default is the latest snapshot: 2024-01-01 was overwritten with 2 rows
    latest = run_json(capsys, "--warehouse", wh, "--json", "files", "db.t")
    assert sum(f["record_count"] for f in latest) == 6
    assert {f["partition"] for f in latest} == {"dt=2024-01-01", "dt=2024-01-02"}


def test_read_limit_json(wh, capsys):
    rows = run_json(capsys, "--warehouse", wh, "--json", "read", "db.t", "--limit", "3")
    assert len(rows) == 3 and set(rows[0]) == set(EVENTS.names)
    assert len(run_json(capsys, "--warehouse", wh, "--json", "read", "db.t", "--limit", "0")) == 6
    assert len(run_json(capsys, "--warehouse", wh, "--json", "read", "db.t", "--limit", "0", "--snapshot", "2")) == 10
    assert run_json(capsys, "--warehouse", wh, "--json", "read", "db.empty") == []


def test_read_readable_shows_values_verbatim(tmp_path, capsys):
    """Cell values are data, not rich markup: '[/x]' used to raise MarkupError."""
    cat = lf.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.s", pa.schema([("s", pa.string())]))
    t.write(pa.table({"s": ["[bold]x", "[/nope]"]}))
    code, out, err = run(capsys, "--warehouse", str(tmp_path / "wh"), "read", "db.s")
    assert code == 0, err
    assert "[bold]x" in out and "[/nope]" in out


# ------------------------------------------------------------------ flag placement

@pytest.mark.parametrize("argv", [
    ["--warehouse", "{wh}", "--json", "snapshots", "db.t"],
    ["snapshots", "db.t", "--json", "--warehouse", "{wh}"],
    ["--warehouse", "{wh}", "snapshots", "--json", "db.t"],
    ["--json", "snapshots", "db.t", "--warehouse", "{wh}"],
])
def test_global_flags_before_or_after_the_subcommand(wh, capsys, argv):
    snaps = run_json(capsys, *[a.format(wh=wh) for a in argv])
    assert [s["snapshot_id"] for s in snaps] == [1, 2, 3]


def test_flags_after_the_subcommand_do_not_reset_flags_before_it(wh, capsys):
    # --json before, --warehouse after: both apply
    assert run_json(capsys, "--json", "read", "db.t", "--limit", "2", "--warehouse", wh).__len__() == 2
    # --option before and after are merged (both unknown here, so both are named in the error)
    code, _, err = run(capsys, "--warehouse", wh, "--option", "a=1", "databases", "--option", "b=2")
    assert code == 1 and "'a'" in err and "'b'" in err


def test_option_after_subcommand_is_validated(wh, capsys):
    code, _, err = run(capsys, "--warehouse", wh, "databases", "--option", "novalue")
    assert code == 2 and "KEY=VALUE" in err


# ------------------------------------------------------------------ errors

def test_unknown_table(wh, capsys):
    code, out, err = run(capsys, "--warehouse", wh, "show", "db.nope")
    assert code == 1 and out == ""
    assert err.startswith("error:") and "db.nope" in err
    for cmd in (["snapshots", "db.nope"], ["files", "db.nope"], ["read", "db.nope"]):
        code, _, err = run(capsys, "--warehouse", wh, *cmd)
        assert code == 1 and "db.nope" in err


def test_unknown_database(wh, capsys):
    code, _, err = run(capsys, "--warehouse", wh, "tables", "nodb")
    assert code == 1 and "nodb" in err


def test_unknown_snapshot(wh, capsys):
    code, _, err = run(capsys, "--warehouse", wh, "files", "db.t", "--snapshot", "99")
    assert code == 1 and "99" in err


@pytest.mark.parametrize("name", ["../x", "db/../../etc.t", "db.t/..", "noseparator"])
def test_invalid_table_name(wh, capsys, name):
    code, out, err = run(capsys, "--warehouse", wh, "show", name)
    assert code == 1 and out == "" and err.startswith("error:")
    assert "invalid" in err or "identifier" in err


def test_option_without_equals(wh, capsys):
    code, _, err = run(capsys, "--warehouse", wh, "--option", "s3.endpoint", "databases")
    assert code == 2 and "KEY=VALUE" in err and "s3.endpoint" in err


def test_unknown_catalog_option(wh, capsys):
    code, _, err = run(capsys, "--warehouse", wh, "--option", "nope=1", "databases")
    assert code == 1 and "nope" in err


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as e:
        main([])
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        main(["read", "db.t", "--limit", "many"])
    assert e.value.code == 2
    capsys.readouterr()


# ------------------------------------------------------------------ the installed script

def test_console_script(wh):
    script = Path(sys.executable).with_name("lakeformat")
    assert script.is_file(), f"console script missing next to {sys.executable}"
    env = {**os.environ, "LAKEFORMAT_WAREHOUSE": wh}
    ok = subprocess.run([str(script), "snapshots", "db.t", "--json"], capture_output=True, text=True,
                        env=env, timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert [s["snapshot_id"] for s in json.loads(ok.stdout)] == [1, 2, 3]
    bad = subprocess.run([str(script), "show", "db.nope"], capture_output=True, text=True, env=env, timeout=60)
    assert bad.returncode == 1 and "db.nope" in bad.stderr and "Traceback" not in bad.stderr
