"""Iceberg manifests and manifest lists (format version 2) as Avro, with Iceberg's field ids.

A manifest holds ``manifest_entry`` records (status ADDED, EXISTING or DELETED, the snapshot and
sequence numbers, and the ``data_file`` struct with the partition tuple and column metrics); a
manifest list holds one ``manifest_file`` record per manifest with its counts and per-field
partition summaries, which readers use to skip manifests. Maps with int keys are Avro arrays of
key/value records (``logicalType: map``), as Iceberg writes them.
"""
from __future__ import annotations

import io
import json
import os
import struct
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Optional, cast
from collections.abc import Sequence

import cramjam
import fastavro

from lakeformat.format import types as T
from lakeformat.format.avro_varint import write_long
from lakeformat.format.binary_row import java_big_integer_bytes
from lakeformat.format.iceberg.values import decimal_bytes, fixed_decimal, physical, to_bytes

EXISTING, ADDED, DELETED = 0, 1, 2
DATA, POSITION_DELETES = 0, 1   # content of a data_file, and of a manifest (data or deletes)
FORMAT_VERSION = 2
CODECS = {"snappy": "snappy", "deflate": "deflate", "gzip": "deflate", "zstd": "zstandard",
          "zstandard": "zstandard", "none": "null", "null": "null", "uncompressed": "null"}


def _opt(name: str, t: Any, field_id: int) -> dict:
    return {"name": name, "type": ["null", t], "default": None, "field-id": field_id}


def _req(name: str, t: Any, field_id: int) -> dict:
    return {"name": name, "type": t, "field-id": field_id}


def _int_map(name: str, field_id: int, key_id: int, value_type: str) -> dict:
    record = {"type": "record", "name": f"k{key_id}_v{key_id + 1}", "fields": [
        _req("key", "int", key_id), _req("value", value_type, key_id + 1)]}
    return _opt(name, {"type": "array", "items": record, "logicalType": "map"}, field_id)


def _partition_avro_type(t: T.AtomicType, field_id: int) -> Any:
    r = t.root
    if r in ("BOOLEAN",):
        return "boolean"
    if r in ("TINYINT", "SMALLINT", "INT"):
        return "int"
    if r == "BIGINT":
        return "long"
    if r in ("FLOAT", "DOUBLE"):
        return "float" if r == "FLOAT" else "double"
    if r == "DATE":
        return {"type": "int", "logicalType": "date"}
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": r == "TIMESTAMP_LTZ"}
    if r in ("CHAR", "VARCHAR"):
        return "string"
    if r in ("BINARY", "VARBINARY"):
        return "bytes"
    if r == "DECIMAL":
        return {"type": "fixed", "name": f"fixed_{field_id}", "size": decimal_bytes(t.params[0]),
                "logicalType": "decimal", "precision": t.params[0], "scale": t.params[1]}
    raise ValueError(f"no Iceberg partition type for {t}")


@dataclass(frozen=True)
class PartitionField:
    name: str
    field_id: int
    type: T.AtomicType


@lru_cache(maxsize=64)
def schema_json(partition: Optional[tuple[PartitionField, ...]]) -> str:
    """The JSON of a manifest's Avro schema (of the manifest list's with None), for the header."""
    return json.dumps(MANIFEST_LIST_SCHEMA if partition is None else manifest_schema(partition))


@lru_cache(maxsize=64)
def manifest_schema(partition: tuple[PartitionField, ...]) -> dict:
    """The (parsed) Avro schema of a version-2 manifest whose partition struct is ``partition``."""
    part = {"type": "record", "name": "r102",
            "fields": [_opt(p.name, _partition_avro_type(p.type, p.field_id), p.field_id) for p in partition]}
    data_file = {"type": "record", "name": "r2", "fields": [
        _req("content", "int", 134), _req("file_path", "string", 100), _req("file_format", "string", 101),
        _req("partition", part, 102), _req("record_count", "long", 103), _req("file_size_in_bytes", "long", 104),
        _int_map("column_sizes", 108, 117, "long"), _int_map("value_counts", 109, 119, "long"),
        _int_map("null_value_counts", 110, 121, "long"), _int_map("nan_value_counts", 137, 138, "long"),
        _int_map("lower_bounds", 125, 126, "bytes"), _int_map("upper_bounds", 128, 129, "bytes"),
        _opt("key_metadata", "bytes", 131),
        _opt("split_offsets", {"type": "array", "items": "long", "element-id": 133}, 132),
        _opt("equality_ids", {"type": "array", "items": "int", "element-id": 136}, 135),
        _opt("sort_order_id", "int", 140)]}
    return cast(dict, fastavro.parse_schema({"type": "record", "name": "manifest_entry", "fields": [
        _req("status", "int", 0), _opt("snapshot_id", "long", 1), _opt("sequence_number", "long", 3),
        _opt("file_sequence_number", "long", 4), _req("data_file", data_file, 2)]}))


