"""Branches: reading the branch fixtures paimon-cpp wrote (and their scan.fallback-branch), writing
a branch, creating, deleting, fast-forwarding, and maintenance of one branch never deleting what
another still reads."""
import os
import shutil
import stat

import pyarrow as pa
import pytest

from lakeformat.errors import InvalidNameError, LakeformatError, NotFoundError, UnsupportedError
from lakeformat.table.catalog import Catalog

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "paimon-java", "parquet")
PT = "append_table_with_append_pt_branch"
RT = "append_table_with_rt_branch"


def _fixture_catalog(tmp_path, *names):
    wh = tmp_path / "wh"
    for n in names:
        shutil.copytree(os.path.join(FIXTURES, f"{n}.db"), wh / f"{n}.db")
    for root, dirs, files in os.walk(wh):
        for x in dirs + files:
            p = os.path.join(root, x)
            os.chmod(p, os.stat(p).st_mode | stat.S_IWUSR)
    return Catalog(str(wh))


def _ids(t, **kw):
    return sorted(r["id"] for r in t.read(**kw).to_pylist())


def _rows(t, **kw):
    return sorted(t.read(**kw).to_pylist(), key=lambda r: tuple(str(v) for v in r.values()))


# --------------------------------------------------------------------- the fixtures

def test_pt_branch_fixture_reads_the_branch_at_every_snapshot(tmp_path):
    # README of the fixture: the test branch wrote (2, 210), then added value2 and wrote (2, 220, 2200)
    cat = _fixture_catalog(tmp_path, PT)
    b = cat.get_table(f"{PT}.{PT}$branch_test")
    assert b.branch == "test" and [s.id for s in b.snapshots()] == [1, 2]
    assert _rows(b, snapshot_id=1) == [{"pt": 2, "value": 210}]
    assert _rows(b) == _rows(b, snapshot_id=2) == [{"pt": 2, "value": 210, "value2": None},
                                                   {"pt": 2, "value": 220, "value2": 2200}]
    assert cat.get_table(f"{PT}.{PT}", branch="test").read().equals(b.read())


def test_pt_branch_fixture_main_falls_back_to_the_branch_for_missing_partitions(tmp_path):
    # main has pt=1 only and scan.fallback-branch=test: pt=2 comes from branch test
    cat = _fixture_catalog(tmp_path, PT)
    main = cat.get_table(f"{PT}.{PT}")
    assert main.branch == "main"
    assert _rows(main) == [{"pt": 1, "value": 110, "value2": None}, {"pt": 1, "value": 120, "value2": 1200},
                           {"pt": 2, "value": 210, "value2": None}, {"pt": 2, "value": 220, "value2": 2200}]
    # time travel: the fallback branch at the newest snapshot not after main's (else its first)
    assert _rows(main, snapshot_id=1) == [{"pt": 1, "value": 110}, {"pt": 2, "value": 210}]
    assert _rows(main, snapshot_id=2) == [{"pt": 1, "value": 110, "value2": None},
                                          {"pt": 1, "value": 120, "value2": 1200}, {"pt": 2, "value": 210,
                                                                                   "value2": None}]
    # a filter applies to both sides
    from lakeformat.format import predicate as P
    assert _rows(main, filter=P.col("value") == 220) == [{"pt": 2, "value": 220, "value2": 2200}]
    batches = list(main.to_batches())
    assert sum(b.num_rows for b in batches) == 4


