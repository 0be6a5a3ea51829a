"""The two independent Iceberg readers the tests compare lakeformat with: PyIceberg
(``StaticTable.from_metadata``) and DuckDB's ``iceberg_scan``, whose extension comes from PyPI
(``duckdb-extension-iceberg``) and is loaded from that package's files, never downloaded."""
from __future__ import annotations

import glob
import os

import duckdb
import duckdb_extension_avro
import duckdb_extension_iceberg
import pyarrow as pa
from pyiceberg.table import StaticTable

from lakeformat.maintenance.iceberg import iceberg_files


def metadata_path(table) -> str:
    files = iceberg_files(table.ctx)
    return files.version_path(files.current_version())


def pyiceberg_rows(table, snapshot_id=None) -> list[dict]:
    t = StaticTable.from_metadata(metadata_path(table))
    return _sorted(t.scan(snapshot_id=snapshot_id).to_arrow())


def pyiceberg_snapshots(table) -> list[int]:
    return [s.snapshot_id for s in StaticTable.from_metadata(metadata_path(table)).snapshots()]


def _extension(module) -> str:
    found = glob.glob(os.path.join(os.path.dirname(module.__file__), "extensions", "*", "*.duckdb_extension"))
    assert len(found) == 1, found
    return found[0]


_CONNECTION = []


def duckdb_connection():
    """One in-memory DuckDB with the two extensions loaded from their packages (not downloaded)."""
    if not _CONNECTION:
        con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
        for module in (duckdb_extension_avro, duckdb_extension_iceberg):
            con.execute(f"LOAD '{_extension(module)}'")
        _CONNECTION.append(con)
    return _CONNECTION[0]


def duckdb_rows(table, snapshot_id=None, location=None) -> list[dict]:
    """Rows DuckDB reads: by the metadata file, or by ``location`` (a table directory, which
    DuckDB resolves through ``version-hint.text``)."""
    where = location or metadata_path(table)
    travel = "" if snapshot_id is None else f", snapshot_from_id={int(snapshot_id)}"
    return _sorted(duckdb_connection().execute(f"SELECT * FROM iceberg_scan('{where}'{travel})").arrow().read_all())


def lakeformat_rows(table, snapshot_id=None) -> list[dict]:
    return _sorted(table.read(snapshot_id=snapshot_id))


def _sorted(data: pa.Table) -> list[dict]:
    return _sorted_dicts(data.to_pylist())


def _sorted_dicts(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: [(k, v is None, str(v)) for k, v in sorted(r.items())])


def assert_same_everywhere(table) -> None:
    """At every Iceberg snapshot (one per retained Paimon snapshot), PyIceberg and DuckDB return
    exactly what lakeformat returns at that snapshot, both in the snapshot's own schema;
    columns are matched by field id."""
    retained = [s.id for s in table.snapshots()]
    assert pyiceberg_snapshots(table) == retained
    st = StaticTable.from_metadata(metadata_path(table))
    for sid in retained:
        current = {f.name: f.id for f in table.schema_manager.get(table.snapshot(sid).schema_id).fields}
        old = {f.name: f.field_id for f in st.schemas()[st.snapshot_by_id(sid).schema_id].fields}
        both = set(current.values()) & set(old.values())

        def by_id(rows, ids):
            return _sorted_dicts([{ids[k]: v for k, v in r.items() if ids[k] in both} for r in rows])  # noqa: B023
        expected = by_id(lakeformat_rows(table, sid), current)
        assert by_id(pyiceberg_rows(table, sid), old) == expected, f"PyIceberg at snapshot {sid}"
        assert by_id(duckdb_rows(table, sid), old) == expected, f"DuckDB at snapshot {sid}"
