"""Snapshots: the ``snapshot/snapshot-N`` JSON (version 3) and the commit kinds."""
from __future__ import annotations

import json
import uuid as uuid_module
from dataclasses import asdict, dataclass, field
from typing import Optional

SNAPSHOT_VERSION = 3
APPEND, COMPACT, OVERWRITE, ANALYZE = "APPEND", "COMPACT", "OVERWRITE", "ANALYZE"

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
    def from_json(cls, text: str) -> "Snapshot":
        d = json.loads(text)
        reverse = {v: k for k, v in _JSON_KEYS.items()}
        return cls(**{reverse[k]: v for k, v in d.items() if k in reverse})

    def manifest_lists(self) -> list[str]:
        return [n for n in (self.base_manifest_list, self.delta_manifest_list,
                            self.changelog_manifest_list) if n]


