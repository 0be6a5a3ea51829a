"""Every table option in one typed place: Paimon's keys, defaults and a one-line doc each.

Schemas store options as strings. ``Options(raw).get(OPTION)`` parses on access and names the
option, the bad value and what was expected when a value is wrong. ``validate`` is what create
and alter run: unknown keys are rejected (with the closest known key as a hint) and every known
key must parse. Parsers accept what Paimon's Java ``Options`` accept, no more, so a table written
here stays readable by Paimon.
"""
from __future__ import annotations

import datetime as dt
import difflib
import re
import warnings
from dataclasses import dataclass
from typing import Any, Generic, Optional, TypeVar
from collections.abc import Callable, Mapping, Sequence

from lakeformat.errors import OptionError, UnknownOptionWarning, UnsupportedOptionError
from lakeformat.format.paimon_options import (
    FEATURE_PREFIXES,
    READ,
    REFUSED,
    REFUSED_FIELD_SUFFIXES,
    RW,
    WRITE,
    Refusal,
    harmless,
)

T = TypeVar("T")
INT_MAX, LONG_MAX = 2**31 - 1, 2**63 - 1
KB, MB = 1 << 10, 1 << 20

# -- parsers: Paimon's string form -> value; ValueError("<what it is not>") when bad -------------
_NUMBER_UNIT = re.compile(r"([0-9]+)(.*)", re.S)
_MEMORY_UNITS = {u: 1 << (10 * i) for i, us in enumerate(
    (("b", "bytes"), ("k", "kb", "kibibytes"), ("m", "mb", "mebibytes"),
     ("g", "gb", "gibibytes"), ("t", "tb", "tebibytes"))) for u in us}
_DURATION_UNITS: dict[str, int] = {}   # label -> nanoseconds; "plural" labels also take an "s"
for _nanos, _singular, _plural in ((86_400 * 10**9, ("d",), ("day",)), (3_600 * 10**9, ("h",), ("hour",)),
                                   (60 * 10**9, ("min", "m"), ("minute",)), (10**9, ("s",), ("sec", "second")),
                                   (10**6, ("ms",), ("milli", "millisecond")),
                                   (10**3, ("µs",), ("micro", "microsecond")), (1, ("ns",), ("nano", "nanosecond"))):
    _DURATION_UNITS.update({u: _nanos for u in _singular + _plural + tuple(p + "s" for p in _plural)})
del _nanos, _singular, _plural


def _integer(v: str, lo: int, hi: int, what: str) -> int:
    if not re.fullmatch(r"[+-]?[0-9]+", v):
        raise ValueError("not an integer")
    n = int(v)
    if not lo <= n <= hi:
        raise ValueError(f"out of range for {what} [{lo}, {hi}]")
    return n


def parse_int(v: str) -> int:
    """A 32-bit integer, as Java's ``Integer.parseInt`` (no spaces)."""
    return _integer(v, -INT_MAX - 1, INT_MAX, "a 32-bit integer")


def parse_long(v: str) -> int:
    """A 64-bit integer, as Java's ``Long.parseLong``."""
    return _integer(v, -LONG_MAX - 1, LONG_MAX, "a 64-bit integer")


def parse_bool(v: str) -> bool:
    """'true' or 'false', any case."""
    if v.lower() not in ("true", "false"):
        raise ValueError("not 'true' or 'false'")
    return v.lower() == "true"


def parse_str(v: str) -> str:
    return v


def parse_memory(v: str) -> int:
    """Bytes from Paimon's MemorySize: '64 mb', '128MB', '1 gb', '512 kb', '100 b', '4096'."""
    m = _NUMBER_UNIT.fullmatch(v.strip())
    unit = m.group(2).strip().lower() if m else None
    if m is None or unit is None or (unit and unit not in _MEMORY_UNITS):
        raise ValueError("not a memory size like '64 mb' (units: b, kb, mb, gb, tb)")
    n = int(m.group(1)) * _MEMORY_UNITS.get(unit, 1)
    if n > LONG_MAX:
        raise ValueError("too large for a 64-bit number of bytes")
    return n


