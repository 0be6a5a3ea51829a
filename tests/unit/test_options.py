"""Table options: Paimon's keys and defaults, the parsers, and create/alter validation."""
import datetime as dt
import re

import pytest

from lakeformat.format import options as O
from lakeformat.errors import OptionError
from lakeformat.format.options import Option, Options, validate

MB = 1 << 20


# -- defaults ---------------------------------------------------------------------------------
@pytest.mark.parametrize("option, default", [
    (O.BUCKET, -1), (O.BUCKET_KEY, None), (O.FILE_FORMAT, "parquet"), (O.FILE_COMPRESSION, "zstd"),
    (O.FILE_COMPRESSION_ZSTD_LEVEL, 1), (O.TARGET_FILE_SIZE, None), (O.WRITE_BUFFER_SIZE, 256 * MB),
    (O.WRITE_BUFFER_SPILLABLE, None), (O.PAGE_SIZE, 64 * 1024), (O.MANIFEST_FORMAT, "avro"),
    (O.MANIFEST_COMPRESSION, "zstd"), (O.MANIFEST_TARGET_FILE_SIZE, 8 * MB), (O.MANIFEST_MERGE_MIN_COUNT, 30),
    (O.MANIFEST_FULL_COMPACTION_SIZE, 16 * MB), (O.COMMIT_MAX_RETRIES, 10), (O.COMMIT_TIMEOUT, None),
    (O.COMMIT_MIN_RETRY_WAIT, dt.timedelta(milliseconds=10)), (O.COMMIT_MAX_RETRY_WAIT, dt.timedelta(seconds=10)),
    (O.COMMIT_USER_PREFIX, None), (O.IGNORE_EMPTY_COMMIT, True), (O.SNAPSHOT_NUM_RETAINED_MIN, 10),
    (O.SNAPSHOT_NUM_RETAINED_MAX, 2**31 - 1), (O.SNAPSHOT_TIME_RETAINED, dt.timedelta(hours=1)),
    (O.SNAPSHOT_EXPIRE_LIMIT, 10), (O.CHANGELOG_PRODUCER, "none"), (O.MERGE_ENGINE, "deduplicate"),
    (O.SEQUENCE_FIELD, None), (O.ROWKIND_FIELD, None), (O.PARTIAL_UPDATE_IGNORE_DELETE, False),
    (O.DEFAULT_AGG_FUNCTION, None), (O.COMPACTION_TRIGGER, 5), (O.STOP_TRIGGER, None), (O.NUM_LEVELS, None),
    (O.MAX_SIZE_AMPLIFICATION, 200), (O.SIZE_RATIO, 1), (O.FULL_COMPACTION_DELTA_COMMITS, None),
    (O.WRITE_ONLY, False), (O.PARTITION_EXPIRATION_TIME, None),
    (O.PARTITION_EXPIRATION_CHECK_INTERVAL, dt.timedelta(hours=1)), (O.PARTITION_TIMESTAMP_FORMATTER, None),
    (O.PARTITION_TIMESTAMP_PATTERN, None), (O.PARTITION_DEFAULT_NAME, "__DEFAULT_PARTITION__"),
    (O.CONSUMER_EXPIRATION_TIME, None), (O.CONSUMER_ID, None), (O.STATS_MODE, "truncate(16)"),
    (O.SCAN_SNAPSHOT_ID, None), (O.SCAN_TIMESTAMP_MILLIS, None), (O.SCAN_TAG_NAME, None), (O.PATH, None),
    (O.TYPE, "table"), (O.LOCK_ACQUIRE_TIMEOUT, dt.timedelta(minutes=8)),
    (O.LOCK_CHECK_MAX_SLEEP, dt.timedelta(seconds=8)), (O.SNAPSHOT_CLEAN_EMPTY_DIRS, False),
    (O.DELETION_VECTORS, False), (O.DYNAMIC_BUCKET_TARGET_ROWS, 2_000_000), (O.DATA_FILE_PREFIX, "data-"),
    (O.CHANGELOG_FILE_PREFIX, "changelog-"), (O.FILE_FORMAT_PER_LEVEL, None),
])
def test_defaults(option, default):
    assert Options({}).get(option) == default
    assert option.default == default


