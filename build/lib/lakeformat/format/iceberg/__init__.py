"""Apache Iceberg's view of a Paimon table (Paimon's Iceberg compatibility,
``metadata.iceberg.storage``): schemas with the same field ids, single-value bounds, Avro
manifests and manifest lists, table metadata JSON, and the plan of each published snapshot.
Pure encodings and decisions; the IO is in ``lakeformat.io.iceberg``."""
