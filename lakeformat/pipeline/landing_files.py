"""Where landing files live and how one is parsed: a local folder or an object store.

The landing root is a path, a ``file://`` URI or ``s3://bucket/prefix``, reached through
:class:`lakeformat.io.fileio.FileIO` with the catalog options the warehouse uses (``s3.endpoint``,
``s3.access-key``...): the same store configuration, credentials never in arguments.

Spark reads local landing folders with its own JSON and CSV readers. This Spark has no S3
connector, so on an object store the driver lists a unit's files here and the executors parse
each with :func:`read_file`, which follows the local reader's rules (``FAILFAST``): the table's
columns as the schema, fields the schema lacks ignored, missing ones null; CSV columns by
position after a header line, an empty field null; a value of the wrong type or a malformed
line fails, naming the file. Like Spark, names starting with ``_`` or ``.`` are not data
(``_SUCCESS``, temp files); compressed files (``.gz``...) are read by their extension.
"""
from __future__ import annotations

import io
from typing import Optional
from collections.abc import Mapping
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.fs as pafs
import pyarrow.json as pjson

from lakeformat.errors import DataError, LakeformatError, NotFoundError
from lakeformat.io.fileio import FileIO, join
from lakeformat.secrets import mask

BOOLEAN_TEXT = (["true", "True", "TRUE"], ["false", "False", "FALSE"])


def is_remote(root: str) -> bool:
    """Whether ``root`` is on an object store (Spark's own readers cannot reach it)."""
    return urlparse(root).scheme not in ("", "file")


def landing_io(root: str, options: Optional[Mapping[str, str]] = None) -> FileIO:
    """The store of ``root`` with the warehouse's storage ``options`` (``s3.*``)."""
    return FileIO.for_uri(root, {k: v for k, v in (options or {}).items() if k.startswith("s3.")})


def folder_present(folder: str, options: Optional[Mapping[str, str]] = None) -> bool:
    """Whether ``folder`` exists (on an object store: some object lies under its prefix)."""
    try:
        return landing_io(folder, options).is_dir(folder)
    except OSError as e:   # unreachable store, refused credentials: say which folder
        raise LakeformatError(f"cannot check landing folder {folder}: {mask(e)}") from None


def list_files(folder: str, options: Optional[Mapping[str, str]] = None) -> list[str]:
    """The data files directly in ``folder`` (URIs or paths, sorted); a missing folder is a
    ``NotFoundError``, a sub-folder an error naming it (its files would be left out)."""
    if not folder_present(folder, options):
        raise NotFoundError(f"no landing folder {folder}")
    files: list[str] = []
    folders: list[str] = []
    for info in landing_io(folder, options).list_dir(folder):
        if info.base_name.startswith(("_", ".")):
            continue
        (folders if info.type == pafs.FileType.Directory else files).append(join(folder, info.base_name))
    if folders:
        raise DataError(f"landing folder {folder} holds folder(s) {sorted(folders)}: a unit's files lie "
                        "directly in its folder")
    return sorted(files)


def read_file(uri: str, fmt: str, schema: pa.Schema, options: Optional[Mapping[str, str]] = None,
              time_zone: str = "UTC") -> pa.Table:
    """One landing file (``fmt`` jsonl or csv) as a table of ``schema``; ``time_zone`` is the
    zone of zone-less text in zoned timestamp columns (Spark's session time zone)."""
    raw = landing_io(uri, options).read_bytes(uri)   # decompressed by the file's extension
    text_schema = pa.schema([pa.field(f.name, _as_text(f.type)) for f in schema])
    try:
        if not raw.strip():
            parsed = text_schema.empty_table()
        elif fmt == "jsonl":
            parsed = pjson.read_json(io.BytesIO(raw), parse_options=pjson.ParseOptions(
                explicit_schema=text_schema, unexpected_field_behavior="ignore"))
        elif fmt == "csv":
            parsed = pcsv.read_csv(io.BytesIO(raw), read_options=pcsv.ReadOptions(
                column_names=schema.names, skip_rows=1), convert_options=pcsv.ConvertOptions(
                column_types=text_schema, null_values=[""], strings_can_be_null=True,
                true_values=BOOLEAN_TEXT[0], false_values=BOOLEAN_TEXT[1]))
        else:
            raise LakeformatError(f"unknown landing format {fmt!r} for {uri}: use jsonl or csv")
        return pa.Table.from_arrays([_typed(parsed.column(f.name), f.type, time_zone) for f in schema],
                                    schema=schema)
    except pa.ArrowInvalid as e:
        raise DataError(f"malformed landing file {uri}: {e}") from None


def _as_text(t: pa.DataType) -> pa.DataType:
    """The type a column is parsed as: text for what the JSON reader cannot parse itself
    (dates, decimals, times) and for timestamps (zoned ones need the session's zone)."""
    if pa.types.is_date(t) or pa.types.is_decimal(t) or pa.types.is_time(t) or pa.types.is_timestamp(t):
        return pa.string()
    return t


def _typed(col: pa.ChunkedArray, t: pa.DataType, time_zone: str) -> pa.ChunkedArray:
    if col.type.equals(t):
        return col
    if pa.types.is_timestamp(t) and t.tz is not None:
        try:
            local = pc.cast(col, pa.timestamp(t.unit))
        except pa.ArrowInvalid:   # text with zone offsets
            return pc.cast(col, t)
        return pc.assume_timezone(local, time_zone).cast(t)
    return pc.cast(col, t)