def test_keys_are_paimons():
    keys = {o.key for o in O.registry()}
    for key in ("bucket", "bucket-key", "file.format", "file.compression", "file.compression.zstd-level",
                "target-file-size", "write-buffer-size", "write-buffer-spillable", "page-size", "manifest.format",
                "manifest.compression", "manifest.target-file-size", "manifest.merge-min-count",
                "manifest.full-compaction-threshold-size", "commit.max-retries", "commit.timeout",
                "commit.min-retry-wait", "commit.max-retry-wait", "commit.user-prefix",
                "snapshot.ignore-empty-commit", "snapshot.num-retained.min", "snapshot.num-retained.max",
                "snapshot.time-retained", "snapshot.expire.limit", "changelog-producer", "merge-engine",
                "sequence.field", "rowkind.field", "partial-update.ignore-delete",
                "fields.default-aggregate-function", "num-sorted-run.compaction-trigger",
                "num-sorted-run.stop-trigger", "num-levels", "compaction.max-size-amplification-percent",
                "compaction.size-ratio", "full-compaction.delta-commits", "write-only", "partition.expiration-time",
                "partition.expiration-check-interval", "partition.timestamp-formatter",
                "partition.timestamp-pattern", "partition.default-name", "consumer.expiration-time", "consumer-id",
                "metadata.stats-mode", "scan.snapshot-id", "scan.timestamp-millis", "scan.tag-name", "path", "type",
                "lock.enabled", "lock.acquire-timeout", "lock.check-max-sleep", "snapshot.clean-empty-directories",
                "deletion-vectors.enabled", "dynamic-bucket.target-row-num", "data-file.prefix",
                "changelog-file.prefix", "file.compression.per.level", "file.format.per.level"):
        assert key in keys, key


def test_registry_is_complete_and_documented():
    reg = O.registry()
    assert len({o.key for o in reg}) == len(reg)
    assert all(isinstance(o, Option) and o.doc and "\n" not in o.doc for o in reg)
    assert O.BUCKET in reg and O.COMMIT_TIMEOUT in reg


def test_target_file_size_depends_on_primary_key():
    assert Options({}).target_file_size(has_primary_key=True) == 128 * MB
    assert Options({}).target_file_size(has_primary_key=False) == 256 * MB
    assert Options({"target-file-size": "64 kb"}).target_file_size(True) == 64 * 1024
    assert O.target_file_size(Options({}), False) == 256 * MB


def test_effective_stop_trigger_and_levels():
    assert Options({}).stop_trigger() == 8 and Options({}).num_levels() == 6
    opts = Options({"num-sorted-run.compaction-trigger": "10"})
    assert opts.stop_trigger() == 13 and opts.num_levels() == 11
    assert Options({"num-sorted-run.stop-trigger": "20", "num-levels": "4"}).stop_trigger() == 20
    assert Options({"num-sorted-run.stop-trigger": "2"}).stop_trigger() == 5   # never below the trigger
    assert Options({"num-levels": "4"}).num_levels() == 4


def test_typed_values():
    opts = Options({"bucket": "4", "bucket-key": "a, b,,c", "write-only": "TRUE", "merge-engine": "Partial-Update",
                    "sequence.field": "ts", "snapshot.time-retained": "2 days", "commit.timeout": "30s",
                    "scan.snapshot-id": "9000000000", "metadata.stats-mode": "FULL", "changelog-producer": "lookup"})
    assert opts.get(O.BUCKET) == 4
    assert opts.get(O.BUCKET_KEY) == ["a", "b", "c"]
    assert opts.get(O.WRITE_ONLY) is True
    assert opts.get(O.MERGE_ENGINE) == "partial-update"
    assert opts.get(O.SEQUENCE_FIELD) == ["ts"]
    assert opts.get(O.SNAPSHOT_TIME_RETAINED) == dt.timedelta(days=2)
    assert opts.get(O.COMMIT_TIMEOUT) == dt.timedelta(seconds=30)
    assert opts.get(O.SCAN_SNAPSHOT_ID) == 9_000_000_000
    assert opts.get(O.STATS_MODE) == "full"
    assert opts.get(O.CHANGELOG_PRODUCER) == "lookup"
    assert opts.raw["bucket"] == "4"


