"""Airflow plugin for lakeformat tables: a hook building a catalog from a connection, operators
for maintenance without Spark, a snapshot sensor, and a "Lakehouse" page in the Airflow UI.

An installed package, so DAGs, the triggerer and the workers import it like any other;
``plugins/lakeformat_plugin.py`` only registers the plugin with Airflow.
"""
