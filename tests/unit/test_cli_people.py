"""The ``lakeformat`` command for people, through the in-process runner: tables that fit an
80-column terminal, human sizes, ``read`` with filters, columns and time travel, progress on a
terminal's stderr only, and ``--help`` with a description and an example for every verb."""
import datetime as dt
import json
import os
import re

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.cli.main import build_parser
from lakeformat.cli.output import fit_columns
from lakeformat.format.human import human_size
from tests.conftest import EVENTS, events, run_cli as run

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture
def wh(tmp_path):
    path = str(tmp_path / "wh")
    cat = lf.Catalog(path)
    cat.create_database("db")
    t = cat.create_table("db.t", EVENTS, partition_keys=["dt"], options={"bucket": "2", "bucket-key": "user_id"})
    t.write(events(6, "2024-01-01"))
    t.create_tag("first")
    t.write(events(4, "2024-01-02", start=100))
    big = cat.create_table("db.big", pa.schema([("id", pa.int64()), ("blob", pa.binary())]))
    big.write(pa.table({"id": [1], "blob": [os.urandom(1_250_000)]}))   # incompressible: a ~1.2 MiB file
    return path


@pytest.fixture
def terminal(monkeypatch):
    """What rich sees on an 80-column terminal (stdout and stderr), without colours."""
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("NO_COLOR", "1")


def lines(text: str) -> list[str]:
    return ANSI.sub("", text).splitlines()


def test_a_wide_listing_fits_80_columns_without_folding_headers(wh, capsys, terminal):
    code, out, err = run(capsys, "--warehouse", wh, "files", "db.t")
    assert code == 0, err
    shown = lines(out)
    assert max(len(ln) for ln in shown) <= 80
    header = next(ln for ln in shown if "partition" in ln)
    # whole headers on one line, none folded into a 7-character column
    for name in ("partition", "bucket", "file", "level", "record_count", "file_size"):
        assert re.search(rf"\b{name}\b", header), header
    assert not any(re.fullmatch(r"[│┃|]\s*(partit|ion|recor|ds)\s*[│┃|].*", ln) for ln in shown)
    rows = [ln for ln in shown if "│ dt=2024-01" in ln]
    assert len(rows) == len(lf.Catalog(wh).get_table("db.t").system_table("files").to_pylist())   # one line each
    assert "min_key" not in out                                        # empty in every row: left out
    assert re.search(r"more column\(s\) not shown: .*creation_time", " ".join(shown))   # what did not fit is named
    assert re.search(r"\d+(\.\d)? KiB", header + "\n".join(rows)) or re.search(r"\d+ B\b", "\n".join(rows))


def test_sizes_read_in_binary_units(wh, capsys, terminal):
    code, out, _ = run(capsys, "--warehouse", wh, "partitions", "db.big")
    size = lf.Catalog(wh).get_table("db.big").system_table("partitions").to_pylist()[0]["file_size_in_bytes"]
    assert code == 0 and human_size(size) in ANSI.sub("", out) and re.search(r"\b1\.\d MiB\b", ANSI.sub("", out))
    assert str(size) not in ANSI.sub("", out)
    raw = json.loads(run(capsys, "--warehouse", wh, "--json", "partitions", "db.big")[1])
    assert raw[0]["file_size_in_bytes"] == size                      # --json keeps the bytes


def test_fit_columns_keeps_headers_whole_and_drops_from_the_end():
    headers = ["partition", "bucket", "file", "min_sequence_number", "x"]
    cells = [["dt=2024-01-01", "0", "data-" + "a" * 60 + ".parquet", "1", "2"]]
    # 80: every column at least its header (or 8), the room left to the first that want more
    assert fit_columns(headers, cells, 80) == [13, 6, 8 + 80 - 1 - 5 * 3 - (13 + 6 + 8 + 19 + 1), 19, 1]
    assert sum(fit_columns(headers, cells, 80)) + 5 * 3 + 1 == 80
    assert fit_columns(headers, cells, 40) == [13, 6, 11]        # min_sequence_number does not fit: left out
    assert fit_columns(headers, [["a", "b", "c", "d", "e"]], 200) == [9, 6, 4, 19, 1]   # natural widths
    assert fit_columns(["a_very_long_header_name"], [["v"]], 10) == [23]   # one column always shows