def test_fallback_keys():
    assert Options({"ignore-empty-commit": "false"}).get(O.IGNORE_EMPTY_COMMIT) is False
    assert Options({"snapshot.ignore-empty-commit": "false", "ignore-empty-commit": "true"}).get(
        O.IGNORE_EMPTY_COMMIT) is False
    assert Options({"partial-update.ignore-delete": "true"}).get(O.IGNORE_DELETE) is True


# -- parsers ----------------------------------------------------------------------------------
@pytest.mark.parametrize("text, expected", [
    ("64 mb", 64 * MB), ("128MB", 128 * MB), ("1 gb", 1 << 30), ("512 kb", 512 << 10), ("100 b", 100),
    ("4096", 4096), ("2 bytes", 2), ("1k", 1024), ("3 m", 3 * MB), ("1 t", 1 << 40), (" 8 Mb ", 8 * MB),
    ("1 mebibytes", MB), ("0", 0),
])
def test_parse_memory(text, expected):
    assert O.parse_memory(text) == expected


@pytest.mark.parametrize("text", ["", "mb", "1.5 gb", "-1 mb", "64 mib", "64 megabytes", "1 pb", "ten mb",
                                  str(2**63) + " b", "8 mb x"])
def test_parse_memory_rejects(text):
    with pytest.raises(ValueError):
        O.parse_memory(text)


@pytest.mark.parametrize("text, expected", [
    ("1 h", dt.timedelta(hours=1)), ("30 min", dt.timedelta(minutes=30)), ("10 s", dt.timedelta(seconds=10)),
    ("100 ms", dt.timedelta(milliseconds=100)), ("1 d", dt.timedelta(days=1)), ("2 days", dt.timedelta(days=2)),
    ("5min", dt.timedelta(minutes=5)), ("5 m", dt.timedelta(minutes=5)), ("3 hours", dt.timedelta(hours=3)),
    ("7 secs", dt.timedelta(seconds=7)), ("1 MIN", dt.timedelta(minutes=1)), ("250", dt.timedelta(milliseconds=250)),
    ("5 millis", dt.timedelta(milliseconds=5)), ("9 µs", dt.timedelta(microseconds=9)),
    ("1500 ns", dt.timedelta(microseconds=1)), ("0 s", dt.timedelta(0)), (" 2 h ", dt.timedelta(hours=2)),
])
def test_parse_duration(text, expected):
    assert O.parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "h", "1.5 h", "-1 s", "1 hr", "30 mins", "1 week", "soon", "1 h 30 min",
                                  "99999999999999 d"])
def test_parse_duration_rejects(text):
    with pytest.raises(ValueError):
        O.parse_duration(text)


def test_parse_int_bool_list_enum():
    assert O.parse_int("42") == 42 and O.parse_int("-7") == -7 and O.parse_int("+3") == 3
    for bad in ("abc", "1.0", "", " 1", "1_000", str(2**31)):
        with pytest.raises(ValueError):
            O.parse_int(bad)
    assert O.parse_long(str(2**40)) == 2**40
    with pytest.raises(ValueError):
        O.parse_long(str(2**63))
    assert O.parse_bool("true") is True and O.parse_bool("False") is False and O.parse_bool("TRUE") is True
    for bad in ("yes", "1", "", "tru"):
        with pytest.raises(ValueError):
            O.parse_bool(bad)
    assert O.parse_list("a,b , c,") == ["a", "b", "c"] and O.parse_list("") == []
    colour = O.enum("red", "green")
    assert colour("RED") == "red"
    with pytest.raises(ValueError, match="not one of red, green"):
        colour("blue")
    assert O.parse_level_map("0:LZ4, 3:zstd") == {0: "lz4", 3: "zstd"}
    for bad in ("0", "x:lz4", "0:"):
        with pytest.raises(ValueError):
            O.parse_level_map(bad)
    assert O.parse_stats_mode("Truncate(32)") == "truncate(32)"
    with pytest.raises(ValueError):
        O.parse_stats_mode("truncate")


