"""Partition expiration: Java time patterns, the pure plan, and the one-commit executor."""
from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.commit.commit import FileStoreCommit
from lakeformat.errors import CommitConflictError, OptionError
from lakeformat.format.options import Options
from lakeformat.maintenance.partition_expire import (ExpirePolicy, PartitionInfo, maybe_expire_partitions,
                                                     plan_expiration)
from lakeformat.maintenance.partition_time import compile_pattern, parse_default, partition_time
from lakeformat.format.commit_message import CommitMessage
from tests.conftest import EVENTS, events

D = dt.datetime


# ---------------------------------------------------------------- Java patterns

@pytest.mark.parametrize("pattern, text, expected", [
    ("yyyy-MM-dd", "2024-03-05", D(2024, 3, 5)),
    ("yyyyMMdd", "20240305", D(2024, 3, 5)),
    ("yyyy-MM-dd HH:mm:ss", "2024-03-05 13:04:59", D(2024, 3, 5, 13, 4, 59)),
    ("yyyyMMddHH", "2024030523", D(2024, 3, 5, 23)),
    ("yyyy-MM-dd'T'HH:mm", "2024-03-05T07:30", D(2024, 3, 5, 7, 30)),
    ("yyyy/M/d", "2024/3/5", D(2024, 3, 5)),
    ("dd.MM.yy", "05.03.24", D(2024, 3, 5)),
    ("d MMM yyyy", "5 Mar 2024", D(2024, 3, 5)),
    ("MMMM d, yyyy hh a", "March 5, 2024 12 AM", D(2024, 3, 5, 0)),
    ("yyyy-MM-dd hh:mm a", "2024-03-05 01:15 PM", D(2024, 3, 5, 13, 15)),
    ("yyyy-MM-dd HH:mm:ss.SSS", "2024-03-05 01:02:03.450", D(2024, 3, 5, 1, 2, 3, 450000)),
    ("yyyy-MM-dd 'at' HH'h'", "2024-03-05 at 09h", D(2024, 3, 5, 9)),
    ("yyyy-MM-dd''HH", "2024-03-05'09", D(2024, 3, 5, 9)),
])
def test_java_patterns_parse(pattern, text, expected):
    assert compile_pattern(pattern).parse(text) == expected


@pytest.mark.parametrize("pattern, text", [
    ("yyyyMMdd", "2024-03-05"),       # literal text the pattern lacks
    ("yyyyMMdd", "2024035"),          # MM and dd take exactly two digits
    ("yyyy-MM-dd", "2024-3-05"),
    ("yyyy-MM-dd", "2024-02-30"),     # no such day
    ("yyyy-MM-dd HH", "2024-03-05 24"),
    ("yyyy-MM-dd", "2024-03-05 00:00:00"),   # trailing text
    ("d MMM yyyy", "5 mar 2024"),     # month names are case-sensitive, as in Locale.ROOT
])
def test_java_patterns_reject(pattern, text):
    with pytest.raises(ValueError):
        compile_pattern(pattern).parse(text)


@pytest.mark.parametrize("pattern, why", [
    ("yyyy-MM", "day of month"), ("MM-dd", "year"), ("yyyy-MM-ddTHH", "'T'"),
    ("yyyy-MM-dd hh", "marker 'a'"), ("yyyy-MM-dd 'x", "unclosed"), ("yyyy-MM-dd[ HH]", "optional"),
    ("yyyy-MM-dd EEE", "not supported"), ("", "non-empty"),
])
def test_bad_patterns_are_option_errors(pattern, why):
    with pytest.raises(OptionError, match=r"partition.timestamp-formatter") as e:
        compile_pattern(pattern)
    assert why in str(e.value)


def test_default_parse_is_paimons_lenient_date_or_timestamp():
    assert parse_default("2024-3-5") == D(2024, 3, 5)
    assert parse_default("2024-03-05 1:02:03.5") == D(2024, 3, 5, 1, 2, 3, 500000)
    for bad in ("20240305", "2024-03-05 10", "2024-03-05T10:00:00", "today"):
        with pytest.raises(ValueError):
            parse_default(bad)


