"""Manifests and manifest lists of one table on storage (``manifest/``): written in chunks of the
target size, read whole or only the partitions a scan asks for. Avro (Paimon's default) or ORC
(``manifest.format = orc``, ``io/manifest_orc.py``); a file is read by the form its bytes have."""
from __future__ import annotations

import io
import uuid
from concurrent.futures import ThreadPoolExecutor
from array import array
from itertools import accumulate, groupby, pairwise
from typing import Optional, Union, cast
from collections.abc import Callable, Iterable, Iterator, Sequence

import fastavro

from lakeformat.errors import CorruptFileError
from lakeformat.format.binary_row import deserialize_row, serialize_row
from lakeformat.format.metadata_checks import UnsupportedMetadataError, with_path
from lakeformat.format.manifest import (
    ADD,
    EMPTY_ROW,
    MANIFEST_ENTRY_SCHEMA,
    MANIFEST_FILE_META_SCHEMA,
    SORTED_BY,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
    entries_from_arrow,
    file_names_from_arrow,
    keys_from_arrow,
    _avro_codec,
    _filtered_records,
    _write_avro,
    _write_sorted_avro,
)
from lakeformat.format.partition import PartitionFilter, sort_key, sortable
from lakeformat.format.types import DataType
from lakeformat.io import avro_blocks, manifest_cache
from lakeformat.io.fileio import FileIO, join
from lakeformat.io.manifest_orc import is_orc, read_orc, write_orc


def _file_names(record: dict) -> tuple:
    f = ManifestEntry.from_avro(record).file
    return (f.file_name, *f.extra_files)


# decoded column by column (each with what the same is of one record, for where that cannot run):
ENTRIES = manifest_cache.Columns(entries_from_arrow, ManifestEntry.from_avro)   # manifest entries
FILE_NAMES = manifest_cache.Columns(file_names_from_arrow, _file_names)   # the file names each entry names
KEYS = manifest_cache.Columns(keys_from_arrow, lambda r: ManifestEntry.from_avro(r).key)   # what a merge decides on


def _read_bytes(fio: FileIO, path: str) -> bytes:
    try:
        return fio.read_bytes(path)
    except FileNotFoundError:
        raise CorruptFileError(path, "metadata file is missing") from None


def _read_records(fio: FileIO, path: str) -> list[dict]:
    data = _read_bytes(fio, path)
    orc = is_orc(data)
    try:
        return read_orc(data) if orc else cast(list[dict], list(fastavro.reader(io.BytesIO(data))))   # records: dicts
    except Exception as e:  # fastavro and the ORC reader raise many kinds on garbage input
        raise CorruptFileError(path, f"cannot read {'ORC' if orc else 'Avro'}: {e}") from None


def _read_values(fio: FileIO, path: str, kind: str, from_avro, data: Optional[bytes] = None,
                 convert=None) -> list:
    """Values of a manifest (list) (``data``: its bytes, if read already): ORC decoded whole
    (``from_avro`` of each record), Avro block by block through the cache of decoded blocks
    (``io/manifest_cache.py``; ``convert``, by default ``from_avro``)."""
    data = _read_bytes(fio, path) if data is None else data
    if is_orc(data):
        try:
            records = read_orc(data)
        except Exception as e:   # the ORC reader raises many kinds on garbage input
            raise CorruptFileError(path, f"cannot read ORC: {e}") from None
        return _decode(path, from_avro, records)
    try:
        return manifest_cache.decode(data, kind, convert or from_avro)
    except Exception as e:
        raise _avro_error(path, e) from None


def _avro_error(path: str, e: Exception) -> Exception:
    """What decoding the Avro file ``path`` raised (many kinds on garbage input), as the error."""
    if isinstance(e, UnsupportedMetadataError):   # readable, but not by lakeformat: name the file
        return with_path(e, path)
    if isinstance(e, manifest_cache.RecordError):
        return CorruptFileError(path, f"not a Paimon manifest or manifest list: {e}")
    return CorruptFileError(path, f"cannot read Avro: {e}")


def _decode(path: str, from_avro, records) -> list:
    """Records as values; a record of another shape or naming a file outside the table is corrupt."""
    try:
        return [from_avro(r) for r in records]
    except UnsupportedMetadataError as e:
        raise with_path(e, path) from None
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise CorruptFileError(path, f"not a Paimon manifest or manifest list: {e}") from None