@pytest.mark.parametrize("option, value, message", [
    (O.BUCKET, "abc", "option 'bucket': 'abc' is not an integer"),
    (O.BUCKET, "0", "option 'bucket': '0' is not -1"),
    (O.BUCKET, "-3", "option 'bucket': '-3' is not -1 (dynamic bucket) or a positive number"),
    (O.BUCKET, "-2", "option 'bucket': '-2' is postpone bucket mode, valid in Paimon but not supported"),
    (O.BUCKET, "99999999999", "option 'bucket': '99999999999' is out of range"),
    (O.WRITE_ONLY, "yes", "option 'write-only': 'yes' is not 'true' or 'false'"),
    (O.TARGET_FILE_SIZE, "big", "option 'target-file-size': 'big' is not a memory size"),
    (O.COMMIT_TIMEOUT, "soon", "option 'commit.timeout': 'soon' is not a duration"),
    (O.MERGE_ENGINE, "upsert", "option 'merge-engine': 'upsert' is not one of deduplicate, partial-update"),
    (O.CHANGELOG_PRODUCER, "always", "option 'changelog-producer': 'always' is not one of none"),
    (O.STATS_MODE, "some", "option 'metadata.stats-mode': 'some' is not one of none, counts, full"),
    (O.FILE_FORMAT, "csv", "option 'file.format': 'csv' is not one of parquet, orc, avro"),
    (O.FILE_COMPRESSION, "rar", "option 'file.compression': 'rar' is not one of"),
    (O.FILE_COMPRESSION_PER_LEVEL, "zstd", "option 'file.compression.per.level': 'zstd' is not a map"),
])
def test_bad_values_name_key_value_and_expectation(option, value, message):
    with pytest.raises(OptionError, match=re.escape(message)):
        Options({option.key: value}).get(option)
    with pytest.raises(OptionError, match=re.escape(message)):
        validate({option.key: value})


def test_bad_value_in_fallback_key_names_that_key():
    with pytest.raises(OptionError, match="option 'ignore-empty-commit': 'nope'"):
        Options({"ignore-empty-commit": "nope"}).get(O.IGNORE_EMPTY_COMMIT)


# -- per-field options -------------------------------------------------------------------------
def test_field_options_accepted_and_typed():
    raw = {"fields.price.aggregate-function": "sum", "fields.price.ignore-retract": "true",
           "fields.g_1,g_2.sequence-group": "a,b", "fields.tags.list-agg-delimiter": ";",
           "fields.tags.distinct": "false", "fields.items.nested-key": "id,sub",
           "fields.qty.default-value": "0", "fields.name.stats-mode": "truncate(8)",
           "fields.a.b.aggregate-function": "max",
           "file.compression.per.level": "0:lz4,1:zstd", "file.format.per.level": "0:avro,3:parquet"}
    refused = ("fields.qty.default-value", "file.format.per.level")   # parsed, but their features are refused
    accepted = {k: v for k, v in raw.items() if k not in refused}
    assert validate(accepted) == accepted
    opts = Options(raw)
    assert opts.field_option("price", "aggregate-function") == "sum"
    assert opts.field_option("price", "ignore-retract") is True
    assert opts.field_option("g_1,g_2", "sequence-group") == ["a", "b"]
    assert opts.field_option("tags", "distinct") is False
    assert opts.field_option("items", "nested-key") == ["id", "sub"]
    assert opts.field_option("name", "stats-mode") == "truncate(8)"
    assert opts.field_option("a.b", "aggregate-function") == "max"
    assert opts.field_option("qty", "aggregate-function") is None
    assert opts.get(O.FILE_COMPRESSION_PER_LEVEL) == {0: "lz4", 1: "zstd"}
    assert opts.get(O.FILE_FORMAT_PER_LEVEL) == {0: "avro", 3: "parquet"}
    with pytest.raises(OptionError, match="not a per-field option"):
        opts.field_option("price", "colour")


