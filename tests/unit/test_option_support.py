"""Refuse, never guess: every Paimon option is implemented, harmless or refused by value, and a
table whose options turn on a feature lakeformat lacks is not read or written as if it were absent."""
import json
import os
from pathlib import Path
import re
import shutil
import warnings

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.errors import (
    OptionError,
    SchemaError,
    UnknownOptionWarning,
    UnsupportedError,
    UnsupportedOptionError,
    UnsupportedTypeError,
)
from lakeformat.format import options as O
from lakeformat.format.paimon_options import REFUSED, harmless
from tests.conftest import EVENTS, events

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "paimon-java")

# Every key of Paimon's core_configuration.html (apache/paimon docs/layouts/shortcodes/generated).
PAIMON_CORE_KEYS = ["async-file-write", "auto-create", "branch", "bucket", "bucket-key", "cache-page-size",
                    "changelog-file.prefix", "changelog-producer", "changelog-producer.row-deduplicate",
                    "changelog-producer.row-deduplicate-ignore-fields", "changelog.num-retained.max",
                    "changelog.num-retained.min", "changelog.time-retained", "commit.callback.#.param",
                    "commit.callbacks", "commit.force-compact", "commit.force-create-snapshot", "commit.max-retries",
                    "commit.timeout", "commit.user-prefix", "compaction.max-size-amplification-percent",
                    "compaction.max.file-num", "compaction.min.file-num", "compaction.optimization-interval",
                    "compaction.size-ratio", "consumer-id", "consumer.expiration-time", "consumer.ignore-progress",
                    "consumer.mode", "continuous.discovery-interval", "cross-partition-upsert.bootstrap-parallelism",
                    "cross-partition-upsert.index-ttl", "data-file.external-paths",
                    "data-file.external-paths.specific-fs", "data-file.external-paths.strategy",
                    "data-file.path-directory", "data-file.prefix", "data-file.thin-mode", "delete-file.thread-num",
                    "delete.force-produce-changelog", "deletion-vector.index-file.target-size",
                    "deletion-vectors.enabled", "dynamic-bucket.assigner-parallelism", "dynamic-bucket.initial-buckets",
                    "dynamic-bucket.target-row-num", "dynamic-partition-overwrite", "end-input.check-partition-expire",
                    "fields.default-aggregate-function", "file-index.in-manifest-threshold", "file-index.read.enabled",
                    "file-reader-async-threshold", "file.block-size", "file.compression", "file.compression.per.level",
                    "file.compression.zstd-level", "file.format", "file.format.per.level",
                    "file.suffix.include.compression", "force-lookup", "full-compaction.delta-commits", "ignore-delete",
                    "incremental-between", "incremental-between-scan-mode", "incremental-between-timestamp",
                    "incremental-to-auto-tag", "local-merge-buffer-size", "local-sort.max-num-file-handles",
                    "lookup-wait", "lookup.cache-file-retention", "lookup.cache-max-disk-size",
                    "lookup.cache-max-memory-size", "lookup.cache-spill-compression",
                    "lookup.cache.bloom.filter.enabled", "lookup.cache.bloom.filter.fpp",
                    "lookup.cache.high-priority-pool-ratio", "lookup.hash-load-factor", "lookup.local-file-type",
                    "manifest.compression", "manifest.delete-file-drop-stats", "manifest.format",
                    "manifest.full-compaction-threshold-size", "manifest.merge-min-count", "manifest.target-file-size",
                    "merge-engine", "metadata.stats-dense-store", "metadata.stats-mode", "metastore.partitioned-table",
                    "metastore.tag-to-partition", "metastore.tag-to-partition.preview", "num-levels",
                    "num-sorted-run.compaction-trigger", "num-sorted-run.stop-trigger", "object-location", "page-size",
                    "parquet.enable.dictionary", "partial-update.remove-record-on-delete",
                    "partial-update.remove-record-on-sequence-group", "partition", "partition.default-name",
                    "partition.end-input-to-done", "partition.expiration-check-interval",
                    "partition.expiration-max-num", "partition.expiration-strategy", "partition.expiration-time",
                    "partition.legacy-name", "partition.mark-done-action", "partition.mark-done-action.custom.class",
                    "partition.timestamp-formatter", "partition.timestamp-pattern", "primary-key", "read.batch-size",
                    "record-level.expire-time", "record-level.time-field", "rowkind.field", "scan.bounded.watermark",
                    "scan.fallback-branch", "scan.file-creation-time-millis", "scan.manifest.parallelism",
                    "scan.max-splits-per-task", "scan.mode", "scan.plan-sort-partition", "scan.snapshot-id",
                    "scan.tag-name", "scan.timestamp", "scan.timestamp-millis", "scan.watermark", "sequence.field",
                    "sequence.field.sort-order", "sink.watermark-time-zone", "snapshot.clean-empty-directories",
                    "snapshot.expire.execution-mode", "snapshot.expire.limit", "snapshot.num-retained.max",
                    "snapshot.num-retained.min", "snapshot.time-retained", "snapshot.watermark-idle-timeout",
                    "sort-compaction.local-sample.magnification", "sort-compaction.range-strategy", "sort-engine",
                    "sort-spill-buffer-size", "sort-spill-threshold", "source.split.open-file-cost",
                    "source.split.target-size", "spill-compression", "spill-compression.zstd-level",
                    "streaming-read-mode", "streaming-read-overwrite", "streaming.read.snapshot.delay",
                    "tag.automatic-completion", "tag.automatic-creation", "tag.batch.customized-name",
                    "tag.callback.#.param", "tag.callbacks", "tag.creation-delay", "tag.creation-period",
                    "tag.default-time-retained", "tag.num-retained-max", "tag.period-formatter", "target-file-size",
                    "type", "write-buffer-for-append", "write-buffer-size", "write-buffer-spill.max-disk-size",
                    "write-buffer-spillable", "write-manifest-cache", "write-max-writers-to-spill", "write-only",
                    "write.batch-size", "zorder.var-length-contribution"]


