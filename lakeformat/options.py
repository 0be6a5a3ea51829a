"""Every table option in one typed place: Paimon's keys, defaults and a one-line doc each.

Schemas store options as strings; ``Options.get(OPTION)`` parses on access and names the option
when a value is bad. ``validate`` is what create/alter run: unknown keys are rejected (with the
closest known key as a hint) and every known key must parse.
"""
from __future__ import annotations

import datetime as dt
import difflib
import re
from dataclasses import dataclass
from typing import Any, Callable, Generic, Mapping, Optional, TypeVar

from lakeformat.errors import OptionError

T = TypeVar("T")

_SIZE_UNITS = {"b": 1, "bytes": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20,
               "mb": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
               "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40}
_DURATION_UNITS = {
    "ms": 0.001, "milli": 0.001, "millis": 0.001, "millisecond": 0.001, "milliseconds": 0.001,
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "min": 60, "mins": 60, "minute": 60, "minutes": 60, "m": 60,
    "h": 3600, "hour": 3600, "hours": 3600, "d": 86400, "day": 86400, "days": 86400,
}
_NUM_UNIT = re.compile(r"^\s*(\d+)\s*([a-zA-Z]*)\s*$")


def parse_int(v: str) -> int:
    try:
        return int(str(v).strip())
    except ValueError:
        raise ValueError("not an integer") from None


def parse_bool(v: str) -> bool:
    s = str(v).strip().lower()
    if s not in ("true", "false"):
        raise ValueError("not 'true' or 'false'")
    return s == "true"


def parse_memory(v: str) -> int:
    """Paimon memory sizes: '64 mb', '128MB', '1 gb', '512 kb', plain bytes."""
    m = _NUM_UNIT.match(str(v))
    if not m or m.group(2).lower() not in _SIZE_UNITS | {"": 1}:
        raise ValueError("not a memory size like '64 mb' or '1 gb'")
    return int(m.group(1)) * _SIZE_UNITS.get(m.group(2).lower(), 1)


def parse_duration(v: str) -> dt.timedelta:
    """Paimon durations: '1 h', '30 min', '10 s', '100 ms', '2 days'; a plain number is millis."""
    m = _NUM_UNIT.match(str(v))
    if not m or m.group(2).lower() not in _DURATION_UNITS | {"": 0.001}:
        raise ValueError("not a duration like '1 h', '30 min' or '10 s'")
    return dt.timedelta(seconds=int(m.group(1)) * _DURATION_UNITS.get(m.group(2).lower(), 0.001))


def parse_list(v: str) -> list[str]:
    return [x.strip() for x in str(v).split(",") if x.strip()]


def enum(*choices: str) -> Callable[[str], str]:
    def parse(v: str) -> str:
        s = str(v).strip().lower()
        if s not in choices:
            raise ValueError(f"not one of {', '.join(choices)}")
        return s
    return parse


def parse_stats_mode(v: str) -> str:
    s = str(v).strip().lower()
    if s in ("none", "counts", "full") or re.fullmatch(r"truncate\(\d+\)", s):
        return s
    raise ValueError("not one of none, counts, full, truncate(N)")


@dataclass(frozen=True)
class Option(Generic[T]):
    key: str
    default: Optional[T]
    parse: Callable[[str], T]
    doc: str


_REGISTRY: dict[str, Option] = {}


def _opt(key: str, default, parse, doc: str) -> Option:
    o = Option(key, default, parse, doc)
    _REGISTRY[key] = o
    return o


MB = 1 << 20
# -- layout and files
BUCKET = _opt("bucket", -1, parse_int, "Number of buckets; -1 means bucket-unaware (append tables).")
BUCKET_KEY = _opt("bucket-key", None, parse_list, "Columns hashed to pick a bucket; default: primary key minus partition keys.")
FILE_FORMAT = _opt("file.format", "parquet", enum("parquet"), "Format of data files (lakeformat writes Parquet).")
FILE_COMPRESSION = _opt("file.compression", "zstd", enum("zstd", "snappy", "gzip", "lz4", "brotli", "none"), "Compression codec of data files.")
FILE_COMPRESSION_ZSTD_LEVEL = _opt("file.compression.zstd-level", 1, parse_int, "Zstandard level of data files.")
TARGET_FILE_SIZE = _opt("target-file-size", None, parse_memory, "Roll data files at this size; default 128 mb (primary key) or 256 mb (append).")
WRITE_BUFFER_SIZE = _opt("write-buffer-size", 256 * MB, parse_memory, "Memory for sorting a bucket's writes before a flush.")
WRITE_BUFFER_SPILLABLE = _opt("write-buffer-spillable", None, parse_bool, "Spill sorted runs to local disk when the buffer is full.")
PAGE_SIZE = _opt("page-size", 64 << 10, parse_memory, "Memory page size of write buffers.")
DATA_FILE_PREFIX = _opt("data-file.prefix", "data-", str, "File name prefix of data files.")
CHANGELOG_FILE_PREFIX = _opt("changelog-file.prefix", "changelog-", str, "File name prefix of changelog files.")
PARTITION_DEFAULT_NAME = _opt("partition.default-name", "__DEFAULT_PARTITION__", str, "Directory name of a null or empty partition value.")
STATS_MODE = _opt("metadata.stats-mode", "truncate(16)", parse_stats_mode, "Which column statistics data files carry.")
PATH = _opt("path", None, str, "Location of the table (set by the catalog).")
TYPE = _opt("type", "table", str, "Kind of table.")
DELETION_VECTORS = _opt("deletion-vectors.enabled", False, parse_bool, "Deletion vectors (not supported by lakeformat yet).")
DYNAMIC_BUCKET_TARGET_ROWS = _opt("dynamic-bucket.target-row-num", 2_000_000, parse_int, "Rows per bucket in dynamic bucket mode.")
# -- manifests and commit
MANIFEST_FORMAT = _opt("manifest.format", "avro", enum("avro"), "Format of manifest files.")
MANIFEST_COMPRESSION = _opt("manifest.compression", "zstd", enum("zstd", "snappy", "deflate", "null", "none"), "Compression of manifests.")
MANIFEST_TARGET_FILE_SIZE = _opt("manifest.target-file-size", 8 * MB, parse_memory, "Target size of manifest files.")
MANIFEST_MERGE_MIN_COUNT = _opt("manifest.merge-min-count", 30, parse_int, "Merge small manifests once there are this many.")
MANIFEST_FULL_COMPACTION_SIZE = _opt("manifest.full-compaction-threshold-size", 16 * MB, parse_memory, "Rewrite all manifests when deletes add up to this size.")
COMMIT_MAX_RETRIES = _opt("commit.max-retries", 10, parse_int, "Attempts after losing the race for a snapshot id.")
COMMIT_TIMEOUT = _opt("commit.timeout", None, parse_duration, "Give up committing after this long.")
COMMIT_MIN_RETRY_WAIT = _opt("commit.min-retry-wait", dt.timedelta(milliseconds=10), parse_duration, "First backoff between commit attempts.")
COMMIT_MAX_RETRY_WAIT = _opt("commit.max-retry-wait", dt.timedelta(seconds=10), parse_duration, "Longest backoff between commit attempts.")
COMMIT_USER_PREFIX = _opt("commit.user-prefix", None, str, "Prefix of generated commit users.")
IGNORE_EMPTY_COMMIT = _opt("ignore-empty-commit", True, parse_bool, "An empty commit makes no snapshot.")
# -- snapshots, partitions, consumers
SNAPSHOT_NUM_RETAINED_MIN = _opt("snapshot.num-retained.min", 10, parse_int, "Keep at least this many snapshots.")
SNAPSHOT_NUM_RETAINED_MAX = _opt("snapshot.num-retained.max", 2**31 - 1, parse_int, "Keep at most this many snapshots.")
SNAPSHOT_TIME_RETAINED = _opt("snapshot.time-retained", dt.timedelta(hours=1), parse_duration, "Keep snapshots younger than this.")
SNAPSHOT_EXPIRE_LIMIT = _opt("snapshot.expire.limit", 10, parse_int, "Expire at most this many snapshots per run.")
SNAPSHOT_CLEAN_EMPTY_DIRS = _opt("snapshot.clean-empty-directories", False, parse_bool, "Remove emptied partition directories on expiration.")
PARTITION_EXPIRATION_TIME = _opt("partition.expiration-time", None, parse_duration, "Drop partitions older than this.")
PARTITION_EXPIRATION_CHECK_INTERVAL = _opt("partition.expiration-check-interval", dt.timedelta(hours=1), parse_duration, "How often writers check for expired partitions.")
PARTITION_TIMESTAMP_FORMATTER = _opt("partition.timestamp-formatter", None, str, "Java-style pattern parsing partition values to time, e.g. yyyyMMdd.")
PARTITION_TIMESTAMP_PATTERN = _opt("partition.timestamp-pattern", None, str, "How partition fields form a timestamp, e.g. '$dt $hour:00:00'.")
CONSUMER_EXPIRATION_TIME = _opt("consumer.expiration-time", None, parse_duration, "Drop consumers idle longer than this.")
CONSUMER_ID = _opt("consumer-id", None, str, "Consumer that records a streaming reader's progress.")
SCAN_SNAPSHOT_ID = _opt("scan.snapshot-id", None, parse_int, "Read this snapshot.")
SCAN_TIMESTAMP_MILLIS = _opt("scan.timestamp-millis", None, parse_int, "Read the snapshot current at this time.")
SCAN_TAG_NAME = _opt("scan.tag-name", None, str, "Read this tag.")
# -- merge tree
MERGE_ENGINE = _opt("merge-engine", "deduplicate", enum("deduplicate", "partial-update", "aggregation", "first-row"), "How rows with the same key merge.")
CHANGELOG_PRODUCER = _opt("changelog-producer", "none", enum("none", "input", "full-compaction", "lookup"), "How changelog files are produced.")
SEQUENCE_FIELD = _opt("sequence.field", None, parse_list, "Columns that order versions of a key instead of arrival order.")
ROWKIND_FIELD = _opt("rowkind.field", None, str, "Column holding each row's kind (+I, -U, +U, -D).")
PARTIAL_UPDATE_IGNORE_DELETE = _opt("partial-update.ignore-delete", False, parse_bool, "Partial update ignores delete rows.")
DEFAULT_AGG_FUNCTION = _opt("fields.default-aggregate-function", None, str, "Aggregate function of fields without their own.")
COMPACTION_TRIGGER = _opt("num-sorted-run.compaction-trigger", 5, parse_int, "Sorted runs that trigger a compaction.")
STOP_TRIGGER = _opt("num-sorted-run.stop-trigger", None, parse_int, "Sorted runs that stop writes until compaction catches up; default trigger + 3.")
NUM_LEVELS = _opt("num-levels", None, parse_int, "Levels of the LSM tree; default trigger + 1.")
MAX_SIZE_AMPLIFICATION = _opt("compaction.max-size-amplification-percent", 200, parse_int, "Size amplification that triggers a full compaction.")
SIZE_RATIO = _opt("compaction.size-ratio", 1, parse_int, "Percentage flexibility when comparing sorted run sizes.")
FULL_COMPACTION_DELTA_COMMITS = _opt("full-compaction.delta-commits", None, parse_int, "Full compaction every this many commits.")
WRITE_ONLY = _opt("write-only", False, parse_bool, "Writers skip compaction and expiration (dedicated compaction).")
# -- locks
LOCK_ENABLED = _opt("lock.enabled", False, parse_bool, "Take a catalog lock around snapshot creation.")
LOCK_ACQUIRE_TIMEOUT = _opt("lock.acquire-timeout", dt.timedelta(minutes=8), parse_duration, "Give up acquiring the lock after this long.")
LOCK_CHECK_MAX_SLEEP = _opt("lock.check-max-sleep", dt.timedelta(seconds=8), parse_duration, "Longest wait between lock attempts.")

# Per-field and per-level options, recognised by pattern.
FIELD_OPTION = re.compile(r"^fields\.[^.]+\.(aggregate-function|ignore-retract|sequence-group|"
                          r"list-agg-delimiter|distinct|nested-key|default-value|stats-mode)$")
OTHER_PATTERNS = (FIELD_OPTION, re.compile(r"^file\.(compression|format)\.per\.level$"))


def registry() -> list[Option]:
    return list(_REGISTRY.values())


def _stringify(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


class Options:
    """Typed, read-only access to a table's option strings."""

    def __init__(self, raw: Mapping[str, Any]):
        self.raw = {k: _stringify(v) for k, v in raw.items()}

    def get(self, option: Option[T]) -> Optional[T]:
        v = self.raw.get(option.key)
        if v is None:
            return option.default
        try:
            return option.parse(v)
        except ValueError as e:
            raise OptionError(f"option {option.key!r}: {v!r} is {e}") from None

    def field_option(self, field: str, suffix: str) -> Optional[str]:
        return self.raw.get(f"fields.{field}.{suffix}")


def target_file_size(opts: Options, has_primary_key: bool) -> int:
    v = opts.get(TARGET_FILE_SIZE)
    return v if v is not None else (128 if has_primary_key else 256) * MB


def validate(raw: Mapping[str, Any], *, allow_unknown: bool = False) -> dict[str, str]:
    """Options as Paimon's strings, each known key parsed once; unknown keys are an error."""
    out = {k: _stringify(v) for k, v in raw.items()}
    unknown = [k for k in out if k not in _REGISTRY and not any(p.match(k) for p in OTHER_PATTERNS)]
    if unknown and not allow_unknown:
        hints = []
        for k in unknown:
            close = difflib.get_close_matches(k, _REGISTRY, n=1)
            hints.append(f"{k!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise OptionError(f"unknown table option(s): {', '.join(hints)}")
    opts = Options(out)
    for k in out:
        if k in _REGISTRY:
            opts.get(_REGISTRY[k])
    return out