_SUMMARY = {"type": "record", "name": "r508", "fields": [
    _req("contains_null", "boolean", 509), _opt("contains_nan", "boolean", 518),
    _opt("lower_bound", "bytes", 510), _opt("upper_bound", "bytes", 511)]}
MANIFEST_LIST_SCHEMA: dict = cast(dict, fastavro.parse_schema({"type": "record", "name": "manifest_file", "fields": [
    _req("manifest_path", "string", 500), _req("manifest_length", "long", 501),
    _req("partition_spec_id", "int", 502), _req("content", "int", 517),
    _req("sequence_number", "long", 515), _req("min_sequence_number", "long", 516),
    _req("added_snapshot_id", "long", 503), _req("added_files_count", "int", 504),
    _req("existing_files_count", "int", 505), _req("deleted_files_count", "int", 506),
    _req("added_rows_count", "long", 512), _req("existing_rows_count", "long", 513),
    _req("deleted_rows_count", "long", 514),
    _opt("partitions", {"type": "array", "items": _SUMMARY, "element-id": 508}, 507),
    _opt("key_metadata", "bytes", 519)]}))


def _map(d: dict) -> Optional[list]:
    return [{"key": k, "value": v} for k, v in sorted(d.items())] if d else None


def data_file(path: str, partition_values: Sequence[Any], partition: Sequence[PartitionField],
              record_count: int, file_size: int, null_counts: dict, lower: dict, upper: dict) -> dict:
    """A ``data_file`` record of a Parquet data file."""
    part = {}
    for p, v in zip(partition, partition_values):
        v = physical(v, p.type)
        if p.type.root == "DECIMAL" and v is not None:
            v = fixed_decimal(v, p.type.params[0])
        part[p.name] = v
    return {"content": 0, "file_path": path, "file_format": "PARQUET", "partition": part,
            "record_count": record_count, "file_size_in_bytes": file_size, "column_sizes": None,
            "value_counts": None, "null_value_counts": _map(null_counts), "nan_value_counts": None,
            "lower_bounds": _map(lower), "upper_bounds": _map(upper), "key_metadata": None,
            "split_offsets": None, "equality_ids": None, "sort_order_id": None}


FILE_PATH_ID = 2147483546   # Iceberg's reserved field id of a position delete's file_path


def position_deletes_file(path: str, partition_values: Sequence[Any], partition: Sequence[PartitionField],
                          record_count: int, file_size: int, data_files: Sequence[str]) -> dict:
    """A ``data_file`` record of a Parquet position delete file (``file_path``, ``pos`` rows)
    about ``data_files``; the bounds of their paths let readers skip it for other files."""
    bounds = (({FILE_PATH_ID: min(data_files).encode()}, {FILE_PATH_ID: max(data_files).encode()}) if data_files
              else ({}, {}))
    return {**data_file(path, partition_values, partition, record_count, file_size, {}, *bounds),
            "content": POSITION_DELETES}


def entry(status: int, snapshot_id: int, sequence_number: int, file_sequence_number: int, data: dict) -> dict:
    return {"status": status, "snapshot_id": snapshot_id, "sequence_number": sequence_number,
            "file_sequence_number": file_sequence_number, "data_file": data}


def encode(schema: dict, record: dict) -> bytes:
    """One record in Avro's binary encoding (what a container file's blocks concatenate)."""
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, schema, record)
    return buf.getvalue()


def _bytes(b: bytes) -> bytes:
    return write_long(len(b)) + b


@lru_cache(maxsize=128)
def _header(schema: str, metadata: tuple[tuple[str, str], ...], codec: str) -> bytes:
    """An Avro container's header up to its sync marker (manifests of one table share it)."""
    header = {"avro.schema": schema.encode(), "avro.codec": codec.encode(),
              **{k: v.encode() for k, v in metadata}}
    out = [b"Obj\x01", write_long(len(header))]
    out += [_bytes(k.encode()) + _bytes(v) for k, v in header.items()]
    out.append(write_long(0))
    return b"".join(out)


def container(schema: str, encoded: Sequence[bytes], metadata: dict[str, str], codec: str) -> bytes:
    """An Avro object container file of already encoded records, in one block. Iceberg's
    manifest lists carry the same manifests commit after commit; encoding each once and
    reusing its bytes keeps writing the next list cheap however many it names."""
    codec = CODECS[codec]
    sync = os.urandom(16)
    out = [_header(schema, tuple(metadata.items()), codec), sync]
    if encoded:
        data = b"".join(encoded)
        if codec == "snappy":
            data = bytes(cramjam.snappy.compress_raw(data)) + struct.pack(">I", zlib.crc32(data))
        elif codec == "deflate":
            c = zlib.compressobj(wbits=-15)
            data = c.compress(data) + c.flush()
        elif codec == "zstandard":
            data = bytes(cramjam.zstd.compress(data))
        out += [write_long(len(encoded)), write_long(len(data)), data, sync]
    return b"".join(out)


