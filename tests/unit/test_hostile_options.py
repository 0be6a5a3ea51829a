"""Options accepted at create and alter must leave a table that can be written and expires:
every option's range and every column it names are checked, the option's name in the message."""
import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.format import options as O
from tests.conftest import EVENTS, events


@pytest.mark.parametrize("key,value", [
    ("num-sorted-run.compaction-trigger", "0"), ("commit.max-retries", "-1"), ("snapshot.expire.limit", "0"),
    ("snapshot.num-retained.max", "0"), ("target-file-size", "0 b"), ("read.batch-size", "0"),
    ("num-levels", "1"), ("commit.timeout", "0 s"), ("compaction.min.file-num", "-3"),
    ("manifest.merge-min-count", "0"), ("write-buffer-size", "0"), ("partition.expiration-max-num", "0"),
])
def test_out_of_range_options_are_refused_at_create_and_alter(catalog, key, value):
    with pytest.raises(lf.OptionError, match=rf"option '{key}'.*out of range"):
        catalog.create_table("db.t", EVENTS, options={key: value})
    assert not catalog.table_exists("db.t")
    t = catalog.create_table("db.t", EVENTS)
    with pytest.raises(lf.OptionError, match=rf"option '{key}'"):
        t.alter(lf.SetOption(key, value))
    assert t.schema_manager.list_ids() == [0]


@pytest.mark.parametrize("key,value", [("rowkind.field", "nope"), ("sequence.field", "price,missing"),
                                       ("fields.ghost.aggregate-function", "sum"),
                                       ("fields.price.sequence-group", "ghost")])
def test_options_naming_missing_columns_are_refused(catalog, key, value):
    with pytest.raises(lf.OptionError, match=rf"option '{key}'.*not a column"):
        catalog.create_table("db.t", EVENTS, options={key: value})
    t = catalog.create_table("db.t", EVENTS)
    with pytest.raises(lf.OptionError, match=rf"option '{key}'"):
        t.alter(lf.SetOption(key, value))


def test_dropping_a_column_an_option_names_is_refused(catalog):
    t = catalog.create_table("db.t", EVENTS, options={"rowkind.field": "behavior"})
    with pytest.raises(lf.OptionError, match=r"rowkind.field"):
        t.alter(lf.DropColumn("behavior"))
    t.alter(lf.RenameColumn("price", "amount"))
    t.write(events(3).rename_columns(["user_id", "behavior", "amount", "dt"]).set_column(
        1, "behavior", pa.array(["+I"] * 3)))
    assert t.read().num_rows == 3


def test_in_range_values_are_accepted(catalog):
    t = catalog.create_table("db.t", EVENTS, options={"num-sorted-run.compaction-trigger": "1",
                                                      "commit.max-retries": "0", "snapshot.expire.limit": "1"})
    t.write(events(2))
    assert t.read().num_rows == 2


def test_every_bound_names_a_registered_option():
    keys = {o.key for o in O.registry()}
    assert set(O.BOUNDS) <= keys and set(O.COLUMN_REFERENCES) <= keys
