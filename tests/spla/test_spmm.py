"""``spla.spmm`` (sparse x dense, and the transpose product) and ``spla.dropout``.

References are independent: scipy's sparse product in float64 for
``spmm``, and for ``dropout`` the law of its mask (a binomial test of the
keep rate for several ``p``, a chi-square test of independence between
neighbouring elements, which share one hash) plus its algebra (the same
call on a gradient is the backward pass).  Both are also checked to give
bit-identical results from the serial and the parallel kernel (the result
must not depend on the thread count).
"""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

import spla
from kernels.cpu import spmm as K
from strategies import PLANS, SETTINGS, twins

FLOATS = (np.float32, np.float64)


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-10)


# ---------------------------------------------------------------------------
# spmm against scipy


@SETTINGS
@given(t=twins(max_dim=9, plans=PLANS), f=st.integers(0, 5), dtype=st.sampled_from(FLOATS),
       transpose=st.booleans(), vector=st.booleans(), data=st.data())
def test_spmm_matches_scipy(backend, t, f, dtype, transpose, vector, data):
    m, n = t.shape
    rows = m if transpose else n
    shape = (rows,) if vector else (rows, f)
    X = data.draw(st.lists(st.floats(-4, 4, width=32), min_size=int(np.prod(shape)),
                           max_size=int(np.prod(shape))))
    X = np.array(X, dtype).reshape(shape)
    S = t.S.astype(np.float64)
    want = (S.T @ X.astype(np.float64)) if transpose else (S @ X.astype(np.float64))
    got = spla.spmm(backend.matrix(t.M), backend.asarray(X), transpose=transpose)
    assert got.dtype == dtype and got.shape == want.shape
    np.testing.assert_allclose(backend.host(got), want, **_tol(dtype))