def test_rt_fixture_fallback_to_a_primary_key_branch(tmp_path):
    # paimon-cpp read_inte_test TestReadOnlyPartitionField: the main fallback scan reads
    # 20240725 twice (main) and 20240726 twice (branch rt, a primary-key table with 2 buckets)
    cat = _fixture_catalog(tmp_path, RT)
    main = cat.get_table(f"{RT}.{RT}")
    data = main.read()
    assert data.column("dt").to_pylist() == ["20240725", "20240725", "20240726", "20240726"]
    assert _rows(main) == [{"dt": "20240725", "name": "apple", "amount": 5},
                           {"dt": "20240725", "name": "banana", "amount": 7},
                           {"dt": "20240726", "name": "cherry", "amount": 3},
                           {"dt": "20240726", "name": "pear", "amount": 6}]
    assert data.schema == main.arrow_schema()   # the fallback's NOT NULL columns read as main's
    rt = cat.get_table(f"{RT}.{RT}$branch_rt")
    assert rt.primary_keys == ["dt", "name"] and len(rt.read()) == 4
    assert main.read_incremental(0, 1).num_rows == 2   # incremental reads follow main alone, as Paimon's


def test_unknown_branch_and_bad_names(tmp_path):
    cat = _fixture_catalog(tmp_path, RT)
    with pytest.raises(NotFoundError, match=r"branch 'nope'.*branches: \['rt'\]"):
        cat.get_table(f"{RT}.{RT}$branch_nope")
    t = cat.get_table(f"{RT}.{RT}$branch_rt")
    for bad in ("main", "a/b", "..", "123", ""):
        with pytest.raises(InvalidNameError):
            t.branches.create(bad)


# --------------------------------------------------------------------- writing and managing

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])


def _table(tmp_path, **options):
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, partition_keys=["dt"], options=options)
    return cat, t


def _data(ids, dt="a"):
    return pa.table({"id": pa.array(ids, pa.int64()), "dt": [dt] * len(ids)})


def test_write_to_a_branch_leaves_main_alone(tmp_path):
    cat, t = _table(tmp_path)
    t.write(_data([1, 2]))
    t.create_tag("v1")
    t.write(_data([3]))
    assert t.branches.create("b").id == 2          # from the latest snapshot
    assert t.branches.create("old", from_snapshot=1).id == 1
    assert t.branches.create("tagged", from_tag="v1").id == 1
    assert t.branches.create("blank", empty=True) is None
    assert t.branches.list() == ["b", "blank", "old", "tagged"]
    b = cat.get_table("db.t$branch_b")
    b.write(_data([10], "z"))
    assert sorted(r["id"] for r in b.read().to_pylist()) == [1, 2, 3, 10]
    assert sorted(r["id"] for r in t.read().to_pylist()) == [1, 2, 3]          # main untouched
    assert os.path.exists(tmp_path / "wh/db.db/t/branch/branch-b/snapshot/snapshot-3")
    assert not os.path.exists(tmp_path / "wh/db.db/t/snapshot/snapshot-3")
    assert sorted(r["id"] for r in cat.get_table("db.t$branch_old").read().to_pylist()) == [1, 2]
    tagged = cat.get_table("db.t$branch_tagged")
    assert tagged.tags.names() == ["v1"] and sorted(r["id"] for r in tagged.read(tag="v1").to_pylist()) == [1, 2]
    blank = cat.get_table("db.t$branch_blank")
    assert blank.read().num_rows == 0
    blank.write(_data([7]))
    assert [r["id"] for r in blank.read().to_pylist()] == [7]
    t.branches.delete("blank")
    assert "blank" not in t.branches.list()
    with pytest.raises(NotFoundError):
        t.branches.delete("blank")
    with pytest.raises(LakeformatError, match="exists already"):
        t.branches.create("b")


def test_fast_forward_makes_main_the_branch(tmp_path):
    cat, t = _table(tmp_path)
    t.write(_data([1]))
    t.branches.create("b")
    t.write(_data([2]))                        # main's snapshot 2, replaced by the fast-forward
    b = t.branches.table("b")
    b.write(_data([10]))
    b.write(_data([11]))
    b.create_tag("release")
    assert t.branches.fast_forward("b").id == 3
    main = cat.get_table("db.t")
    assert sorted(r["id"] for r in main.read().to_pylist()) == [1, 10, 11]
    assert [s.id for s in main.snapshots()] == [1, 2, 3] and main.tags.names() == ["release"]
    main.write(_data([12]))                    # main goes on from there
    assert sorted(r["id"] for r in main.read().to_pylist()) == [1, 10, 11, 12]
    with pytest.raises(LakeformatError, match="main"):
        b.branches.fast_forward("b")


