"""The cache of decoded manifest blocks (``io/manifest_cache.py``): keyed by the blocks' bytes, so
it never serves stale or foreign entries; merged manifests reuse the blocks they copied; bounded."""
import io

import fastavro
import pytest

import lakeformat as lf
from lakeformat.commit.manifest_merge import fold, merge_manifests
from lakeformat.format.binary_row import deserialize_row
from lakeformat.format.manifest import DELETE, ManifestEntry
from lakeformat.io import avro_blocks, manifest_cache
from lakeformat.io.manifests import ManifestFile
from lakeformat.io.manifest_cache import BlockCache
from tests.conftest import events
from tests.unit.test_manifest_concat import entry, setup


@pytest.fixture(autouse=True)
def empty_cache():
    manifest_cache.CACHE.clear()
    yield
    manifest_cache.CACHE.clear()


def test_a_second_read_decodes_nothing_and_returns_equal_entries(catalog):
    _t, mf, types = setup(catalog)
    (m,) = mf.write([entry(types, i, f"2024-01-{1 + i % 5:02d}") for i in range(300)])
    first = mf.read(m.file_name)
    misses = manifest_cache.CACHE.misses
    again = mf.read(m.file_name)
    assert again == first and manifest_cache.CACHE.misses == misses and manifest_cache.CACHE.hits > 0


def test_a_merged_manifest_is_read_from_the_blocks_it_copied(catalog):
    _t, mf, types = setup(catalog)
    base = mf.write([entry(types, i, f"2024-01-{1 + i % 5:02d}") for i in range(500)])
    appends = [m for i in range(6) for m in mf.write([entry(types, 500 + i, f"2024-01-{5 + i // 2:02d}")])]
    expected = [e for m in base + appends for e in mf.read(m.file_name)]
    merged, _ = merge_manifests(mf, base + appends, 8 << 20, 5, 1 << 40)
    misses = manifest_cache.CACHE.misses
    assert mf.read(merged[0].file_name) == expected
    assert manifest_cache.CACHE.misses == misses   # every block of the merged manifest was known


def test_a_file_rewritten_with_other_bytes_is_decoded_again_and_corruption_still_fails(catalog):
    t = catalog.create_table("db.t", events(1).schema)
    t.write(events(3))
    assert t.read().num_rows == 3                     # manifests now cached
    mdir = t.path + "/manifest"
    names = [n for n in t.io.list_names(mdir) if n.startswith("manifest-") and not n.startswith("manifest-list-")]
    for n in names:
        data = t.io.read_bytes(f"{mdir}/{n}")
        t.io.write_bytes(f"{mdir}/{n}", data[:-20] + bytes(20))   # same size, last block damaged
    with pytest.raises(lf.CorruptFileError):
        catalog.get_table("db.t").read()


def test_a_manifest_replaced_under_the_same_name_is_read_as_it_is_now(catalog):
    t, mf, types = setup(catalog)
    (m,) = mf.write([entry(types, i, "2024-01-01") for i in range(50)])
    (other,) = mf.write([entry(types, 100 + i, "2024-01-02") for i in range(7)])
    assert len(mf.read(m.file_name)) == 50                               # cached now
    t.io.write_bytes(mf.path(m.file_name), t.io.read_bytes(mf.path(other.file_name)))
    assert mf.read(m.file_name) == mf.read(other.file_name) and len(mf.read(m.file_name)) == 7
    t.io.write_bytes(mf.path(m.file_name), b"Obj\x01 not a manifest any more")
    with pytest.raises(lf.CorruptFileError):
        mf.read(m.file_name)


def test_the_cache_is_bounded_by_entries_least_recently_used_first():
    cache = BlockCache(5)
    cache.put(("h", b"a"), (1, 2))
    cache.put(("h", b"b"), (3, 4))
    assert cache.get(("h", b"a")) == (1, 2)          # a is now the most recent
    cache.put(("h", b"c"), (5, 6))                    # 6 entries > 5: b goes
    assert cache.get(("h", b"b")) is None and cache.get(("h", b"a")) == (1, 2) and len(cache) == 4
    cache.put(("h", b"d"), tuple(range(6)))           # larger than the whole cache: not kept
    assert cache.get(("h", b"d")) is None
    cache.resize(2)
    assert len(cache) <= 2