def test_read_filter_columns_and_time_travel(wh, capsys):
    def rows(*argv):
        code, out, err = run(capsys, "--warehouse", wh, "--json", "read", "db.t", *argv)
        assert code == 0, err
        return json.loads(out)
    got = rows("--filter", "dt = '2024-01-02' and user_id >= 102", "--limit", "0")
    assert sorted(r["user_id"] for r in got) == [102, 103] and set(got[0]) == set(EVENTS.names)
    got = rows("--filter", "behavior in ('buy', 'cart') and not (price > 3)", "--columns", "user_id,behavior")
    assert sorted((r["user_id"], r["behavior"]) for r in got) == [(1, "buy"), (2, "cart")]
    assert set(got[0]) == {"user_id", "behavior"}
    assert len(rows("--tag", "first", "--limit", "0")) == 6
    assert len(rows("--snapshot", "2", "--limit", "0")) == 10
    first = lf.Catalog(wh).get_table("db.t").snapshot(1)
    at = dt.datetime.fromtimestamp(first.time_millis / 1000).isoformat(sep=" ")
    assert len(rows("--as-of", at, "--limit", "0")) == 6
    assert len(rows("--as-of", str(first.time_millis), "--limit", "0")) == 6
    assert len(rows("--filter", "user_id is not null", "--limit", "3")) == 3


def test_read_readable_says_what_it_read(wh, capsys, terminal):
    code, out, _ = run(capsys, "--warehouse", wh, "read", "db.t", "--filter", "user_id < 3", "--limit", "2")
    text = ANSI.sub("", out)
    assert code == 0 and "db.t (2 rows, snapshot 2)" in text and "more rows follow" in text
    code, out, _ = run(capsys, "--warehouse", wh, "read", "db.t", "--filter", "user_id < 3")
    assert code == 0 and "(3 rows, snapshot 2)" in ANSI.sub("", out) and "more rows" not in out


@pytest.mark.parametrize("argv, says", [
    (["--filter", "nope = 1"], "bad filter 'nope = 1': no column 'nope'"),
    (["--filter", "user_id = 'x'"], "'x' is not a value of column 'user_id' (int64)"),
    (["--filter", "price >"], "bad filter 'price >': expected a value for 'price' at the end"),
    (["--columns", "user_id,nope"], "no column 'nope' in db.t"),
    (["--tag", "nope"], "nope"),
    (["--as-of", "yesterday-ish"], "is not a time"),
])
def test_read_errors_name_what_is_wrong(wh, capsys, argv, says):
    code, out, err = run(capsys, "--warehouse", wh, "read", "db.t", *argv)
    assert code == 1 and out == "" and err.startswith("error: ") and says in err


def test_read_time_travel_flags_exclude_each_other(wh, capsys):
    code, _, err = run(capsys, "--warehouse", wh, "read", "db.t", "--snapshot", "1", "--tag", "first")
    assert code == 2 and "not allowed with argument" in err


def test_every_verb_has_a_description_and_an_example(capsys):
    verbs = build_parser()._subparsers._group_actions[0].choices
    assert {"read", "compact", "expire-snapshots", "remove-orphan-files", "files"} <= set(verbs)
    for verb, parser in verbs.items():
        assert parser.description and len(parser.description) > 20, verb
        code, out, _ = run(capsys, verb, "--help")
        assert code == 0 and "example" in out and f"lakeformat {verb}" in out.split("example", 1)[1], verb
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "lakeformat read demo.user_behavior --filter" in out


def test_progress_bar_on_a_terminal_goes_to_stderr_and_json_stays_clean(wh, capsys, terminal):
    code, out, err = run(capsys, "--warehouse", wh, "--json", "compact", "db.t", "--full")
    assert code == 0 and json.loads(out)["table"] == "db.t"           # stdout: the JSON only
    assert "compacting db.t" in ANSI.sub("", err) and "━" in err       # the bar, drawn on stderr


def test_long_verbs_say_how_long_they_took(wh, capsys):
    code, out, _ = run(capsys, "--warehouse", wh, "compact", "db.t", "--full")
    assert code == 0 and re.search(r"\(took \d+(\.\d)? (ms|s)\)", out), out
    code, out, _ = run(capsys, "--warehouse", wh, "remove-orphan-files", "db.t", "--dry-run")
    assert code == 0 and re.search(r"\(took \d+(\.\d)? (ms|s)\)", out), out
