"""Iceberg table metadata (``vN.metadata.json``, format version 2) of a published Paimon table.

Iceberg snapshot N is Paimon snapshot N: same id, its commit time, its schema id, sequence
number N. The metadata keeps the Iceberg snapshots of the Paimon snapshots still retained, so it
is as long as Paimon's retention allows; each snapshot's JSON is rendered once and kept, so
writing the next version costs a concatenation, not a rendering of the whole history.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Optional

from lakeformat.format.iceberg.manifest import FORMAT_VERSION

MAIN = "main"


@dataclass(frozen=True)
class IcebergSnapshot:
    snapshot_id: int
    parent_id: Optional[int]
    timestamp_ms: int
    manifest_list: str
    schema_id: int
    summary: dict = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict:
        d = {"snapshot-id": self.snapshot_id, "sequence-number": self.snapshot_id,
             "timestamp-ms": self.timestamp_ms, "manifest-list": self.manifest_list,
             "summary": self.summary, "schema-id": self.schema_id}
        if self.parent_id is not None:
            d["parent-snapshot-id"] = self.parent_id
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "IcebergSnapshot":
        return cls(d["snapshot-id"], d.get("parent-snapshot-id"), d["timestamp-ms"], d["manifest-list"],
                   d.get("schema-id", 0), d.get("summary") or {})


@dataclass
class TableMetadata:
    """The parts of Iceberg table metadata this publisher writes. ``snapshots`` ascend by id;
    the last one is current."""

    table_uuid: str
    location: str
    schemas: list[dict]
    partition_spec: list[dict]
    last_partition_id: int
    properties: dict
    snapshots: list[IcebergSnapshot]
    _rendered: dict = field(default_factory=dict, repr=False)   # snapshot id -> its JSON text

    @property
    def current(self) -> Optional[IcebergSnapshot]:
        return self.snapshots[-1] if self.snapshots else None

    def copy(self, **changes) -> "TableMetadata":
        new = replace(self, **changes)
        new._rendered = self._rendered
        return new

    def to_json(self) -> str:
        cur = self.current
        head = {
            "format-version": FORMAT_VERSION, "table-uuid": self.table_uuid, "location": self.location,
            "last-sequence-number": cur.snapshot_id if cur else 0,
            "last-updated-ms": cur.timestamp_ms if cur else 0,
            "last-column-id": max((f["id"] for s in self.schemas for f in s["fields"]), default=0),
            "current-schema-id": max(s["schema-id"] for s in self.schemas),
            "schemas": self.schemas, "default-spec-id": 0,
            "partition-specs": [{"spec-id": 0, "fields": self.partition_spec}],
            "last-partition-id": self.last_partition_id, "default-sort-order-id": 0,
            "sort-orders": [{"order-id": 0, "fields": []}], "properties": self.properties,
            "current-snapshot-id": cur.snapshot_id if cur else -1,
            "refs": {MAIN: {"snapshot-id": cur.snapshot_id, "type": "branch"}} if cur else {},
            "metadata-log": []}
        rendered = self._rendered
        snaps = []
        for s in self.snapshots:
            text = rendered.get(s.snapshot_id)
            if text is None:
                text = rendered[s.snapshot_id] = json.dumps(s.to_dict(), separators=(",", ":"))
            snaps.append(text)
        for sid in [k for k in rendered if k < (self.snapshots[0].snapshot_id if self.snapshots else 0)]:
            del rendered[sid]
        log = ",".join(f'{{"timestamp-ms":{s.timestamp_ms},"snapshot-id":{s.snapshot_id}}}' for s in self.snapshots)
        body = json.dumps(head, separators=(",", ":"))
        return f'{body[:-1]},"snapshots":[{",".join(snaps)}],"snapshot-log":[{log}]}}'

    @classmethod
    def from_json(cls, text: str) -> "TableMetadata":
        d = json.loads(text)
        if d.get("format-version") != FORMAT_VERSION:
            raise ValueError(f"format-version {d.get('format-version')} (this publisher writes {FORMAT_VERSION})")
        specs = {s["spec-id"]: s for s in d.get("partition-specs", [])}
        spec = specs.get(d.get("default-spec-id", 0), {"fields": []})
        return cls(d["table-uuid"], d["location"], list(d.get("schemas", [])), list(spec["fields"]),
                   d.get("last-partition-id", 999), dict(d.get("properties") or {}),
                   [IcebergSnapshot.from_dict(s) for s in sorted(d.get("snapshots", []),
                                                                 key=lambda s: s["snapshot-id"])])
