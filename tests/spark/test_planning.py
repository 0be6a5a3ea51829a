"""The pure parts of the Spark integration, without a JVM: filter translation (checked against
SQL semantics on real rows), packing read units into tasks, stream offsets, option parsing, the
ingest plan and the landing generator."""
from __future__ import annotations

import datetime as dt
import decimal
import hashlib
import os

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark.sql import datasource as D

import lakeformat as lf
from lakeformat.format import predicate as P
from lakeformat.pipeline import landing
from lakeformat.errors import OptionError
from lakeformat.format.manifest import DataFileMeta
from lakeformat.read.scan import Split
from lakeformat.format.schema import new_schema
from lakeformat.spark import filters, options, scan, stream
from lakeformat.pipeline.config import PipelineConfigError, load_config
from lakeformat.pipeline.units import ingest_identity, IngestUnit

from tests.project import CONFIG
SCHEMA = new_schema(pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64()),
                               ("day", pa.date32()), ("ts", pa.timestamp("ms"))]))
ROWS = pa.table({"id": [1, 2, None, 4, 5], "name": ["a", None, "c", "dd", "e"],
                 "score": [1.5, 2.5, None, float("nan"), 0.0],
                 "day": [dt.date(2024, 1, d) for d in (1, 2, 3, 4, 5)],
                 "ts": [dt.datetime(2024, 1, 1, h) for h in (1, 2, 3, 4, 5)]})


PRICES = new_schema(pa.schema([("price", pa.decimal128(10, 2))]))
PRICE_ROWS = pa.table({"price": pa.array([decimal.Decimal("1.50"), decimal.Decimal("2.25"), None],
                                         pa.decimal128(10, 2))})


def matching_ids(p) -> list:
    return sorted(x for x in ROWS.filter(P.to_arrow(p)).column("id").to_pylist() if x is not None)


@pytest.mark.parametrize("f, expected", [
    (D.EqualTo(("id",), 2), [2]),
    (D.Not(D.EqualTo(("id",), 2)), [1, 4, 5]),                 # NULL id never matches
    (D.Not(D.EqualNullSafe(("id",), 2)), [1, 4, 5]),           # ... but NOT (x <=> 2) is true for NULL
    (D.EqualNullSafe(("name",), None), [2]),
    (D.In(("id",), (1, 4, None)), [1, 4]),
    (D.Not(D.In(("id",), (1, 4))), [2, 5]),
    (D.GreaterThanOrEqual(("day",), dt.date(2024, 1, 4)), [4, 5]),
    (D.LessThan(("ts",), dt.datetime(2024, 1, 1, 3)), [1, 2]),
    (D.IsNotNull(("name",)), [1, 4, 5]),
    (D.Not(D.IsNull(("id",))), [1, 2, 4, 5]),
])
def test_exact_filters_give_sqls_answer(f, expected):
    t = filters.translate(f, SCHEMA)
    assert t is not None and t.exact
    assert matching_ids(t.predicate) == expected
    # NOT (x <=> 2) keeps the NULL id row too
    if isinstance(f, D.Not) and isinstance(f.child, D.EqualNullSafe):
        assert ROWS.filter(P.to_arrow(t.predicate)).num_rows == 4


def test_filters_spark_keeps():
    starts = D.StringStartsWith(("name",), "d")
    nested = D.EqualTo(("a", "b"), 1)
    wrong_type = D.EqualTo(("id",), "1")
    not_in_null = D.Not(D.In(("id",), (1, None)))
    float_cmp = D.GreaterThan(("score",), 1.0)
    assert filters.translate(D.EqualTo(("price",), 1), PRICES) is None
    exact = filters.translate(D.GreaterThan(("price",), decimal.Decimal("1.6")), PRICES)
    assert exact.exact and PRICE_ROWS.filter(P.to_arrow(exact.predicate)).num_rows == 1
    pred, rest = filters.push([starts, nested, wrong_type, not_in_null, float_cmp, D.EqualTo(("id",), 1)], SCHEMA)
    assert rest == [starts, nested, wrong_type, not_in_null, float_cmp]   # the float one is pushed, and kept
    assert pred == P.And((P.Compare("score", ">", 1.0), P.Compare("id", "==", 1)))
    assert filters.push([starts], SCHEMA) == (None, [starts])


