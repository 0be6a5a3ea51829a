"""Iceberg table metadata (``vN.metadata.json``, format version 2) of a published Paimon table.

Iceberg snapshot N is Paimon snapshot N: same id, its commit time, its schema id, sequence
number N. The metadata keeps the Iceberg snapshots of the Paimon snapshots still retained, so it
is as long as Paimon's retention allows; each snapshot's JSON (and its snapshot-log entry) is
rendered once and kept, so writing the next version costs a concatenation, not a rendering of
the whole history.
"""
from __future__ import annotations

import bisect
import json
import operator
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
    def from_dict(cls, d: dict) -> IcebergSnapshot:
        return cls(d["snapshot-id"], d.get("parent-snapshot-id"), d["timestamp-ms"], d["manifest-list"],
                   d.get("schema-id", 0), d.get("summary") or {})


class _Rendered:
    """Snapshots rendered already, ascending by id: each one's JSON and snapshot-log entry,
    joined in two buffers that grow at the end and shrink at the front as the lineage does, so a
    version writes them as they are (no string of the whole history is built per version)."""

    def __init__(self):
        self.ids: list[int] = []
        self.snaps: list[IcebergSnapshot] = []
        self.lengths: list[tuple[int, int]] = []   # bytes of each one's JSON and log entry
        self.snapshots, self.log = bytearray(), bytearray()

    def continued_by(self, snaps: list[IcebergSnapshot]) -> Optional[int]:
        """If ``snaps`` are these snapshots less some of the oldest plus newer ones: how many of
        the oldest to drop."""
        if not snaps or not self.ids:
            return None
        k = bisect.bisect_left(self.ids, snaps[0].snapshot_id)
        m = len(self.ids) - k
        if m == 0 or m > len(snaps) or not all(map(operator.is_, self.snaps[k:], snaps[:m])):
            return None
        return k

    def drop_oldest(self, n: int) -> None:
        if n:
            cut_s = sum(a for a, _ in self.lengths[:n]) + n   # with the comma after each
            cut_l = sum(b for _, b in self.lengths[:n]) + n
            del self.snapshots[:cut_s], self.log[:cut_l], self.ids[:n], self.snaps[:n], self.lengths[:n]

    def append(self, s: IcebergSnapshot) -> None:
        text = json.dumps(s.to_dict(), separators=(",", ":")).encode()
        log = f'{{"timestamp-ms":{s.timestamp_ms},"snapshot-id":{s.snapshot_id}}}'.encode()
        if self.ids:
            self.snapshots += b","
            self.log += b","
        self.snapshots += text
        self.log += log
        self.ids.append(s.snapshot_id)
        self.snaps.append(s)
        self.lengths.append((len(text), len(log)))


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
    tags: dict[str, int] = field(default_factory=dict)   # Paimon tag name -> its (retained) snapshot id
    _rendered: dict = field(default_factory=dict, repr=False)   # "snapshots" -> _Rendered; "schemas" -> (ids, JSON)

    @property
    def current(self) -> Optional[IcebergSnapshot]:
        return self.snapshots[-1] if self.snapshots else None

    def copy(self, **changes) -> TableMetadata:
        new = replace(self, **changes)
        new._rendered = self._rendered
        return new

    def refs(self) -> dict:
        """Iceberg's refs: the ``main`` branch at the current snapshot, and a tag ref per Paimon
        tag (as Paimon exports them)."""
        cur = self.current
        if cur is None:
            return {}
        refs = {name: {"snapshot-id": sid, "type": "tag"} for name, sid in sorted(self.tags.items())
                if name != MAIN}
        refs[MAIN] = {"snapshot-id": cur.snapshot_id, "type": "branch"}
        return refs

    def to_json(self) -> str:
        return b"".join(self.json_parts()).decode()

    def json_parts(self) -> list:
        """The JSON of this metadata as a list of bytes-like parts, to be written before the
        next rendering of its lineage (two of them are buffers that rendering reuses)."""
        cur = self.current
        head = {
            "format-version": FORMAT_VERSION, "table-uuid": self.table_uuid, "location": self.location,
            "last-sequence-number": cur.snapshot_id if cur else 0,
            "last-updated-ms": cur.timestamp_ms if cur else 0,
            "last-column-id": max((f["id"] for s in self.schemas for f in s["fields"]), default=0),
            "current-schema-id": max(s["schema-id"] for s in self.schemas),
            "default-spec-id": 0,
            "partition-specs": [{"spec-id": 0, "fields": self.partition_spec}],
            "last-partition-id": self.last_partition_id, "default-sort-order-id": 0,
            "sort-orders": [{"order-id": 0, "fields": []}], "properties": self.properties,
            "current-snapshot-id": cur.snapshot_id if cur else -1,
            "refs": self.refs(),
            "metadata-log": []}
        body = json.dumps(head, separators=(",", ":"))
        rendered = self._rendered
        key = tuple(s["schema-id"] for s in self.schemas)
        if rendered.get("schemas", (None,))[0] != key:
            rendered["schemas"] = (key, json.dumps(self.schemas, separators=(",", ":")))
        r = self._render_snapshots()
        return [f'{body[:-1]},"schemas":{rendered["schemas"][1]},"snapshots":['.encode(), r.snapshots,
                b'],"snapshot-log":[', r.log, b"]}"]

    def _render_snapshots(self) -> _Rendered:
        """The snapshots rendered. A lineage of metadata only appends snapshots and drops the
        oldest, so each snapshot is rendered once, and the next version costs the new ones."""
        r: Optional[_Rendered] = self._rendered.get("snapshots")
        drop = r.continued_by(self.snapshots) if r is not None else None
        if r is None or drop is None:
            r = self._rendered["snapshots"] = _Rendered()
            new = self.snapshots
        else:
            r.drop_oldest(drop)
            new = self.snapshots[len(r.ids):]
        for s in new:
            r.append(s)
        return r

    @classmethod
    def from_json(cls, text: str) -> TableMetadata:
        d = json.loads(text)
        if d.get("format-version") != FORMAT_VERSION:
            raise ValueError(f"format-version {d.get('format-version')} (this publisher writes {FORMAT_VERSION})")
        specs = {s["spec-id"]: s for s in d.get("partition-specs", [])}
        spec = specs.get(d.get("default-spec-id", 0), {"fields": []})
        tags = {name: r["snapshot-id"] for name, r in (d.get("refs") or {}).items() if r.get("type") == "tag"}
        return cls(d["table-uuid"], d["location"], list(d.get("schemas", [])), list(spec["fields"]),
                   d.get("last-partition-id", 999), dict(d.get("properties") or {}),
                   [IcebergSnapshot.from_dict(s) for s in sorted(d.get("snapshots", []),
                                                                 key=lambda s: s["snapshot-id"])], tags)
