"""The schemas of one table on storage: ``<table>/schema/schema-N``, created if absent so that
two concurrent ALTERs cannot both win."""
from __future__ import annotations

from typing import Optional

from lakeformat.errors import CorruptFileError, NotFoundError, SchemaError, UnsupportedError
from lakeformat.format.schema import TableSchema
from lakeformat.io.fileio import FileIO, join


class SchemaManager:
    """Reads and writes ``<table>/schema/schema-N``."""

    def __init__(self, io: FileIO, table_path: str):
        self.io = io
        self.dir = join(table_path, "schema")
        self._cache: dict[int, TableSchema] = {}

    def path(self, schema_id: int) -> str:
        return join(self.dir, f"schema-{schema_id}")

    def list_ids(self) -> list[int]:
        ids = []
        for name in self.io.list_names(self.dir):
            if name.startswith("schema-") and name[7:].isdigit():
                ids.append(int(name[7:]))
        return sorted(ids)

    def latest(self) -> Optional[TableSchema]:
        ids = self.list_ids()
        return self.get(ids[-1]) if ids else None

    def get(self, schema_id: int) -> TableSchema:
        if schema_id not in self._cache:
            path = self.path(schema_id)
            try:
                text = self.io.read_bytes(path)
            except FileNotFoundError:
                raise NotFoundError(f"schema {schema_id} not found at {path}") from None
            try:
                self._cache[schema_id] = TableSchema.from_json(text.decode())
            except UnsupportedError as e:   # valid in Paimon, not corrupt: say what is missing
                raise type(e)(f"{path}: {e}") from None
            except (ValueError, KeyError, TypeError, AttributeError, OverflowError, UnicodeDecodeError,
                    SchemaError) as e:
                raise CorruptFileError(path, f"cannot parse schema: {e}") from None
        return self._cache[schema_id]

    def create(self, schema: TableSchema) -> bool:
        """Write ``schema`` as ``schema-<id>`` if no schema of that id exists."""
        return self.io.try_create(self.path(schema.id), schema.to_json().encode())
