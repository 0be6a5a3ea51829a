"""The cache of decoded manifest blocks (``io/manifest_cache.py``): keyed by the blocks' bytes, so
it never serves stale or foreign entries; merged manifests reuse the blocks they copied; bounded."""
import pytest

import lakeformat as lf
from lakeformat.commit.manifest_merge import merge_manifests
from lakeformat.io import manifest_cache
from lakeformat.io.manifest_cache import BlockCache
from tests.conftest import events
from tests.unit.test_manifest_concat import entry, setup


@pytest.fixture(autouse=True)
def empty_cache():
    manifest_cache.CACHE.clear()
    yield
    manifest_cache.CACHE.clear()


def test_a_second_read_decodes_nothing_and_returns_equal_entries(catalog):
    t, mf, types = setup(catalog)
    (m,) = mf.write([entry(types, i, f"2024-01-{1 + i % 5:02d}") for i in range(300)])
    first = mf.read(m.file_name)
    misses = manifest_cache.CACHE.misses
    again = mf.read(m.file_name)
    assert again == first and manifest_cache.CACHE.misses == misses and manifest_cache.CACHE.hits > 0


def test_a_merged_manifest_is_read_from_the_blocks_it_copied(catalog):
    t, mf, types = setup(catalog)
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
    t, mf, types = setup(catalog)
    (m,) = mf.write([entry(types, i, "2024-01-01") for i in range(10)])
    try:
        manifest_cache.configure(0)
        mf.read(m.file_name)
        assert len(manifest_cache.CACHE) == 0
    finally:
        manifest_cache.configure(manifest_cache.DEFAULT_MAX_ENTRIES)
