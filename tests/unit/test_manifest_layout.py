"""Sorted manifests: a partition-filtered read returns exactly the matching entries, whatever
the partitions and the filter, while decoding only the blocks it needs."""
import io

import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lakeformat as lf
from lakeformat.format.binary_row import serialize_row
from lakeformat.io.fileio import FileIO
from lakeformat.format.manifest import ADD, DELETE, SORTED_BY, DataFileMeta, ManifestEntry
from lakeformat.io.manifests import ManifestFile
from lakeformat.format.partition import PartitionFilter
from lakeformat.format.types import DataField, type_from_json

FIELDS = [DataField(0, "a", type_from_json("INT")), DataField(1, "b", type_from_json("STRING"))]
TYPES = [f.type for f in FIELDS]

partitions = st.lists(st.tuples(st.one_of(st.none(), st.integers(-5, 5)),
                                st.one_of(st.none(), st.sampled_from(["x", "y", "z"]))), min_size=1, max_size=40)
leaf = st.one_of(
    st.builds(lambda v: lf.col("a") == v, st.integers(-6, 6)),
    st.builds(lambda v: lf.col("a") < v, st.integers(-6, 6)),
    st.builds(lambda v: lf.col("a") >= v, st.integers(-6, 6)),
    st.builds(lambda v: lf.col("b") == v, st.sampled_from(["x", "y", "w"])),
    st.builds(lambda v: lf.col("b") > v, st.sampled_from(["x", "y"])),
    st.builds(lambda vs: lf.col("a").isin(vs), st.lists(st.integers(-6, 6), min_size=1, max_size=3)),
    st.just(lf.col("a").is_null()), st.just(lf.col("b").is_not_null()),
)
predicates = st.recursive(leaf, lambda inner: st.one_of(st.builds(lambda x, y: x & y, inner, inner),
                                                          st.builds(lambda x, y: x | y, inner, inner)), max_leaves=4)


def entries_for(parts, copies):
    out = []
    for i, values in enumerate(parts):
        p = serialize_row(list(values), TYPES)
        for c in range(copies):
            out.append(ManifestEntry(ADD, p, 0, -1, DataFileMeta(f"f{i}-{c}", 1, 1)))
    return out


@pytest.mark.slow   # seconds, not milliseconds: make test runs it, make check does not
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=partitions, copies=st.sampled_from([1, 3, 70]), pred=predicates)
def test_filtered_read_equals_brute_force(tmp_path, parts, copies, pred):
    mfile = ManifestFile(FileIO.for_uri(str(tmp_path)), str(tmp_path), TYPES, 0)
    metas = mfile.write(entries_for(parts, copies))
    keep = PartitionFilter(pred, FIELDS)
    for m in metas:
        everything = mfile.read(m.file_name)
        expected = [e.file.file_name for e in everything if keep.matches(e.partition)]
        got = [e.file.file_name for e in mfile.read(m.file_name, PartitionFilter(pred, FIELDS))]
        assert sorted(got) == sorted(expected)


def test_entries_are_sorted_and_blocks_follow_partitions(tmp_path):
    mfile = ManifestFile(FileIO.for_uri(str(tmp_path)), str(tmp_path), TYPES, 0)
    parts = [(3, "x"), (None, "y"), (1, None), (1, "a")]
    (m,) = mfile.write(entries_for(parts, 100))
    with open(tmp_path / "manifest" / m.file_name, "rb") as f:
        reader = fastavro.block_reader(io.BytesIO(f.read()))
        assert reader.metadata[SORTED_BY] == "partition"
        blocks = [[r["_PARTITION"] for r in b] for b in reader]
    assert [len(set(b)) for b in blocks] == [1, 1, 1, 1]
    order = [tuple(PartitionFilter(lf.col("a") == 0, FIELDS).values(b[0])) for b in blocks]
    assert order == [(None, "y"), (1, None), (1, "a"), (3, "x")]


def test_add_then_delete_of_a_file_keep_their_order(tmp_path):
    mfile = ManifestFile(FileIO.for_uri(str(tmp_path)), str(tmp_path), TYPES, 0)
    p1, p2 = serialize_row([2, "x"], TYPES), serialize_row([1, "x"], TYPES)
    es = [ManifestEntry(ADD, p1, 0, -1, DataFileMeta("f", 1, 1)),
          ManifestEntry(ADD, p2, 0, -1, DataFileMeta("g", 1, 1)),
          ManifestEntry(DELETE, p1, 0, -1, DataFileMeta("f", 1, 1))]
    (m,) = mfile.write(es)
    assert [(e.kind, e.file.file_name) for e in mfile.read(m.file_name)] == [(ADD, "g"), (ADD, "f"), (DELETE, "f")]


@pytest.mark.parametrize("ptype", ["DOUBLE", "FLOAT"])
def test_floating_partitions_are_not_marked_sorted(tmp_path, ptype):
    fields = [DataField(0, "a", type_from_json(ptype))]
    mfile = ManifestFile(FileIO.for_uri(str(tmp_path)), str(tmp_path), [fields[0].type], 0)
    es = [ManifestEntry(ADD, serialize_row([v], [fields[0].type]), 0, -1, DataFileMeta(f"f{i}", 1, 1))
          for i, v in enumerate([float("nan"), 1.0, -1.0, None])]
    (m,) = mfile.write(es)
    with open(tmp_path / "manifest" / m.file_name, "rb") as f:
        assert SORTED_BY not in fastavro.reader(io.BytesIO(f.read())).metadata
    got = mfile.read(m.file_name, PartitionFilter(lf.col("a") > 0.0, fields))
    assert [e.file.file_name for e in got] == ["f1"]
