"""``@`` by its operands (``spla/sugar.py``): two matrices make a lazy
``mxm``, a Vector ``mxv``/``vxm``, a numpy array a dense ``spmm`` result,
checked against scipy.sparse (an independent reference)."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import spla
from spla import Vector
from spla.exceptions import DimensionMismatch, DTypeError
from spla.mxm import MxmExpr

SHAPES = st.tuples(st.integers(0, 7), st.integers(0, 7), st.integers(1, 4))


def _matrix(rng, m, n, kind):
    dense = np.where(rng.random((m, n)) < 0.4, rng.standard_normal((m, n)), 0.0)
    if kind == "structural":
        r, c = np.nonzero(dense)
        return spla.Matrix.from_coo(r, c, shape=(m, n)), (dense != 0).astype(np.float64)
    if kind == "int64":
        dense = np.round(dense * 4).astype(np.int64)
    else:
        dense = dense.astype(kind)
    return spla.Matrix.from_dense(dense), dense


@settings(max_examples=60, deadline=None)
@given(shape=SHAPES, kind=st.sampled_from(["float32", "float64", "int64", "structural"]),
       xdtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2 ** 32 - 1))
def test_matrix_at_dense_is_scipys_product(shape, kind, xdtype, seed):
    m, n, f = shape
    rng = np.random.default_rng(seed)
    A, dense = _matrix(rng, m, n, kind)
    ref = sp.csr_matrix(dense.astype(np.float64))
    tol = dict(rtol=1e-5, atol=1e-5) if xdtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    X = rng.standard_normal((n, f)).astype(xdtype)
    got = A @ X
    assert isinstance(got, np.ndarray) and got.dtype == xdtype and got.shape == (m, f)
    np.testing.assert_allclose(got, ref @ X.astype(np.float64), **tol)
    x = rng.standard_normal(n).astype(xdtype)
    np.testing.assert_allclose(A @ x, ref @ x.astype(np.float64), **tol)
    # X @ A, 2-D and 1-D: numpy defers to the matrix instead of looping over it.
    Y = rng.standard_normal((f, m)).astype(xdtype)
    got = Y @ A
    assert isinstance(got, np.ndarray) and got.dtype == xdtype and got.shape == (f, n)
    np.testing.assert_allclose(got, Y.astype(np.float64) @ ref.toarray(), **tol)
    y = rng.standard_normal(m).astype(xdtype)
    np.testing.assert_allclose(y @ A, y.astype(np.float64) @ ref.toarray(), **tol)


def test_matrix_at_dense_is_spmm_bit_for_bit():
    rng = np.random.default_rng(3)
    A, _ = _matrix(rng, 30, 20, "float32")
    X = rng.standard_normal((20, 5)).astype(np.float32)
    assert (A @ X).tobytes() == spla.spmm(A, X).tobytes()
    Y = rng.standard_normal((5, 30)).astype(np.float32)
    assert (Y @ A).tobytes() == np.ascontiguousarray(
        spla.spmm(A, np.ascontiguousarray(Y.T), transpose=True).T).tobytes()


def test_matrices_stay_lazy_and_vectors_take_mxv_and_vxm():
    rng = np.random.default_rng(5)
    A, dense = _matrix(rng, 6, 6, "float64")
    B, dense_b = _matrix(rng, 6, 4, "float64")
    P = A @ B
    assert isinstance(P, MxmExpr)
    np.testing.assert_allclose(P.new().to_dense(), dense @ dense_b)
    X = rng.standard_normal((4, 3))
    np.testing.assert_allclose(P @ X, dense @ dense_b @ X)                   # lazy @ dense
    Z = rng.standard_normal((2, 6))
    np.testing.assert_allclose(Z @ P, Z @ dense @ dense_b)                   # dense @ lazy
    u = Vector.from_coo([0, 4], [2.0, -1.0], size=6)
    ud = u.to_dense()
    assert isinstance(A @ u, Vector) and isinstance(u @ A, Vector)
    np.testing.assert_allclose((A @ u).to_dense(), dense @ ud)
    np.testing.assert_allclose((u @ A).to_dense(), ud @ dense)
    assert (A @ u).to_dense().tobytes() == spla.mxv(A, u).to_dense().tobytes()
    assert (u @ A).to_dense().tobytes() == spla.vxm(u, A).to_dense().tobytes()


def test_matmul_errors_name_the_operator_and_argument():
    A = spla.Matrix.from_dense(np.eye(3))
    with pytest.raises(DimensionMismatch, match="spmm: argument 'X' must be an array with 3 rows"):
        A @ np.ones((4, 2))
    with pytest.raises(DTypeError, match="spmm: argument 'X'"):
        A @ np.ones((3, 2), np.int64)
    with pytest.raises(DimensionMismatch, match="spmm: argument 'X'"):
        np.ones((2, 4)) @ A
    with pytest.raises(DimensionMismatch, match="mxv: argument 'u'"):
        A @ Vector.from_coo([0], [1.0], size=4)
    with pytest.raises(DTypeError, match="mxm: argument 'B'"):
        A @ [[1.0, 2.0, 3.0]]
