"""The one progress reporter: a real compaction's lines in a user's words, rate-limited to the
first, the last and one per interval; the CLI (in a log) and the jobs print through it."""
import re

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.format.progress import ProgressReporter
from lakeformat.pipeline.jobs import progress_logger
from tests.conftest import EVENTS, events, run_cli as run


@pytest.fixture
def table(tmp_path):
    cat = lf.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", EVENTS, partition_keys=["dt"],
                         options={"bucket": "2", "bucket-key": "user_id", "write-only": "true"})
    for i in range(3):   # 2 partitions x 2 buckets, three small files in each
        t.write(pa.concat_tables([events(20, "2024-01-01", start=i * 100), events(20, "2024-01-02", start=i * 100)]))
    return t


def test_a_real_compaction_reports_every_bucket_when_unlimited(table):
    lines: list[str] = []
    table.compact(full=True, progress=ProgressReporter("compacting db.t", every=0, emit=lines.append))
    assert lines[0].startswith("compacting db.t: 0 of 4 buckets compacted, ")
    done = [re.match(r"compacting db\.t: (\d) of 4 buckets compacted \(last: \{'dt': '2024-01-0[12]'\} "
                     r"bucket [01]\), \d+ ms$", ln) for ln in lines[1:]]
    assert all(done), lines
    assert [int(m.group(1)) for m in done] == [1, 2, 3, 4]


def test_rate_limited_to_the_first_and_the_last(table):
    lines: list[str] = []
    table.compact(full=True, progress=ProgressReporter("compacting db.t", every=3600, emit=lines.append))
    assert len(lines) == 2, lines
    assert "0 of 4 buckets" in lines[0] and "4 of 4 buckets compacted" in lines[1]


def test_the_jobs_log_through_it(caplog):
    report = progress_logger("expiring snapshots of demo.t", every=3600)
    with caplog.at_level("INFO", logger="lakeformat.jobs"):
        for done in range(0, 11):
            report(done, 10, "snapshots expired")
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 2 and said[-1].startswith("expiring snapshots of demo.t: 10 of 10 snapshots expired, ")
    assert isinstance(report, ProgressReporter)


def test_the_cli_in_a_log_prints_the_same_lines(table, capsys):
    code, _, err = run(capsys, "--warehouse", table.path.rsplit("/db.db/", 1)[0], "compact", "db.t", "--full")
    assert code == 0
    assert re.search(r"^compacting db\.t: 4 of 4 buckets compacted \(last: .*\), \d+(\.\d)? m?s$", err, re.M), err


def test_a_total_unknown_counts_alone():
    r = ProgressReporter("listing", every=0, emit=print)
    assert r.line(3, 0, "files listed").startswith("listing: 3 files listed, ")
    assert r.line(1234, 5000, "rows").startswith("listing: 1,234 of 5,000 rows, ")