def parse_duration(v: str) -> dt.timedelta:
    """Paimon's TimeUtils: '1 h', '30 min', '10 s', '100 ms', '1 d', '2 days', '5min'; bare number = ms."""
    m = _NUMBER_UNIT.fullmatch(v.strip().lower())
    unit = m.group(2).strip() if m else None
    if m is None or unit is None or (unit and unit not in _DURATION_UNITS):
        raise ValueError("not a duration like '100 ms', '10 s', '30 min', '1 h' or '2 d'")
    try:
        return dt.timedelta(microseconds=int(m.group(1)) * _DURATION_UNITS.get(unit, 10**6) // 1000)
    except OverflowError:
        raise ValueError("too long a duration") from None


def duration(value: Any, what: str) -> Optional[dt.timedelta]:
    """The one duration parser of every front end (API arguments, CLI flags, job arguments, DAG
    params, the pipeline config): None or '' is None, a timedelta stays, a number is seconds,
    text is Paimon's (:func:`parse_duration`). A bad value is an OptionError naming ``what``."""
    if value is None or value == "":
        return None
    if isinstance(value, dt.timedelta):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return dt.timedelta(seconds=value)
    try:
        return parse_duration(str(value))
    except ValueError as e:
        raise OptionError(f"{what}: {value!r} is {e}") from None


def parse_list(v: str) -> list[str]:
    """Comma-separated names, blanks dropped."""
    return [x.strip() for x in v.split(",") if x.strip()]


def parse_level_map(v: str) -> dict[int, str]:
    """Paimon's per-level map: '0:avro,3:parquet' -> {0: 'avro', 3: 'parquet'}."""
    out = {}
    for item in parse_list(v):
        level, sep, value = item.partition(":")
        if not sep or not re.fullmatch(r"[0-9]+", level.strip()) or not value.strip():
            raise ValueError("not a map of levels like '0:lz4,1:zstd'")
        out[int(level)] = value.strip().lower()
    return out


def enum(*choices: str) -> Callable[[str], str]:
    """One of ``choices``, any case (Paimon compares enum names case-insensitively)."""
    def parse(v: str) -> str:
        if v.lower() not in choices:
            raise ValueError(f"not one of {', '.join(choices)}")
        return v.lower()
    return parse


def supported(valid: tuple[str, ...], ours: tuple[str, ...]) -> Callable[[str], str]:
    """One of Paimon's ``valid`` values that lakeformat also supports (``ours``)."""
    def parse(v: str) -> str:
        s = enum(*valid)(v)
        if s not in ours:
            raise ValueError(f"valid in Paimon but not supported by lakeformat, which supports {', '.join(ours)}")
        return s
    return parse


def _only(value, ours, valid: str, supported_text: str):
    """A value valid in Paimon (``valid``) of which lakeformat supports only ``ours``."""
    if value != ours:
        raise ValueError(f"valid in Paimon ({valid}) but not supported by lakeformat, which supports {supported_text}")
    return value


def parse_stats_mode(v: str) -> str:
    """none, counts, full or truncate(N)."""
    s = v.lower()
    if s in ("none", "counts", "full") or re.fullmatch(r"truncate\([0-9]+\)", s):
        return s
    raise ValueError("not one of none, counts, full, truncate(N)")


def parse_bucket(v: str) -> int:
    """-1 (dynamic or bucket-unaware) or a positive count, as Paimon's schema validation."""
    n = parse_int(v)
    if n == -2:
        raise ValueError("postpone bucket mode, valid in Paimon but not supported by lakeformat")
    if n == 0 or n < -1:
        raise ValueError("not -1 (dynamic bucket) or a positive number of buckets")
    return n


# -- options -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Option(Generic[T]):
    key: str
    default: Optional[T]
    parse: Callable[[str], T]
    doc: str
    fallback_keys: tuple[str, ...] = ()   # older or alias keys Paimon also reads


_REGISTRY: dict[str, Option] = {}


def _opt(key: str, default, parse, doc: str, *fallback_keys: str) -> Option:
    assert key not in _REGISTRY, key
    _REGISTRY[key] = o = Option(key, default, parse, doc, fallback_keys)
    return o


_FORMATS = ("parquet", "orc", "avro")
_int, _mem, _dur, _bool, _str, _list = parse_int, parse_memory, parse_duration, parse_bool, parse_str, parse_list
# layout and data files
BUCKET = _opt("bucket", -1, parse_bucket, "Buckets per partition; -1: dynamic (primary key) or unaware (append).")
BUCKET_KEY = _opt("bucket-key", None, _list, "Columns hashed to pick a bucket; default: primary key, else the row.")
FILE_FORMAT = _opt("file.format", "parquet", enum(*_FORMATS), "Format of data files.")
FILE_FORMAT_PER_LEVEL = _opt("file.format.per.level", None, parse_level_map, "Format per level: '0:avro,3:parquet'.")
FILE_COMPRESSION = _opt("file.compression", "zstd", enum("zstd", "snappy", "gzip", "lz4", "lz4_raw", "brotli", "none"),
                        "Compression codec of data files.")
FILE_COMPRESSION_PER_LEVEL = _opt("file.compression.per.level", None, parse_level_map, "Codec per level: '0:lz4'.")
FILE_COMPRESSION_ZSTD_LEVEL = _opt("file.compression.zstd-level", 1, _int, "Zstandard level of data files.")
FILE_BLOCK_SIZE = _opt("file.block-size", None, _mem, "Parquet row group (ORC stripe) size; unset: format default.")
TARGET_FILE_SIZE = _opt("target-file-size", None, _mem, "Roll data files at this size; 128 mb (primary key) or 256 mb.")
WRITE_BUFFER_SIZE = _opt("write-buffer-size", 256 * MB, _mem, "Memory sorting a bucket's writes before a flush.")
WRITE_BUFFER_SPILLABLE = _opt("write-buffer-spillable", None, _bool, "Spill sorted runs to local disk when it is full.")
PAGE_SIZE = _opt("page-size", 64 * KB, _mem, "Memory page size of write buffers.")
DATA_FILE_PREFIX = _opt("data-file.prefix", "data-", _str, "File name prefix of data files.")
CHANGELOG_FILE_PREFIX = _opt("changelog-file.prefix", "changelog-", _str, "File name prefix of changelog files.")
STATS_MODE = _opt("metadata.stats-mode", "truncate(16)", parse_stats_mode, "Column statistics kept per data file.")
STATS_DENSE_STORE = _opt("metadata.stats-dense-store", True, _bool, "Manifests store stats of stats columns only.")
PATH = _opt("path", None, _str, "Location of the table (set by the catalog).")
TYPE = _opt("type", "table", _str, "Kind of table: table, format-table, materialized-table, object-table.")
BRANCH = _opt("branch", "main", _str, "Branch the table reads and writes.")
SCAN_FALLBACK_BRANCH = _opt("scan.fallback-branch", None, _str,
                            "Batch reads take partitions missing on this branch from that branch.")
DELETION_VECTORS = _opt("deletion-vectors.enabled", False, _bool,
                        "Merge-on-write: compaction marks older versions in deletion vectors; reads skip level 0.")
ROW_TRACKING = _opt("row-tracking.enabled", False, _bool,
                    "Number rows (_FIRST_ROW_ID per file, nextRowId per snapshot); _ROW_ID and _SEQUENCE_NUMBER "
                    "become selectable.")
DATA_EVOLUTION = _opt("data-evolution.enabled", False, _bool,
                      "Files may hold some columns of rows (_WRITE_COLS), merged by row id on read.")
BLOB_FIELD = _opt("blob-field", None, _list, "Columns of a new table stored as BLOB (binary in Arrow): values in "
                  ".blob files; needs row tracking and data evolution.")
BLOB_TARGET_FILE_SIZE = _opt("blob.target-file-size", None, _mem, "Roll .blob files at this size; default: "
                             "target-file-size.")
DELETION_VECTORS_BITMAP64 = _opt("deletion-vectors.bitmap64", False, _bool,
                                 "Write 64-bit (Iceberg-compatible) deletion vector bitmaps.")
DYNAMIC_BUCKET_TARGET_ROWS = _opt("dynamic-bucket.target-row-num", 2_000_000, parse_long, "Rows per dynamic bucket.")
DYNAMIC_BUCKET_MAX_BUCKETS = _opt("dynamic-bucket.max-buckets", -1, _int, "Dynamic buckets per partition; -1: any.")
# manifests and commit
INDEX_FILE_IN_DATA_FILE_DIR = _opt("index-file-in-data-file-dir", False, _bool,
                                   "Deletion-vector and hash index files beside their bucket's data files "
                                   "instead of in index/.")
MANIFEST_FORMAT = _opt("manifest.format", "avro", enum(*_FORMATS), "Format of manifest files.")
MANIFEST_COMPRESSION = _opt("manifest.compression", "zstd", enum("zstd", "deflate", "snappy", "bzip2", "xz", "null",
                                                                 "none"), "Compression of manifest files.")
MANIFEST_TARGET_FILE_SIZE = _opt("manifest.target-file-size", 8 * MB, _mem, "Target size of manifest files.")
MANIFEST_MERGE_MIN_COUNT = _opt("manifest.merge-min-count", 30, _int, "Merge small manifests at this many.")
MANIFEST_FULL_COMPACTION_SIZE = _opt("manifest.full-compaction-threshold-size", 16 * MB, _mem,
                                     "Rewrite all manifests once deleted entries add up to this size.")
COMMIT_MAX_RETRIES = _opt("commit.max-retries", 10, _int, "Attempts after losing the race for a snapshot id.")
COMMIT_TIMEOUT = _opt("commit.timeout", None, _dur, "Stop retrying a commit after this long; unset: no limit.")
COMMIT_MIN_RETRY_WAIT = _opt("commit.min-retry-wait", dt.timedelta(milliseconds=10), _dur, "First commit backoff.")
COMMIT_MAX_RETRY_WAIT = _opt("commit.max-retry-wait", dt.timedelta(seconds=10), _dur, "Longest commit backoff.")
COMMIT_USER_PREFIX = _opt("commit.user-prefix", None, _str, "Prefix of generated commit users.")
IGNORE_EMPTY_COMMIT = _opt("snapshot.ignore-empty-commit", True, _bool, "A commit without changes makes no snapshot.",
                           "ignore-empty-commit")
DYNAMIC_PARTITION_OVERWRITE = _opt("dynamic-partition-overwrite", True, _bool, "Overwrite only partitions written to.")
# snapshots, changelogs, partitions, consumers
SNAPSHOT_NUM_RETAINED_MIN = _opt("snapshot.num-retained.min", 10, _int, "Keep at least this many snapshots.")
SNAPSHOT_NUM_RETAINED_MAX = _opt("snapshot.num-retained.max", INT_MAX, _int, "Keep at most this many snapshots.")
SNAPSHOT_TIME_RETAINED = _opt("snapshot.time-retained", dt.timedelta(hours=1), _dur, "Keep snapshots this long.")
SNAPSHOT_EXPIRE_LIMIT = _opt("snapshot.expire.limit", 10, _int, "Expire at most this many snapshots per run.")
SNAPSHOT_CLEAN_EMPTY_DIRS = _opt("snapshot.clean-empty-directories", False, _bool, "Remove emptied dirs on expiry.")
CHANGELOG_NUM_RETAINED_MIN = _opt("changelog.num-retained.min", None, _int, "Min changelogs kept; unset: snapshots'.")
CHANGELOG_NUM_RETAINED_MAX = _opt("changelog.num-retained.max", None, _int, "Max changelogs kept; unset: snapshots'.")
CHANGELOG_TIME_RETAINED = _opt("changelog.time-retained", None, _dur, "Keep changelogs this long; unset: snapshots'.")
PARTITION_DEFAULT_NAME = _opt("partition.default-name", "__DEFAULT_PARTITION__", _str, "Name of a null partition.")
PARTITION_LEGACY_NAME = _opt("partition.legacy-name", True, _bool, "Partition names by Java toString, else by cast.")
PARTITION_EXPIRATION_TIME = _opt("partition.expiration-time", None, _dur, "Drop partitions older than this.")
PARTITION_EXPIRATION_CHECK_INTERVAL = _opt("partition.expiration-check-interval", dt.timedelta(hours=1), _dur,
                                           "How often writers check for expired partitions.")
PARTITION_EXPIRATION_STRATEGY = _opt("partition.expiration-strategy", "values-time", enum("values-time", "update-time"),
                                     "A partition's age from its values or from its last update.")
PARTITION_EXPIRATION_MAX_NUM = _opt("partition.expiration-max-num", 100, _int, "Expire at most this many at once.")
PARTITION_TIMESTAMP_FORMATTER = _opt("partition.timestamp-formatter", None, _str, "Java time pattern, e.g. yyyyMMdd.")
PARTITION_TIMESTAMP_PATTERN = _opt("partition.timestamp-pattern", None, _str, "Time from partition fields, e.g. '$dt'.")
CONSUMER_EXPIRATION_TIME = _opt("consumer.expiration-time", None, _dur, "Drop consumers idle longer than this.")
CONSUMER_ID = _opt("consumer-id", None, _str, "Consumer recording a streaming reader's progress.")
TAG_DEFAULT_TIME_RETAINED = _opt("tag.default-time-retained", None, _dur, "Retention of new tags; unset: forever.")
# reads
SCAN_MODE = _opt("scan.mode", "default", enum(
    "default", "latest-full", "full", "latest", "compacted-full", "from-timestamp", "from-creation-timestamp",
    "from-file-creation-time", "from-snapshot", "from-snapshot-full", "incremental"), "Where a scan starts.")
SCAN_SNAPSHOT_ID = _opt("scan.snapshot-id", None, parse_long, "Read this snapshot.")
SCAN_TIMESTAMP_MILLIS = _opt("scan.timestamp-millis", None, parse_long, "Read the snapshot current at this epoch ms.")
SCAN_TIMESTAMP = _opt("scan.timestamp", None, _str, "Read the snapshot current at this local time.")
SCAN_TAG_NAME = _opt("scan.tag-name", None, _str, "Read this tag.")
INCREMENTAL_BETWEEN = _opt("incremental-between", None, _str, "Changes between two snapshots or tags: '5,10'.")
INCREMENTAL_BETWEEN_TIMESTAMP = _opt("incremental-between-timestamp", None, _str, "Changes between two epoch ms.")
SOURCE_SPLIT_TARGET_SIZE = _opt("source.split.target-size", 128 * MB, _mem, "Target size of a read split.")
SOURCE_SPLIT_OPEN_FILE_COST = _opt("source.split.open-file-cost", 4 * MB, _mem, "Least size a file counts in a split.")
READ_BATCH_SIZE = _opt("read.batch-size", 1024, _int, "Rows per batch when reading.")
WRITE_BATCH_SIZE = _opt("write.batch-size", 1024, _int, "Rows per batch when writing.")
# merge tree and compaction
MERGE_ENGINE = _opt("merge-engine", "deduplicate", enum("deduplicate", "partial-update", "aggregation", "first-row"),
                    "How rows with the same primary key merge.")
CHANGELOG_PRODUCER = _opt("changelog-producer", "none", enum("none", "input", "full-compaction", "lookup"),
                          "How changelog files are produced.")
SEQUENCE_FIELD = _opt("sequence.field", None, _list, "Columns ordering versions of a key instead of arrival.")
SEQUENCE_FIELD_SORT_ORDER = _opt("sequence.field.sort-order", "ascending", enum("ascending", "descending"),
                                 "Whether the largest or the smallest sequence wins.")
ROWKIND_FIELD = _opt("rowkind.field", None, _str, "Column holding each row's kind (+I, -U, +U, -D).")
IGNORE_DELETE = _opt("ignore-delete", False, _bool, "Drop delete rows on write.",
                     "first-row.ignore-delete", "deduplicate.ignore-delete", "partial-update.ignore-delete")
PARTIAL_UPDATE_IGNORE_DELETE = _opt("partial-update.ignore-delete", False, _bool, "Older key of ignore-delete.")
PARTIAL_UPDATE_REMOVE_ON_DELETE = _opt("partial-update.remove-record-on-delete", False, _bool,
                                       "Partial update removes the whole row on a delete.")
DEFAULT_AGG_FUNCTION = _opt("fields.default-aggregate-function", None, _str, "Aggregate of fields without their own.")
COMPACTION_TRIGGER = _opt("num-sorted-run.compaction-trigger", 5, _int, "Sorted runs that trigger a compaction.")
STOP_TRIGGER = _opt("num-sorted-run.stop-trigger", None, _int, "Sorted runs that stall writes; unset: trigger + 3.")
NUM_LEVELS = _opt("num-levels", None, _int, "Levels of the LSM tree; unset: trigger + 1.")
MAX_SIZE_AMPLIFICATION = _opt("compaction.max-size-amplification-percent", 200, parse_int,
                              "Size amplification (%) that triggers a full compaction.")
SIZE_RATIO = _opt("compaction.size-ratio", 1, _int, "Percentage flexibility comparing sorted run sizes.")
COMPACTION_MIN_FILE_NUM = _opt("compaction.min.file-num", 5, _int, "Fewest files an append compaction merges.")
COMPACTION_MAX_FILE_NUM = _opt("compaction.max.file-num", None, _int, "Files forcing an append compaction.")
FULL_COMPACTION_DELTA_COMMITS = _opt("full-compaction.delta-commits", None, _int, "Full compaction every N commits.")
WRITE_ONLY = _opt("write-only", False, _bool, "Writers skip compaction and expiration (dedicated compaction jobs).")
# Iceberg compatibility (Paimon's IcebergOptions): Iceberg metadata published after each commit
ICEBERG_STORAGE = _opt("metadata.iceberg.storage", "disabled", supported(
    ("disabled", "table-location", "hadoop-catalog", "hive-catalog", "rest-catalog"),
    ("disabled", "table-location", "hadoop-catalog")), "Publish Iceberg metadata: in the table or a catalog dir.")
ICEBERG_STORAGE_LOCATION = _opt("metadata.iceberg.storage-location", None, enum("table-location", "catalog-location"),
                                "Where Iceberg metadata goes; unset: by metadata.iceberg.storage.")
ICEBERG_FORMAT_VERSION = _opt("metadata.iceberg.format-version", 2, lambda v: _only(parse_int(v), 2, "2 or 3", "2"),
                              "Iceberg format version of the published metadata.")
ICEBERG_MANIFEST_COMPRESSION = _opt("metadata.iceberg.manifest-compression", "snappy",
                                    enum("snappy", "zstd", "deflate", "gzip", "null", "none", "uncompressed"),
                                    "Codec of Iceberg manifests (DuckDB reads snappy, not zstd).")
ICEBERG_MANIFEST_LEGACY_VERSION = _opt("metadata.iceberg.manifest-legacy-version", False,
                                       lambda v: _only(parse_bool(v), False, "true or false", "false"),
                                       "Iceberg 1.4 manifests (for old readers).")
ICEBERG_COMPACT_MIN_FILE_NUM = _opt("metadata.iceberg.compaction.min.file-num", 10, _int,
                                    "Merge small Iceberg manifests once there are this many.")
ICEBERG_COMPACT_MAX_FILE_NUM = _opt("metadata.iceberg.compaction.max.file-num", 50, _int,
                                    "Merge small Iceberg manifests at this many whatever their size.")
ICEBERG_DELETE_AFTER_COMMIT = _opt("metadata.iceberg.delete-after-commit.enabled", True, _bool,
                                   "Delete old Iceberg metadata versions after each commit.")
ICEBERG_PREVIOUS_VERSIONS_MAX = _opt("metadata.iceberg.previous-versions-max", 0,
                                     lambda v: _integer(v, 0, INT_MAX, "a non-negative integer"),
                                     "Old Iceberg metadata versions kept after each commit.")
# catalog lock (Paimon's catalog options, also accepted per table)
LOCK_ENABLED = _opt("lock.enabled", None, _bool, "Take the catalog lock around commits; unset: catalog decides.")
LOCK_ACQUIRE_TIMEOUT = _opt("lock.acquire-timeout", dt.timedelta(minutes=8), _dur, "Give up on the lock after this.")
LOCK_CHECK_MAX_SLEEP = _opt("lock.check-max-sleep", dt.timedelta(seconds=8), _dur, "Longest wait between lock tries.")

# Ranges, as data: key -> (lowest, highest) value allowed, inclusive, None for no bound; numbers,
# memory sizes in bytes, durations as timedelta. ``validate`` checks them at create and alter, so
# a table is never created that cannot be written or never expires.
_MS = dt.timedelta(milliseconds=1)
BOUNDS: dict[str, tuple[Any, Any]] = {
    "file.block-size": (1, None), "target-file-size": (1, None), "write-buffer-size": (1, None),
    "page-size": (1, None), "dynamic-bucket.target-row-num": (1, None),
    "manifest.target-file-size": (1, None), "manifest.merge-min-count": (1, None),
    "manifest.full-compaction-threshold-size": (1, None),
    "commit.max-retries": (0, None), "commit.timeout": (_MS, None),
    "snapshot.num-retained.min": (1, None), "snapshot.num-retained.max": (1, None),
    "snapshot.expire.limit": (1, None),
    "changelog.num-retained.min": (1, None), "changelog.num-retained.max": (1, None),
    "partition.expiration-max-num": (1, None),
    "source.split.target-size": (1, None), "source.split.open-file-cost": (1, None),
    "read.batch-size": (1, None), "write.batch-size": (1, None),
    "num-sorted-run.compaction-trigger": (1, None), "num-sorted-run.stop-trigger": (1, None),
    "num-levels": (2, None), "compaction.max-size-amplification-percent": (0, None),
    "compaction.size-ratio": (0, None), "compaction.min.file-num": (1, None), "compaction.max.file-num": (1, None),
    "full-compaction.delta-commits": (1, None),
    "lock.acquire-timeout": (_MS, None), "lock.check-max-sleep": (_MS, None),
}
# Options whose value names columns of the table ('column': one, 'columns': a comma list); the
# per-field options ``fields.<name>.<suffix>`` name theirs in the key.
COLUMN_REFERENCES: dict[str, str] = {"rowkind.field": "column", "sequence.field": "columns"}   # bucket-key: new_schema

# Per-field options ``fields.<name>.<suffix>``; <name> may be 'a,b' for a sequence group.
FIELD_SUFFIXES: dict[str, Callable[[str], Any]] = {
    "aggregate-function": parse_str, "ignore-retract": parse_bool, "sequence-group": parse_list,
    "list-agg-delimiter": parse_str, "distinct": parse_bool, "nested-key": parse_list,
    "default-value": parse_str, "stats-mode": parse_stats_mode}
FIELD_OPTION = re.compile(r"fields\.(.+)\.(" + "|".join(map(re.escape, FIELD_SUFFIXES)) + ")", re.S)
_BY_KEY: dict[str, Option] = {k: o for o in _REGISTRY.values() for k in o.fallback_keys} | _REGISTRY


def registry() -> list[Option]:
    """All options, in declaration order."""
    return list(_REGISTRY.values())


def _bad(key: str, value: str, reason: str) -> OptionError:
    return OptionError(f"option {key!r}: {value!r} is {reason}")


def _parse(key: str, value: str, parse: Callable[[str], T]) -> T:
    try:
        return parse(value)
    except ValueError as e:
        raise _bad(key, value, str(e)) from None


class Options:
    """Typed, read-only access to a table's option strings."""

    def __init__(self, raw: Mapping[str, Any]):
        self.raw: dict[str, str] = {k: to_option_string(k, v) for k, v in raw.items()}

    def get(self, option: Option[T]) -> Optional[T]:
        """The option's value, or its default when neither its key nor a fallback key is set."""
        for key in (option.key, *option.fallback_keys):
            if key in self.raw:
                return _parse(key, self.raw[key], option.parse)
        return option.default

    def required(self, option: Option[T]) -> T:
        """``get`` of an option that has a default, so never None."""
        v = self.get(option)
        if v is None:
            raise OptionError(f"option {option.key!r} has no value")
        return v

    def field_option(self, field: str, suffix: str) -> Any:
        """Typed ``fields.<field>.<suffix>``, or None when unset."""
        if suffix not in FIELD_SUFFIXES:
            raise OptionError(f"{suffix!r} is not a per-field option; known: {', '.join(FIELD_SUFFIXES)}")
        key = f"fields.{field}.{suffix}"
        return _parse(key, self.raw[key], FIELD_SUFFIXES[suffix]) if key in self.raw else None

    def target_file_size(self, has_primary_key: bool) -> int:
        """``target-file-size``, defaulting to 128 mb for primary-key tables, 256 mb for append tables."""
        v = self.get(TARGET_FILE_SIZE)
        return v if v is not None else (128 if has_primary_key else 256) * MB

    def stop_trigger(self) -> int:
        """Effective ``num-sorted-run.stop-trigger``: set value or trigger + 3, never below the trigger."""
        trigger, stop = self.required(COMPACTION_TRIGGER), self.get(STOP_TRIGGER)
        return max(trigger, stop if stop is not None else trigger + 3)

    def num_levels(self) -> int:
        """Effective ``num-levels``: set value or compaction trigger + 1."""
        n = self.get(NUM_LEVELS)
        return n if n is not None else self.required(COMPACTION_TRIGGER) + 1

    def __repr__(self) -> str:
        return f"Options({self.raw!r})"


def target_file_size(opts: Options, has_primary_key: bool) -> int:
    """Same as ``opts.target_file_size(has_primary_key)``."""
    return opts.target_file_size(has_primary_key)


def to_option_string(key: Any, value: Any) -> str:
    """Paimon's string form of a user's value: bools as true/false, lists comma-joined, durations with a unit."""
    if not isinstance(key, str):
        raise OptionError(f"option keys must be strings, got {key!r}")
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (list, tuple)) and all(isinstance(x, str) for x in value):
        return ",".join(value)
    if isinstance(value, dt.timedelta):
        us = value // dt.timedelta(microseconds=1)
        for unit, size in (("d", 86_400 * 10**6), ("h", 3_600 * 10**6), ("min", 6 * 10**7), ("s", 10**6), ("ms", 1000)):
            if us % size == 0:
                return f"{us // size} {unit}"
        return f"{us} µs"
    raise OptionError(f"option {key!r}: {value!r} is not a string, number, bool, list of names or timedelta")


