"""lakeformat.format.arrays: the pandas-free conversions give what pyarrow's own converters give."""
import datetime as dt
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

from lakeformat.format import arrays as A

PYLISTS = [
    ([1, None, -3, 2 ** 40], pa.int64()), ([1, None, 7], pa.int32()), ([0, 255, None], pa.uint8()),
    ([1.5, None, float("nan"), -0.0], pa.float64()), ([1.5, None], pa.float32()),
    ([True, None, False, True, True, False, False, True, True], pa.bool_()),
    (["a", None, "", "héllo", "x\0"], pa.string()), (["a", None], pa.large_string()),
    ([b"\0\1", None, b""], pa.binary()),
    ([dt.datetime(2024, 1, 2, 3, 4, 5, 678000), None, dt.datetime(1960, 5, 6)], pa.timestamp("ms")),
    ([dt.datetime(2024, 1, 2, 3, 4, 5, 678912), None], pa.timestamp("us")),
    ([dt.timedelta(days=2, milliseconds=5), None], pa.duration("ms")),
    ([dt.date(2024, 1, 2), None, dt.date(1900, 1, 1)], pa.date32()),
    ([], pa.int64()), ([], pa.string()), ([None, None], pa.string()),
    ([[1, 2], None], pa.list_(pa.int64())),   # not covered: through pyarrow
]


@pytest.mark.parametrize("values,typ", PYLISTS, ids=[str(t) + str(i) for i, (_, t) in enumerate(PYLISTS)])
def test_from_pylist_is_pa_array(values, typ):
    got = A.from_pylist(values, typ)
    got.validate(full=True)
    want = pa.array(values, typ)
    assert got.type == want.type and (got.equals(want) or got.to_string() == want.to_string())   # NaN != NaN
    assert A.scalar(values[0], typ).equals(pa.scalar(values[0], typ)) if values else True


def test_from_pylist_rejects_what_pyarrow_rejects():
    for values, typ in ([5], pa.binary()), (["x"], pa.int64()), ([1], pa.string()):
        with pytest.raises((pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError)):
            A.from_pylist(values, typ)


@pytest.mark.parametrize("values", [np.arange(10, dtype=np.int64), np.arange(5, dtype=np.int8), np.linspace(0, 1, 7),
                                    np.array([True, False, True] * 5), np.arange(10)[::3],
                                    np.array(["2024-01-01T00:00:01"], dtype="datetime64[ms]"), np.zeros(0, np.int32)])
def test_from_numpy_and_back(values):
    want = pa.array(values)
    got = A.from_numpy(values)
    assert got.equals(want)
    mask = np.zeros(len(values), bool)
    mask[::2] = True
    assert A.from_numpy(values, mask=mask).equals(pa.array(values, mask=mask))
    np.testing.assert_array_equal(A.to_numpy(want), want.to_numpy(zero_copy_only=False))
    sliced = pa.chunked_array([want.slice(1), want])
    np.testing.assert_array_equal(A.to_numpy(sliced), sliced.to_numpy())


def test_to_numpy_with_nulls_and_other_types_is_pyarrows():
    for arr in (pa.array([1, None]), pa.array(["a", "b"]), pa.chunked_array([[1, None], [2]])):
        got, want = A.to_numpy(arr), arr.to_numpy() if isinstance(arr, pa.ChunkedArray) else arr.to_numpy(
            zero_copy_only=False)
        np.testing.assert_array_equal(got, want)


def test_tables():
    schema = pa.schema([("a", pa.int64()), ("b", pa.string()), ("c", pa.timestamp("ms"))])
    rows = [{"a": 1, "b": "x", "c": dt.datetime(2024, 1, 1)}, {"a": None, "b": None}]
    assert A.table_from_pylist(rows, schema).equals(pa.Table.from_pylist(rows, schema=schema))
    assert A.empty_table(schema).equals(schema.empty_table())


def test_no_pandas():
    code = ("import sys, datetime, numpy as np, pyarrow as pa; from lakeformat.format import arrays as A; "
            "a = A.from_pylist([1, None], pa.int64()); A.to_numpy(A.from_numpy(np.arange(3))); "
            "A.to_numpy(pa.chunked_array([a.fill_null(A.scalar(0, pa.int64()))] * 2)); "
            "A.from_pylist(['x', None], pa.string()); A.from_pylist([datetime.datetime.now()], pa.timestamp('ms')); "
            "A.empty_table(pa.schema([('a', pa.int64())])); A.to_numpy(A.from_numpy(np.array([True, False]))); "
            "assert 'pandas' not in sys.modules, 'pandas imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