def test_timestamp_pattern_substitutes_every_key_longest_first():
    keys = ["dt", "dt_hour"]
    assert partition_time(keys, ["2024-03-05", "07"], "$dt $dt_hour:00:00") == D(2024, 3, 5, 7)
    assert partition_time(["hr", "day"], ["7", "20240305"], "$day $hr", "yyyyMMdd H") == D(2024, 3, 5, 7)
    assert partition_time(["d"], [dt.date(2024, 3, 5)]) == D(2024, 3, 5)   # a DATE partition, in ISO form
    with pytest.raises(ValueError, match="null"):
        partition_time(["dt"], [None])


# ---------------------------------------------------------------- planning

def infos(*values, created=None):
    return [PartitionInfo(str(v).encode(), v if isinstance(v, tuple) else (v,), created) for v in values]


def test_plan_values_time_oldest_first_limited_by_max_num():
    parts = infos("2024-01-05", "2024-01-01", "2024-01-10", "2024-01-03", "junk")
    policy = ExpirePolicy(dt.timedelta(days=3), max_num=2)
    plan = plan_expiration(["dt"], parts, D(2024, 1, 9, 12), policy)
    assert plan.cutoff == D(2024, 1, 6, 12)
    assert [p.values[0] for p in plan.expired] == ["2024-01-01", "2024-01-03"]
    assert plan.deferred == 1   # 2024-01-05 goes next run
    assert [p.values[0] for p, _ in plan.undated] == ["junk"]
    # strictly before the cutoff: a partition exactly at it stays
    exact = plan_expiration(["dt"], infos("2024-01-06"), D(2024, 1, 9), ExpirePolicy(dt.timedelta(days=3)))
    assert exact.expired == ()


def test_plan_update_time_uses_newest_file():
    now = D(2024, 1, 9, 12)
    old = int(D(2024, 1, 1).timestamp() * 1000)
    new = int(D(2024, 1, 9, 11).timestamp() * 1000)
    parts = [PartitionInfo(b"a", ("a",), old), PartitionInfo(b"b", ("b",), new), PartitionInfo(b"c", ("c",), None)]
    plan = plan_expiration(["k"], parts, now, ExpirePolicy(dt.timedelta(hours=2), strategy="update-time"))
    assert [p.values for p in plan.expired] == [("a",)]
    assert [p.values for p, _ in plan.undated] == [("c",)]


def test_policy_rejects_settings_that_never_expire():
    with pytest.raises(OptionError, match=r"partition.expiration-time is not set"):
        ExpirePolicy.of(["dt"], Options({}))
    with pytest.raises(OptionError, match=r"\$hour"):
        ExpirePolicy.of(["dt"], Options({"partition.timestamp-pattern": "$dt $hour:00:00"}), "1 d")
    with pytest.raises(OptionError, match="day of month"):
        ExpirePolicy.of(["dt"], Options({"partition.timestamp-formatter": "yyyyMM"}), "1 d")
    assert ExpirePolicy.of(["dt"], Options({}), dt.timedelta(days=2)).expiration_time == dt.timedelta(days=2)


# ---------------------------------------------------------------- executor

def make(catalog, name="db.t", partition_keys=("dt",), schema=EVENTS, **options):
    return catalog.create_table(name, schema, partition_keys=list(partition_keys), options=options)


def set_options(t, **options):
    """Set options after the data is written: with partition.expiration-time set, the writes
    themselves would already expire the (2024) test partitions at today's date."""
    t.alter(*[lf.SetOption(k, v) for k, v in options.items()])


def days(t, *dts, n=3):
    for i, d in enumerate(dts):
        t.write(events(n, d, start=i * n))


def dts_of(t, **kw):
    return sorted(set(t.read(**kw).column("dt").to_pylist()))


