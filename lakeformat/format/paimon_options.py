"""What lakeformat does with each of Paimon's table options that ``options.py`` does not model.

Every key Paimon (core, Flink and Spark connectors) stores in a table's options is one of:
- implemented: an ``Option`` in ``options.py``;
- harmless to ignore (``HARMLESS``): engine tuning, parallelism, caches, callbacks of Java
  engines, or a layout preference whose absence leaves every file readable by Paimon;
- refused (``REFUSED``) when set to a value whose feature lakeformat does not implement: reading
  would return other rows than Paimon, or writing would break the table for Paimon. The refusal
  names the operations (read, write) it blocks. Modelled options are refused here too where
  lakeformat lacks some of their values, so one table says what is missing.

Keys Paimon does not know are ignored by Paimon; lakeformat does the same with a warning, except
under the prefixes of Paimon features (``FEATURE_PREFIXES``), where an unknown key more likely is
a feature of a newer Paimon than a user's note, and is refused.
"""
from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable

READ, WRITE = "read", "write"
RW = frozenset((READ, WRITE))
R, W = frozenset((READ,)), frozenset((WRITE,))


@dataclass(frozen=True)
class Refusal:
    """``applies(raw value)``: the value turns on a feature lakeformat lacks (``feature``) for ``scopes``."""

    applies: Callable[[str], bool]
    scopes: frozenset
    feature: str


def _true(v: str) -> bool:
    return v.strip().lower() == "true"


def _set(v: str) -> bool:
    return bool(v.strip())


def _not(*ok: str) -> Callable[[str], bool]:
    return lambda v: v.strip().lower() not in ok


# Refused values. Each line: what the feature is and which operations cannot ignore it.
REFUSED: dict[str, Refusal] = {
    # formats
    "file.format": Refusal(_not("parquet", "orc", "avro"), RW, "this data file format"),
    "manifest.format": Refusal(_not("avro", "orc"), RW, "this manifest format"),
    "data-file.thin-mode": Refusal(_true, RW, "key-value files without the duplicated key columns"),
    "data-file.path-directory": Refusal(_set, RW, "data files under a sub-directory of the table"),
    # table kinds and layouts
    "type": Refusal(_not("table"), RW, "format, materialized and object tables"),
    "log.system": Refusal(_not("none"), W, "a log system (Kafka) written beside the files"),
    # merging and changelogs
    "changelog-producer.row-deduplicate": Refusal(_true, W, "dropping -U/+U pairs of unchanged rows"),
    "partial-update.remove-record-on-sequence-group": Refusal(_set, RW,
                                                              "removing partial-update rows per sequence group"),
    "aggregation.remove-record-on-delete": Refusal(_true, RW, "removing aggregated rows on delete"),
    "ignore-update-before": Refusal(_true, W, "dropping -U rows on write"),
    "record-level.expire-time": Refusal(_set, RW, "record-level expiration"),
    "cross-partition-upsert.index-ttl": Refusal(_set, W, "cross-partition upsert"),
    # scans whose rows differ from a plain snapshot read
    "scan.mode": Refusal(_not("default", "latest-full", "full", "latest", "from-snapshot", "from-snapshot-full",
                              "from-timestamp"), R, "this scan mode"),
    "scan.timestamp": Refusal(_set, R, "time travel to a local time string"),
    "scan.watermark": Refusal(_set, R, "time travel to a watermark"),
    "scan.file-creation-time-millis": Refusal(_set, R, "filtering files by creation time"),
    "incremental-between": Refusal(_set, R, "incremental batch reads set as a table option"),
    "incremental-between-timestamp": Refusal(_set, R, "incremental batch reads set as a table option"),
    "incremental-to-auto-tag": Refusal(_set, R, "incremental batch reads set as a table option"),
    "incremental-between-scan-mode": Refusal(_not("auto"), R, "incremental scan modes other than auto"),
    "streaming-read-mode": Refusal(_not("file"), R, "streaming reads from a log system"),
    "streaming-read-overwrite": Refusal(_true, R, "streaming reads of overwrites"),
    # writes that leave metadata Paimon expects
    "tag.automatic-creation": Refusal(_not("none"), W, "automatic tag creation"),
    # BLOB columns: lakeformat returns and stores BLOB values as bytes
    "blob-as-descriptor": Refusal(_true, RW, "BLOB values read and written as descriptors"),
    "blob-descriptor-field": Refusal(_set, RW, "BLOB columns stored as descriptors"),
    "blob.stored-descriptor-fields": Refusal(_set, RW, "BLOB columns stored as descriptors"),
    "blob-view-field": Refusal(_set, RW, "BLOB view columns"),
    "video-frame-field": Refusal(_set, RW, "video frame columns"),
    "bucket-function.type": Refusal(_not("default"), RW, "bucket functions other than Paimon's default hash"),
}

# Per-field options (``fields.<name>.<suffix>``) refused when set.
REFUSED_FIELD_SUFFIXES: dict[str, Refusal] = {
    "default-value": Refusal(_set, RW, "column default values"),
}

