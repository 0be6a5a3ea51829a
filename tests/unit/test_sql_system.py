"""The pure parts of the Spark catalog's procedures and system tables (lakeformat.spark.sql_system):
system-table names, rows as the jar takes them, Java's duration text; no Spark here."""
from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from lakeformat.errors import UnsupportedError
from lakeformat.spark.sql_system import PROCEDURES, arrow_answer, java_duration, procedure, split_system_name


def test_system_table_names_and_branches():
    assert split_system_name("t") is None
    assert split_system_name("t$branch_b") is None                 # a branch: the catalog loads it as a table
    assert split_system_name("t$snapshots") == ("t", "snapshots")
    assert split_system_name("t$branch_b$files") == ("t$branch_b", "files")
    with pytest.raises(UnsupportedError, match="t\\$<name>"):
        split_system_name("t$a$b$c")


@pytest.mark.parametrize("d,text", [(dt.timedelta(days=1), "PT24H"),
                                    (dt.timedelta(hours=1, minutes=2, seconds=3), "PT1H2M3S"),
                                    (dt.timedelta(minutes=30), "PT30M"), (dt.timedelta(0), "PT0S"),
                                    (dt.timedelta(milliseconds=1500), "PT1.5S")])
def test_durations_print_as_java_does(d, text):
    assert java_duration(d) == text


def test_arrow_rows_as_the_jar_takes_them():
    t = pa.table({"id": pa.array([1, None], pa.int64()), "n": pa.array([2, 3], pa.int32()),
                  "s": ["a", None], "at": pa.array([dt.datetime(1970, 1, 1, 0, 0, 1), None], pa.timestamp("ms")),
                  "kept": pa.array([dt.timedelta(hours=2), None], pa.duration("ms")), "b": [True, False]})
    answer = arrow_answer(t)
    assert [(f["name"], f["type"]) for f in answer["schema"]["fields"]] == [
        ("id", "long"), ("n", "integer"), ("s", "string"), ("at", "timestamp_ntz"), ("kept", "string"),
        ("b", "boolean")]
    assert answer["rows"] == [[1, 2, "a", 1_000_000, "PT2H", True], [None, 3, None, None, None, False]]
    with pytest.raises(UnsupportedError, match="no Spark type"):
        arrow_answer(pa.table({"x": pa.array([1.5])}))


def test_procedures_are_named_as_paimons():
    assert sorted(PROCEDURES) == ["compact", "create_branch", "create_tag", "delete_branch", "delete_tag",
                                  "expire_snapshots", "fast_forward", "remove_orphan_files", "rollback"]
    assert [p["name"] for p in procedure("expire_snapshots").spec()["parameters"]] == [
        "table", "retain_max", "retain_min", "older_than", "max_deletes", "options"]
    with pytest.raises(UnsupportedError, match=r"no procedure sys\.migrate_table"):
        procedure("migrate_table")