def _string(b: bytes) -> bytes:
    return write_long(len(b)) + b


def _partition_writer(t: T.AtomicType):
    """Avro bytes of a present partition value of type ``t`` (in its physical form)."""
    r = t.root
    if r == "BOOLEAN":
        return lambda v: b"\x01" if v else b"\x00"
    if r in ("TINYINT", "SMALLINT", "INT", "BIGINT", "DATE", "TIMESTAMP", "TIMESTAMP_LTZ"):
        return write_long
    if r in ("FLOAT", "DOUBLE"):
        fmt = struct.Struct("<f" if r == "FLOAT" else "<d")
        return fmt.pack
    if r in ("CHAR", "VARCHAR"):
        return lambda v: _string(v.encode())
    if r in ("BINARY", "VARBINARY"):
        return lambda v: _string(bytes(v))
    if r == "DECIMAL":
        return bytes   # fixed: its bytes as they are
    raise ValueError(f"no Iceberg partition type for {t}")


def _opt_long(v: Optional[int]) -> bytes:
    return b"\x00" if v is None else b"\x02" + write_long(v)


def _long_array(values: Optional[Sequence[int]]) -> bytes:
    if values is None:
        return b"\x00"
    return b"".join([b"\x02", write_long(len(values)) if values else b"", *map(write_long, values), b"\x00"])


def _int_map_bytes(pairs: Optional[Sequence[dict]], of_bytes: bool) -> bytes:
    """An optional int-keyed map as Iceberg writes it: an array of key/value records."""
    if pairs is None:
        return b"\x00"
    out = [b"\x02"]
    if pairs:
        out.append(write_long(len(pairs)))
        for kv in pairs:
            out.append(write_long(kv["key"]))
            out.append(_string(kv["value"]) if of_bytes else write_long(kv["value"]))
    out.append(b"\x00")
    return b"".join(out)


class _EntryWriter:
    """Avro bytes of a ``manifest_entry`` of one partition type, written field by field: what
    :func:`encode` gives, at a fraction of its cost (fastavro tries each branch of the optional
    maps by validating the whole value)."""

    def __init__(self, partition: tuple[PartitionField, ...]):
        self.partition = [(p.name, _partition_writer(p.type)) for p in partition]

    def __call__(self, e: dict) -> bytes:
        d = e["data_file"]
        part = d["partition"]
        out = [write_long(e["status"]), _opt_long(e["snapshot_id"]), _opt_long(e["sequence_number"]),
               _opt_long(e["file_sequence_number"]), write_long(d["content"]),
               _string(d["file_path"].encode()), _string(d["file_format"].encode())]
        for name, write in self.partition:
            v = part.get(name)
            out.append(b"\x00" if v is None else b"\x02" + write(v))
        out += [write_long(d["record_count"]), write_long(d["file_size_in_bytes"]),
                _int_map_bytes(d.get("column_sizes"), False), _int_map_bytes(d.get("value_counts"), False),
                _int_map_bytes(d.get("null_value_counts"), False), _int_map_bytes(d.get("nan_value_counts"), False),
                _int_map_bytes(d.get("lower_bounds"), True), _int_map_bytes(d.get("upper_bounds"), True),
                b"\x00" if d.get("key_metadata") is None else b"\x02" + _string(d["key_metadata"]),
                _long_array(d.get("split_offsets")), _long_array(d.get("equality_ids")),
                _opt_long(d.get("sort_order_id"))]
        return b"".join(out)


_STATUS_BYTES = {s: write_long(s) for s in (EXISTING, ADDED, DELETED)}


class EntryEncoder:
    """Encodes the manifest entries of one partition type, each data file once. An entry's
    Avro bytes are its status, then the rest (its snapshot and sequence numbers and its
    ``data_file``); merging small manifests and rewriting one after a removal change only the
    status of the entries they copy, so the rest is kept, by data file record, and reused."""

    def __init__(self, partition: tuple[PartitionField, ...], kept: int = 100_000):
        self.write = _EntryWriter(partition)
        self.kept = kept
        self._rest: OrderedDict[int, tuple[dict, tuple, bytes]] = OrderedDict()   # id(data_file) ->

    def __call__(self, e: dict) -> bytes:
        data_file = e["data_file"]
        numbers = (e["snapshot_id"], e["sequence_number"], e["file_sequence_number"])
        hit = self._rest.get(id(data_file))
        if hit is not None and hit[0] is data_file and hit[1] == numbers:
            return _STATUS_BYTES[e["status"]] + hit[2]
        data = self.write(e)
        # the record is kept with its bytes, so its id names it as long as they are kept
        self._rest[id(data_file)] = (data_file, numbers, data[len(_STATUS_BYTES[e["status"]]):])
        while len(self._rest) > self.kept:
            self._rest.popitem(last=False)
        return data


