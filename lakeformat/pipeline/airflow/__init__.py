"""Airflow plugin for lakeformat tables: a hook building a catalog from a connection, operators
for maintenance without Spark, a snapshot sensor, and a "Lakehouse" page in the Airflow UI.

Airflow puts ``plugins/`` on ``sys.path``, so DAGs import ``lakeformat.pipeline.airflow.operators``.
"""
