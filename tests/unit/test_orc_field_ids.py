"""Paimon's field ids as ORC type attributes (``paimon.id``), on every type of an ORC data file,
manifest, manifest list and index manifest, as Paimon's Java writers put them
(``OrcTypeUtil#convertToOrcType``). Readers that match ORC columns by id (Trino's Paimon
connector) need them; Paimon Java itself matches by name.

The attributes are checked twice: as pyarrow reads them (an ORC type's attributes become the
Arrow field's metadata) and in the file's footer itself, parsed here (ORC's protobuf
``Footer.types[].attributes``)."""
import glob
import os

import pyarrow as pa
import pyarrow.orc as po

import lakeformat as lf
from lakeformat.io import orc_ids

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "paimon-java", "orc")


def ids(schema: pa.Schema) -> list:
    """(path, paimon.id) of every field and nested field, depth first."""
    out = []

    def walk(f: pa.Field, path: str):
        out.append((path, (f.metadata or {}).get(b"paimon.id", b"").decode()))
        t = f.type
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(t.field(i), f"{path}.{t.field(i).name}")
        elif pa.types.is_list(t):
            walk(t.value_field, path + "[]")
        elif pa.types.is_map(t):
            walk(t.key_field, path + "{key}")
            walk(t.item_field, path + "{value}")
    for f in schema:
        walk(f, f.name)
    return out


def file_ids(path: str) -> list:
    return ids(po.ORCFile(path).schema)


# -- the ORC footer, parsed (protobuf: Type.attributes = 7, StringPair key 1 / value 2) ----------
def _varint(b: bytes, i: int):
    r = s = 0
    while True:
        x = b[i]
        i += 1
        r |= (x & 0x7F) << s
        s += 7
        if x < 0x80:
            return r, i


def _fields(b: bytes) -> list:
    i, out = 0, []
    while i < len(b):
        k, i = _varint(b, i)
        number, wire = k >> 3, k & 7
        if wire == 0:
            v, i = _varint(b, i)
        elif wire == 2:
            n, i = _varint(b, i)
            v, i = b[i:i + n], i + n
        elif wire == 1:
            v, i = b[i:i + 8], i + 8
        else:
            v, i = b[i:i + 4], i + 4
        out.append((number, v))
    return out


def footer_attributes(data: bytes) -> list:
    """The attributes of each ORC type (pre-order: the root struct first) of an uncompressed file."""
    ps_len = data[-1]
    ps = dict(_fields(data[-1 - ps_len:-1]))
    assert ps.get(2, 0) == 0, "footer parsed only when uncompressed"
    footer = _fields(data[-1 - ps_len - ps[1]:-1 - ps_len])
    out = []
    for number, t in footer:
        if number == 4:
            attrs = [dict(_fields(a)) for n, a in _fields(t) if n == 7]
            out.append({a[1].decode(): a[2].decode() for a in attrs})
    return out


SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("name", pa.string()), ("tags", pa.list_(pa.string())),
                    ("m", pa.map_(pa.string(), pa.list_(pa.int32()))),
                    ("r", pa.struct([("x", pa.int32()), ("ys", pa.list_(pa.struct([("z", pa.string())])))])),
                    ("t", pa.time32("ms"))])


def rows(start: int, n: int) -> pa.Table:
    return pa.table({"id": list(range(start, start + n)), "name": [f"n{i}" for i in range(start, start + n)],
                     "tags": [["a"]] * n, "m": [[("k", [1])]] * n, "r": [{"x": 1, "ys": [{"z": "q"}]}] * n,
                     "t": [None] * n}, schema=SCHEMA)


def java_ids(schema) -> list:
    """The ids Java's OrcTypeUtil gives a table's fields, computed from its definition."""
    f = {x.name: x.id for x in schema.fields}
    r = next(x for x in schema.fields if x.name == "r").type
    rx, rys = (x.id for x in r.fields)
    z = r.fields[1].type.element.fields[0].id
    el = orc_ids.array_element_id
    return [("id", str(f["id"])), ("name", str(f["name"])), ("tags", str(f["tags"])),
            ("tags[]", str(el(f["tags"], 1))),
            ("m", str(f["m"])), ("m{key}", str(orc_ids.map_key_id(f["m"], 1))),
            ("m{value}", str(orc_ids.map_value_id(f["m"], 1))), ("m{value}[]", str(el(f["m"], 2))),
            ("r", str(f["r"])), ("r.x", str(rx)), ("r.ys", str(rys)), ("r.ys[]", str(el(rys, 1))),
            ("r.ys[].z", str(z)), ("t", str(f["t"]))]