_HARMLESS_DOC = {
    "engine tuning (threads, memory, caches, spills, sorting, batch sizes)": (
        "async-file-write", "auto-create", "cache-page-size", "delete-file.thread-num", "file-reader-async-threshold",
        "local-merge-buffer-size", "local-sort.max-num-file-handles", "lookup-wait", "lookup-compact",
        "lookup-compact.max-interval", "force-lookup", "sort-engine",
        "sort-spill-buffer-size", "sort-spill-threshold", "spill-compression", "spill-compression.zstd-level",
        "write-buffer-for-append", "write-buffer-spill.max-disk-size", "write-manifest-cache",
        "write-max-writers-to-spill", "scan.manifest.parallelism", "scan.max-splits-per-task",
        "scan.plan-sort-partition", "zorder.var-length-contribution", "sort-compaction.local-sample.magnification",
        "sort-compaction.range-strategy", "parquet.enable.dictionary", "deletion-vector.index-file.target-size",
        "dynamic-bucket.assigner-parallelism", "blob.copy-buffer-size", "cross-partition-upsert.bootstrap-parallelism",
        "manifest.delete-file-drop-stats", "file-index.in-manifest-threshold", "file-index.read.enabled",
        "file.suffix.include.compression", "bucket-append-ordered", "compaction.optimization-interval",
        "compaction.force-up-level-0", "compaction.total-size-threshold", "compaction.incremental-size-threshold",
        "compaction.delete-ratio-threshold", "compaction.force-rewrite-all-files", "snapshot.expire.execution-mode",
        "changelog.precommit-compact", "precommit-compact", "commit.force-compact", "commit.force-create-snapshot",
        "commit.discard-duplicate-files", "commit.strict-mode.last-safe-snapshot", "data-file.external-paths",
        "data-file.external-paths.strategy", "data-file.external-paths.specific-fs",
        "changelog-producer.row-deduplicate-ignore-fields", "dynamic-bucket.initial-buckets",
        "clustering.columns", "clustering.strategy", "clustering.incremental",
        "changelog-file.format", "changelog-file.compression", "changelog-file.stats-mode"),
    "streaming and connector settings of Flink or Spark jobs": (
        "continuous.discovery-interval", "consumer.ignore-progress", "consumer.mode", "scan.bounded.watermark",
        "streaming.read.snapshot.delay", "sink.watermark-time-zone", "snapshot.watermark-idle-timeout",
        "end-input.check-partition-expire", "delete.force-produce-changelog", "write.merge-schema",
        "write.merge-schema.explicit-cast", "partition.end-input-to-done", "partition.idle-time-to-done",
        "partition.time-interval", "partition.sink-strategy", "partition.idle-time-to-report-statistic"),
    "catalog, metastore and notification settings outside the table's files": (
        "metastore.partitioned-table", "metastore.tag-to-partition", "metastore.tag-to-partition.preview",
        "partition.mark-done-action", "partition.mark-done-action.custom.class", "commit.callbacks",
        "tag.callbacks", "partition", "primary-key", "owner", "comment", "object-location"),
    # global-index.column-update-action matters only to writes of some columns of existing rows
    # (data evolution), which must then check the indexes of the columns they change
    "settings of global indexes, which lakeformat carries along but neither builds nor searches": (
        "global-index.enabled", "global-index.search-mode", "scalar-index.search-mode", "vector-index.search-mode",
        "full-text-index.search-mode", "global-index.external-path", "global-index.filter.refine-from-data",
        "global-index.thread-num", "global-index.row-count-per-shard", "global-index.build.parallelism",
        "global-index.column-update-action", "btree-index.fallback-scan-max-size", "btree-index.block-size",
        "btree-index.bloom-filter.enabled", "btree-index.records-per-range", "sorted-index.records-per-file",
        "bitmap-index.fallback-scan-max-size", "bitmap-index.dictionary-block-size", "bitmap-index.compression",
        "bitmap-index.compression-level"),
    "settings of a feature refused through its own switch (tag.automatic-creation, record-level.expire-time)": (
        "record-level.time-field", "tag.automatic-completion", "tag.batch.customized-name", "tag.creation-delay",
        "tag.creation-period", "tag.num-retained-max", "tag.period-formatter"),
}
HARMLESS: dict[str, str] = {k: why for why, keys in _HARMLESS_DOC.items() for k in keys}
# Whole namespaces of engine or file-system settings (Flink's sink./lookup., format writers' own keys).
HARMLESS_PREFIXES = ("sink.", "lookup.", "source.checkpoint-align.", "scan.infer-parallelism", "scan.parallelism",
                     "scan.split-enumerator.", "scan.remove-normalize", "scan.push-down", "streaming-read.",
                     "orc.", "parquet.", "avro.", "fs.", "s3.", "oss.", "hadoop.", "kafka.", "log.",
                     "file-index.", "commit.callback.", "tag.callback.", "metastore.", "unaware-bucket.",
                     "compaction.offpeak", "partition.mark-done", "spark.", "flink.", "hive.")

# An unknown key under these prefixes is taken for a Paimon feature lakeformat does not know.
FEATURE_PREFIXES = ("deletion-vectors.", "deletion-vector.", "row-tracking.", "data-evolution.", "file.",
                    "data-file.", "changelog-producer", "changelog-file.", "merge-engine", "sequence.",
                    "partial-update.", "aggregation.", "first-row.", "manifest.", "bucket", "blob",
                    "global-index.", "index.", "record-level.", "dynamic-bucket.", "fields.", "rowkind.")


def harmless(key: str) -> bool:
    return key in HARMLESS or key.startswith(HARMLESS_PREFIXES)