def test_every_paimon_core_option_is_classified():
    unclassified = [k for k in PAIMON_CORE_KEYS if not O.known_to_paimon(k.replace("#", "x"))]
    assert unclassified == []
    # no key is both harmless and implemented, or harmless and refused
    implemented = {o.key for o in O.registry()}
    assert [k for k in PAIMON_CORE_KEYS if harmless(k.replace("#", "x")) and (k in implemented or k in REFUSED)] == []


@pytest.mark.parametrize("options, named", [
    ({"data-file.thin-mode": "true"}, "data-file.thin-mode='true' (key-value files without"),
    ({"changelog-producer.row-deduplicate": "true"}, "changelog-producer.row-deduplicate='true'"),
    ({"type": "format-table"}, "type='format-table'"),
    ({"record-level.expire-time": "1 d", "record-level.time-field": "ts"}, "record-level.expire-time='1 d'"),
    ({"fields.price.default-value": "0"}, "fields.price.default-value='0' (column default values)"),
    ({"row-tracking.enabled": "true"}, "row-tracking.enabled"),
])
def test_create_refuses_unimplemented_features(catalog, options, named):
    with pytest.raises(UnsupportedOptionError, match="lakeformat does not implement.*" + _re(named)) as e:
        catalog.create_table("db.t", EVENTS, primary_keys=["user_id", "dt"], partition_keys=["dt"],
                             options=options)
    assert isinstance(e.value, OptionError) and isinstance(e.value, UnsupportedError)
    assert not catalog.table_exists("db.t")


def test_harmless_options_are_accepted(catalog):
    opts = {"commit.force-compact": "true", "sink.parallelism": "4", "lookup.cache-max-memory-size": "64 mb",
            "file-index.bloom-filter.columns": "user_id", "deletion-vector.index-file.target-size": "2 mb",
            "changelog-producer": "input", "tag.automatic-creation": "none"}
    t = catalog.create_table("db.t", EVENTS, primary_keys=["user_id", "dt"], partition_keys=["dt"], options=opts)
    t.write(events(3))
    assert t.read().num_rows == 3


def _re(s):
    return re.escape(s)


def _set_options(table, **options):
    """Rewrite schema-0 the way another writer (Paimon Java) would have left it."""
    path = os.path.join(table.path, "schema", "schema-0")
    d = json.loads(Path(path).read_text())
    d["options"].update(options)
    Path(path).write_text(json.dumps(d))


