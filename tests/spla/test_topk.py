"""``spla.select_topk`` against a plain numpy reference.

The reference ranks each row with ``np.lexsort`` on (column, -value) (for
integers ``~value``, which reverses the order without overflowing at the
int64 minimum), keeps the first k and puts them back in column order.  It
never calls spla's kernels, so a bug there cannot leak into it.

Covered: every value dtype and both index dtypes, empty matrices and rows,
k above every row and k = -1, ties (values drawn from a handful of integers),
infinities, signed zeros and the int64 extremes, lazy products, long rows
(the heap path and the parallel twin), threads, and every refused argument.
"""

import importlib
import inspect
import threading

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import spla
from spla import select_topk

from strategies import (ALL_PLANS, INDEX_DTYPES, SETTINGS, assert_canonical, make_twin,
                        twin_pairs_mxm, twins)

#: plans with values (the structural plan is refused; tested apart)
VALUED_PLANS = tuple(p for p in ALL_PLANS if p[1] is not None)


def reference_topk(indptr, indices, values, k, largest=True):
    """(indptr, indices, values) of the per-row top k, in column order (numpy only)."""
    indptr, indices, values = (np.asarray(indptr), np.asarray(indices), np.asarray(values))
    ptr = [0]
    cols, vals = [], []
    for i in range(indptr.size - 1):
        lo, hi = int(indptr[i]), int(indptr[i + 1])
        c, v = indices[lo:hi].astype(np.int64), values[lo:hi]
        if largest:
            key = ~v if v.dtype.kind == "i" else -v
        else:
            key = v
        order = np.lexsort((c, key))          # by key, then by column
        keep = order if k == -1 else order[:k]
        keep = np.sort(keep)                  # back in column order
        cols.append(c[keep])
        vals.append(v[keep])
        ptr.append(ptr[-1] + keep.size)
    cat = (lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt))
    return (np.array(ptr, np.int64), cat(cols, np.int64), cat(vals, values.dtype))


def check_against_reference(M, R, k, largest):
    """``R = select_topk(M, k, largest=largest)`` is the reference's answer, exactly."""
    assert_canonical(R)
    assert R.shape == M.shape and R.device == M.device
    assert R.dtype == M.dtype and R.indices.dtype == M.indices.dtype
    h = spla.backend.to_host
    want_ptr, want_idx, want_val = reference_topk(h(M.indptr), h(M.indices), h(M.values),
                                                  k, largest)
    assert np.array_equal(h(R.indptr), want_ptr)
    assert np.array_equal(h(R.indices).astype(np.int64), want_idx)
    # Bit-identical values: the kept entries' own values (-0.0 stays -0.0).
    assert h(R.values).tobytes() == want_val.tobytes()


def ks():
    return st.one_of(st.just(-1), st.integers(1, 9), st.just(2 ** 70))


# --------------------------------------------------------------------------
# The reference itself (a reference that is wrong the same way would hide bugs)

def test_reference_on_a_hand_computed_case():
    # row 0: values 3 1 3 2 in columns 0..3; row 1 empty; row 2 a single entry
    ptr, idx = np.array([0, 4, 4, 5]), np.array([0, 1, 2, 3, 1])
    val = np.array([3, 1, 3, 2, -7])
    assert [a.tolist() for a in reference_topk(ptr, idx, val, 1)] == \
        [[0, 1, 1, 2], [0, 1], [3, -7]]
    assert [a.tolist() for a in reference_topk(ptr, idx, val, 3)] == \
        [[0, 3, 3, 4], [0, 2, 3, 1], [3, 3, 2, -7]]
    assert [a.tolist() for a in reference_topk(ptr, idx, val, 2, largest=False)] == \
        [[0, 2, 2, 3], [1, 3, 1], [1, 2, -7]]
    big = np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max, 0, -1, 5])
    assert reference_topk(ptr, idx, big, 1)[2].tolist() == [np.iinfo(np.int64).max, 5]


# --------------------------------------------------------------------------
# Property tests

@SETTINGS
@given(t=twins(plans=VALUED_PLANS, max_dim=9, min_value=-3, max_value=3), k=ks(),
       largest=st.booleans())
def test_matches_reference_with_ties(backend, t, k, largest):
    M = backend.matrix(t.M)
    check_against_reference(M, select_topk(M, k, largest=largest), k if k < 2 ** 62 else -1,
                            largest)


@SETTINGS
@given(t=twins(plans=VALUED_PLANS, max_dim=12, min_value=-1000, max_value=1000),
       k=st.integers(1, 12), largest=st.booleans())
def test_matches_reference_spread_values(backend, t, k, largest):
    M = backend.matrix(t.M)
    check_against_reference(M, select_topk(M, k, largest=largest), k, largest)