def _unknown_hint(key: str) -> str:
    guess = None
    if m := re.fullmatch(r"fields\.(.+)\.([^.]+)", key, re.S):   # a per-field option with a mistyped suffix
        close = difflib.get_close_matches(m.group(2), FIELD_SUFFIXES, n=1)
        guess = f"fields.{m.group(1)}.{close[0]}" if close else None
    if guess is None:
        close = difflib.get_close_matches(key, _BY_KEY, n=1)
        guess = close[0] if close else None
    return f"{key!r}" + (f" (did you mean {guess!r}?)" if guess else "")


def known_to_paimon(key: str) -> bool:
    """A key of Paimon's that lakeformat implements, ignores harmlessly or refuses by value."""
    return key in _BY_KEY or bool(FIELD_OPTION.fullmatch(key)) or key in REFUSED or harmless(key)


_UNKNOWN_FEATURE = Refusal(lambda v: True, RW, "an option of a Paimon feature that lakeformat does not know")


def _refusal(key: str) -> Optional[Refusal]:
    if key in REFUSED:
        return REFUSED[key]
    if m := FIELD_OPTION.fullmatch(key):
        return REFUSED_FIELD_SUFFIXES.get(m.group(2))
    if not known_to_paimon(key) and key.startswith(FEATURE_PREFIXES):
        return _UNKNOWN_FEATURE
    return None


