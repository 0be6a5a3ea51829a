"""The SQL catalog's reads of tables on object stores: lakeformat's own reader, in Spark's workers.

Spark's Parquet reader would need Hadoop's S3 connector (hadoop-aws and the AWS SDK), which
PySpark does not ship; lakeformat reads S3 with pyarrow's client. So for a table on an object
store the planner answers, instead of files, the options of a read through the ``lakeformat``
Python data source (:mod:`lakeformat.spark.source`) at the snapshot the catalog pinned; the
jar's ``SourceScan`` adds the catalog's storage options, which never appear in an answer.
"""
from __future__ import annotations

from typing import Optional

from lakeformat.spark import source
from lakeformat.spark.native_read import native_available


def source_answer(t, identifier: str, snapshot_id: int) -> Optional[dict]:
    """The planner's answer for a table Spark's Parquet reader cannot reach, else None (pure)."""
    if native_available(t) is None:
        return None
    return {"files": [], "vectors": "",
            "source": {"format": source.NAME, "table": identifier, "snapshot-id": str(snapshot_id)}}