@SETTINGS
@given(pair=twin_pairs_mxm(), k=st.integers(1, 4), largest=st.booleans())
def test_lazy_product_is_materialised(backend, pair, k, largest):
    a, b = pair
    expr = backend.matrix(a.M) @ backend.matrix(b.M)
    if expr.dtype is None:  # a structural product: nothing to rank
        with pytest.raises(spla.InvalidValue, match="^select_topk: argument 'A'"):
            select_topk(expr, k)
        return
    P = expr.new()
    got = select_topk(expr, k, largest=largest)
    assert got.isequal(select_topk(P, k, largest=largest))
    check_against_reference(P, got, k, largest)


# --------------------------------------------------------------------------
# Edge cases

def _matrix(rows, dtype=np.float64, ncols=None):
    """A matrix from a list of rows of (column, value) pairs."""
    r = [i for i, row in enumerate(rows) for _ in row]
    c = [j for row in rows for j, _ in row]
    v = np.array([x for row in rows for _, x in row], dtype=dtype)
    ncols = ncols if ncols is not None else (max(c) + 1 if c else 0)
    return spla.Matrix.from_coo(np.array(r, np.int64), np.array(c, np.int64), v,
                                shape=(len(rows), ncols))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_all_ties_keep_the_smallest_columns(dtype):
    M = _matrix([[(j, 4) for j in range(9, 0, -2)], [], [(0, 4)]], dtype)  # cols 1 3 5 7 9
    for largest in (True, False):
        R = select_topk(M, 3, largest=largest)
        assert R.indices.tolist() == [1, 3, 5, 0]
        assert R.indptr.tolist() == [0, 3, 3, 4]
        assert R.dtype == np.dtype(dtype)


def test_k_above_every_row_and_minus_one_keep_everything():
    M = _matrix([[(0, 2.0), (3, -1.0)], [], [(1, 5.0), (2, 5.0), (4, 0.5)]])
    for k in (3, 4, 10 ** 6, 2 ** 62, 2 ** 100, -1):
        R = select_topk(M, k)
        assert R.isequal(M), k
    assert M.values.tolist() == [2.0, -1.0, 5.0, 5.0, 0.5]   # the input is untouched


def test_empty_matrices():
    for shape in ((0, 0), (0, 5), (4, 0), (3, 3)):
        M = spla.Matrix.from_coo(np.zeros(0, np.int64), np.zeros(0, np.int64),
                                 np.zeros(0, np.float32), shape=shape)
        R = select_topk(M, 2)
        assert R.shape == shape and R.nnz == 0 and R.dtype == np.float32
        assert_canonical(R)


def test_infinities_signed_zeros_and_integer_extremes():
    inf = np.inf
    M = _matrix([[(0, -inf), (1, 0.0), (2, -0.0), (3, inf), (4, 1e308), (5, -1e308)]])
    assert select_topk(M, 2).values.tolist() == [inf, 1e308]
    assert select_topk(M, 2, largest=False).values.tolist() == [-inf, -1e308]
    # 0.0 and -0.0 are equal values: the smaller column (1) ranks first
    R = select_topk(M, 3, largest=False)
    assert R.indices.tolist() == [0, 1, 5]
    R = select_topk(M, 3)
    assert R.indices.tolist() == [1, 3, 4]
    assert not np.signbit(R.values[0])
    R = select_topk(M, 4)
    assert R.indices.tolist() == [1, 2, 3, 4] and np.signbit(R.values[1])  # -0.0 kept as is
    lo, hi = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    M = _matrix([[(0, lo), (1, hi), (2, -1), (3, 0), (4, hi), (5, lo)]], np.int64)
    assert select_topk(M, 3).values.tolist() == [hi, 0, hi]
    assert select_topk(M, 3, largest=False).values.tolist() == [lo, -1, lo]


def test_index_dtypes_are_kept():
    for idt in INDEX_DTYPES:
        mask = np.array([[1, 1, 1], [0, 1, 1]], bool)
        t = make_twin(mask, np.array([1.0, 3.0, 2.0, 5.0, 4.0]), np.float64, idt)
        R = select_topk(t.M, 1)
        assert R.indices.dtype == idt and R.indices.tolist() == [1, 1]


def test_long_rows_heap_path_and_parallel_twin():
    """Rows of thousands of entries (the heap does real work) and enough entries
    for the parallel twin; both twins of the kernel agree with the reference."""
    from kernels.cpu import topk as K
    from kernels.parallel import SERIAL_WORK
    rng = np.random.default_rng(5)
    n, ncols = 40, 3000
    deg = rng.integers(0, ncols, n)
    deg[:3] = [0, 1, ncols]
    rows = np.repeat(np.arange(n), deg)
    cols = np.concatenate([rng.choice(ncols, d, replace=False) for d in deg])
    for dtype in (np.float64, np.int32):
        vals = rng.integers(-50, 50, rows.size).astype(dtype)  # many ties
        M = spla.Matrix.from_coo(rows, cols, vals, shape=(n, ncols))
        assert K.topk_rows.work(M.indptr, M.values, 1, True) >= SERIAL_WORK
        for k in (1, 7, 500, 2999):
            for largest in (True, False):
                check_against_reference(M, select_topk(M, k, largest=largest), k, largest)
                args = (M.indptr, M.values, np.int64(k), largest)
                serial = K.topk_rows.call_twin("serial", *args)
                parallel = K.topk_rows.call_twin("parallel", *args)
                for s, p in zip(serial, parallel):
                    assert np.array_equal(s, p)