def check_supported(raw: Mapping[str, str], operation: str, what: str = "this table") -> None:
    """Refuse to ``operation`` ('read' or 'write') a table whose options turn on a feature
    lakeformat does not implement: the error names each such option, its value and the feature."""
    assert operation in (READ, WRITE), operation
    bad = [f"{k}={v!r} ({r.feature})" for k, v in raw.items()
           if (r := _refusal(k)) is not None and operation in r.scopes and r.applies(v)]
    if bad:
        raise UnsupportedOptionError(f"cannot {operation} {what}: lakeformat does not implement "
                                     f"{'; '.join(bad)}")


def warn_unknown(raw: Mapping[str, str], what: str = "this table") -> None:
    """Warn about keys that neither Paimon nor lakeformat knows (Paimon ignores them too)."""
    unknown = sorted(k for k in raw if not known_to_paimon(k) and _refusal(k) is None)
    if unknown:
        warnings.warn(f"{what} has option(s) that Paimon does not define, ignored: {', '.join(unknown)}",
                      UnknownOptionWarning, stacklevel=3)


def validate(raw: Mapping[str, Any], *, allow_unknown: bool = False,
             columns: Optional[Sequence[str]] = None) -> dict[str, str]:
    """Options as Paimon's strings, every known key parsed once and checked against its ``BOUNDS``;
    unknown keys are an error unless allowed, and so is a value turning on a feature lakeformat does
    not implement. With the table's ``columns``, options naming columns (``COLUMN_REFERENCES``,
    ``fields.<name>.*``) must name existing ones."""
    out = {k: to_option_string(k, v) for k, v in raw.items()}
    unknown = [k for k in out if not known_to_paimon(k)]
    if unknown and not allow_unknown:
        raise OptionError(f"unknown table option(s): {', '.join(map(_unknown_hint, unknown))}")
    for k, v in out.items():
        if k in _BY_KEY:
            _check_bounds(k, v, _parse(k, v, _BY_KEY[k].parse))
        elif m := FIELD_OPTION.fullmatch(k):
            _parse(k, v, FIELD_SUFFIXES[m.group(2)])
    if columns is not None:
        check_column_references(out, columns)
    opts = Options(out)
    lo, hi = opts.required(SNAPSHOT_NUM_RETAINED_MIN), opts.required(SNAPSHOT_NUM_RETAINED_MAX)
    if lo > hi:
        raise OptionError(f"option {SNAPSHOT_NUM_RETAINED_MIN.key!r} ({lo}) is larger than "
                          f"{SNAPSHOT_NUM_RETAINED_MAX.key!r} ({hi})")
    check_changelog_retention(opts)
    check_iceberg(opts)
    for operation in (READ, WRITE):
        check_supported(out, operation, "a table with these options")
    return out


