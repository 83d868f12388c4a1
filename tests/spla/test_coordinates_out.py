"""The stored entries back out as coordinates: ``Matrix.to_coo``,
``Matrix.to_edge_index``, ``Vector.to_coo`` and ``Matrix.nvals``, against
scipy.sparse (an independent reference) and as inverses of the factories;
and the scipy interop bound by ``spla.interop``."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import spla
from spla import Matrix, Vector
from spla.exceptions import InvalidValue

DTYPES = st.sampled_from(["float32", "float64", "int64", "structural"])


def _random(seed, m, n, kind):
    rng = np.random.default_rng(seed)
    dense = np.where(rng.random((m, n)) < 0.35, rng.integers(-5, 6, (m, n)), 0)
    if kind == "structural":
        r, c = np.nonzero(dense)
        return Matrix.from_coo(r, c, shape=(m, n)), dense != 0
    return Matrix.from_dense(dense.astype(kind)), dense.astype(kind)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(0, 9), st.integers(0, 9), DTYPES)
def test_to_coo_is_scipys_canonical_coo_and_inverts_from_coo(seed, m, n, kind):
    A, dense = _random(seed, m, n, kind)
    rows, cols, vals = A.to_coo()
    ref = sp.csr_matrix(dense).tocoo()          # canonical CSR order: by row, then column
    assert rows.dtype == cols.dtype == np.int64
    assert np.array_equal(rows, ref.row) and np.array_equal(cols, ref.col)
    if kind == "structural":
        assert vals is None
    else:
        assert vals.dtype == A.dtype and np.array_equal(vals, ref.data)
        vals[...] = 0                            # a copy: the matrix is unchanged
        assert np.array_equal(A.to_dense(), dense)
    assert Matrix.from_coo(*A.to_coo(), shape=A.shape).isequal(A)
    assert A.nvals == A.nnz == rows.size


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(1, 9), st.booleans(),
       st.sampled_from(["source_to_target", "target_to_source"]))
def test_to_edge_index_inverts_from_edge_index(seed, n, weighted, flow):
    rng = np.random.default_rng(seed)
    pairs = np.unique(rng.integers(0, n, (rng.integers(0, 3 * n), 2)), axis=0)
    rng.shuffle(pairs)
    edge_index = pairs.T.reshape(2, -1)
    w = rng.random(edge_index.shape[1]) if weighted else None
    A = Matrix.from_edge_index(edge_index, n, values=w, flow=flow)
    out = A.to_edge_index(flow=flow)
    assert out.shape == edge_index.shape and out.dtype == np.int64
    # The same edges (the matrix's order), with A.values their weights.
    got = sorted(zip(*out.tolist(), [None] * out.shape[1] if w is None else A.values))
    want = sorted(zip(*edge_index.tolist(), [None] * len(pairs) if w is None else w))
    assert got == want
    assert Matrix.from_edge_index(out, n, values=A.values, flow=flow).isequal(A)
    # The other flow is the transpose.
    other = "target_to_source" if flow == "source_to_target" else "source_to_target"
    assert np.array_equal(A.to_edge_index(flow=other), out[::-1])


def test_to_edge_index_refuses_an_unknown_flow():
    with pytest.raises(InvalidValue, match="Matrix.to_edge_index: argument 'flow'"):
        Matrix.from_dense(np.eye(2)).to_edge_index(flow="both")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 19), max_size=12, unique=True), st.booleans())
def test_vector_to_coo_inverts_from_coo(ids, structural):
    vals = None if structural else np.arange(len(ids), dtype=np.float64) - 3.0
    v = Vector.from_coo(ids, vals, size=20)
    idx, got = v.to_coo()
    order = np.argsort(ids)
    assert idx.dtype == np.int64 and np.array_equal(idx, np.asarray(ids, np.int64)[order])
    assert (got is None) if structural else np.array_equal(got, vals[order])
    assert Vector.from_coo(idx, got, size=20).isequal(v)


def test_scipy_interop_is_bound_on_the_type():
    S = sp.random(6, 5, density=0.4, format="csr", random_state=1)
    A = Matrix.from_scipy(S)
    assert isinstance(A, Matrix) and A.to_scipy().toarray().tolist() == S.toarray().tolist()
    assert Matrix.from_scipy(S, structural=True).is_structural
    with pytest.raises(spla.DTypeError, match="Matrix.from_scipy: argument 'S'"):
        Matrix.from_scipy(np.eye(2))
