"""Manifest merges that copy Avro blocks (``ManifestFile.concat``): the merged manifest holds the
same entries in the same order as a decoding merge would write, stays sorted for filtered
reads, and the copy is refused whenever it could differ (cancelling entries, partitions out of
order, a foreign writer's schema)."""
import dataclasses
import io

import fastavro
import pyarrow as pa

import lakeformat as lf
from lakeformat.commit.manifest_merge import appendable, fold, merge_manifests
from lakeformat.format.binary_row import serialize_row
from lakeformat.format.manifest import ADD, DELETE, SORTED_BY, DataFileMeta, ManifestEntry
from lakeformat.format.partition import PartitionFilter
from lakeformat.io.manifests import ManifestFile
from tests.iocount import counting


def setup(catalog):
    t = catalog.create_table("db.m", pa.schema([("id", pa.int64()), ("dt", pa.string())]), partition_keys=["dt"])
    types = [f.type for f in t.schema.partition_fields]
    return t, ManifestFile(t.io, t.path, types, 0), types


def entry(types, i, day, kind=ADD):
    return ManifestEntry(kind, serialize_row([day], types), i % 3, 3, DataFileMeta(
        f"data-{i:06d}.parquet", 100 + i, 1, min_sequence_number=i, max_sequence_number=i, level=i % 2,
        creation_time_millis=1_700_000_000_000 + i))


def test_appends_are_merged_by_copying_blocks_into_a_sorted_manifest(catalog):
    t, mf, types = setup(catalog)
    base = mf.write([entry(types, i, f"2024-01-{1 + i % 5:02d}") for i in range(500)])
    appends = [m for i in range(6) for m in mf.write([entry(types, 500 + i, f"2024-01-{5 + i // 2:02d}")])]
    expected = fold([e for m in base + appends for e in mf.read(m.file_name)], True)
    handler = counting(t.io)
    merged, written = merge_manifests(mf, base + appends, 8 << 20, 5, 1 << 40)
    assert len(merged) == 1 and written == [merged[0].file_name]
    assert handler.calls["read"] == len(base + appends)   # each manifest read once, as bytes
    assert mf.read(merged[0].file_name) == expected
    m = merged[0]
    assert (m.num_added_files, m.num_deleted_files, m.min_bucket, m.max_bucket, m.min_level, m.max_level) == \
        (506, 0, 0, 2, 0, 1)
    assert m.partition_stats == mf.partition_stats({e.partition for e in expected})
    data = t.io.read_bytes(mf.path(m.file_name))
    assert fastavro.reader(io.BytesIO(data)).metadata.get(SORTED_BY) == "partition"
    only = PartitionFilter(lf.col("dt") == "2024-01-07", t.schema.partition_fields)
    assert mf.read(m.file_name, only) == [e for e in expected if e.partition == serialize_row(["2024-01-07"], types)]


def test_the_copy_is_refused_when_it_could_differ_from_decoding(catalog):
    t, mf, types = setup(catalog)
    base = mf.write([entry(types, i, "2024-01-05") for i in range(100)])
    older = mf.write([entry(types, 100, "2024-01-01")])          # a late write into an old day
    deletes = mf.write([entry(types, 3, "2024-01-05", DELETE)])  # a compaction
    assert mf.concat(base + older) is None                      # would break the partition order
    assert not appendable(base + deletes)
    for metas in (base + older, base + deletes):
        merged, _ = merge_manifests(mf, metas, 8 << 20, 2, 1 << 40)
        entries = mf.read(merged[0].file_name)
        assert entries == sorted(fold([e for m in metas for e in mf.read(m.file_name)], True),
                                 key=lambda e: e.partition != serialize_row(["2024-01-01"], types))
    foreign = "manifest-foreign-0"   # the same entries under another writer's schema
    records = [e.to_avro() for e in mf.read(base[0].file_name)]
    schema = {"type": "record", "name": "other", "fields": [{"name": "_KIND", "type": "int"}]}
    buf = io.BytesIO()
    fastavro.writer(buf, schema, [{"_KIND": r["_KIND"]} for r in records], codec="zstandard")
    t.io.write_bytes(mf.path(foreign), buf.getvalue())
    assert mf.concat([dataclasses.replace(base[0], file_name=foreign)] + base) is None


def test_repeated_merges_of_appends_join_small_blocks_so_blocks_do_not_grow_with_commits(catalog):
    from lakeformat.io import avro_blocks, manifest_cache
    t, mf, types = setup(catalog)
    merged = mf.write([entry(types, i, "2024-01-01") for i in range(100)])
    n = 100
    for _ in range(8):   # a merge commit every 20 one-entry appends
        appends = [m for i in range(20) for m in mf.write([entry(types, n + i, "2024-01-02")])]
        n += 20
        merged, _ = merge_manifests(mf, merged + appends, 8 << 20, 20, 1 << 40)
        assert len(merged) == 1
    data = t.io.read_bytes(mf.path(merged[0].file_name))
    blocks = avro_blocks.parse(data).blocks
    assert sum(c for c, _ in blocks) == n == 260
    assert len(blocks) <= 4          # 100 + 160 appended entries, not 161 blocks
    expected = [e.file.file_name for e in
                [entry(types, i, "2024-01-01") for i in range(100)]
                + [entry(types, i, "2024-01-02") for i in range(100, 260)]]
    served = [e.file.file_name for e in mf.read(merged[0].file_name)]   # from the cache where it can
    manifest_cache.CACHE.clear()
    assert served == expected == [e.file.file_name for e in mf.read(merged[0].file_name)]


def test_small_blocks_are_joined_into_small_blocks_so_a_filtered_read_decodes_its_neighbours_only(catalog):
    """Days of fewer entries than a block should hold are joined, but into blocks of less than
    twice ``SMALL_BLOCK`` records, not one block of every day: planning one day of the merged
    manifest decodes a block or two, whatever the manifest holds."""
    from lakeformat.io import avro_blocks, manifest_cache
    t, mf, types = setup(catalog)
    days = [f"2024-01-{d:02d}" for d in range(1, 29)]
    appends = [m for k, day in enumerate(days) for m in mf.write([entry(types, k * 50 + i, day) for i in range(50)])]
    merged, _ = merge_manifests(mf, appends, 8 << 20, 5, 1 << 40)
    assert len(merged) == 1
    counts = [c for c, _ in avro_blocks.parse(t.io.read_bytes(mf.path(merged[0].file_name))).blocks]
    assert sum(counts) == 1400 and max(counts) < 2 * manifest_cache.SMALL_BLOCK and len(counts) >= 1400 // 128
    only = PartitionFilter(lf.col("dt") == "2024-01-15", t.schema.partition_fields)
    assert sorted(e.file.file_name for e in mf.read(merged[0].file_name, only)) == [
        f"data-{i:06d}.parquet" for i in range(14 * 50, 15 * 50)]
