"""Registers the lakeformat Airflow plugin (lakeformat/pipeline/airflow/plugin.py) from a plugins
folder, for an environment whose lakeformat install does not declare it yet. An installed
``lakeformat[pipeline]`` registers it through its ``airflow.plugins`` entry point (no plugins
folder needed); then this file registers nothing, or Airflow would report the plugin twice."""
from importlib.metadata import entry_points

PLUGIN = "lakeformat.pipeline.airflow.plugin:LakeformatPlugin"

if not any(ep.value == PLUGIN for ep in entry_points(group="airflow.plugins")):
    from lakeformat.pipeline.airflow.plugin import LakeformatPlugin

    __all__ = ["LakeformatPlugin"]
