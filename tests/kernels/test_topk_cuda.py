"""The CUDA top-k kernel (``kernels.cuda.topk``) against its CPU twin.

The simulator needs ``NUMBA_ENABLE_CUDASIM=1`` before ``numba.cuda`` is
first imported, so ``tests/kernels/test_cuda_kernels.py::test_cuda_kernels_under_simulator``
runs the ``test_sim_*`` tests of this file in its simulator child process
(``SPLA_IN_CUDASIM=1``, see ``SIM_FILES`` there); elsewhere they skip.  Inputs stay tiny (the simulator runs each GPU thread
as a Python thread).  The ``gpu`` tests run the same check, and
``spla.select_topk`` end to end, on cupy arrays on a real GPU.

The CPU kernel itself is checked against a numpy reference in
``tests/spla/test_topk.py``; here the CUDA kernel must return exactly what the
CPU kernel returns (same arrays, same dtypes).
"""

import numpy as np
import pytest

from sim_marks import sim


def _host(a):
    return a if isinstance(a, np.ndarray) else a.get()


def rand_rows(rs, nrows, ncols, max_row, idx_dtype, val_dtype, empty_frac=0.25):
    """A canonical CSR matrix with ties (values from a few integers), empty rows."""
    ptr = np.zeros(nrows + 1, np.int64)
    cols = [np.zeros(0, np.int64)]
    for i in range(nrows):
        d = 0
        if ncols and rs.rand() >= empty_frac:
            d = rs.randint(1, min(max_row, ncols) + 1)
            cols.append(np.sort(rs.choice(ncols, d, replace=False)))
        ptr[i + 1] = ptr[i] + d
    idx = np.concatenate(cols).astype(idx_dtype)
    vals = rs.randint(-3, 4, idx.size).astype(val_dtype)
    if np.dtype(val_dtype).kind == "f" and vals.size:
        vals[rs.rand(vals.size) < 0.1] = np.inf
        vals[rs.rand(vals.size) < 0.1] = -0.0
    return ptr, idx, vals


#: (nrows, ncols, max_row, index dtype, value dtype): every value dtype,
#: empty matrices, one row, rows longer than every k below
SHAPES = [(0, 0, 1, np.int64, np.float64), (0, 5, 3, np.int32, np.float32),
          (5, 0, 1, np.int64, np.int64), (1, 12, 12, np.int32, np.int32),
          (9, 9, 9, np.int64, np.float64), (30, 20, 14, np.int32, np.float32),
          (24, 30, 20, np.int64, np.int64), (17, 25, 25, np.int32, np.int32)]

KS = (1, 2, 5, 13, 2 ** 62, -1)


def check_topk(C, G, dev):
    rs = np.random.RandomState(21)
    seen_heap = False
    for nrows, ncols, max_row, idt, vdt in SHAPES:
        ptr, _, val = rand_rows(rs, nrows, ncols, max_row, idt, vdt)
        for k in KS:
            for largest in (True, False):
                want = C.topk.topk_rows(ptr, val, np.int64(k), largest)
                got = G.topk.topk_rows(dev(ptr), dev(val), np.int64(k), largest)
                what = f"{nrows}x{ncols} {np.dtype(vdt)} k={k} largest={largest}"
                for g, w in zip(got, want):
                    g = _host(g)
                    assert g.dtype == w.dtype and g.shape == w.shape, what
                    assert np.array_equal(g, w), f"{what}:\n got {g}\nwant {w}"
                seen_heap |= 0 < k < int(np.diff(ptr).max(initial=0))
    assert seen_heap  # some row is longer than k: the heap path ran


@sim
@pytest.mark.cudasim
def test_sim_topk_matches_cpu():
    import kernels.cpu.topk  # noqa: F401 - binds kernels.cpu.topk
    import kernels.cuda.topk  # noqa: F401
    from kernels import cpu, cuda
    check_topk(cpu, cuda, lambda a: a)


# --------------------------------------------------------------------------
# On a real GPU (cupy arrays), in the normal process.

# The same skip rules as the other kernels' GPU tests (no GPU in the simulator
# child, none without cupy or a device).
from test_cuda_kernels import _gpu  # noqa: E402


@pytest.mark.gpu
def test_gpu_topk_matches_cpu():
    C, G, to_device = _gpu()
    check_topk(C, G, to_device)


@pytest.mark.gpu
def test_gpu_select_topk_matches_cpu():
    """``spla.select_topk`` on a GPU matrix: the CPU result, moved to the GPU;
    rows of thousands of entries (one thread walks each)."""
    _gpu()
    import spla
    rng = np.random.default_rng(8)
    n, ncols = 200, 5000
    rows, cols = rng.integers(0, n, 100_000), rng.integers(0, ncols, 100_000)
    for dtype in (np.float32, np.int64):
        M = spla.Matrix.from_coo(rows, cols, rng.integers(0, 30, rows.size).astype(dtype),
                                 shape=(n, ncols))
        Mg = M.to("cuda")
        for k in (1, 16, 400, -1):
            for largest in (True, False):
                want = spla.select_topk(M, k, largest=largest)
                got = spla.select_topk(Mg, k, largest=largest)
                assert got.device == "cuda"
                assert got.to("cpu").isequal(want), (dtype, k, largest)
