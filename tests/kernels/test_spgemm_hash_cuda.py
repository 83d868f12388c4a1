"""The hash SpGEMM (``kernels.cuda.spgemm_hash`` via ``kernels.cuda.spgemm``)
against the CPU kernel, bit for bit.

``test_sim_*`` run in the CUDA-simulator child of
``tests/kernels/test_cuda_kernels.py`` (``SPLA_IN_CUDASIM=1``); elsewhere they
skip.  Under the simulator a table has 16 slots and takes rows of at most 8
products, so tiny inputs exercise the hash path, the dense path and ESC.
``gpu`` tests need cupy and a device.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernels import semiring_ops as ops

from sim_marks import sim


def csr(D):
    ptr = np.r_[0, np.cumsum((D != 0).sum(1))].astype(np.int64)
    r, c = np.nonzero(D)
    return ptr, c.astype(np.int64), D[r, c]


def check(A, B, add, mul, dtype):
    """The CUDA two passes and the CPU kernel agree exactly on ``A @ B``."""
    from kernels.cpu import spgemm as cpu
    from kernels.cuda import spgemm as gpu
    a = csr(A.astype(dtype))
    b = csr(B.astype(dtype))
    one = np.ones(1, dtype)
    args = (a[0], a[1], a[2], True, b[0], b[1], b[2], True, B.shape[1], add, mul, one)
    want = cpu.spgemm(*args)
    got = gpu.spgemm(*args)
    for w, g in zip(want, got):
        assert w.dtype == g.dtype
        np.testing.assert_array_equal(g, w)
    return want


def products(A, B):
    """Products per row of ``A @ B``."""
    return ((A != 0).astype(np.int64) @ (B != 0).sum(1))


SEMIRINGS = ((ops.ADD_PLUS, ops.MUL_TIMES), (ops.ADD_MIN, ops.MUL_PLUS),
             (ops.ADD_ANY, ops.MUL_SECOND), (ops.ADD_MAX, ops.MUL_FIRST))


@sim
@pytest.mark.parametrize("add,mul", SEMIRINGS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("wide", [False, True])
def test_sim_hash_matches_cpu(add, mul, dtype, wide):
    """Hash rows, an empty row and a long row (dense path, or ESC when ``wide``)."""
    from kernels.cuda import spgemm_hash
    rs = np.random.RandomState(3 * add + mul)
    A = (rs.rand(6, 5) < 0.4) * rs.rand(6, 5)
    A[2] = 0  # an empty row
    A[4, :] = rs.rand(5) + 0.1  # a row over the table's capacity
    B = (rs.rand(5, 7) < 0.35) * (rs.rand(5, 7) * 3 - 1)
    B[1, :3] = [0.1, 0.7, 0.2]
    if wide:  # many unused columns: the dense scan would not pay, ESC takes it
        B = np.hstack([B, np.zeros((5, 64 * 40))])
    small, dense, esc = spgemm_hash.row_paths(np, products(A, B), B.shape[1])
    assert small.size and 4 in (esc if wide else dense).tolist()
    assert not (dense if wide else esc).size
    ptr, _, _ = check(A, B, add, mul, dtype)
    assert ptr[3] == ptr[2]


@sim
def test_sim_hash_collisions_and_rounding():
    """Columns that share a home slot, and float32 sums whose order shows."""
    from kernels.cuda import spgemm_hash
    home = spgemm_hash.home_slot.py_func
    # Four columns with one home slot, then a neighbour's home in their run.
    cols = [c for c in range(1000) if home(c, spgemm_hash.TABLE) == home(0, spgemm_hash.TABLE)]
    c0, c1, c2, c3 = cols[:4]
    nb = next(c for c in range(1000)
              if home(c, spgemm_hash.TABLE) == (home(0, spgemm_hash.TABLE) + 1) % spgemm_hash.TABLE)
    B = np.zeros((3, 1000), np.float64)
    B[0, [c0, c1, c2, c3]] = [1e8, 1.0, 3.0, 0.5]
    B[1, [c0, c1, nb]] = [-1e8, 1.0, 2.0]
    B[2, [c0, c3]] = [1.0, 1e-8]
    A = np.array([[1.0, 1.0, 0.0], [0.0, 3.0, 7.0], [1.0, 0.0, 1.0]])
    assert products(A, B).max() <= spgemm_hash.CAP
    for add, mul in SEMIRINGS:
        check(A, B, add, mul, np.float32)


@sim
@settings(max_examples=4, deadline=None)
@given(st.data())
def test_sim_hash_random(data):
    m = data.draw(st.integers(0, 4))
    k = data.draw(st.integers(1, 4))
    n = data.draw(st.integers(1, 6))
    cells = st.sampled_from([0.0, 0.0, 1.5, -2.0, 0.3])
    A = np.array(data.draw(st.lists(st.lists(cells, min_size=k, max_size=k),
                                    min_size=m, max_size=m)), np.float64).reshape(m, k)
    B = np.array(data.draw(st.lists(st.lists(cells, min_size=n, max_size=n),
                                    min_size=k, max_size=k)), np.float64).reshape(k, n)
    add, mul = data.draw(st.sampled_from(SEMIRINGS))
    check(A, B, add, mul, np.float32)


def _gpu():
    cp = pytest.importorskip("cupy")
    try:
        if cp.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("no CUDA device")
    except cp.cuda.runtime.CUDARuntimeError:
        pytest.skip("no CUDA device")
    return cp


@pytest.mark.gpu
@pytest.mark.parametrize("scale", [10, 12])
def test_gpu_hash_spgemm_rmat(scale):
    """R-MAT A @ A on the device equals the CPU kernel bit for bit (float32)."""
    cp = _gpu()
    from kernels.cpu import spgemm as cpu
    from kernels.cuda import spgemm as gpu
    from spla.generators import rmat
    S = rmat(scale, 16, seed=scale).to_scipy().tocsr()
    ptr, idx = S.indptr.astype(np.int64), S.indices.astype(np.int64)
    n = ptr.size - 1
    val = (np.arange(idx.size) % 7 + 1).astype(np.float32) / 3
    one = np.ones(1, np.float32)
    args = (ptr, idx, val, True, ptr, idx, val, True, n, ops.ADD_PLUS, ops.MUL_TIMES, one)
    want = cpu.spgemm(*args)
    got = gpu.spgemm(*(cp.asarray(a) if isinstance(a, np.ndarray) else a for a in args))
    for w, g in zip(want, got):
        np.testing.assert_array_equal(cp.asnumpy(g), w)


def test_row_paths_leave_a_few_huge_rows_to_esc(monkeypatch):
    """The dense path takes long rows only when enough of them fill the GPU:
    fewer than ``DENSE_MIN_ROWS`` go to ESC (LADIES' few probability rows)."""
    from kernels.cuda import spgemm_hash
    monkeypatch.setattr(spgemm_hash, "DENSE_MIN_ROWS", 3)
    cap = spgemm_hash.CAP
    w = np.array([0, 1, cap, cap + 1, cap * 4, 5], np.int64)
    small, dense, esc = spgemm_hash.row_paths(np, w, ncols=cap)
    assert small.tolist() == [1, 2, 5] and dense.tolist() == [] and esc.tolist() == [3, 4]
    w = np.array([cap + 1, cap * 2, cap * 3, 2], np.int64)
    small, dense, esc = spgemm_hash.row_paths(np, w, ncols=cap)
    assert small.tolist() == [3] and dense.tolist() == [0, 1, 2] and esc.tolist() == []