def test_spmm_sampled_block_shapes_and_hub_columns():
    # A block shaped like a sampled layer: many rows, a few hub columns that
    # most rows pick (the transpose then has very long rows), empty rows.
    rng = np.random.default_rng(0)
    m, n, f = 3000, 5000, 16
    deg = rng.integers(0, 12, m)
    deg[::7] = 0
    rows = np.repeat(np.arange(m), deg)
    cols = np.where(rng.random(rows.size) < 0.3, rng.integers(0, 5, rows.size),
                    rng.integers(0, n, rows.size))
    S = sp.csr_matrix((rng.random(rows.size), (rows, cols)), shape=(m, n))
    S.sum_duplicates()
    A = spla.Matrix.from_scipy(S).astype(np.float32)
    X = rng.standard_normal((n, f)).astype(np.float32)
    G = rng.standard_normal((m, f)).astype(np.float32)
    np.testing.assert_allclose(spla.spmm(A, X), S @ X, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(spla.spmm(A, G, transpose=True), S.T @ G, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("transpose", [False, True])
def test_spmm_serial_and_parallel_kernels_agree_bit_for_bit(transpose):
    rng = np.random.default_rng(1)
    S = sp.random(700, 900, density=0.02, format="csr", random_state=2, dtype=np.float32)
    A = spla.Matrix.from_scipy(S)
    X = rng.standard_normal((700 if transpose else 900, 33)).astype(np.float32)
    if transpose:
        trows = np.empty(A.nnz, np.int32)
        ptr, perm = K.transpose_pattern(A.indptr, A.indices, A.ncols, trows)
        args = (ptr, trows, np.asarray(A.values)[perm], X)
        m = A.ncols
    else:
        args = (A.indptr, A.indices, A.values, X)
        m = A.nrows
    a = K.spmm_rows.call_twin("serial", *args, np.empty((m, 33), np.float32))
    b = K.spmm_rows.call_twin("parallel", *args, np.empty((m, 33), np.float32))
    assert np.array_equal(a, b)
    assert np.array_equal(spla.spmm(A, X, transpose=transpose), a)


def test_transpose_pattern_against_scipy():
    S = sp.random(50, 40, density=0.1, format="csr", random_state=3)
    trows = np.empty(S.nnz, np.int64)
    ptr, perm = K.transpose_pattern(S.indptr.astype(np.int64), S.indices, 40, trows)
    T = S.T.tocsr()
    T.sort_indices()
    assert np.array_equal(ptr, T.indptr) and np.array_equal(trows, T.indices)
    assert np.array_equal(S.data[perm], T.data)


def test_spmm_structural_integer_values_and_lazy_products():
    A = spla.Matrix.from_coo([0, 0, 2], [1, 2, 0], shape=(3, 3))          # structural
    X = np.arange(6, dtype=np.float64).reshape(3, 2)
    np.testing.assert_array_equal(spla.spmm(A, X), A.to_dense() @ X)
    Ai = A.astype(np.int64).with_values(np.array([2, -1, 3]))
    np.testing.assert_array_equal(spla.spmm(Ai, X), Ai.to_dense() @ X)
    np.testing.assert_array_equal(spla.spmm(Ai, X.astype(np.float32), transpose=True),
                                  (Ai.to_dense().T @ X).astype(np.float32))
    Q = spla.Matrix.from_coo([0], [2], shape=(1, 3))
    np.testing.assert_array_equal(spla.spmm(Q @ A, X), (Q.to_dense() @ A.to_dense()) @ X)


def test_spmm_empty_shapes():
    for shape in [(0, 0), (0, 3), (3, 0), (4, 5)]:
        A = spla.Matrix.from_coo([], [], shape=shape)
        for f in (0, 3):
            out = spla.spmm(A, np.ones((shape[1], f), np.float32))
            assert out.shape == (shape[0], f) and not out.any()
            out = spla.spmm(A, np.ones((shape[0], f)), transpose=True)
            assert out.shape == (shape[1], f) and not out.any()


def test_spmm_non_contiguous_operand_and_out():
    rng = np.random.default_rng(4)
    S = sp.random(20, 30, density=0.2, format="csr", random_state=5)
    A = spla.Matrix.from_scipy(S)
    X = np.asfortranarray(rng.standard_normal((30, 4)))
    np.testing.assert_allclose(spla.spmm(A, X), S @ X)
    np.testing.assert_allclose(spla.spmm(A, X[:, ::2]), S @ X[:, ::2])
    out = np.full((20, 4), np.nan)
    res = spla.spmm(A, X, out=out)
    assert res is out
    np.testing.assert_allclose(out, S @ X)
    vec = np.zeros(30)
    assert spla.spmm(A, np.ones(20), transpose=True, out=vec) is vec
    np.testing.assert_allclose(vec, S.T @ np.ones(20))


def test_spmm_transpose_is_cached_and_values_follow_the_dtype():
    S = sp.random(30, 20, density=0.2, format="csr", random_state=6)
    A = spla.Matrix.from_scipy(S)
    G = np.ones((30, 2), np.float32)
    first = spla.spmm(A, G, transpose=True)
    again = spla.spmm(A, G, transpose=True)
    assert np.array_equal(first, again) and first.dtype == np.float32
    np.testing.assert_allclose(spla.spmm(A, G.astype(np.float64), transpose=True), S.T @ G)


def test_spmm_bad_arguments():
    A = spla.Matrix.from_coo([0], [1], [1.0], shape=(2, 3))
    with pytest.raises(spla.DTypeError, match=r"spmm: argument 'A' must be"):
        spla.spmm(np.eye(2), np.ones((2, 1)))
    with pytest.raises(spla.DTypeError, match=r"argument 'X' must be an array of dtype float32"):
        spla.spmm(A, np.ones((3, 1), np.int64))
    with pytest.raises(spla.DTypeError, match=r"argument 'X' must be a numpy or cupy array"):
        spla.spmm(A, [[1.0], [2.0], [3.0]])
    with pytest.raises(spla.InvalidValue, match=r"argument 'X' must be a 1-D or 2-D array"):
        spla.spmm(A, np.ones((3, 1, 1)))
    with pytest.raises(spla.DimensionMismatch, match=r"argument 'X' must be an array with 3 rows"):
        spla.spmm(A, np.ones((2, 1)))
    with pytest.raises(spla.DimensionMismatch, match=r"with 2 rows \(A's rows"):
        spla.spmm(A, np.ones((3, 1)), transpose=True)
    with pytest.raises(spla.DTypeError, match="transpose"):
        spla.spmm(A, np.ones((3, 1)), transpose=1)
    with pytest.raises(spla.DimensionMismatch, match="'out'"):
        spla.spmm(A, np.ones((3, 1)), out=np.empty((2, 1), np.float32))
    with pytest.raises(spla.InvalidValue, match="'out' must be a writeable C-contiguous"):
        spla.spmm(A, np.ones((3, 2)), out=np.empty((2, 4))[:, ::2])
    X = np.ones((3, 3))
    with pytest.raises(spla.InvalidValue, match="does not overlap"):
        spla.spmm(spla.Matrix.from_coo([0], [1], [1.0], shape=(3, 3)), X, out=X)


# ---------------------------------------------------------------------------
# dropout


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_keep_rate_and_scale(p):
    n = 200_001   # odd: the last element has no partner in its hash
    X = np.ones(n, np.float64)
    Y = spla.dropout(X, p, seed=11, stream=3)
    kept = Y != 0
    assert np.allclose(Y[kept], 1 / (1 - p))
    # Two-sided binomial test of the keep count at level 1e-6 (fixed seed: deterministic).
    assert stats.binomtest(int(kept.sum()), n, 1 - p).pvalue > 1e-6


def test_dropout_neighbouring_elements_are_independent():
    # Elements 2k and 2k+1 take the two halves of one hash; their keeps must
    # be independent: chi-square test of the 2 x 2 table (and across pairs).
    Y = spla.dropout(np.ones(400_000, np.float32), 0.3, seed=5) != 0
    for a, b in [(Y[0::2], Y[1::2]), (Y[1:-1:2], Y[2::2])]:
        table = np.array([[np.sum(a & b), np.sum(a & ~b)], [np.sum(~a & b), np.sum(~a & ~b)]])
        assert stats.chi2_contingency(table).pvalue > 1e-6


def test_dropout_is_a_pure_function_of_seed_stream_and_index():
    X = np.random.default_rng(0).standard_normal((300, 7)).astype(np.float32)
    a = spla.dropout(X, 0.5, seed=1)
    assert np.array_equal(a, spla.dropout(X.copy(), 0.5, seed=1))
    assert not np.array_equal(a, spla.dropout(X, 0.5, seed=2))
    assert not np.array_equal(a, spla.dropout(X, 0.5, seed=1, stream=1))
    # Element i's fate depends on its index only, not on the array's shape.
    flat = spla.dropout(X.ravel(), 0.5, seed=1)
    assert np.array_equal(flat.reshape(X.shape), a)
    # Serial and parallel kernels give the same mask.
    key = np.uint64(12345)
    xs = X.ravel()
    s = K.dropout.call_twin("serial", xs, np.empty_like(xs), key, np.uint32(2 ** 31),
                            np.float32(2))
    p = K.dropout.call_twin("parallel", xs, np.empty_like(xs), key, np.uint32(2 ** 31),
                            np.float32(2))
    assert np.array_equal(s, p)


def test_dropout_backward_is_the_same_call():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((50, 6))
    G = rng.standard_normal((50, 6))
    mask_scale = spla.dropout(np.ones_like(X), 0.25, seed=9)
    np.testing.assert_array_equal(spla.dropout(X, 0.25, seed=9), X * mask_scale)
    np.testing.assert_array_equal(spla.dropout(G, 0.25, seed=9), G * mask_scale)


def test_dropout_edge_cases():
    X = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert np.array_equal(spla.dropout(X, 0.0, seed=0), X)
    assert spla.dropout(np.zeros((0, 4), np.float32), 0.5, seed=0).shape == (0, 4)
    Y = X.copy()
    assert spla.dropout(Y, 0.5, seed=4, out=Y) is Y                # in place
    assert np.array_equal(Y, spla.dropout(X, 0.5, seed=4))
    np.testing.assert_array_equal(spla.dropout(X[:, ::2], 0.5, seed=4),
                                  spla.dropout(np.ascontiguousarray(X[:, ::2]), 0.5, seed=4))
    nan = spla.dropout(np.full(64, np.nan), 0.5, seed=0)
    assert np.isnan(nan).all()                                      # NaN * 0 stays NaN, as torch
    assert (spla.dropout(np.ones(1000), 0.999999, seed=0) == 0).mean() > 0.99


@SETTINGS
@given(st.integers(1, 9), st.integers(1, 9), st.data())
def test_dropout_of_a_piece_is_the_piece_of_the_dropout(m, f, data):
    """Any rows and a column range of a matrix, masked with ``row_offsets``,
    equal that piece of the whole matrix's dropout; a sparse piece's stored
    entries take the same values, for both kernels (serial and parallel)."""
    dtype = data.draw(st.sampled_from(FLOATS))
    seed, stream = data.draw(st.integers(0, 2 ** 64 - 1)), data.draw(st.integers(0, 3))
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    X = rng.random((m, f)).astype(dtype) * (rng.random((m, f)) < 0.6)
    whole = spla.dropout(X, 0.4, seed=seed, stream=stream)
    rows = rng.integers(0, m, data.draw(st.integers(0, 12)))
    c0 = data.draw(st.integers(0, f - 1))
    c1 = data.draw(st.integers(c0, f))
    piece = np.ascontiguousarray(X[rows][:, c0:c1])
    offsets = rows * f + c0
    got = spla.dropout(piece, 0.4, seed=seed, stream=stream, row_offsets=offsets)
    np.testing.assert_array_equal(got, whole[rows][:, c0:c1])
    S = sp.csr_matrix(piece)
    M = spla.Matrix.from_csr(S.indptr, S.indices, S.data, S.shape)
    D = spla.dropout(M, 0.4, seed=seed, stream=stream, row_offsets=offsets)
    assert np.array_equal(D.indptr, S.indptr) and np.array_equal(D.indices, S.indices)
    np.testing.assert_array_equal(D.to_scipy().toarray(), whole[rows][:, c0:c1])
    key = np.uint64(7)
    for kernel in (K.dropout_rows, K.dropout_entries):
        args = ((piece, np.empty_like(piece)) if kernel is K.dropout_rows else
                (S.indptr.astype(np.int64), S.indices.astype(np.int64), S.data,
                 np.empty_like(S.data)))
        a = kernel.call_twin("serial", *args, offsets, key, np.uint32(2 ** 31), dtype(2))
        b = kernel.call_twin("parallel", *[x.copy() for x in args], offsets, key,
                             np.uint32(2 ** 31), dtype(2))
        np.testing.assert_array_equal(a, b)


def test_dropout_of_a_piece_bad_arguments():
    X = np.ones((2, 3), np.float32)
    M = spla.Matrix.from_coo([0], [1], [1.0], shape=(2, 3))
    with pytest.raises(spla.DimensionMismatch, match="dropout: argument 'row_offsets' must be "
                                                     r"one offset per row of X \(2\); got 3"):
        spla.dropout(X, 0.5, seed=0, row_offsets=[0, 3, 6])
    with pytest.raises(spla.IndexOutOfRange, match="'row_offsets' must be non-negative"):
        spla.dropout(X, 0.5, seed=0, row_offsets=[0, -3])
    with pytest.raises(spla.InvalidValue, match="'row_offsets' must be None for a 1-D X"):
        spla.dropout(np.ones(3), 0.5, seed=0, row_offsets=[0])
    with pytest.raises(spla.InvalidValue, match="'row_offsets' must be set for a sparse X"):
        spla.dropout(M, 0.5, seed=0)
    with pytest.raises(spla.InvalidValue, match="'out' must be None for a sparse X"):
        spla.dropout(M, 0.5, seed=0, row_offsets=[0, 3], out=X)
    structural = spla.dropout(M.structure(), 0.0, seed=0, row_offsets=[0, 3])
    assert structural.values.tolist() == [1.0] and structural.dtype == np.float32


def test_dropout_bad_arguments():
    X = np.ones(3)
    for p in (1.0, -0.1, float("nan")):
        with pytest.raises(spla.InvalidValue, match=r"dropout: argument 'p' must be a number in \[0, 1\)"):
            spla.dropout(X, p, seed=0)
    for p in ("0.5", True, None):
        with pytest.raises(spla.InvalidValue, match="'p'"):
            spla.dropout(X, p, seed=0)
    with pytest.raises(spla.InvalidValue, match="'seed'"):
        spla.dropout(X, 0.5, seed=-1)
    with pytest.raises(spla.InvalidValue, match="'stream'"):
        spla.dropout(X, 0.5, seed=0, stream=2 ** 64)
    with pytest.raises(spla.DTypeError, match="'X'"):
        spla.dropout(np.ones(3, np.int32), 0.5, seed=0)
    with pytest.raises(spla.DimensionMismatch, match="'out'"):
        spla.dropout(X, 0.5, seed=0, out=np.ones(4))
    buf = np.ones(5)
    with pytest.raises(spla.InvalidValue, match="partly overlapping"):
        spla.dropout(buf[:3], 0.5, seed=0, out=buf[1:4])


def test_dropout_same_mask_on_every_backend(backend):
    X = np.random.default_rng(2).standard_normal((33, 5))
    got = spla.dropout(backend.asarray(X), 0.4, seed=8, stream=1)
    assert np.array_equal(backend.host(got), spla.dropout(X, 0.4, seed=8, stream=1))
