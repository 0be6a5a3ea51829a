"""The ``lakeformat`` system-table listings and procedure verbs, in-process through ``cli.main``
(checking output and effects on the table) plus one run of the installed console script."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.cli.output import plain
from lakeformat.table.system_tables import SYSTEM_TABLES
from tests.conftest import EVENTS, events, run_cli as run

OPTIONS = {"bucket": "2", "bucket-key": "user_id", "write-only": "true", "snapshot.num-retained.min": "1",
           "partition.timestamp-formatter": "yyyy-MM-dd"}


@pytest.fixture
def wh(tmp_path):
    """db.t: write-only, 2 buckets, partitions 2020-01-01 and 2099-01-01, six snapshots, a consumer."""
    path = str(tmp_path / "wh")
    cat = lf.Catalog(path)
    cat.create_database("db")
    t = cat.create_table("db.t", EVENTS, partition_keys=["dt"], options=OPTIONS)
    for i in range(6):
        t.write(pa.concat_tables([events(40, "2020-01-01", start=i * 100), events(40, "2099-01-01", start=i * 100)]))
    t.consumers.record("job-a", 2)
    return path


def run_json(capsys, wh, *argv):
    code, out, err = run(capsys, "--warehouse", wh, "--json", *argv)
    assert code == 0, err
    return json.loads(out)


def table(wh) -> lf.Table:
    return lf.Catalog(wh).get_table("db.t")


# ---------------------------------------------------------------- listings

@pytest.mark.parametrize("name", sorted(SYSTEM_TABLES))
def test_every_system_table_lists_as_json_and_readable(wh, capsys, name):
    t = table(wh)
    t.create_tag("v1", snapshot_id=2)
    assert run_json(capsys, wh, name, "db.t") == [plain(r) for r in t.system_table(name).to_pylist()]
    code, out, err = run(capsys, "--warehouse", wh, name, "db.t")
    assert code == 0 and err == ""
    assert f"{name} of db.t" in out
    first = t.system_table(name).column_names[0]
    assert first in out


def test_listings_at_a_snapshot(wh, capsys):
    files = run_json(capsys, wh, "files", "db.t", "--snapshot", "1")
    assert sum(f["record_count"] for f in files) == 80
    buckets = run_json(capsys, wh, "buckets", "db.t", "--snapshot", "3")
    assert sum(b["file_count"] for b in buckets) == 12 and max(b["sorted_runs"] for b in buckets) == 3
    code, _, err = run(capsys, "--warehouse", wh, "options", "db.t", "--snapshot", "1")
    assert code == 2 and "--snapshot" in err   # options do not depend on a snapshot
    code, _, err = run(capsys, "--warehouse", wh, "files", "db.t", "--snapshot", "99")
    assert code == 1 and "99" in err


# ---------------------------------------------------------------- compact

def test_compact_a_partition_then_all_fully(wh, capsys):
    before = table(wh).read()
    out = run_json(capsys, wh, "compact", "db.t", "--partition", "dt=2020-01-01")
    assert out["snapshot"] == 7 and out["partitions"] == [{"dt": "2020-01-01"}]
    parts = {p["partition"]: p for p in table(wh).system_table("partitions").to_pylist()}
    assert parts["dt=2020-01-01"]["file_count"] == 2 and parts["dt=2099-01-01"]["file_count"] == 12
    code, out, err = run(capsys, "--warehouse", wh, "compact", "db.t", "--full")
    assert code == 0 and "compacted db.t in snapshot" in out and "at most 1 sorted runs" in out
    assert "compacting db.t: 2 of 2 buckets compacted" in err                                 # progress on stderr
    t = table(wh)
    assert t.latest_snapshot().commit_kind == "COMPACT"
    assert t.read().sort_by("user_id").equals(before.sort_by("user_id"))
    assert run_json(capsys, wh, "compact", "db.t")["snapshot"] is None    # nothing left


def test_compact_expires_snapshots_of_a_write_only_table(wh, capsys):
    t = table(wh)
    t.consumers.delete("job-a")                     # a consumer would hold its snapshots
    t.alter(lf.SetOption("snapshot.num-retained.max", "2"))
    run_json(capsys, wh, "compact", "db.t")
    assert [s.id for s in table(wh).snapshots()] == [6, 7]   # writers are write-only: compact expires


def test_compact_bad_partitions(wh, capsys):
    code, _, err = run(capsys, "--warehouse", wh, "compact", "db.t", "--partition", "nope=1")
    assert code == 1 and "nope" in err and "partition keys" in err
    code, _, err = run(capsys, "--warehouse", wh, "compact", "db.t", "--partition", "dt")
    assert code == 2 and "KEY=VALUE" in err
    assert len(table(wh).snapshots()) == 6


# ---------------------------------------------------------------- expiration

def test_expire_snapshots_dry_run_then_for_real(wh, capsys):
    t = table(wh)
    t.consumers.delete("job-a")
    dry = run_json(capsys, wh, "expire-snapshots", "db.t", "--retain-max", "2", "--dry-run")
    assert dry["dry_run"] and dry["expired_snapshots"] == [1, 2, 3, 4]
    assert [s.id for s in table(wh).snapshots()] == [1, 2, 3, 4, 5, 6]  # nothing changed
    code, out, _ = run(capsys, "--warehouse", wh, "expire-snapshots", "db.t", "--retain-max", "4", "--max-deletes", "1")
    assert code == 0 and "expired snapshots 1..1" in out
    assert [s.id for s in table(wh).snapshots()] == [2, 3, 4, 5, 6]
    real = run_json(capsys, wh, "expire-snapshots", "db.t", "--older-than", "0 s", "--retain-min", "2")
    assert real["expired_snapshots"] == [2, 3, 4] and not real["dry_run"]
    assert [s.id for s in table(wh).snapshots()] == [5, 6]
    assert table(wh).read().num_rows == 480


def test_expire_snapshots_clears_the_whole_backlog_in_steps(wh, capsys):
    """Not only snapshot.expire.limit snapshots: the verb repeats steps until nothing is due."""
    t = table(wh)
    t.consumers.delete("job-a")
    for i in range(6):
        t.write(events(2, "2099-01-01", start=1000 + i))
    t.alter(lf.SetOption("snapshot.expire.limit", "2"))
    real = run_json(capsys, wh, "expire-snapshots", "db.t", "--older-than", "0 s", "--retain-min", "2", "--step", "3")
    assert real["expired_snapshots"] == list(range(1, 11))
    assert [s.id for s in table(wh).snapshots()] == [11, 12]


def test_expire_snapshots_bad_arguments(wh, capsys):
    for args, what in ((["--older-than", "yesterday"], "neither a duration"),
                       (["--older-than", ""], "neither a duration"), (["--retain-min", "0"], "positive")):
        code, _, err = run(capsys, "--warehouse", wh, "expire-snapshots", "db.t", *args)
        assert code == 2 and what in err
    code, _, err = run(capsys, "--warehouse", wh, "expire-snapshots", "db.t", "--older-than", "2000-01-01 00:00:00")
    assert code == 0


def test_expire_partitions(wh, capsys):
    dry = run_json(capsys, wh, "expire-partitions", "db.t", "--expiration-time", "30 d", "--dry-run")
    assert dry["partitions"] == [{"dt": "2020-01-01"}] and dry["dry_run"]
    assert len(table(wh).system_table("partitions")) == 2
    code, out, _ = run(capsys, "--warehouse", wh, "expire-partitions", "db.t", "--expiration-time", "30 d")
    assert code == 0 and "dropped 1 partition(s) of db.t: dt=2020-01-01" in out
    assert table(wh).system_table("partitions").column("partition").to_pylist() == ["dt=2099-01-01"]


# ---------------------------------------------------------------- consumers

def test_reset_and_delete_a_consumer(wh, capsys):
    dry = run_json(capsys, wh, "reset-consumer", "db.t", "job-a", "--next-snapshot", "5", "--dry-run")
    assert dry["previous_next_snapshot"] == 2 and table(wh).consumers.get("job-a") == 2
    code, out, _ = run(capsys, "--warehouse", wh, "reset-consumer", "db.t", "job-a", "--next-snapshot", "5")
    assert code == 0 and "reset consumer job-a of db.t to snapshot 5 (was 2)" in out
    assert table(wh).consumers.get("job-a") == 5
    for args in (["--next-snapshot", "99"], ["--next-snapshot", "99", "--dry-run"]):
        code, _, err = run(capsys, "--warehouse", wh, "reset-consumer", "db.t", "job-a", *args)
        assert code == 1 and "99" in err
    run_json(capsys, wh, "reset-consumer", "db.t", "job-a")                # no snapshot: delete it
    assert table(wh).consumers.list() == {}
    code, _, err = run(capsys, "--warehouse", wh, "reset-consumer", "db.t", "job-a")
    assert code == 1 and "job-a" in err


def test_clear_consumers_by_pattern(wh, capsys):
    t = table(wh)
    for cid in ("job-b", "job-keep", "other"):
        t.consumers.record(cid, 3)
    args = ["clear-consumers", "db.t", "--including", "job-.*", "--excluding", "job-keep"]
    dry = run_json(capsys, wh, *args, "--dry-run")
    assert dry["consumers"] == ["job-a", "job-b"] and len(table(wh).consumers.list()) == 4
    assert run_json(capsys, wh, *args)["consumers"] == ["job-a", "job-b"]
    assert sorted(table(wh).consumers.list()) == ["job-keep", "other"]
    code, _, err = run(capsys, "--warehouse", wh, "clear-consumers", "db.t", "--including", "(")
    assert code == 1 and "pattern" in err


# ---------------------------------------------------------------- tags and rollback

def test_create_list_delete_tags(wh, capsys):
    code, out, _ = run(capsys, "--warehouse", wh, "create-tag", "db.t", "first", "--snapshot", "1")
    assert code == 0 and "created tag first on snapshot 1 of db.t" in out
    made = run_json(capsys, wh, "create-tag", "db.t", "kept", "--time-retained", "2 d")
    assert made["snapshot"] == 6 and made["time_retained"] == "2 days, 0:00:00"
    listed = run_json(capsys, wh, "tags", "db.t")
    assert [(t["tag_name"], t["time_retained"]) for t in listed] == [("first", None), ("kept", "2 days, 0:00:00")]
    code, out, _ = run(capsys, "--warehouse", wh, "create-tag", "db.t", "hourly", "--time-retained", "90 min")
    assert code == 0 and out.rstrip().endswith("kept for 1 h 30 min")
    code, out, _ = run(capsys, "--warehouse", wh, "tags", "db.t")   # readable: durations as people read them
    assert code == 0 and "2 d" in out and "1 h 30 min" in out and "days," not in out and "1:30:00" not in out
    run(capsys, "--warehouse", wh, "delete-tag", "db.t", "hourly")
    code, _, err = run(capsys, "--warehouse", wh, "create-tag", "db.t", "first")
    assert code == 1 and "exists" in err
    code, _, err = run(capsys, "--warehouse", wh, "create-tag", "db.t", "../x")
    assert code == 1 and "x" in err
    assert run_json(capsys, wh, "delete-tag", "db.t", "first", "--dry-run")["dry_run"]
    assert table(wh).tags.exists("first")
    code, out, _ = run(capsys, "--warehouse", wh, "delete-tag", "db.t", "first")
    assert code == 0 and "deleted tag first (snapshot 1)" in out and not table(wh).tags.exists("first")
    code, _, err = run(capsys, "--warehouse", wh, "delete-tag", "db.t", "first")
    assert code == 1 and "first" in err


def test_rollback_to_a_snapshot_or_tag(wh, capsys):
    t = table(wh)
    t.create_tag("at4", snapshot_id=4)
    dry = run_json(capsys, wh, "rollback", "db.t", "--to", "5", "--dry-run")
    assert dry["deleted_snapshots"] == [6] and table(wh).latest_snapshot().id == 6
    code, out, _ = run(capsys, "--warehouse", wh, "rollback", "db.t", "--to", "5")
    assert code == 0 and "rolled db.t back to snapshot 5" in out
    assert table(wh).latest_snapshot().id == 5
    assert run_json(capsys, wh, "rollback", "db.t", "--to", "at4")["snapshot"] == 4
    assert table(wh).read().num_rows == 320
    code, _, err = run(capsys, "--warehouse", wh, "rollback", "db.t", "--to", "nope")
    assert code == 1 and "nope" in err


# ---------------------------------------------------------------- orphans

def test_remove_orphan_files(wh, capsys):
    t = table(wh)
    bucket_dir = Path(t.system_table("files").column("file_path")[0].as_py()).parent
    old, young = bucket_dir / "data-old-orphan-0.parquet", bucket_dir / "data-young-orphan-0.parquet"
    old.write_bytes(b"x" * 100)
    young.write_bytes(b"y" * 10)
    two_days_ago = time.time() - 2 * 86400
    os.utime(old, (two_days_ago, two_days_ago))
    code, _, err = run(capsys, "--warehouse", wh, "remove-orphan-files", "db.t", "--older-than", "")
    assert code == 2 and "--older-than: a duration like '1 h'" in err   # not the library's "unset"
    dry = run_json(capsys, wh, "remove-orphan-files", "db.t", "--dry-run")
    assert [Path(p).name for p in dry["orphans"]] == [old.name] and dry["too_young"] == 1
    assert old.exists()
    code, out, _ = run(capsys, "--warehouse", wh, "remove-orphan-files", "db.t")
    assert code == 0 and "deleted 1 orphan file(s) of db.t (100 B)" in out
    assert not old.exists() and young.exists()
    assert run_json(capsys, wh, "remove-orphan-files", "db.t", "--older-than", "0 s",
                  "--allow-deleting-in-flight-files")["orphans"][0].endswith(young.name)
    assert not young.exists() and table(wh).read().num_rows == 480


# ---------------------------------------------------------------- the installed script

def test_console_script_compacts_and_lists(wh):
    script = Path(sys.executable).with_name("lakeformat")
    env = {**os.environ, "LAKEFORMAT_WAREHOUSE": wh}
    done = subprocess.run([str(script), "compact", "db.t", "--full", "--json"], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["snapshot"] == 7 and "compacting db.t: 4 of 4 buckets compacted" in done.stderr
    listed = subprocess.run([str(script), "buckets", "db.t"], capture_output=True, text=True, env=env, timeout=60)
    assert listed.returncode == 0 and "sorted_runs" in listed.stdout and "dt=2099-01-01" in listed.stdout
