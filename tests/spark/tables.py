"""Tables the Spark tests read in more than one way."""
import pyarrow as pa

import lakeformat as lf


def deletion_vector_table(catalog: lf.Catalog, name: str = "db.dv") -> lf.Table:
    """A primary-key table with deletion vectors: 3,000 rows compacted into small row groups
    (the vectors' positions cross them), then three updates and two deletes that mark old rows."""
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
    t = catalog.create_table(name, schema, primary_keys=["id"],
                             options={"bucket": "2", "deletion-vectors.enabled": "true",
                                      "parquet.block.size": "4096", "write-buffer-size": "256 kb"})
    t.write(pa.table({"id": list(range(3000)), "v": [f"a{i}" for i in range(3000)]}, schema=schema))
    t.compact(full=True)
    t.write(pa.table({"id": [2, 1500, 2999], "v": ["B", "C", "D"]}, schema=schema))   # old rows marked
    t.delete(pa.table({"id": pa.array([7, 2000], pa.int64())}))
    t = catalog.get_table(name)
    assert t.latest_snapshot().index_manifest, "the writes marked old rows in deletion vectors"
    return t