def unit(name: str, size: int) -> scan.ReadUnit:
    f = DataFileMeta(name, size, 1)
    return scan.ReadUnit(scan.FILE, Split(1, (), b"", 0, (f,)), (f,))


def test_packing_fills_every_core_and_keeps_bins_near_the_target():
    units = [unit(f"f{i}", s) for i, s in enumerate([100, 10, 10, 80, 30, 30, 5])]
    bins = scan.pack(units, target=1000, open_cost=4, parallelism=2)
    assert len(bins) == 2 and sorted(u.files[0].file_name for b in bins for u in b) == sorted(f"f{i}" for i in range(7))
    loads = sorted(sum(u.size for u in b) for b in bins)
    assert loads == [130, 135]
    big = scan.pack(units, target=100, open_cost=4, parallelism=1)
    assert len(big) == 3 and all(sum(max(u.size, 4) for u in b) <= 110 for b in big)
    assert scan.pack([], 100, 4, 2) == []
    assert len(scan.pack(units[:1], 100, 4, 8)) == 1          # one unit: one task, however many cores


def test_stream_offsets():
    assert stream.start_offset(None, "latest-full", None, None) == {"snapshot": 0}
    assert stream.start_offset(7, "latest-full", None, None) == {"snapshot": 7, "full": True}
    assert stream.start_offset(7, "latest", None, None) == {"snapshot": 7}
    assert stream.start_offset(7, "latest-full", 3, None) == {"snapshot": 3}
    assert stream.start_offset(7, "latest-full", 3, 5) == {"snapshot": 4}          # the consumer wins
    full = {"snapshot": 7, "full": True}
    assert stream.next_offset(full, 7) == {"snapshot": 7}      # the whole snapshot is a batch of its own
    assert stream.next_offset({"snapshot": 7}, 7) == {"snapshot": 7}
    assert stream.next_offset({"snapshot": 7}, 9) == {"snapshot": 9}
    assert stream.next_snapshot_needed(full) == 7 and stream.next_snapshot_needed({"snapshot": 7}) == 8


def test_options():
    o = options.parse({"Warehouse": "/wh", "TABLE": "db.t", "snapshot-id": "3", "write-only": "true"})
    assert o.table.identifier == "db.t" and o.read.snapshot_id == 3
    assert dict(o.table.table_options) == {"write-only": "true"}
    with pytest.raises(OptionError, match="'snapshot_id' \\(did you mean 'snapshot-id'\\?\\)"):
        options.parse({"warehouse": "/wh", "table": "db.t", "snapshot_id": "3"})
    with pytest.raises(OptionError, match="contradict"):
        options.parse({"warehouse": "/wh", "table": "db.t", "snapshot-id": "3", "tag": "x"})
    with pytest.raises(OptionError, match="needs 'start-snapshot'"):
        options.parse({"warehouse": "/wh", "table": "db.t", "end-snapshot": "3"})
    with pytest.raises(OptionError, match="fixed when the table is created"):
        options.parse({"warehouse": "/wh", "table": "db.t", "bucket": "8"})
    with pytest.raises(OptionError, match="needs option 'warehouse'"):
        options.parse({"table": "db.t"})
    with pytest.raises(lf.InvalidNameError):
        options.parse({"warehouse": "/wh", "table": "db.t", "consumer-id": "../x"})
    assert options.parse({"path": "/wh/db.db/t", "overwrite-partition": "dt=1, h=2"}).write.static_partition == \
        (("dt", "1"), ("h", "2"))
    assert options.parse_timestamp_millis("1700000000000") == 1700000000000


def test_ingest_units_from_the_config():
    cfg = load_config(str(CONFIG))
    ub = cfg.table("user_behavior")
    assert ub.landing_dir("/land", "2024-06-01") == "/land/user_behavior/dt=2024-06-01"
    assert ub.path_columns("2024-06-01") == {"dt": "2024-06-01"}
    user, ident = ingest_identity(ub, IngestUnit("2024-06-01"))
    assert user == "lakeformat-ingest-user_behavior"
    assert ident != ingest_identity(ub, IngestUnit("2024-06-02"))[1] \
        != ingest_identity(ub, IngestUnit("2024-06-01", 5))[1]
    assert cfg.table("demo.item_price").name == "item_price"
    with pytest.raises(PipelineConfigError, match="not in"):
        cfg.table("nope")