def test_concurrent_calls_match_sequential_ones():
    rng = np.random.default_rng(2)
    n = 300
    rows, cols = rng.integers(0, n, 20000), rng.integers(0, 5000, 20000)
    M = spla.Matrix.from_coo(rows, cols, rng.integers(0, 20, 20000).astype(np.float32),
                             shape=(n, 5000))
    jobs = [(k, lg) for k in (1, 5, 40) for lg in (True, False)]
    want = [select_topk(M, k, largest=lg) for k, lg in jobs]
    got = [None] * len(jobs)
    errors = []

    def work(i):
        try:
            for _ in range(3):
                got[i] = select_topk(M, *jobs[i][:1], largest=jobs[i][1])
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(jobs))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    assert all(g.isequal(w) for g, w in zip(got, want))


def test_result_is_read_only_and_independent_of_the_input():
    M = _matrix([[(0, 1.0), (1, 2.0), (2, 3.0)]])
    R = select_topk(M, 2)
    assert not R.values.flags.writeable and not R.indices.flags.writeable
    assert R.values.tolist() == [2.0, 3.0] and M.values.tolist() == [1.0, 2.0, 3.0]


def test_work_estimate_reads_the_kernels_own_arguments():
    # The rule tests/kernels/test_kernel_safety.py applies to the other kernel modules.
    from kernels.parallel import ParallelKernel
    module = importlib.import_module("kernels.cpu.topk")
    kernels = [o for o in vars(module).values() if isinstance(o, ParallelKernel)]
    assert kernels
    for obj in kernels:
        kernel = list(inspect.signature(obj.py_func).parameters)
        work = [p.name for p in inspect.signature(obj.work).parameters.values()
                if p.kind != p.VAR_POSITIONAL]
        assert kernel[:len(work)] == work


# --------------------------------------------------------------------------
# Refused arguments

def _err(cls, text):
    return pytest.raises(cls, match="^select_topk: argument " + text)


def test_refused_arguments():
    M = _matrix([[(0, 1.0), (1, 2.0)]])
    with _err(spla.InvalidValue, "'k' must be an integer >= 1, or -1 to keep every entry; "
                                 "got 0$"):
        select_topk(M, 0)
    with _err(spla.InvalidValue, "'k' must be an integer >= 1, or -1 .*; got -2$"):
        select_topk(M, -2)
    for bad in (True, 2.0, "3", None, np.array([1, 2])):
        with _err(spla.InvalidValue, "'k' must be an integer; got"):
            select_topk(M, bad)
    for bad in (1, "yes", None):
        with _err(spla.DTypeError, "'largest' must be True or False; got"):
            select_topk(M, 1, largest=bad)
    assert select_topk(M, 1, largest=np.bool_(False)).values.tolist() == [1.0]
    with _err(spla.DTypeError, "'A' must be a spla.Matrix or a lazy Q @ A; got"):
        select_topk(M.to_scipy(), 1)
    with _err(spla.DTypeError, "'A' must be a spla.Matrix or a lazy Q @ A; got"):
        select_topk(spla.distribute(M), 1)


def test_structural_matrices_are_refused():
    S = _matrix([[(0, 1.0), (2, 2.0)]]).structure()
    with _err(spla.InvalidValue, "'A' must be a matrix with values to rank .*; got a "
                                 "structural matrix$"):
        select_topk(S, 1)
    # a structural lazy product is refused before it is computed
    with _err(spla.InvalidValue, "'A' must be a matrix with values to rank"):
        select_topk(spla.mxm(S, S.T, "any_pair"), 1)
    # the explicit alternative the message suggests: equal ones, by column
    assert select_topk(S.astype(np.int32), 1).indices.tolist() == [0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_is_refused_naming_row_and_column(dtype):
    M = _matrix([[(0, 1.0), (4, 2.0)], [], [(1, 0.5), (3, np.nan), (5, np.nan)]], dtype)
    with _err(spla.InvalidValue, r"'A' must be values without NaN \(NaN has no rank; "
                                 r"infinities are fine\); got NaN at row 2, column 3$"):
        select_topk(M, 1)
    with _err(spla.InvalidValue, "'A' must be values without NaN"):
        select_topk(M, -1)   # whatever k
