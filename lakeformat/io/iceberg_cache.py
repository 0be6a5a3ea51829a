"""What an Iceberg publisher remembers between publishes, owned by whoever keeps it alive (the
``Catalog``, handed to each ``Table`` it opens) instead of by the module: a fresh catalog starts
cold as a fresh process does, and two catalogs of one process never see each other's state.

Everything here is a shortcut, never the truth: ``known`` is checked against ``version-hint.text``
before use, manifests and their list records never change once written, and a tag file is keyed
by its name, time and size.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Optional
from collections.abc import Callable

KEPT = 512   # manifests (and tag files) remembered; manifest list records four times as many


def _bounded(cache: OrderedDict, limit: int) -> None:
    while len(cache) > limit:
        cache.popitem(last=False)


@dataclass
class IcebergCache:
    """The state an ``IcebergPublisher`` reuses across publishes of the tables sharing it."""

    known: dict[str, Any] = field(default_factory=dict)   # metadata dir -> what was published last there
    manifest_metadata: dict[tuple, dict[str, str]] = field(default_factory=dict)   # (dir, schema, content) -> header
    entries: OrderedDict[str, list[dict]] = field(default_factory=OrderedDict)   # manifests written, newest last
    tag_snapshots: OrderedDict[tuple, int] = field(default_factory=OrderedDict)  # (tag dir, name, mtime, size) -> id
    list_records: OrderedDict[str, bytes] = field(default_factory=OrderedDict)   # manifest path -> encoded record

    def remember_entries(self, path: str, entries: list[dict]) -> None:
        self.entries[path] = entries
        _bounded(self.entries, KEPT)

    def tag_snapshot(self, key: tuple, load: Callable[[], int]) -> int:
        sid = self.tag_snapshots.get(key)
        if sid is None:
            sid = self.tag_snapshots[key] = load()
            _bounded(self.tag_snapshots, KEPT)
        return sid

    def encoded(self, key: str, encode: Callable[[], bytes]) -> bytes:
        data = self.list_records.get(key)
        if data is None:
            data = self.list_records[key] = encode()
            _bounded(self.list_records, KEPT * 4)
        return data

    def forget(self, metadata_dir: Optional[str] = None) -> None:
        """Forget what was published (in one metadata directory, or everywhere): the next
        publish reads it back from storage, as a new process would."""
        if metadata_dir is None:
            self.known.clear()
            self.entries.clear()
        else:
            self.known.pop(metadata_dir, None)
