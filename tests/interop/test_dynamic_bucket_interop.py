"""Dynamic bucket mode across writers: pypaimon and lakeformat write into the same table in turn
and agree, through Paimon's HASH index, on where each key lives (no key in two buckets)."""
from functools import partial

import pyarrow as pa

from tests.interop.helpers import Oracle, assert_same_rows, check_readers
from tests.conftest import id_rows

SCHEMA = pa.schema([pa.field("dt", pa.string(), False), pa.field("id", pa.int64(), False), ("v", pa.string())])
KEYS = ["dt", "id"]


rows = partial(id_rows, SCHEMA, dt="a", v="v{i}")


def test_lakeformat_and_pypaimon_share_a_dynamic_bucket_table(catalog, tmp_path):
    wh, oracle, model = catalog.warehouse, Oracle(tmp_path / "oracle"), {}

    def apply(t):
        model.update({(r["dt"], r["id"]): r for r in t.to_pylist()})
        return t

    options = {"dynamic-bucket.target-row-num": "50"}
    t = catalog.create_table("db.lf", SCHEMA, partition_keys=["dt"], primary_keys=KEYS, options=options)
    t.write(apply(pa.concat_tables([rows(range(120)), rows(range(20), dt="b")])))
    oracle.write(wh, "db.lf", apply(rows(range(0, 200, 4), v="py{i}")))     # updates and new keys
    oracle.run().check_all()
    t.write(apply(rows(range(100, 260, 3), v="lf2{i}")))
    expected = pa.Table.from_pylist(list(model.values()), schema=SCHEMA)
    assert_same_rows(t.read(), expected, KEYS, "lakeformat")
    i = oracle.read(wh, "db.lf")
    b = oracle.buckets(wh, "db.lf")
    res = oracle.run()
    check_readers(res, i, expected, KEYS)
    placed = res.bucket_table(b).to_pylist()
    assert len({(r["dt"], r["id"]) for r in placed}) == len(placed), "a key lives in two buckets"

    # pypaimon's own table, continued by lakeformat
    oracle.create(wh, "db.py", SCHEMA, ["dt"], options, primary_keys=KEYS)
    oracle.write(wh, "db.py", rows(range(80)))
    oracle.run().check_all()
    theirs = catalog.get_table("db.py")
    theirs.write(rows(range(60, 130), v="lf{i}"))
    got = {r["id"]: r["v"] for r in theirs.read().to_pylist()}
    assert got == {i: ("lf" if i >= 60 else "v") + str(i) for i in range(130)}
    b = oracle.buckets(wh, "db.py")
    placed = oracle.run().bucket_table(b).to_pylist()
    assert sorted(r["id"] for r in placed) == list(range(130))