def test_append_orc_data_files_carry_paimon_ids_and_only_them(catalog):
    t = catalog.create_table("db.t", SCHEMA, options={"file.format": "orc", "file.compression": "none",
                                                       "manifest.format": "orc"})
    t.write(rows(0, 3))
    [f] = t.files()
    assert file_ids(f["path"]) == java_ids(t.schema)
    with t.io.open_input(f["path"]) as src:
        attrs = footer_attributes(src.read())
    assert attrs[0] == {}                                  # the root struct has none, as in Java's files
    assert all(set(a) == {"paimon.id"} for a in attrs[1:])   # every other type: paimon.id alone
    assert [a["paimon.id"] for a in attrs[1:]] == [i for _, i in java_ids(t.schema)]


def test_renamed_column_keeps_its_id_and_old_files_read_by_it(catalog):
    t = catalog.create_table("db.t", SCHEMA, options={"file.format": "orc", "manifest.format": "orc"})
    t.write(rows(0, 2))
    t.alter(lf.RenameColumn("name", "label"))
    t.write(rows(2, 2).rename_columns([c if c != "name" else "label" for c in SCHEMA.names]))
    files = t.files()
    assert [f["schema_id"] for f in files] != [files[0]["schema_id"]] * 2
    for f in files:
        got = dict(file_ids(f["path"]))
        assert got["name" if f["schema_id"] == 0 else "label"] == str(t.schema.field("label").id)
    assert sorted((r["id"], r["label"]) for r in t.read(columns=["id", "label"]).to_pylist()) == [
        (0, "n0"), (1, "n1"), (2, "n2"), (3, "n3")]


def test_primary_key_orc_files_carry_key_and_system_ids(catalog):
    schema = pa.schema([pa.field("k", pa.int32(), False), ("v", pa.string())])
    t = catalog.create_table("db.pk", schema, primary_keys=["k"], options={"file.format": "orc", "bucket": "1"})
    t.write(pa.table({"k": [1, 2], "v": ["a", "b"]}, schema=schema))
    [f] = t.files()
    k, v = (x.id for x in t.schema.fields)
    assert file_ids(f["path"]) == [("_KEY_k", str(2147483647 // 2 + k)), ("_SEQUENCE_NUMBER", "2147483646"),
                                   ("_VALUE_KIND", "2147483645"), ("k", str(k)), ("v", str(v))]


def test_java_orc_data_files_ids_are_the_ones_lakeformat_computes():
    """The same rule, checked against ORC files Paimon Java wrote."""
    for path in glob.glob(os.path.join(FIXTURES, "*", "*", "*", "bucket-*", "*.orc")):
        java = po.ORCFile(path).schema
        assert all(i for _, i in ids(java)), path
        # lakeformat's file schema: the top-level ids as PARQUET:field_id, nothing nested
        ours = pa.schema([pa.field(f.name, f.type, f.nullable, {b"PARQUET:field_id": f.metadata[b"paimon.id"]})
                          for f in java])
        assert ids(orc_ids.data_schema(ours, [])) == ids(java), path


def test_orc_metadata_files_ids_are_javas():
    """Manifests and manifest lists written by lakeformat carry the ids Java's do (fixtures);
    index manifests follow the same rule (fields by position, ``_VERSION`` -1, arrays' elements
    from their field's id)."""
    from lakeformat.format.index_manifest import INDEX_MANIFEST_SCHEMA
    from lakeformat.format.manifest import MANIFEST_ENTRY_SCHEMA, MANIFEST_FILE_META_SCHEMA
    from lakeformat.io.manifest_orc import arrow_schema

    manifest_dir = os.path.join(FIXTURES, "append_complex_data.db", "append_complex_data", "manifest")
    java_list = po.ORCFile(sorted(glob.glob(os.path.join(manifest_dir, "manifest-list-*")))[0]).schema
    java_manifest = po.ORCFile(sorted(glob.glob(os.path.join(manifest_dir, "manifest-[0-9a-f]*")))[0]).schema
    ours_list = orc_ids.metadata_schema(arrow_schema(MANIFEST_FILE_META_SCHEMA))
    ours_manifest = orc_ids.metadata_schema(arrow_schema(MANIFEST_ENTRY_SCHEMA))
    assert ids(ours_list) == ids(java_list)
    assert ids(ours_manifest) == ids(java_manifest)
    index = dict(ids(orc_ids.metadata_schema(arrow_schema(INDEX_MANIFEST_SCHEMA))))
    assert index["_VERSION"] == "-1" and index["_KIND"] == "0"


def test_orc_manifests_written_carry_the_ids(catalog):
    t = catalog.create_table("db.t", SCHEMA, options={"file.format": "orc", "manifest.format": "orc"})
    t.write(rows(0, 1))
    manifest_dir = os.path.join(t.path, "manifest")
    for name in os.listdir(manifest_dir):
        got = file_ids(os.path.join(manifest_dir, name))
        assert got and all(i for _, i in got), name
        assert got[0] == ("_VERSION", "-1")
