"""``spla.layer_ops.reduce_row_groups`` (sums of groups of rows) is the product
of the structural group selection with A, bit for bit, and scipy's sums;
its errors; its GPU twin (``kernels/cuda/layer_sums.py``) under the CUDA
simulator (``test_sim_*``: run in the simulator child of
``tests/kernels/test_cuda_kernels.py``, where this file is in ``SIM_FILES``)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spla
from spla.layer_ops import reduce_row_groups

from sim_marks import sim


def _case(seed, n, m, groups, dtype=np.float32):
    rng = np.random.default_rng(seed)
    W = rng.random((n, m)) * (rng.random((n, m)) < 0.5) * 10.0 ** rng.integers(-4, 4, (n, m))
    W[rng.random((n, m)) < 0.05] = 0.0
    A = spla.Matrix.from_dense(W.astype(dtype))
    picks = [rng.choice(n, rng.integers(0, n + 1), replace=False) for _ in range(groups)]
    rows = np.concatenate([np.zeros(0, np.int64)] + picks).astype(np.int64)
    ptr = np.concatenate([[0], np.cumsum([p.size for p in picks])]).astype(np.int64)
    return A, rows, ptr


def _selection(rows, ptr, n):
    G = ptr.size - 1
    return spla.Matrix.from_coo(np.repeat(np.arange(G), np.diff(ptr)), rows, shape=(G, n))


def _same(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(np.asarray(got.indptr), np.asarray(want.indptr))
    assert np.array_equal(np.asarray(got.indices), np.asarray(want.indices))
    assert np.asarray(got.values).tobytes() == np.asarray(want.values).tobytes()


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(1, 14), st.integers(1, 14), st.integers(1, 4),
       st.sampled_from([np.float32, np.float64]))
def test_reduce_row_groups_is_the_selection_product_and_scipy(seed, n, m, groups, dtype):
    A, rows, ptr = _case(seed, n, m, groups, dtype)
    got = reduce_row_groups(A, rows, ptr)
    Q = _selection(rows, ptr, n)
    _same(got, (Q @ A).new())
    ref = (Q.to_scipy().astype(np.float64) @ A.to_scipy().astype(np.float64)).toarray()
    assert np.allclose(got.to_dense(), ref, rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_reduce_row_groups_of_structural_and_integer_matrices():
    S = spla.Matrix.from_coo([0, 1, 1, 2], [1, 0, 2, 2], shape=(3, 3))
    for A in (S, S.astype(np.int64)):
        got = reduce_row_groups(A, [2, 1, 0], [0, 2, 3])
        want = (_selection(np.array([2, 1, 0]), np.array([0, 2, 3]), 3) @ A).new()
        assert got.isequal(want)


def test_reduce_row_groups_errors():
    A = spla.Matrix.from_dense(np.eye(3, dtype=np.float32))
    with pytest.raises(spla.IndexOutOfRange, match="reduce_row_groups: argument 'rows'"):
        reduce_row_groups(A, [3], [0, 1])
    with pytest.raises(spla.InvalidValue, match="reduce_row_groups: argument 'rows'.*repeated"):
        reduce_row_groups(A, [1, 0, 1], [0, 3])
    assert reduce_row_groups(A, [1, 1], [0, 1, 2]).nnz == 2      # a row in two groups
    with pytest.raises(spla.InvalidCSR, match="reduce_row_groups: argument 'row_ptr'"):
        reduce_row_groups(A, [1, 0], [0, 1])
    with pytest.raises(spla.DTypeError, match="reduce_row_groups: argument 'A'"):
        reduce_row_groups(A.to_scipy(), [0], [0, 1])


@pytest.fixture(scope="module")
def cp():
    import fake_cupy
    with fake_cupy.installed() as mod:
        yield mod


@sim
@settings(max_examples=10, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2 ** 32 - 1), st.integers(1, 9), st.integers(1, 9), st.integers(1, 3),
       st.sampled_from([np.float32, np.float64]))
def test_sim_reduce_row_groups_equals_the_cpu(cp, seed, n, m, groups, dtype):
    """The GPU's sums are the CPU's bit for bit, in at most 9 device
    operations and 2 reads whatever the size (trusted rows, host pointer);
    with both signs and stored signed zeros, whose sums' signs depend on
    the order and on the -0 each sum starts from."""
    import fake_cupy
    A, rows, ptr = _case(seed, n, m, groups, dtype)
    signs = np.random.default_rng(seed).choice(np.array([-1.0, 1.0, -0.0, 0.0], dtype),
                                               A.nnz, p=[0.4, 0.4, 0.1, 0.1])
    vals = np.where(signs == 0, signs, np.asarray(A.values) * signs).astype(dtype)
    A = spla.Matrix.from_csr(np.asarray(A.indptr), np.asarray(A.indices), vals, A.shape)
    want = reduce_row_groups(A, rows, ptr)
    G = A.to("cuda")
    fake_cupy.reset()
    got = reduce_row_groups(G, cp.asarray(rows), ptr, check=False)
    stats = dict(fake_cupy.STATS)
    assert stats["reads"] <= 2 and stats["launches"] <= 9, stats
    assert got.device == "cuda"
    _same(got.to("cpu"), want)
    _same(reduce_row_groups(G, cp.asarray(rows), ptr).to("cpu"), want)
    # Host rows and a host copy of the row pointer: the products are counted
    # on the host, a read fewer (the output's size is the one read left).
    H = spla.Matrix.from_csr(G.indptr, G.indices, G.values, G.shape, check=False, copy=False,
                             host_indptr=np.asarray(A.indptr))
    fake_cupy.reset()
    got = reduce_row_groups(H, rows, ptr, check=False)
    assert fake_cupy.STATS["reads"] <= 1, fake_cupy.STATS
    _same(got.to("cpu"), want)


@sim
def test_sim_reduce_row_groups_of_empty_groups_and_rows(cp):
    """No rows at all, groups without rows, selected rows without entries."""
    A = spla.Matrix.from_dense(np.array([[0.0, 0.0], [1.5, 0.0], [0.0, 0.0]], np.float32))
    for rows, ptr in (([], [0, 0, 0]), ([0, 2], [0, 0, 2]), ([2, 1, 0], [0, 1, 3, 3])):
        rows, ptr = np.array(rows, np.int64), np.array(ptr, np.int64)
        want = reduce_row_groups(A, rows, ptr)
        got = reduce_row_groups(A.to("cuda"), cp.asarray(rows), ptr, check=False)
        _same(got.to("cpu"), want)
