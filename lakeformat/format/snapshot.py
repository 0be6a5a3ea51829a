"""Snapshots: the ``snapshot/snapshot-N`` JSON (version 3) and the commit kinds."""
from __future__ import annotations

import json
import uuid as uuid_module
from dataclasses import asdict, dataclass, field
from typing import Optional

from lakeformat.format.metadata_checks import (
    SNAPSHOT_KEYS_IGNORED,
    UnsupportedMetadataError,
    check_json_keys,
    check_version,
)
from lakeformat.format.names import check_file_name

SNAPSHOT_VERSION = 3
APPEND, COMPACT, OVERWRITE, ANALYZE = "APPEND", "COMPACT", "OVERWRITE", "ANALYZE"
COMMIT_KINDS = (APPEND, COMPACT, OVERWRITE, ANALYZE)

# JSON key for each field, in the order Paimon writes them.
_JSON_KEYS = {
    "version": "version", "id": "id", "schema_id": "schemaId",
    "base_manifest_list": "baseManifestList", "delta_manifest_list": "deltaManifestList",
    "changelog_manifest_list": "changelogManifestList", "index_manifest": "indexManifest",
    "commit_user": "commitUser", "commit_identifier": "commitIdentifier", "commit_kind": "commitKind",
    "time_millis": "timeMillis", "log_offsets": "logOffsets", "total_record_count": "totalRecordCount",
    "delta_record_count": "deltaRecordCount", "changelog_record_count": "changelogRecordCount",
    "watermark": "watermark", "statistics": "statistics", "properties": "properties",
    "next_row_id": "nextRowId", "base_manifest_list_size": "baseManifestListSize",
    "delta_manifest_list_size": "deltaManifestListSize",
    "changelog_manifest_list_size": "changelogManifestListSize", "uuid": "uuid",
}


@dataclass(frozen=True)
class Snapshot:
    id: int
    schema_id: int
    base_manifest_list: str
    delta_manifest_list: str
    commit_user: str
    commit_identifier: int
    commit_kind: str
    time_millis: int
    total_record_count: int
    delta_record_count: int
    changelog_manifest_list: Optional[str] = None
    changelog_record_count: Optional[int] = None
    index_manifest: Optional[str] = None
    log_offsets: Optional[dict] = None
    watermark: Optional[int] = None
    statistics: Optional[str] = None
    properties: Optional[dict] = None
    next_row_id: Optional[int] = None
    base_manifest_list_size: Optional[int] = None
    delta_manifest_list_size: Optional[int] = None
    changelog_manifest_list_size: Optional[int] = None
    uuid: str = field(default_factory=lambda: str(uuid_module.uuid4()))
    version: int = SNAPSHOT_VERSION

    def to_json(self) -> str:
        d = asdict(self)
        out = {_JSON_KEYS[k]: d[k] for k in _JSON_KEYS if d.get(k) is not None}
        return json.dumps(out, indent=2)

    @classmethod
    def from_json(cls, text: str) -> Snapshot:
        """The snapshot in ``text``; ValueError naming the first field that is missing or of the
        wrong type (a snapshot, tag or changelog file that is not one is corrupt, whatever it holds)."""
        d = json.loads(text)
        if not isinstance(d, dict):
            raise ValueError(f"not a JSON object but a JSON {type(d).__name__}")
        reverse = {v: k for k, v in _JSON_KEYS.items()}
        kwargs = {reverse[k]: v for k, v in d.items() if k in reverse and v is not None}
        missing = [_JSON_KEYS[k] for k in _REQUIRED if k not in kwargs]
        if missing:
            raise ValueError(f"missing {', '.join(missing)}")
        # a snapshot, but of a newer Paimon?
        check_version(d.get("version"), SNAPSHOT_VERSION, "snapshot")
        check_json_keys(d, _JSON_KEYS.values(), "snapshot", ignored=SNAPSHOT_KEYS_IGNORED)
        for k, v in kwargs.items():
            want = _FIELD_TYPES.get(k)
            if want is not None and (not isinstance(v, want) or isinstance(v, bool)):
                raise ValueError(f"{_JSON_KEYS[k]} is {v!r}, not {_TYPE_NAMES[want]}")
        for k in _FILE_NAMES:
            if k in kwargs:
                check_file_name(kwargs[k], _JSON_KEYS[k])
        if kwargs["commit_kind"] not in COMMIT_KINDS:   # an incremental read would skip it: refuse instead
            raise UnsupportedMetadataError(
                f"snapshot {kwargs['id']} has commitKind {kwargs['commit_kind']!r}, not one lakeformat knows "
                f"({', '.join(COMMIT_KINDS)}; written by a newer Paimon?)")
        return cls(**kwargs)

    def manifest_lists(self) -> list[str]:
        return [n for n in (self.base_manifest_list, self.delta_manifest_list,
                            self.changelog_manifest_list) if n]




_REQUIRED = ("id", "schema_id", "base_manifest_list", "delta_manifest_list", "commit_user",
             "commit_identifier", "commit_kind", "time_millis", "total_record_count", "delta_record_count")
_FILE_NAMES = ("base_manifest_list", "delta_manifest_list", "changelog_manifest_list", "index_manifest", "statistics")
_FIELD_TYPES = {**{k: int for k in ("version", "id", "schema_id", "commit_identifier", "time_millis",
                                    "total_record_count", "delta_record_count", "changelog_record_count",
                                    "watermark", "next_row_id", "base_manifest_list_size",
                                    "delta_manifest_list_size", "changelog_manifest_list_size")},
                **{k: str for k in ("commit_user", "commit_kind", "uuid") + _FILE_NAMES},
                "log_offsets": dict, "properties": dict}
_TYPE_NAMES = {int: "an integer", str: "a string", dict: "a JSON object"}


def inherited(latest: Optional[Snapshot], schema_id: int, statistics_schema_id: Optional[int]) -> dict:
    """What a new snapshot keeps of ``latest``, as Paimon's committer does: its watermark and log
    offsets (lakeformat's commits bring none of their own), and its statistics file while the
    statistics describe the table's current schema ``schema_id`` (``statistics_schema_id``: the
    schema the file says it describes, None if unknown). Dropping them would lose a streaming
    writer's watermark and the optimizer's statistics at the first lakeformat commit."""
    if latest is None:
        return {}
    keep_statistics = latest.statistics is not None and statistics_schema_id == schema_id
    return {"watermark": latest.watermark, "log_offsets": latest.log_offsets,
            "statistics": latest.statistics if keep_statistics else None}
