"""ORC and Avro data files written by lakeformat are read by pypaimon and pypaimon-rust (with Avro
manifests: neither reads ORC manifests)."""
import pytest

from tests.interop.helpers import Oracle, check_readers
from tests.unit.test_file_formats import SCHEMA, data


@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_oracles_read_our_orc_and_avro_data_files(catalog, tmp_path, fmt):
    schema = SCHEMA.remove(SCHEMA.get_field_index("ltz"))
    t = catalog.create_table("db.t", schema, partition_keys=["dt"], options={"file.format": fmt})
    rows = data(50).drop_columns(["ltz"])
    t.write(rows)
    t.write(data(30, start=50, dt_="b").drop_columns(["ltz"]))
    oracle = Oracle(tmp_path / "oracle")
    i = oracle.read(catalog.warehouse, "db.t")
    check_readers(oracle.run(), i, t.read(), "id")
    assert t.read().num_rows == 80


@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_lakeformat_reads_pypaimons_orc_and_avro_data_files(catalog, tmp_path, fmt):
    schema = SCHEMA.remove(SCHEMA.get_field_index("ltz"))
    rows = data(40).drop_columns(["ltz"])
    oracle = Oracle(tmp_path / "oracle")
    oracle.create(catalog.warehouse, "db.theirs", schema, ["dt"], {"file.format": fmt})
    oracle.write(catalog.warehouse, "db.theirs", rows)
    oracle.run().check_all()
    t = catalog.get_table("db.theirs")
    assert {f["file_name"].rsplit(".", 1)[1] for f in t.files()} == {fmt}
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == sorted(rows.to_pylist(), key=lambda r: r["id"])
