"""``spla.scale_columns`` is ``M @ diag(d)`` entry for entry; ``spla.diag``; their errors."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import spla
from spla import diag as diagonal, scale_columns
from strategies import assert_same_blocks


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 30), st.integers(1, 40), st.floats(0.0, 1.0), st.integers(0, 2 ** 31),
       st.sampled_from([np.float32, np.float64]))
def test_scale_columns_equals_product_with_diagonal(m, n, density, seed, dtype):
    rng = np.random.default_rng(seed)
    S = sp.random(m, n, density=density, format="csr", random_state=rng, dtype=dtype)
    S.data = (S.data * 10.0 ** rng.integers(-30, 30, S.data.size)).astype(dtype)
    M = spla.Matrix.from_scipy(S)
    d = (rng.random(n) * 10.0 ** rng.integers(-20, 20, n)).astype(dtype)
    d[rng.random(n) < 0.2] = 0.0           # zero scales keep their entries
    want = spla.mxm(M, diagonal(d)).new()
    got = scale_columns(M, d)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(np.asarray(got.indptr), np.asarray(want.indptr))
    assert np.array_equal(np.asarray(got.indices), np.asarray(want.indices))
    assert np.asarray(got.values).tobytes() == np.asarray(want.values).tobytes()
    # And against scipy (an independent product).
    with np.errstate(over="ignore"):
        ref = (S @ sp.diags(d)).toarray()
    assert np.allclose(got.to_dense(), ref, rtol=1e-6, atol=0)


def test_fastgcn_dense_probabilities_change_no_block(monkeypatch):
    """FastGCN reads p_j from a dense vector; the generic path (looking each
    minibatch's kept columns up in the global row) gives the same blocks."""
    from sampling import FastGCN
    from spla.generators import rmat
    A = rmat(9, 8, seed=4)
    rng = np.random.default_rng(0)
    batches = [rng.choice(A.nrows, 20, replace=False) for _ in range(3)]
    fast = FastGCN(A, [30, 25]).sample(batches, seed=5)
    monkeypatch.setattr(FastGCN, "_column_probabilities", lambda self: None)
    assert_same_blocks(fast, FastGCN(A, [30, 25]).sample(batches, seed=5))


@pytest.mark.parametrize("normalize", [True, False])
def test_ladies_kept_probabilities_equal_the_normalised_rows(monkeypatch, normalize):
    """LADIES divides only the kept columns by their row's sum; normalising
    every row of P first, extracting the kept columns' entries and scaling
    by ``scale_columns`` (the operators the fused layer replaces) gives the
    same blocks, bit for bit."""
    from sampling import LADIES
    import sampling.samplers.layerwise as layerwise
    from spla.generators import rmat
    A = rmat(9, 8, seed=2)
    if not normalize:   # weighted graph, sampled from its own values
        rng = np.random.default_rng(1)
        A = A.with_values(rng.random(A.nnz).astype(np.float32) + np.float32(0.01))
    rng = np.random.default_rng(3)
    batches = [rng.choice(A.nrows, 15, replace=False) for _ in range(3)]
    new = LADIES(A, [40, 30], normalize=normalize).sample(batches, seed=9)

    def old_layer(A, S, dst, dst_ptr, s, *, W=None, w_rows=None, p=None, check=True,
                  host_src=False):
        one = np.arange(len(dst_ptr), dtype=np.int64)
        _, src, src_ptr = spla.compact_columns_blockwise(S, one, first=dst, first_ptr=dst_ptr)
        adj = spla.extract_blockwise(A, dst, dst_ptr, src, src_ptr)
        kept = spla.extract_blockwise(spla.normalize_rows(W), w_rows, one, src, src_ptr)
        p_col = spla.reduce_rowwise(spla.transpose(kept), "plus")
        scale = np.where(p_col > 0, 1.0 / (s * np.where(p_col > 0, p_col, 1.0)), 0.0)
        adj = spla.normalize_rows(scale_columns(adj, scale.astype(adj.dtype)))
        return (adj, src, src_ptr, None) if host_src else (adj, src, src_ptr)

    monkeypatch.setattr(layerwise, "importance_layer", old_layer)
    assert_same_blocks(new, LADIES(A, [40, 30], normalize=normalize).sample(batches, seed=9))


def test_scale_columns_errors_and_vector_scales():
    M = spla.Matrix.from_dense(np.array([[1.0, 2.0], [0.0, 3.0]]))
    v = spla.Vector.from_dense(np.array([2.0, 0.0]))
    assert np.array_equal(scale_columns(M, v).to_dense(), np.array([[2.0, 0.0], [0.0, 0.0]]))
    assert scale_columns(M, v).nnz == M.nnz                 # zero scales keep their entries
    with pytest.raises(spla.DimensionMismatch, match="scale_columns: argument 'd'"):
        scale_columns(M, np.ones(3))
    with pytest.raises(spla.DTypeError, match="scale_columns: argument 'd'"):
        scale_columns(M, np.array(["a", "b"]))
    with pytest.raises(spla.DTypeError, match="scale_columns: argument 'M'"):
        scale_columns(M.to_scipy(), np.ones(2))
    with pytest.raises(spla.DimensionMismatch, match="diag: argument 'd'"):
        diagonal(np.ones((2, 2)))