def test_staging_on_a_branch_is_refused_by_name(tmp_path):
    from lakeformat.table import staging
    _, t = _table(tmp_path)
    t.write(_data([1]))
    t.branches.create("b")
    b = t.branches.table("b")
    w = b.new_write("u")
    with w:
        w.write(_data([2]))
        messages = w.prepare_commit()
    with pytest.raises(UnsupportedError, match="main branch only"):
        staging.stage(b, messages, "s1", commit_user="u", identifier=1)


def test_expiring_main_keeps_what_a_branch_reads(tmp_path):
    # fails without the cross-branch liveness: main's expiration deletes the data files and
    # manifests of its snapshot 1, which branch b (created from it) still names
    cat, t = _table(tmp_path, **{"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    t.write(_data([1, 2]))
    t.branches.create("b", from_snapshot=1)
    t.write(_data([3]), overwrite=True)        # snapshot 2 deletes snapshot 1's file; the commit expires 1
    assert [s.id for s in t.snapshots()] == [2]
    assert sorted(r["id"] for r in cat.get_table("db.t$branch_b").read().to_pylist()) == [1, 2]
    # the branch's own expiration keeps what main reads, too
    b = cat.get_table("db.t$branch_b")
    b.write(_data([4]), overwrite=True)
    b.expire_backlog(retain_min=1, retain_max=1)
    assert sorted(r["id"] for r in t.read().to_pylist()) == [3]
    assert sorted(r["id"] for r in b.read().to_pylist()) == [4]


def test_tag_deletion_and_rollback_keep_what_a_branch_reads(tmp_path):
    cat, t = _table(tmp_path)
    t.write(_data([1]))
    t.create_tag("v1")
    t.branches.create("b", from_tag="v1")
    t.write(_data([2]), overwrite=True)
    t.expire_backlog(retain_min=1, retain_max=1)   # snapshot 1 held by tag v1 only
    t.delete_tag("v1")                           # would delete snapshot 1's files
    assert sorted(r["id"] for r in cat.get_table("db.t$branch_b").read().to_pylist()) == [1]
    b = cat.get_table("db.t$branch_b")
    b.write(_data([5]))
    t.branches.create("c", from_snapshot=None)  # from main's latest (2)
    c = cat.get_table("db.t$branch_c")
    b.rollback_to(1)                             # b's snapshot 2 goes; its file only b used
    assert sorted(r["id"] for r in b.read().to_pylist()) == [1]
    assert sorted(r["id"] for r in c.read().to_pylist()) == [2]


def test_orphan_removal_keeps_every_branch_s_files(tmp_path):
    import datetime as dt
    cat, t = _table(tmp_path)
    t.write(_data([1]))
    t.branches.create("b")
    b = cat.get_table("db.t$branch_b")
    b.write(_data([2]))
    result = t.remove_orphan_files(older_than=dt.timedelta(0), allow_deleting_in_flight_files=True)
    assert result.orphans == () or not any("data-" in p or "manifest" in p for p in result.orphans)
    assert sorted(r["id"] for r in b.read().to_pylist()) == [1, 2]
    t.branches.delete("b")
    result = t.remove_orphan_files(older_than=dt.timedelta(0), allow_deleting_in_flight_files=True)
    assert any("data-" in p for p in result.orphans)   # b's own data file went with b
    assert sorted(r["id"] for r in t.read().to_pylist()) == [1]


def test_fallback_by_tag_and_time_and_streams_follow_the_branch_alone(tmp_path):
    cat, t = _table(tmp_path)
    t.write(_data([1], "a"))
    t.branches.create("fb", empty=True)
    fb = cat.get_table("db.t$branch_fb")
    fb.write(_data([2], "b"))
    fb.create_tag("v")
    t.alter(lf_set_option("scan.fallback-branch", "fb"))
    assert _ids(t) == [1, 2]
    with pytest.raises(NotFoundError, match="tag 'v1'"):
        t.read(tag="v1")                          # main has no tag v1 (and neither has fb)
    t.create_tag("v")
    assert _ids(t, tag="v") == [1, 2]             # main's tag v, fb's tag v
    assert _ids(t, as_of=fb.latest_snapshot().time_millis - 1) == [1]   # fb had nothing then
    batches = list(t.stream(max_batches=1, poll_interval=0.01))
    assert [sorted(r["id"] for r in data.to_pylist()) for _, data in batches] == [[1]]
    with pytest.raises(Exception, match="option 'branch'"):
        cat.create_table("db.x", SCHEMA, options={"branch": "b"})


def lf_set_option(key, value):
    from lakeformat.format.schema import SetOption
    return SetOption(key, value)


def test_the_branch_option_opens_that_branch(tmp_path):
    cat, t = _table(tmp_path)
    t.write(_data([1]))
    t.branches.create("b", empty=True)
    cat.get_table("db.t$branch_b").write(_data([2]))
    t.alter(lf_set_option("branch", "b"))            # Paimon's 'branch' option: the table reads branch b
    assert cat.get_table("db.t").branch == "b" and _ids(cat.get_table("db.t")) == [2]
    assert _ids(cat.get_table("db.t$branch_main")) == [1]
    with pytest.raises(LakeformatError, match="names branch"):
        cat.get_table("db.t$branch_b", branch="c")


@pytest.mark.slow   # imports pyspark
def test_spark_plans_refuse_a_fallback_table_by_name(tmp_path):
    from lakeformat.errors import UnsupportedOptionError
    from lakeformat.spark import scan as S
    cat = _fixture_catalog(tmp_path, RT)
    main = cat.get_table(f"{RT}.{RT}")
    with pytest.raises(UnsupportedOptionError, match=r"scan\.fallback-branch='rt'"):
        S.snapshot_units(main, main.latest_snapshot(), None)
    rt = cat.get_table(f"{RT}.{RT}$branch_rt")       # the branch itself has no fallback: planned as usual
    assert len(S.snapshot_units(rt, rt.latest_snapshot(), None)) > 0


def test_spark_table_options_open_a_branch(tmp_path):
    from lakeformat.spark.options import parse
    cat, t = _table(tmp_path)
    t.write(_data([1]))
    t.branches.create("b")
    ref = parse({"table": "db.t$branch_b", "warehouse": str(tmp_path / "wh")}).table
    assert ref.open().branch == "b" and ref.open(schema_id=0).branch == "b"
    ref.open().write(_data([2]))
    assert _ids(t) == [1] and _ids(cat.get_table("db.t$branch_b")) == [1, 2]


def test_planned_splits_carry_the_fallback_branch_and_previews_read_them(tmp_path):
    from lakeformat.table.preview import read_preview
    cat = _fixture_catalog(tmp_path, PT)
    main = cat.get_table(f"{PT}.{PT}")
    splits = main.scan().plan()
    assert [s.branch for s in splits] == [None, "test"]
    assert main.read_splits(splits).equals(main.read())
    assert [s.branch for s in main.scan(fallback=False).plan()] == [None]
    # the CLI's `read` (and the Lakehouse page's preview) show what Table.read shows
    assert read_preview(main, limit=0).rows.equals(main.read())
    assert read_preview(main, limit=0, snapshot_id=1).rows.equals(main.read(snapshot_id=1))
    assert read_preview(main, filter="pt = 2", limit=1).rows.to_pylist() == [{"pt": 2, "value": 210, "value2": None}]


def test_catalog_table_exists_and_drop_table_know_branches(tmp_path):
    cat, t = _table(tmp_path)
    t.branches.create("b", empty=True)
    assert cat.table_exists("db.t$branch_b") and not cat.table_exists("db.t$branch_c")
    with pytest.raises(LakeformatError, match="names a branch"):
        cat.drop_table("db.t$branch_b")
    assert cat.table_exists("db.t")
