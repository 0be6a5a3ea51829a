"""lakeformat as an Airflow provider (the ``apache_airflow_provider`` entry point in
pyproject.toml): the ``lakeformat`` connection type, with its form in the UI's words (the host
is the warehouse URI, login and password the object store's keys, extra the catalog options).

Airflow reads this without importing the hook, so it stays a plain dict. The plugin (the
Lakehouse page) registers through its own entry point, ``airflow.plugins``: installing
``lakeformat[pipeline]`` into an Airflow is all it takes, no ``plugins/`` folder.
"""
from __future__ import annotations


def get_provider_info() -> dict:
    return {
        "package-name": "lakeformat",
        "name": "lakeformat",
        "description": "Apache Paimon tables in Python: a connection type, hooks, operators, sensors "
                       "and the Lakehouse page.",
        "connection-types": [{
            "connection-type": "lakeformat",
            "hook-class-name": "lakeformat.pipeline.airflow.hooks.LakeformatHook",
            "hook-name": "Lakeformat",
            "ui-field-behaviour": {
                "hidden-fields": ["schema", "port"],
                "relabeling": {"host": "Warehouse URI", "login": "S3 access key", "password": "S3 secret key",
                               "extra": "Catalog options (JSON)"},
                "placeholders": {"host": "s3://bucket/warehouse or /data/warehouse",
                                 "login": "only for an s3:// warehouse",
                                 "extra": '{"s3.endpoint": "http://minio:9000", "s3.region": "us-east-1"}'},
            },
        }],
    }
