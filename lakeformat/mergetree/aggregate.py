"""Paimon's field aggregators (``merge-engine=aggregation``), vectorised over groups of versions.

Each non-key column has ``fields.<f>.aggregate-function``, else ``fields.default-aggregate-function``,
else ``last_non_null_value``. Versions are folded in merge order; +I/+U rows aggregate, -U/-D rows
retract:

=====================  ===============================================  ============================
function               result                                           on a retraction
=====================  ===============================================  ============================
sum                    sum of non-null values, null if none             subtracts
count                  number of non-null values (Paimon <= 0.8)        subtracts one
product                product of non-null values, null if none         not supported here
min, max               smallest/largest non-null value                  error
first_value            value of the first version (may be null)         error
first_non_null_value   first non-null value (alias first_not_null_value)  error
last_value             value of the last version (may be null)          sets null
last_non_null_value    last non-null value                              a non-null retraction
                                                                        sets null
listagg                non-blank strings joined by                      error
                       ``fields.<f>.list-agg-delimiter`` (default ','),
                       ``fields.<f>.distinct`` drops repeated tokens
bool_and, bool_or      over non-null values, null if none               error
=====================  ===============================================  ============================

"error" means a ``DataError`` unless ``fields.<f>.ignore-retract=true``, which makes that field skip
retractions. Integer sums and products wrap around in the column's width, as Java does. Paimon
removed ``count`` after 0.8: it re-counts merged rows, so results change with compaction; prefer a
``sum`` of ones. Not implemented: product retraction, product of decimals and Paimon's collect,
merge_map, nested_update, rbm32/rbm64 and the sketch functions.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import DataError, OptionError
from lakeformat.format import options as o

RETRACTABLE = {"sum", "count", "last_value", "last_non_null_value"}
FUNCTIONS = RETRACTABLE | {"product", "min", "max", "first_value", "first_non_null_value",
                           "listagg", "bool_and", "bool_or"}
ALIASES = {"first_not_null_value": "first_non_null_value"}
PAIMON_ONLY = {"collect", "merge_map", "merge_map_with_keytime", "nested_update",
               "nested_partial_update", "rbm32", "rbm64", "hll_sketch", "theta_sketch", "avg",
               "primary-key"}


def _numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def _string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


_TYPES = {
    "sum": ("numbers", _numeric),
    "product": ("integers or floating point numbers",
                lambda t: pa.types.is_integer(t) or pa.types.is_floating(t)),
    "count": ("integers", pa.types.is_integer),
    "min": ("numbers, strings, dates, times or timestamps",
            lambda t: _numeric(t) or _string(t) or pa.types.is_temporal(t)),
    "listagg": ("strings", _string),
    "bool_and": ("booleans", pa.types.is_boolean),
}
_TYPES["max"], _TYPES["bool_or"] = _TYPES["min"], _TYPES["bool_and"]


@dataclass(frozen=True)
class FieldAgg:
    field: str
    name: str
    option_key: str            # the option that chose ``name``
    ignore_retract: bool = False
    delimiter: str = ","
    distinct: bool = False

    @classmethod
    def from_options(cls, opts: o.Options, field: str) -> FieldAgg:
        key = f"fields.{field}.aggregate-function"
        name = opts.field_option(field, "aggregate-function")
        if name is None:
            name, key = opts.get(o.DEFAULT_AGG_FUNCTION), o.DEFAULT_AGG_FUNCTION.key
        if name is None:
            name, key = "last_non_null_value", key
        name = ALIASES.get(name.strip(), name.strip())
        if name not in FUNCTIONS:
            why = "is valid in Paimon but not supported by lakeformat" if name in PAIMON_ONLY else \
                "is not an aggregate function"
            raise OptionError(f"option {key!r} (field {field!r}): {name!r} {why}; lakeformat supports "
                              f"{', '.join(sorted(FUNCTIONS))}")
        delimiter = opts.field_option(field, "list-agg-delimiter")
        distinct = bool(opts.field_option(field, "distinct"))
        if name == "listagg" and distinct and delimiter == "":
            raise OptionError(f"option 'fields.{field}.list-agg-delimiter' must not be empty with distinct")
        return cls(field, name, key, bool(opts.field_option(field, "ignore-retract")),
                   "," if delimiter is None else delimiter, distinct)

    def check_type(self, t: pa.DataType) -> None:
        if self.name in _TYPES and not _TYPES[self.name][1](t):
            raise OptionError(f"option {self.option_key!r}: {self.name} of field {self.field!r} needs "
                              f"{_TYPES[self.name][0]}, not {t}")

    def aggregate(self, col: pa.ChunkedArray, g, retract: np.ndarray) -> pa.Array | np.ndarray:
        """Per group of ``g`` (see merge_function.Groups): an Arrow array, or positions to gather.
        ``retract`` marks -U/-D rows at sorted positions."""
        eff = ~retract if self.ignore_retract else np.ones(g.n, bool)
        if not self.ignore_retract and self.name not in RETRACTABLE and retract.any():
            raise DataError(f"aggregate function {self.name!r} of field {self.field!r} cannot retract, "
                            f"but a -U/-D row arrived; set 'fields.{self.field}.ignore-retract' = 'true' "
                            f"to ignore retractions for this field")
        valid = g.sorted(~col.is_null().to_numpy(zero_copy_only=False)) if col.null_count \
            else np.ones(g.n, bool)
        name = self.name
        if name == "first_value":
            return g.first_where(eff)
        if name == "first_non_null_value":
            return g.first_where(eff & valid)
        if name in ("last_value", "last_non_null_value"):
            pos = g.last_where(eff & valid if name == "last_non_null_value" else eff)
            return np.where((pos >= 0) & retract[np.maximum(pos, 0)], -1, pos)
        if name == "count":
            counted = eff & valid
            out = g.sum(np.where(counted, np.where(retract, -1, 1), 0))
            return pa.array(out, mask=g.sum(eff.astype(np.int64)) == 0).cast(col.type, safe=False)
        if name in ("bool_and", "bool_or"):
            vals = g.sorted(col.fill_null(False).to_numpy(zero_copy_only=False))
            n_valid, n_true = g.sum((eff & valid).astype(np.int64)), g.sum((eff & valid & vals).astype(np.int64))
            out = n_true == n_valid if name == "bool_and" else n_true > 0
            return pa.array(out, mask=n_valid == 0)
        if name == "listagg":
            return self._listagg(col.take(g.order), g, eff & valid)
        keep = np.flatnonzero(eff & valid)
        values = col.take(g.order[keep])
        if name == "sum" and retract.any():
            values = pc.if_else(pa.array(retract[keep]), pc.negate(values), values)
        return _hash(values, g.gid[keep], g.size, name, col.type)

    def _listagg(self, values: pa.ChunkedArray, g, use: np.ndarray) -> pa.Array:
        blank = pc.or_(pc.equal(pc.utf8_length(values), 0), pc.utf8_is_space(values))
        use = use & ~blank.fill_null(True).to_numpy(zero_copy_only=False)
        keep = np.flatnonzero(use)
        kept, gid = values.take(keep).combine_chunks(), g.gid[keep]
        rows = np.bincount(gid, minlength=g.size)
        if self.distinct and len(kept):
            tokens = pc.split_pattern(kept, self.delimiter)
            flat, parent = tokens.flatten(), pc.list_parent_indices(tokens).to_numpy()
            first_row = np.ones(len(gid), bool)
            first_row[1:] = gid[1:] != gid[:-1]
            tok_gid = gid[parent]
            codes = pc.dictionary_encode(flat).indices.to_numpy().astype(np.int64)
            seen_first = np.zeros(len(flat), bool)
            seen_first[np.unique(tok_gid * (int(codes.max()) + 1) + codes, return_index=True)[1]] = True
            tok_blank = pc.or_(pc.equal(pc.utf8_length(flat), 0), pc.utf8_is_space(flat)).to_numpy(
                zero_copy_only=False)
            take = np.flatnonzero(first_row[parent] | (seen_first & ~tok_blank))
            kept, gid = flat.take(take), tok_gid[take]
        offsets = np.zeros(g.size + 1, np.int32)
        np.cumsum(np.bincount(gid, minlength=g.size), out=offsets[1:])
        joined = pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets), kept), self.delimiter)
        return pc.if_else(pa.array(rows > 0), joined, pa.nulls(g.size, joined.type)).cast(values.type)


def _hash(values, gid: np.ndarray, size: int, func: str, typ: pa.DataType) -> pa.Array:
    """``func`` of ``values`` per group number ``gid`` (0..size-1), null for groups without any."""
    res = pa.table({"g": pa.array(gid, pa.int64()), "v": values}).group_by(
        "g", use_threads=False).aggregate([("v", func)])
    where = np.full(size, -1, np.int64)
    where[res["g"].to_numpy()] = np.arange(res.num_rows)
    out = res[f"v_{func}"].take(pa.array(np.maximum(where, 0), mask=where < 0))
    try:
        return out.cast(typ, safe=not pa.types.is_integer(typ) and not pa.types.is_floating(typ))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise DataError(f"{func} does not fit {typ}: {e}") from None
