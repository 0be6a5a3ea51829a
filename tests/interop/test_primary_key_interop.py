"""Primary-key tables across implementations: pypaimon and pypaimon-rust read what lakeformat
merged and compacted (deletes included); lakeformat reads and upserts into pypaimon's tables."""
import pyarrow as pa
import pytest

from tests.interop.helpers import Oracle, assert_same_rows, check_readers

SCHEMA = pa.schema([pa.field("dt", pa.string(), False), pa.field("user_id", pa.int64(), False),
                    ("behavior", pa.string()), ("price", pa.float64()), ("op", pa.string())])
KEYS = ["dt", "user_id"]


def rows(ids, dt="a", tag="v", op="+I"):
    ids = list(ids)
    return pa.table({"dt": [dt] * len(ids), "user_id": ids, "behavior": [f"{tag}{i}" for i in ids],
                     "price": [None if i % 7 == 0 else i * 0.5 for i in ids], "op": [op] * len(ids)}, schema=SCHEMA)


class Model:
    """The expected table: the newest version per key, deletes applied."""

    def __init__(self):
        self.rows: dict = {}

    def apply(self, t: pa.Table):
        for r in t.to_pylist():
            key = (r["dt"], r["user_id"])
            if r["op"] in ("-D", "-U"):
                self.rows.pop(key, None)
            else:
                self.rows[key] = r
        return t

    def table(self) -> pa.Table:
        return pa.Table.from_pylist(list(self.rows.values()), schema=SCHEMA)


@pytest.fixture
def oracle(tmp_path):
    return Oracle(tmp_path / "oracle")


OPTIONS = {"bucket": "2", "rowkind.field": "op"}


def test_lakeformat_primary_key_tables_read_by_oracles(catalog, oracle):
    wh = catalog.warehouse
    model = Model()
    t = catalog.create_table("db.pk", SCHEMA, partition_keys=["dt"], primary_keys=KEYS,
                             options={**OPTIONS, "write-only": "true"})
    t.write(model.apply(pa.concat_tables([rows(range(0, 40)), rows(range(0, 20), "b")])))
    t.write(model.apply(rows(range(20, 60), tag="second")))
    t.write(model.apply(pa.concat_tables([rows([1, 2, 25], op="-D"), rows([3], "b", op="-D")])))
    before = oracle.read(wh, "db.pk")                  # several level-0 runs per bucket
    res = oracle.run()
    check_readers(res, before, model.table(), KEYS, what="before compaction")
    t.compact(full=True)
    t.write(model.apply(rows(range(55, 70), tag="third")))
    after = oracle.read(wh, "db.pk")                   # a max-level run plus a new level-0 run
    res = oracle.run()
    check_readers(res, after, model.table(), KEYS, what="after compaction")
    assert_same_rows(t.read(), model.table(), KEYS, "lakeformat itself")


def test_pypaimon_primary_key_tables_read_and_upserted_by_lakeformat(catalog, oracle):
    wh = catalog.warehouse
    model = Model()
    oracle.create(wh, "db.theirs", SCHEMA, ["dt"], OPTIONS, primary_keys=KEYS)
    oracle.write(wh, "db.theirs", model.apply(rows(range(0, 30))))
    oracle.write(wh, "db.theirs", model.apply(pa.concat_tables([rows(range(10, 40), tag="py2"), rows([5], op="-D")])))
    oracle.run().check_all()
    t = catalog.get_table("db.theirs")
    assert t.primary_keys == KEYS
    assert_same_rows(t.read(), model.table(), KEYS, "lakeformat reading pypaimon's table")
    t.write(model.apply(pa.concat_tables([rows(range(35, 50), tag="lf"), rows([6, 7], op="-D")])))
    t.compact(full=True)
    t.write(model.apply(rows([8], tag="last")))
    assert_same_rows(t.read(), model.table(), KEYS, "lakeformat after its upserts")
    i = oracle.read(wh, "db.theirs")
    check_readers(oracle.run(), i, model.table(), KEYS, what="oracles after lakeformat's upserts")