def test_expire_drops_old_partitions_in_one_overwrite_commit(catalog):
    t = make(catalog, **{"bucket": "2", "bucket-key": "user_id"})
    days(t, "2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04")
    set_options(t, **{"partition.expiration-time": "2 d"})
    before = t.latest_snapshot()
    assert t.expire_partitions(now=D(2024, 1, 4, 12), dry_run=True) == [{"dt": "2024-01-01"}, {"dt": "2024-01-02"}]
    assert t.latest_snapshot().id == before.id   # dry run changes nothing
    gone = t.expire_partitions(now=D(2024, 1, 4, 12))
    assert gone == [{"dt": "2024-01-01"}, {"dt": "2024-01-02"}]
    snap = t.latest_snapshot()
    assert snap.id == before.id + 1 and snap.commit_kind == "OVERWRITE"
    assert snap.total_record_count == before.total_record_count - 6
    assert [e.kind for e in t.delta_entries(snap)] == [1] * len(t.delta_entries(snap))   # deletes only
    assert dts_of(t) == ["2024-01-03", "2024-01-04"]
    assert dts_of(t, snapshot_id=before.id) == ["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04"]
    assert t.expire_partitions(now=D(2024, 1, 4, 12)) == []   # nothing left to expire: no commit
    assert t.latest_snapshot().id == snap.id


def test_expiration_time_argument_overrides_option_and_unpartitioned_fails(catalog):
    t = make(catalog)
    days(t, "2024-01-01", "2024-01-05")
    with pytest.raises(OptionError, match="not set"):
        t.expire_partitions(now=D(2024, 1, 6))
    assert t.expire_partitions(expiration_time="3 d", now=D(2024, 1, 6)) == [{"dt": "2024-01-01"}]
    flat = catalog.create_table("db.flat", EVENTS)
    with pytest.raises(lf.LakeformatError, match="no partition keys"):
        flat.expire_partitions(expiration_time="1 d")


def test_formatter_option_decides_which_values_are_times(catalog):
    t = make(catalog)
    days(t, "20240101", "20240110")
    set_options(t, **{"partition.expiration-time": "1 d"})
    now = D(2024, 1, 10, 12)
    assert t.expire_partitions(now=now) == []   # the default parser reads no date in 20240101
    set_options(t, **{"partition.timestamp-formatter": "yyyyMMdd"})
    assert t.expire_partitions(now=now) == [{"dt": "20240101"}]
    assert dts_of(t) == ["20240110"]


def test_timestamp_pattern_with_two_partition_keys(catalog):
    schema = pa.schema([("user_id", pa.int64()), ("dt", pa.string()), ("hour", pa.string())])
    t = make(catalog, partition_keys=("dt", "hour"), schema=schema)
    rows = [(1, "2024-01-01", "23"), (2, "2024-01-02", "07"), (3, "2024-01-02", "08"), (4, "2024-01-02", "10")]
    t.write(pa.table({"user_id": [r[0] for r in rows], "dt": [r[1] for r in rows], "hour": [r[2] for r in rows]},
                     schema=schema))
    set_options(t, **{"partition.expiration-time": "2 h"})
    now = D(2024, 1, 2, 10, 30)
    # without a pattern only dt counts: every hour of 2024-01-02 is at midnight, older than 08:30
    assert len(t.expire_partitions(now=now, dry_run=True)) == 4
    set_options(t, **{"partition.timestamp-pattern": "$dt $hour:00:00"})
    assert t.expire_partitions(now=now) == [{"dt": "2024-01-01", "hour": "23"}, {"dt": "2024-01-02", "hour": "07"},
                                            {"dt": "2024-01-02", "hour": "08"}]
    assert t.read().column("user_id").to_pylist() == [4]


def test_max_num_limits_each_run_oldest_first(catalog):
    t = make(catalog)
    days(t, "2024-01-05", "2024-01-01", "2024-01-04", "2024-01-02", "2024-01-03", "2024-01-10", n=1)
    set_options(t, **{"partition.expiration-time": "1 d", "partition.expiration-max-num": "2"})
    now = D(2024, 1, 10)
    assert t.expire_partitions(now=now) == [{"dt": "2024-01-01"}, {"dt": "2024-01-02"}]
    assert t.expire_partitions(now=now) == [{"dt": "2024-01-03"}, {"dt": "2024-01-04"}]
    assert t.expire_partitions(now=now) == [{"dt": "2024-01-05"}]
    assert dts_of(t) == ["2024-01-10"]