_EXTERNAL_PATHS = "data-file.external-paths"   # Paimon's; lakeformat reads what Paimon Java writes there


def check_iceberg(opts: Options) -> None:
    """What lakeformat cannot publish as Iceberg metadata readers read right. Deletion vectors
    become position delete files naming each data file by its place in the table's directory,
    so they are refused with data files stored elsewhere."""
    if opts.get(ICEBERG_STORAGE) != "disabled" and opts.get(DELETION_VECTORS) and opts.raw.get(_EXTERNAL_PATHS):
        raise OptionError(f"option {ICEBERG_STORAGE.key!r} ({opts.get(ICEBERG_STORAGE)}) with "
                          f"{DELETION_VECTORS.key!r} = true and {_EXTERNAL_PATHS!r} is not supported: "
                          "lakeformat publishes deletion vectors only for data files in the table's directory")
    if opts.get(ICEBERG_STORAGE) != "disabled" and opts.get(DATA_EVOLUTION):
        raise OptionError(f"option {ICEBERG_STORAGE.key!r} with {DATA_EVOLUTION.key!r} = true is not supported: "
                          "Iceberg readers would read a file of some columns of rows as whole rows")
    formats = {opts.get(FILE_FORMAT), *(opts.get(FILE_FORMAT_PER_LEVEL) or {}).values()}
    if opts.get(ICEBERG_STORAGE) != "disabled" and formats != {"parquet"}:
        raise OptionError(f"option {ICEBERG_STORAGE.key!r} needs Parquet data files: lakeformat's ORC and Avro "
                          f"files carry no Iceberg field ids (file formats set: {', '.join(sorted(formats))})")