def test_field_option_values_are_checked():
    with pytest.raises(OptionError, match=r"option 'fields.price.ignore-retract': 'maybe' is not 'true' or 'false'"):
        validate({"fields.price.ignore-retract": "maybe"})
    with pytest.raises(OptionError, match=r"'fields.name.stats-mode': 'some'"):
        Options({"fields.name.stats-mode": "some"}).field_option("name", "stats-mode")


# -- validate ---------------------------------------------------------------------------------
def test_unknown_keys_rejected_with_suggestion():
    with pytest.raises(OptionError, match=r"unknown table option\(s\): 'bukcet' \(did you mean 'bucket'\?\)"):
        validate({"bukcet": "2"})
    with pytest.raises(OptionError, match=r"'snapshot.num-retained.mn'.*did you mean 'snapshot.num-retained.min'"):
        validate({"snapshot.num-retained.mn": "3"})
    with pytest.raises(OptionError, match=r"did you mean 'fields.price.aggregate-function'"):
        validate({"fields.price.agregate-function": "sum"})
    with pytest.raises(OptionError, match=r"'write-bufer-size'.*'zzz-qqq'"):   # all unknown keys are listed
        validate({"write-bufer-size": "1 mb", "zzz-qqq": "1"})


def test_allow_unknown_keeps_them_but_still_checks_known():
    assert validate({"my.custom": "x", "bucket": "2"}, allow_unknown=True) == {"my.custom": "x", "bucket": "2"}
    with pytest.raises(OptionError, match="'bucket'"):
        validate({"my.custom": "x", "bucket": "two"}, allow_unknown=True)


def test_validate_converts_python_values_to_paimon_strings():
    out = validate({"bucket": 4, "write-only": True, "snapshot.clean-empty-directories": False,
                    "bucket-key": ["a", "b"], "snapshot.time-retained": dt.timedelta(minutes=90),
                    "commit.min-retry-wait": dt.timedelta(milliseconds=5), "target-file-size": 1024})
    assert out == {"bucket": "4", "write-only": "true", "snapshot.clean-empty-directories": "false",
                   "bucket-key": "a,b", "snapshot.time-retained": "90 min", "commit.min-retry-wait": "5 ms",
                   "target-file-size": "1024"}
    assert all(isinstance(v, str) for v in out.values())
    assert Options(out).get(O.SNAPSHOT_TIME_RETAINED) == dt.timedelta(minutes=90)
    with pytest.raises(OptionError, match="option 'bucket': None is not a string"):
        validate({"bucket": None})
    with pytest.raises(OptionError, match="option keys must be strings"):
        validate({1: "x"})
    with pytest.raises(OptionError, match=r"option 'bucket': '2.5' is not an integer"):
        validate({"bucket": 2.5})


def test_validate_accepts_defaults_as_strings_and_empty():
    assert validate({}) == {}
    out = validate({"bucket": "-1", "file.format": "PARQUET", "deletion-vectors.enabled": "false",
                    "commit.timeout": "1 min", "snapshot.num-retained.max": "20", "lock.enabled": "false",
                    "ignore-empty-commit": "false", "merge-engine": "first-row", "type": "table"})
    assert out["file.format"] == "PARQUET"   # validate keeps the user's string; get() normalises
    assert Options(out).get(O.FILE_FORMAT) == "parquet"
    assert Options(out).get(O.DELETION_VECTORS) is False


def test_snapshot_retention_bounds():
    with pytest.raises(OptionError, match=r"'snapshot.num-retained.min': '0' is out of range: it must be at least 1"):
        validate({"snapshot.num-retained.min": "0"})
    with pytest.raises(OptionError, match=r"'snapshot.num-retained.min' \(5\) is larger than"):
        validate({"snapshot.num-retained.min": "5", "snapshot.num-retained.max": "3"})