def test_landing_is_deterministic_and_bad_days_break_the_rules(tmp_path):
    def run(d):
        assert landing.main(["--landing", str(d), "--start", "2024-06-01", "--end", "2024-06-02", "--seed", "3",
                             "--rows-per-day", "400", "--bad-day", "2024-06-02",
                             "--config", str(CONFIG)]) == 0
        return {p.relative_to(d).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in d.rglob("*.*")}
    first = run(tmp_path / "a")
    assert first == run(tmp_path / "b") and len(first) == 4
    import pyarrow.json as pj
    good = pj.read_json(tmp_path / "a" / "user_behavior" / "dt=2024-06-01" / "part-0.jsonl")
    bad = pj.read_json(tmp_path / "a" / "user_behavior" / "dt=2024-06-02" / "part-0.jsonl")
    assert "dt" not in good.column_names and good.num_rows == 400
    assert pc.min(good.column("price")).as_py() >= 0
    assert set(good.column("behavior").to_pylist()) <= {"pv", "cart", "fav", "buy"}
    assert pc.min(bad.column("price")).as_py() < 0 and "click" in bad.column("behavior").to_pylist()
    with pytest.raises(SystemExit):   # argparse: --end before --start
        landing.main(["--start", "2024-06-02", "--end", "2024-06-01", "--landing", str(tmp_path)])


def test_a_failed_commit_deletes_only_what_no_snapshot_took(catalog):
    """After a commit that failed half-way, the files a snapshot of this job took stay."""
    import time

    from lakeformat.spark.sink import delete_uncommitted
    t = catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("dt", pa.string())]), partition_keys=["dt"])
    since = int(time.time() * 1000) - 1000
    w = t.new_write("job")
    w.write(pa.table({"id": [1, 2], "dt": ["a", "b"]}))
    messages = w.prepare_commit()
    committed, lost = [m for m in messages if t.partition_values(m.partition) == ("a",)], \
        [m for m in messages if t.partition_values(m.partition) == ("b",)]
    t.new_commit("job").commit(committed, 1)                 # made before the failure
    delete_uncommitted(t, messages, "job", since)
    assert t.read().to_pylist() == [{"id": 1, "dt": "a"}]  # still readable
    path = os.path.join(t.bucket_dir_of(lost[0].partition, 0), lost[0].new_files[0].file_name)
    assert not os.path.exists(path)


def test_reader_planning_prunes_partitions_and_spreads_files(catalog):
    """What the source's planning hands Spark, in this process: one task per file read when
    splits are tiny, and no task at all for a partition a filter rules out."""
    from pyspark.sql.types import StructType

    from lakeformat.pipeline.demo_data import SCHEMA, user_behavior
    from lakeformat.spark.source import LakeformatDataSource
    t = catalog.create_table("db.ub", SCHEMA, partition_keys=["dt"], options={"bucket": "2", "bucket-key": "user_id"})
    rows = user_behavior(2000, ["2024-06-01", "2024-06-02"], seed=3)
    t.write(rows)

    def plan(*pushed, **opts):
        source = LakeformatDataSource({"warehouse": catalog.warehouse, "table": "db.ub", **opts})
        reader = source.reader(StructType.fromJson(source.schema().jsonValue()))
        rest = list(reader.pushFilters(list(pushed)))
        return reader.partitions(), rest

    tiny = {"source.split.target-size": "1"}
    parts, _ = plan(**tiny)
    assert len(parts) == 4 and all(len(p.value) == 1 for p in parts)
    parts, rest = plan(D.EqualTo(("dt",), "2024-06-02"), D.StringEndsWith(("behavior",), "v"), **tiny)
    assert len(parts) == 2 and {u.split.partition for p in parts for u in p.value} == {("2024-06-02",)}
    assert [type(f) for f in rest] == [D.StringEndsWith]
    parts, _ = plan()
    assert len(parts) == min(4, os.cpu_count() or 1)   # small files: spread over the cores, not one task