class ManifestFile:
    """Writes and reads the manifests of one table."""

    def __init__(self, fio: FileIO, table_path: str, partition_types: Sequence[DataType],
                 schema_id: int, compression: str = "zstd", target_size: int = 8 << 20, fmt: str = "avro"):
        self.io, self.dir, self.orc = fio, join(table_path, "manifest"), fmt == "orc"
        self.partition_types = list(partition_types)
        self.schema_id, self.codec, self.target_size = schema_id, _avro_codec(compression), target_size

    def path(self, name: str) -> str:
        return join(self.dir, name)

    def read_all(self, names: Sequence[str], threads: int = 8, batch: int = 64,
                 file_names: bool = False) -> Iterator[tuple[str, Union[list, Exception]]]:
        """(name, its entries or the error reading it) of each of ``names``, in order (with
        ``file_names``, instead of each entry the names of the files it names). The files
        are fetched in ``threads`` parallel threads (storage latency) and decoded in this one,
        ``batch`` files at a time: the blocks of a batch not yet in the cache are decoded by one
        call of the columnar reader (a block that merged manifests share, once)."""
        def fetch(name: str):
            try:
                return _read_bytes(self.io, self.path(name))
            except Exception as e:
                return e
        kind, convert = ("file-names", FILE_NAMES) if file_names else ("entry", ENTRIES)
        with ThreadPoolExecutor(max(1, min(threads, len(names)))) as pool:
            fetched = pool.map(fetch, names)
            for start in range(0, len(names), batch):
                part = list(zip(names[start:start + batch], fetched))
                avro = [(name, data) for name, data in part if not isinstance(data, Exception) and not is_orc(data)]
                decoded = dict(zip((name for name, _ in avro),
                                   manifest_cache.blocks_of([data for _, data in avro], kind, convert)))
                for name, data in part:
                    got = decoded.get(name, data)
                    if isinstance(got, tuple):
                        data = [v for b in got[1] for v in b.values]
                    elif isinstance(got, Exception) and got is not data:
                        data = _avro_error(self.path(name), got)
                    elif not isinstance(data, Exception):   # ORC
                        try:
                            data = _read_values(self.io, self.path(name), "entry", ManifestEntry.from_avro, data)
                            if file_names:
                                data = [(e.file.file_name, *e.file.extra_files) for e in data]
                        except Exception as e:
                            data = e
                    yield name, data

    def read(self, name: str, partitions: Optional[PartitionFilter] = None) -> list[ManifestEntry]:
        """All entries, or with ``partitions`` only those of matching partitions (decoding as
        little as the manifest's layout allows)."""
        path = self.path(name)
        if partitions is None:
            return _read_values(self.io, path, "entry", ManifestEntry.from_avro, convert=ENTRIES)
        data = _read_bytes(self.io, path)
        if is_orc(data):
            return [e for e in self.read(name) if partitions.matches(e.partition)]
        try:
            records = _filtered_records(data, partitions)
        except Exception as e:  # fastavro raises many kinds on garbage input
            raise CorruptFileError(path, f"cannot read Avro: {e}") from None
        return _decode(path, ManifestEntry.from_avro, records)

    def write(self, entries: Sequence[ManifestEntry]) -> list[ManifestFileMeta]:
        """Write entries into as many manifests as ``target_size`` asks for (estimated from the
        first chunk's encoded size)."""
        if not entries:
            return []
        out, prefix = [], f"manifest-{uuid.uuid4()}-"
        ordered = sortable(self.partition_types)
        if ordered:   # stable: an ADD stays before the DELETE of the same file
            keys = {p: sort_key(deserialize_row(p, self.partition_types)) for p in {e.partition for e in entries}}
            entries = sorted(entries, key=lambda e: keys[e.partition])
        records = [e.to_avro() for e in entries]
        probe = records[: min(len(records), 1000)]
        per_record = max(1, len(self._encode(probe, [e.partition for e in entries[:len(probe)]], False)) // len(probe))
        chunk = max(1, self.target_size // per_record)
        for n, start in enumerate(range(0, len(records), chunk)):
            part = entries[start:start + chunk]
            chunk_records = records[start:start + chunk]
            data = self._encode(chunk_records, [e.partition for e in part], ordered)
            name = f"{prefix}{n}"
            self.io.write_bytes(self.path(name), data)
            out.append(self._meta(name, len(data), [e.key for e in part]))
        return out

    def _encode(self, records: list[dict], partitions: list[bytes], ordered: bool) -> bytes:
        if self.orc:
            return write_orc(MANIFEST_ENTRY_SCHEMA, records, self.codec)
        if ordered:
            return _write_sorted_avro(MANIFEST_ENTRY_SCHEMA, records, partitions, self.codec)
        return _write_avro(MANIFEST_ENTRY_SCHEMA, records, self.codec)

    def _meta(self, name: str, size: int, keys: Sequence[tuple]) -> ManifestFileMeta:
        """The list entry of a manifest of entries whose ``ManifestEntry.key`` are ``keys``."""
        added = sum(1 for k in keys if k[0] == ADD)
        buckets, levels = [k[2] for k in keys], [k[3] for k in keys]
        return ManifestFileMeta(
            name, size, added, len(keys) - added, self.partition_stats({k[1] for k in keys}),
            self.schema_id, min(buckets), max(buckets), min(levels), max(levels))

    def concat(self, metas: Sequence[ManifestFileMeta]) -> Optional[ManifestFileMeta]:
        """The entries of ``metas``, in order, as one new manifest made by copying their Avro
        blocks: no entry is decoded, so the cost is the bytes, not the entries (runs of small
        blocks, such as the one-entry blocks of appends, are joined into one block, so the block
        count does not grow with the commits merged). None (nothing
        written) unless every manifest has this writer's schema and codec and, in a partitioned
        table, their partitions follow each other in order (the merged manifest stays sorted, so
        filtered reads still skip its blocks). The caller makes sure no entry cancels another."""
        ordered = sortable(self.partition_types)
        stats = []
        if self.partition_types:
            for m in metas:
                lo, hi = (deserialize_row(b, self.partition_types) for b in
                          (m.partition_stats.min_values, m.partition_stats.max_values))
                if not ordered or any(m.partition_stats.null_counts or ()) or None in lo or None in hi:
                    return None
                stats.append((sort_key(lo), sort_key(hi)))
            if any(stats[i][1] > stats[i + 1][0] for i in range(len(stats) - 1)):
                return None
        sync = uuid.uuid4().bytes
        header = _header(self.codec, sync, ordered)
        mine = avro_blocks.parse(header).metadata
        blocks: list[tuple[int, bytes]] = []
        for m in metas:
            path = self.path(m.file_name)
            try:
                c = avro_blocks.parse(_read_bytes(self.io, path))
            except (ValueError, IndexError) as e:
                raise CorruptFileError(path, f"cannot read Avro: {e}") from None
            if any(c.metadata.get(k) != mine.get(k) for k in ("avro.schema", "avro.codec", SORTED_BY)):
                return None
            blocks += c.blocks
        data = header + avro_blocks.blocks_bytes(manifest_cache.coalesce(mine, "entry", blocks), sync)
        name = f"manifest-{uuid.uuid4()}-0"
        self.io.write_bytes(self.path(name), data)
        added, deleted = sum(m.num_added_files for m in metas), sum(m.num_deleted_files for m in metas)
        return ManifestFileMeta(
            name, len(data), added, deleted, self._merged_stats([m.partition_stats for m in metas]), self.schema_id,
            *(f(v for m in metas if (v := getattr(m, a)) is not None) if any(getattr(m, a) is not None for m in metas)
              else None for f, a in ((min, "min_bucket"), (max, "max_bucket"), (min, "min_level"), (max, "max_level"))))

    def rewrite(self, metas: Sequence[ManifestFileMeta],
                keep: Callable[[Sequence[tuple]], Sequence[bool]]) -> list[ManifestFileMeta]:
        """The entries of ``metas`` that ``keep`` keeps (it gets each entry's
        ``ManifestEntry.key``, in order, and returns a flag for each), in order, as new
        manifest(s) of at most about ``target_size``. Only the keys are decoded (columns, through
        the block cache), no entry is built: blocks whose entries are all kept are copied as they
        are; the others are cut to the records kept (their bytes, not encoded again) and
        compressed again. Falls back to decoding the entries and ``write`` (which sorts) when a
        manifest is ORC or of another writer's schema or codec, or when the kept entries are not
        in partition order."""
        mine = avro_blocks.parse(_header(self.codec, bytes(16), sortable(self.partition_types))).metadata
        paths = [self.path(m.file_name) for m in metas]
        datas = [_read_bytes(self.io, path) for path in paths]
        fetched: list = []
        parts: Optional[list] = None if self.orc or any(is_orc(d) for d in datas) else fetched
        for path, got in zip(paths, manifest_cache.blocks_of(datas, "key", KEYS) if parts is not None else ()):
            if isinstance(got, Exception):
                raise _avro_error(path, got)
            if any(got[0].metadata.get(k) != mine.get(k) for k in ("avro.schema", "avro.codec", SORTED_BY)):
                parts = None
                break
            fetched.append(got)
        if parts is None:
            entries = [e for m in metas for e in self.read(m.file_name)]
            return self.write([e for e, k in zip(entries, keep([e.key for e in entries])) if k])
        keys = [v for _, blocks in parts for b in blocks for v in b.values]
        flags = list(keep(keys))
        if not any(flags):
            return []
        if sortable(self.partition_types) and self.partition_types and \
                not self._in_order([k for k, f in zip(keys, flags) if f]):
            entries = [e for m in metas for e in self.read(m.file_name)]
            return self.write([e for e, f in zip(entries, flags) if f])
        out, pos = [], 0
        for c, blocks in parts:
            for (count, raw), block in zip(c.blocks, blocks):
                f = flags[pos:pos + count]
                pos += count
                n = sum(f)
                if n == count:
                    out.append((count, raw, block.values))
                elif n:
                    plain = manifest_cache.decompress(self.codec, raw)
                    starts = (0, *block.ends[:-1])
                    pieces = [plain[s:e] for s, e, k in zip(starts, block.ends, f) if k]
                    raw = manifest_cache.compress(self.codec, b"".join(pieces))
                    values = tuple(v for v, k in zip(block.values, f) if k)
                    manifest_cache.remember(mine, "key", raw, values, array("Q", accumulate(map(len, pieces))))
                    out.append((n, raw, values))
        groups: list[list] = [[]]
        size = 0
        for b in out:
            if size >= self.target_size:
                groups.append([])
                size = 0
            groups[-1].append(b)
            size += len(b[1])
        prefix, written = f"manifest-{uuid.uuid4()}-", []
        for n, group in enumerate(groups):
            sync = uuid.uuid4().bytes
            data = _header(self.codec, sync, sortable(self.partition_types)) + \
                avro_blocks.blocks_bytes([(k, raw) for k, raw, _ in group], sync)
            self.io.write_bytes(self.path(f"{prefix}{n}"), data)
            written.append(self._meta(f"{prefix}{n}", len(data), [k for _, _, ks in group for k in ks]))
        return written

    def _in_order(self, keys: Sequence[tuple]) -> bool:
        """Whether the partitions of entries (their ``ManifestEntry.key``) never go down
        (compared run by run)."""
        runs = [p for p, _ in groupby(k[1] for k in keys)]
        order = {p: sort_key(deserialize_row(p, self.partition_types)) for p in set(runs)}
        return all(order[a] <= order[b] for a, b in pairwise(runs))

    def _merged_stats(self, stats: Sequence[SimpleStats]) -> SimpleStats:
        types = self.partition_types
        if not types:
            return SimpleStats(EMPTY_ROW, EMPTY_ROW, ())
        rows = [deserialize_row(s.min_values, types) for s in stats] + [deserialize_row(s.max_values, types)
                                                                         for s in stats]
        mins = [min(r[i] for r in rows) for i in range(len(types))]
        maxs = [max(r[i] for r in rows) for i in range(len(types))]
        return SimpleStats(serialize_row(mins, types), serialize_row(maxs, types), tuple(0 for _ in types))

    def partition_stats(self, partitions: Iterable[bytes]) -> SimpleStats:
        types = self.partition_types
        if not types:
            return SimpleStats(EMPTY_ROW, EMPTY_ROW, ())
        rows = [deserialize_row(p, types) for p in partitions]
        mins, maxs, nulls = [], [], []
        for i in range(len(types)):
            vals = [r[i] for r in rows if r[i] is not None]
            nulls.append(len(rows) - len(vals))
            mins.append(min(vals) if vals else None)
            maxs.append(max(vals) if vals else None)
        return SimpleStats(serialize_row(mins, types), serialize_row(maxs, types), tuple(nulls))


def _header(codec: str, sync: bytes, ordered: bool) -> bytes:
    """The header our writer gives a manifest (schema, codec, sorted-by), with ``sync``."""
    buf = io.BytesIO()
    fastavro.write.Writer(buf, MANIFEST_ENTRY_SCHEMA, codec=codec, sync_marker=sync,
                          metadata={SORTED_BY: "partition"} if ordered else None).flush()
    return buf.getvalue()


class ManifestList:
    """Writes and reads manifest lists (``manifest-list-<uuid>-<n>``)."""

    def __init__(self, fio: FileIO, table_path: str, compression: str = "zstd", fmt: str = "avro"):
        self.io, self.dir, self.codec = fio, join(table_path, "manifest"), _avro_codec(compression)
        self.orc = fmt == "orc"

    def read(self, name: str) -> list[ManifestFileMeta]:
        return _read_values(self.io, join(self.dir, name), "manifest-file-meta", ManifestFileMeta.from_avro)

    def write(self, metas: Sequence[ManifestFileMeta]) -> tuple[str, int]:
        name = f"manifest-list-{uuid.uuid4()}-0"
        records = [m.to_avro() for m in metas]
        data = (write_orc(MANIFEST_FILE_META_SCHEMA, records, self.codec) if self.orc
                else _write_avro(MANIFEST_FILE_META_SCHEMA, records, self.codec))
        self.io.write_bytes(join(self.dir, name), data)
        return name, len(data)