@lru_cache(maxsize=64)
def entry_encoder(partition: tuple[PartitionField, ...]) -> EntryEncoder:
    return EntryEncoder(partition)


def write_manifest(partition: tuple[PartitionField, ...], entries: Sequence[dict], metadata: dict[str, str],
                   codec: str) -> bytes:
    """A manifest file; ``metadata`` carries the table schema and partition spec as Iceberg's
    readers expect them in the Avro header (``schema``, ``partition-spec``, ...)."""
    encoder = entry_encoder(partition)
    return container(schema_json(partition), [encoder(e) for e in entries], metadata, codec)


def read_records(data: bytes) -> list[dict]:
    return cast(list[dict], list(fastavro.reader(io.BytesIO(data))))   # a record schema: dicts


def manifest_metadata(iceberg_schema: dict, spec_fields: list[dict], content: int = DATA) -> dict[str, str]:
    return {"schema": json.dumps(iceberg_schema), "schema-id": str(iceberg_schema["schema-id"]),
            "partition-spec": json.dumps(spec_fields), "partition-spec-id": "0",
            "format-version": str(FORMAT_VERSION), "content": "deletes" if content == POSITION_DELETES else "data"}


def write_manifest_list(encoded: Sequence[bytes], snapshot_id: int, parent_id: Optional[int],
                        sequence_number: int, codec: str) -> bytes:
    """A manifest list of ``encoded`` manifest_file records (see :func:`encode`)."""
    meta = {"snapshot-id": str(snapshot_id), "parent-snapshot-id": "null" if parent_id is None else str(parent_id),
            "sequence-number": str(sequence_number), "format-version": str(FORMAT_VERSION)}
    return container(schema_json(None), encoded, meta, codec)


def _physical_bytes(v: Any, t: T.AtomicType) -> Optional[bytes]:
    """Single-value bytes of a partition value in its Avro (physical) form."""
    r = t.root
    if r == "DATE":
        return struct.pack("<i", v)
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return struct.pack("<q", v)
    if r == "DECIMAL":
        return java_big_integer_bytes(v)
    return to_bytes(v, t)


def partition_summaries(records: Sequence[dict], partition: Sequence[PartitionField]) -> list[dict]:
    """One field summary per partition field over the ``data_file`` records of a manifest."""
    out = []
    for p in partition:
        col = [r["partition"][p.name] for r in records]
        if p.type.root == "DECIMAL":
            col = [None if v is None else int.from_bytes(v, "big", signed=True) for v in col]
        floating = p.type.root in ("FLOAT", "DOUBLE")
        present = [v for v in col if v is not None and not (floating and v != v)]
        out.append({"contains_null": any(v is None for v in col),
                    "contains_nan": any(v is not None and v != v for v in col) if floating else None,
                    "lower_bound": _physical_bytes(min(present), p.type) if present else None,
                    "upper_bound": _physical_bytes(max(present), p.type) if present else None})
    return out


def manifest_file(path: str, length: int, snapshot_id: int, sequence_number: int, min_sequence_number: int,
                  entries: Sequence[dict], partition: Sequence[PartitionField], content: int = DATA) -> dict:
    """The manifest list record of a manifest holding ``entries`` (data files, or position delete
    files with ``content`` POSITION_DELETES)."""
    summaries = partition_summaries([e["data_file"] for e in entries], partition)
    counts = {ADDED: [0, 0], EXISTING: [0, 0], DELETED: [0, 0]}
    for e in entries:
        c = counts[e["status"]]
        c[0] += 1
        c[1] += e["data_file"]["record_count"]
    return {"manifest_path": path, "manifest_length": length, "partition_spec_id": 0, "content": content,
            "sequence_number": sequence_number, "min_sequence_number": min_sequence_number,
            "added_snapshot_id": snapshot_id, "added_files_count": counts[ADDED][0],
            "existing_files_count": counts[EXISTING][0], "deleted_files_count": counts[DELETED][0],
            "added_rows_count": counts[ADDED][1], "existing_rows_count": counts[EXISTING][1],
            "deleted_rows_count": counts[DELETED][1], "partitions": summaries or None, "key_metadata": None}