def _tree(root):
    return sorted((os.path.relpath(os.path.join(d, f), root), os.path.getsize(os.path.join(d, f)))
                  for d, _, fs in os.walk(root) for f in fs)


def test_existing_table_with_refused_option_opens_but_neither_reads_nor_writes(catalog):
    t = catalog.create_table("db.t", EVENTS, primary_keys=["user_id", "dt"], partition_keys=["dt"],
                             options={"bucket": "2"})
    t.write(events(10))
    _set_options(t, **{"data-file.thin-mode": "true", "commit.force-compact": "true"})
    before = _tree(t.path)
    t = catalog.get_table("db.t")            # opening is fine: metadata and system tables stay available
    assert t.system_table("snapshots").num_rows == 1
    for action in (t.read, lambda: t.read(snapshot_id=1), lambda: t.read_incremental(0, 1),
                   lambda: t.write(events(2)), lambda: t.delete(pa.table({"user_id": [1], "dt": ["2024-01-01"]})),
                   lambda: t.compact(full=True), t.expire_snapshots, lambda: t.rollback_to(1),
                   t.remove_orphan_files):
        with pytest.raises(UnsupportedOptionError, match=r"db\.t.*data-file\.thin-mode='true'"):
            action()
    assert _tree(t.path) == before


def test_read_only_refusal_still_allows_writes(catalog):
    t = catalog.create_table("db.t", EVENTS)
    _set_options(t, **{"scan.file-creation-time-millis": "1700000000000"})
    t = catalog.get_table("db.t")
    t.write(events(4))
    with pytest.raises(UnsupportedOptionError, match=r"cannot read db.t.*scan.file-creation-time-millis"):
        t.read()


def test_unknown_keys_warn_and_feature_like_unknown_keys_refuse(catalog):
    t = catalog.create_table("db.t", EVENTS)
    t.write(events(4))
    _set_options(t, **{"my.team": "ads"})
    with pytest.warns(UnknownOptionWarning, match="my.team"):
        t = catalog.get_table("db.t")
    assert t.read().num_rows == 4
    _set_options(t, **{"merge-engine.future": "x"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownOptionWarning)
        t = catalog.get_table("db.t")
    with pytest.raises(UnsupportedOptionError, match=r"merge-engine.future"):
        t.read()


def test_scan_timestamp_millis_travels_in_time(catalog):
    t = catalog.create_table("db.t", EVENTS)
    s1 = t.write(events(4))
    t.write(events(3, start=4))
    _set_options(t, **{"scan.timestamp-millis": str(s1.time_millis)})
    assert catalog.get_table("db.t").read().num_rows == 4


def test_dynamic_partition_overwrite_false_replaces_the_table(catalog):
    t = catalog.create_table("db.t", EVENTS, partition_keys=["dt"],
                             options={"dynamic-partition-overwrite": "false"})
    t.write(events(4, "2024-01-01"))
    t.write(events(2, "2024-01-02"), overwrite=True)
    assert t.read().column("dt").to_pylist() == ["2024-01-02"] * 2


@pytest.mark.parametrize("typ", ["VARIANT", {"type": "MULTISET", "element": "INT"}])
def test_unsupported_types_name_the_column(catalog, typ):
    t = catalog.create_table("db.t", EVENTS)
    path = os.path.join(t.path, "schema", "schema-0")
    d = json.loads(Path(path).read_text())
    d["fields"].append({"id": 99, "name": "payload", "type": typ})
    Path(path).write_text(json.dumps(d))
    with pytest.raises(UnsupportedTypeError, match=r"column 'payload': data type [A-Z]+ is not supported") as e:
        catalog.get_table("db.t")
    assert isinstance(e.value, SchemaError)


def test_every_java_fixture_opens_without_warnings(tmp_path):
    with open(os.path.join(FIXTURES, "PROVENANCE.md")) as f:
        assert "alibaba/paimon-cpp" in f.read()
    opened = 0
    for warehouse in ("parquet", "orc", "avro"):
        wh = tmp_path / warehouse
        shutil.copytree(os.path.join(FIXTURES, warehouse), wh)
        cat = lf.Catalog(str(wh))
        for db in os.listdir(wh):
            name = db[:-3]
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                t = cat.get_table(f"{name}.{name}")
            assert t.latest_snapshot() is not None
            opened += 1
    assert opened == 15