def _check_bounds(key: str, text: str, value: Any) -> None:
    option = _BY_KEY[key]
    lo, hi = BOUNDS.get(option.key, (None, None))
    if value is None or (lo is None and hi is None):
        return
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        shown = [to_option_string(key, b) if b is not None else None for b in (lo, hi)]
        want = (f"at least {shown[0]}" if hi is None else f"at most {shown[1]}" if lo is None
                else f"between {shown[0]} and {shown[1]}")
        raise _bad(key, text, f"out of range: it must be {want}")


def check_column_references(options: Mapping[str, str], columns: Sequence[str]) -> None:
    """Every column an option names exists (Paimon's schema validation does the same)."""
    known = set(columns)
    for key, value in options.items():
        if key in COLUMN_REFERENCES:
            named = parse_list(value) if COLUMN_REFERENCES[key] == "columns" else [value.strip()]
        elif m := FIELD_OPTION.fullmatch(key):
            named = parse_list(m.group(1))
            if m.group(2) == "sequence-group":
                named += parse_list(value)
        else:
            continue
        missing = [c for c in named if c not in known]
        if missing:
            raise OptionError(f"option {key!r}: {', '.join(map(repr, missing))} "
                              f"{'is not a column' if len(missing) == 1 else 'are not columns'} of the table; "
                              f"columns are {list(columns)}")


def check_changelog_retention(opts: Options) -> None:
    """Changelog files live exactly as long as their snapshots here. Paimon would move
    changelogs kept longer into separate ``changelog/changelog-N`` files, which lakeformat does
    not implement, so retention longer than the snapshots' is rejected rather than ignored."""
    for c, s in ((CHANGELOG_NUM_RETAINED_MIN, SNAPSHOT_NUM_RETAINED_MIN),
                 (CHANGELOG_NUM_RETAINED_MAX, SNAPSHOT_NUM_RETAINED_MAX),
                 (CHANGELOG_TIME_RETAINED, SNAPSHOT_TIME_RETAINED)):
        cv, sv = opts.get(c), opts.get(s)
        if cv is not None and cv > sv:
            raise OptionError(
                f"option {c.key!r} ({to_option_string(c.key, cv)}) keeps changelogs longer than {s.key!r} "
                f"({to_option_string(s.key, sv)}) keeps snapshots; lakeformat deletes changelog files together "
                f"with their snapshots (Paimon's separate changelog/ files are not supported): set {c.key!r} "
                f"to at most {to_option_string(s.key, sv)}, or leave it unset")