def test_configure_zero_turns_the_cache_off(catalog):
    _t, mf, types = setup(catalog)
    (m,) = mf.write([entry(types, i, "2024-01-01") for i in range(10)])
    try:
        manifest_cache.configure(0)
        mf.read(m.file_name)
        assert len(manifest_cache.CACHE) == 0
    finally:
        manifest_cache.configure(manifest_cache.DEFAULT_MAX_ENTRIES)


@pytest.mark.parametrize("compression", ["zstd", "snappy", "deflate", "none"])
def test_a_folding_merge_copies_the_kept_records_and_reads_back_as_decoding_would(catalog, compression):
    t, _, types = setup(catalog)
    mf = ManifestFile(t.io, t.path, types, 0, compression=compression)
    base = mf.write([entry(types, i, f"2024-01-{1 + i // 100:02d}") for i in range(500)])   # 5 days, sorted
    appends = [m for i in range(3) for m in mf.write([entry(types, 500 + i, "2024-01-06")])]
    deletes = mf.write([entry(types, i, f"2024-01-{1 + i // 100:02d}", DELETE) for i in range(0, 200, 7)])
    metas = base + appends + deletes
    everything = [e for m in metas for e in mf.read(m.file_name)]
    expected = fold(everything, True)
    assert len(expected) == 503 - len(range(0, 200, 7))   # each DELETE took its ADD with it
    merged, written = merge_manifests(mf, metas, 8 << 20, 2, 1 << 40)
    assert [m.file_name for m in merged] == written
    manifest_cache.CACHE.clear()                       # read back from the bytes alone
    assert [e for m in merged for e in mf.read(m.file_name)] == expected
    raw = t.io.read_bytes(mf.path(merged[0].file_name))
    assert [ManifestEntry.from_avro(r) for r in fastavro.reader(io.BytesIO(raw))] == expected
    assert merged[0].num_added_files == len(expected) and merged[0].num_deleted_files == 0
    # the blocks no entry left are the very blocks of the base manifest
    kept_blocks = {b for _, b in avro_blocks.parse(raw).blocks}
    base_blocks = [b for _, b in avro_blocks.parse(t.io.read_bytes(mf.path(base[0].file_name))).blocks]
    assert any(b in kept_blocks for b in base_blocks) and not all(b in kept_blocks for b in base_blocks)


def test_a_folding_merge_whose_survivors_leave_partition_order_is_sorted(catalog):
    _t, mf, types = setup(catalog)
    base = mf.write([entry(types, i, f"2024-01-{1 + i // 100:02d}") for i in range(300)])
    later = mf.write([entry(types, 1000, "2024-01-09")])
    unmatched = mf.write([entry(types, 2000, "2024-01-02", DELETE)])   # its ADD is elsewhere: kept
    cancel = mf.write([entry(types, 5, "2024-01-01", DELETE)])
    metas = base + later + unmatched + cancel
    merged, _ = merge_manifests(mf, metas, 8 << 20, 2, 1 << 40)
    got = [e for m in merged for e in mf.read(m.file_name)]
    assert len(got) == 300 - 1 + 1 + 1
    days = [deserialize_row(e.partition, types)[0] for e in got]
    assert days == sorted(days)
    assert any(e.kind == DELETE for e in got)


def test_a_merge_splits_its_output_at_the_target_size(catalog):
    t, _, types = setup(catalog)
    mf = ManifestFile(t.io, t.path, types, 0, target_size=4096)
    base = mf.write([entry(types, i, f"2024-01-{1 + i // 200:02d}") for i in range(2000)])
    deletes = mf.write([entry(types, i, f"2024-01-{1 + i // 200:02d}", DELETE) for i in range(0, 2000, 50)])
    merged, _ = merge_manifests(mf, base + deletes, 1 << 30, 2, 1 << 40)
    assert len(merged) > 1
    assert [e for m in merged for e in mf.read(m.file_name)] == fold(
        [e for m in base + deletes for e in mf.read(m.file_name)], True)