def test_update_time_strategy_uses_file_creation_time(catalog):
    t = make(catalog, **{"partition.expiration-time": "1 h", "partition.expiration-strategy": "update-time"})
    days(t, "not-a-date", "2999-12-31")   # values are irrelevant to this strategy
    assert t.expire_partitions() == []   # files were just written
    later = dt.datetime.now() + dt.timedelta(hours=2)
    assert sorted(p["dt"] for p in t.expire_partitions(now=later)) == ["2999-12-31", "not-a-date"]
    assert t.read().num_rows == 0


def test_writers_expire_after_commit_at_most_once_per_check_interval(catalog):
    t = make(catalog, **{"partition.expiration-time": "1 d", "partition.expiration-check-interval": "1 h"})
    t.write(events(2, "2020-01-01"))   # the first commit of this Table object checks: 2020 is long gone
    assert dts_of(t) == []
    t.write(events(2, "2020-01-02"))   # within the interval: no check
    assert dts_of(t) == ["2020-01-02"]
    kinds = [s.commit_kind for s in t.snapshots()]
    assert kinds == ["APPEND", "OVERWRITE", "APPEND"]
    # a zero interval checks after every commit
    t.alter(lf.SetOption("partition.expiration-check-interval", "0 s"))
    t.write(events(2, "2020-01-03"))
    assert dts_of(t) == []


def test_write_only_writers_never_expire_partitions(catalog):
    t = make(catalog, **{"partition.expiration-time": "1 d", "write-only": "true"})
    t.write(events(2, "2020-01-01"))
    assert dts_of(t) == ["2020-01-01"]
    assert maybe_expire_partitions(t.ctx) is None
    assert t.expire_partitions() == [{"dt": "2020-01-01"}]   # a dedicated job still can


def test_bad_option_in_writer_check_is_logged_not_raised(catalog, caplog):
    t = make(catalog, **{"partition.expiration-time": "1 d", "partition.timestamp-pattern": "$day"})
    t.write(events(2, "2020-01-01"))   # the commit succeeds; the check fails and says why
    assert t.read().num_rows == 2
    assert "partition.timestamp-pattern" in caplog.text and "commit itself succeeded" in caplog.text


def test_drop_commit_goes_through_conflict_rules(catalog):
    t = make(catalog)
    days(t, "2024-01-01", "2024-01-05")
    set_options(t, **{"partition.expiration-time": "1 d"})
    old = [e for e in t.live_entries(t.latest_snapshot()) if t.partition_values(e.partition) == ("2024-01-01",)]
    # a compaction of the old partition prepared before the expiration, committed after it
    compaction = [CommitMessage(e.partition, e.bucket, e.total_buckets, compact_before=(e.file,)) for e in old]
    t.expire_partitions(now=D(2024, 1, 5))
    with pytest.raises(CommitConflictError, match="no longer live"):
        FileStoreCommit(t.ctx).commit(compaction)
    assert dts_of(t) == ["2024-01-05"]


def test_expire_partitions_of_a_primary_key_table(catalog):
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string()), pa.field("dt", pa.string(), False)])
    t = catalog.create_table("db.pk", schema, primary_keys=["id", "dt"], partition_keys=["dt"],
                             options={"bucket": "2"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"], "dt": ["2024-01-01", "2024-01-03"]}, schema=schema))
    t.write(pa.table({"id": [1], "v": ["c"], "dt": ["2024-01-01"]}, schema=schema))
    set_options(t, **{"partition.expiration-time": "1 d"})
    progress = []
    assert t.expire_partitions(now=D(2024, 1, 3), progress=lambda *a: progress.append(a)) == [{"dt": "2024-01-01"}]
    assert progress[-1] == (1, 1, "partitions")
    assert t.read().to_pylist() == [{"id": 2, "v": "b", "dt": "2024-01-03"}]
