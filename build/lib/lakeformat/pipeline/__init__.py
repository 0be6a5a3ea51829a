"""The lakehouse pipeline around the table library: config, landing data, Spark ingest jobs,
write-audit-publish with a Great Expectations gate, Airflow DAGs and plugin, and the demo.
Install the ``pipeline`` extra for its dependencies; nothing in the library imports this package."""
