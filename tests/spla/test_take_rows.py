"""``spla.take_rows`` on the CPU: against numpy fancy indexing, and its argument errors."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spla
from spla.exceptions import DeviceMismatch, DimensionMismatch, DTypeError, IndexOutOfRange, \
    InvalidValue


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 20), f=st.integers(1, 6),
       k=st.integers(0, 25), cached=st.booleans())
def test_take_rows_equals_fancy_indexing(seed, n, f, k, cached):
    rs = np.random.RandomState(seed)
    cold = rs.standard_normal((n, f)).astype(np.float32)
    ids = rs.randint(0, n, size=k)
    if cached:
        hot_ids = np.flatnonzero(rs.rand(n) < 0.5)
        slot = np.full(n, -1, np.int64)
        slot[hot_ids] = np.arange(hot_ids.size)
        hits = np.zeros(1, np.int64)
        got = spla.take_rows(cold, ids, hot=cold[hot_ids], slot=slot, hits=hits)
        assert hits[0] == int((slot[ids] >= 0).sum())
    else:
        got = spla.take_rows(cold, ids)
    assert got.dtype == cold.dtype and got.shape == (k, f)
    np.testing.assert_array_equal(got, cold[ids])


def test_take_rows_into_out_and_int_dtype():
    cold = np.arange(12, dtype=np.int64).reshape(4, 3)
    out = np.empty((2, 3), np.int64)
    assert spla.take_rows(cold, np.array([2, 2], np.int32), out=out) is out
    np.testing.assert_array_equal(out, cold[[2, 2]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.uint16])
def test_take_rows_large_gather_runs_on_threads_and_equals_numpy(dtype):
    """Above ``kernels.parallel.SERIAL_WORK`` elements the gather is the
    kernel's parallel twin; every row lands where numpy's take puts it."""
    from kernels.cpu.gather import _take
    from kernels.parallel import SERIAL_WORK
    rs = np.random.RandomState(5)
    cold = (rs.standard_normal((3000, 37)) * 50).astype(dtype)
    ids = rs.randint(0, 3000, size=2 * SERIAL_WORK // 37 + 11)
    assert _take.work(ids, cold, None) >= SERIAL_WORK
    got = spla.take_rows(cold, ids, check=False)
    np.testing.assert_array_equal(got, np.take(cold, ids, axis=0))
    # Zero columns and zero rows.
    assert spla.take_rows(cold[:, :0].copy(), ids).shape == (ids.size, 0)
    assert spla.take_rows(cold, ids[:0]).shape == (0, 37)


def errors():
    cold = np.zeros((4, 2), np.float32)
    hot = np.zeros((1, 2), np.float32)
    slot = np.array([-1, 0, -1, -1])
    ids = np.array([0, 3])
    yield (DTypeError, "cold", dict(cold=[[1.0]], ids=ids), "numpy or cupy array")
    yield (DimensionMismatch, "cold", dict(cold=np.zeros(4), ids=ids), "2-D")
    yield (DTypeError, "cold", dict(cold=cold.astype(bool), ids=ids), "numeric")
    yield (DTypeError, "ids", dict(cold=cold, ids=ids.astype(float)), "integer")
    yield (DimensionMismatch, "ids", dict(cold=cold, ids=ids.reshape(2, 1)), "1-D")
    yield (IndexOutOfRange, "ids", dict(cold=cold, ids=np.array([4])), "[0, 4)")
    yield (IndexOutOfRange, "ids", dict(cold=cold, ids=np.array([-1])), "[0, 4)")
    yield (InvalidValue, "slot", dict(cold=cold, ids=ids, hot=hot), "together")
    yield (InvalidValue, "hot", dict(cold=cold, ids=ids, slot=slot), "together")
    yield (DimensionMismatch, "hot", dict(cold=cold, ids=ids, hot=np.zeros((1, 3), np.float32),
                                          slot=slot), "(h, 2)")
    yield (DimensionMismatch, "hot", dict(cold=cold, ids=ids, hot=hot.astype(np.float64),
                                          slot=slot), "float32")
    yield (DimensionMismatch, "slot", dict(cold=cold, ids=ids, hot=hot, slot=slot[:3]),
           "one slot per row")
    yield (IndexOutOfRange, "slot", dict(cold=cold, ids=ids, hot=hot,
                                         slot=np.array([1, 0, -1, -1])), "[-1, 1)")
    yield (DimensionMismatch, "out", dict(cold=cold, ids=ids, out=np.zeros((3, 2), np.float32)),
           "(2, 2)")
    yield (DTypeError, "hits", dict(cold=cold, ids=ids, hot=hot, slot=slot,
                                    hits=np.zeros(1, np.int32)), "int64")
    yield (InvalidValue, "cold", dict(cold=np.zeros((2, 4), np.float32).T, ids=ids),
           "C-contiguous")


@pytest.mark.parametrize("cls,arg,kwargs,expected", list(errors()))
def test_take_rows_errors_name_function_argument_expected_received(cls, arg, kwargs, expected):
    kwargs = dict(kwargs)
    cold, ids = kwargs.pop("cold"), kwargs.pop("ids")
    with pytest.raises(cls, match=rf"^take_rows: argument '{arg}' must be .*"
                                  rf"{re.escape(expected)}.*; got .+"):
        spla.take_rows(cold, ids, **kwargs)


def test_take_rows_check_false_skips_range_checks_only():
    cold = np.zeros((4, 2), np.float32)
    with pytest.raises(DTypeError):
        spla.take_rows(cold, np.array([0.0]), check=False)


def test_device_mismatch_is_refused_under_a_cupy_stand_in():
    import sys

    import fake_cupy
    saved = sys.modules.get("cupy")
    cp = fake_cupy.install()
    try:
        with pytest.raises(DeviceMismatch, match="take_rows: argument 'ids'"):
            spla.take_rows(cp.asarray(np.zeros((3, 2), np.float32)), np.array([0]))
    finally:
        if saved is None:
            sys.modules.pop("cupy", None)
        else:
            sys.modules["cupy"] = saved


# --------------------------------------------------------------------------
# A sparse ``cold``: its rows, dense.

@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 20), f=st.integers(0, 7),
       k=st.integers(0, 25), dtype=st.sampled_from([np.float32, np.float64, np.int32, None]))
def test_take_rows_of_a_matrix_equals_its_dense_rows(seed, n, f, k, dtype):
    rs = np.random.RandomState(seed)
    D = np.where(rs.rand(n, f) < 0.4, rs.randint(-3, 4, (n, f)), 0)
    r, c = np.nonzero(D)
    vals = None if dtype is None else D[r, c].astype(dtype)
    X = spla.Matrix.from_coo(r, c, vals, shape=(n, f))
    ids = rs.randint(0, n, size=k)
    got = spla.take_rows(X, ids)
    want = X.to_dense()[ids]
    assert got.dtype == want.dtype and got.shape == (k, f)
    np.testing.assert_array_equal(got, want)
    out = np.empty((k, f), want.dtype)
    assert spla.take_rows(X, ids.astype(np.int32), out=out, check=False) is out
    np.testing.assert_array_equal(out, want)


def test_take_rows_of_a_matrix_keeps_signed_zeros():
    X = spla.Matrix.from_coo([0, 1], [1, 0], np.array([-0.0, 2.0]), shape=(2, 2))
    got = spla.take_rows(X, np.array([0, 0, 1]))
    assert np.signbit(got[:, 1]).tolist() == [True, True, False]
    assert not np.signbit(got[:, 0]).any()


def sparse_errors():
    X = spla.Matrix.from_coo([0, 2], [1, 0], np.array([5.0, 6.0], np.float32), shape=(3, 2))
    ids = np.array([0, 2])
    yield (IndexOutOfRange, "ids", dict(cold=X, ids=np.array([3])), "[0, 3)")
    yield (DTypeError, "ids", dict(cold=X, ids=ids.astype(float)), "integer")
    yield (DimensionMismatch, "out", dict(cold=X, ids=ids, out=np.zeros((2, 2))),
           "dtype float32")
    yield (DimensionMismatch, "out", dict(cold=spla.Matrix.from_coo([0], [0], shape=(3, 2)),
                                          ids=ids, out=np.zeros((2, 2), np.float32)),
           "dtype float64")
    yield (InvalidValue, "hot", dict(cold=X, ids=ids, hot=np.zeros((1, 2), np.float32)),
           "None for a spla.Matrix")
    yield (InvalidValue, "hits", dict(cold=X, ids=ids, hits=np.zeros(1, np.int64)),
           "None for a spla.Matrix")


@pytest.mark.parametrize("cls,arg,kwargs,expected", list(sparse_errors()))
def test_take_rows_of_a_matrix_errors(cls, arg, kwargs, expected):
    test_take_rows_errors_name_function_argument_expected_received(cls, arg, kwargs, expected)
