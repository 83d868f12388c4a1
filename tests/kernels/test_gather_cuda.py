"""The hot/cold row gather: the CPU kernel against numpy, the CUDA kernel against the CPU's.

``test_sim_*`` run in the CUDA-simulator child of
``tests/kernels/test_cuda_kernels.py`` (``SPLA_IN_CUDASIM=1``); elsewhere they
skip.  Inputs stay tiny: the simulator runs each GPU thread as a Python thread.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim_marks import sim


def case(seed, n, f, k, hot_share):
    """(ids, slot, hot, cold): a random slot map whose hot rows differ from cold's."""
    rs = np.random.RandomState(seed)
    cold = rs.standard_normal((n, f)).astype(np.float32)
    cached = np.flatnonzero(rs.rand(n) < hot_share)
    rs.shuffle(cached)
    slot = np.full(n, -1, np.int64)
    slot[cached] = np.arange(cached.size)
    # Hot rows are marked (not copies) so a read from the wrong side shows.
    hot = (cold[cached] + 1000.0).astype(np.float32).reshape(cached.size, f)
    ids = rs.randint(0, n, size=k).astype(np.int64)
    return ids, slot, hot, cold


def reference(ids, slot, hot, cold):
    s = slot[ids]
    want = cold[ids].copy()
    want[s >= 0] = hot[s[s >= 0]]
    return want, int((s >= 0).sum())


def run(mod, ids, slot, hot, cold):
    f = cold.shape[1]
    out = np.full(ids.size * f, np.nan, cold.dtype)
    hits = np.array([5], np.int64)
    mod.gather_rows(ids, slot, hot.reshape(-1), cold.reshape(-1), f, out, hits)
    return out.reshape(ids.size, f), int(hits[0]) - 5


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 30), f=st.integers(1, 9),
       k=st.integers(0, 40), hot_share=st.sampled_from([0.0, 0.3, 1.0]))
def test_cpu_gather_matches_numpy(seed, n, f, k, hot_share):
    from kernels.cpu import gather
    ids, slot, hot, cold = case(seed, n, f, k, hot_share)
    got, hits = run(gather, ids, slot, hot, cold)
    want, want_hits = reference(ids, slot, hot, cold)
    np.testing.assert_array_equal(got, want)
    assert hits == want_hits


@sim
@pytest.mark.parametrize("seed,n,f,k,share", [(0, 12, 5, 9, 0.4), (1, 7, 1, 11, 1.0),
                                               (2, 9, 3, 0, 0.5), (3, 10, 4, 6, 0.0)])
def test_sim_gather_matches_cpu(seed, n, f, k, share):
    from kernels.cpu import gather as cpu
    from kernels.cuda import gather as gpu
    ids, slot, hot, cold = case(seed, n, f, k, share)
    want, want_hits = run(cpu, ids, slot, hot, cold)
    got, hits = run(gpu, ids, slot, hot, cold)
    np.testing.assert_array_equal(got, want)
    assert hits == want_hits


# --------------------------------------------------------------------------
# On a real GPU (cupy arrays), in the normal process.

@pytest.mark.gpu
def test_gpu_gather_matches_cpu():
    from test_cuda_kernels import _gpu
    C, G, dev = _gpu()
    ids, slot, hot, cold = case(7, 3000, 67, 5000, 0.2)
    want, want_hits = run(C.gather, ids, slot, hot, cold)
    f = cold.shape[1]
    out, hits = dev(np.zeros(ids.size * f, np.float32)), dev(np.zeros(1, np.int64))
    G.gather.gather_rows(dev(ids), dev(slot), dev(hot.reshape(-1)), dev(cold.reshape(-1)), f,
                         out, hits)
    np.testing.assert_array_equal(out.get().reshape(-1, f), want)
    assert int(hits.get()[0]) == want_hits


# --------------------------------------------------------------------------
# Dense rows of a CSR matrix (``take_sparse_rows``).

def sparse_case(seed, n, f, k, dtype, structural):
    """(ids, indptr, indices, values, dense): a random CSR matrix with signed
    zeros and explicit zeros among its values, and its dense form."""
    rs = np.random.RandomState(seed)
    dense = np.where(rs.rand(n, f) < 0.3, rs.standard_normal((n, f)), 0.0).astype(dtype)
    mask = dense != 0
    if f and n:
        mask[rs.randint(0, n), rs.randint(0, f)] = True  # an explicit stored zero
        dense[0, 0] = -0.0
        mask[0, 0] = True
    indptr = np.concatenate([[0], np.cumsum(mask.sum(axis=1))]).astype(np.int64)
    indices = np.nonzero(mask)[1].astype(np.int32)
    values = None if structural else dense[mask]
    if structural:
        dense = mask.astype(dtype)
    ids = rs.randint(0, n, size=k).astype(np.int64) if n else np.zeros(0, np.int64)
    return ids, indptr, indices, values, dense


def run_sparse(mod, ids, indptr, indices, values, dense):
    # Filled with a value no row holds, so that an element left unwritten shows.
    out = np.full((ids.size, dense.shape[1]), np.nan if dense.dtype.kind == "f" else -7,
                  dense.dtype)
    return mod.take_sparse_rows(ids, indptr, indices, values, out)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 30), f=st.integers(0, 9),
       k=st.integers(0, 40), dtype=st.sampled_from([np.float32, np.float64, np.int64]),
       structural=st.booleans())
def test_cpu_sparse_rows_match_dense_indexing(seed, n, f, k, dtype, structural):
    from kernels.cpu import gather
    ids, indptr, indices, values, dense = sparse_case(seed, n, f, k, dtype, structural)
    got = run_sparse(gather, ids, indptr, indices, values, dense)
    if f:
        # Bit for bit, signed zeros included.
        np.testing.assert_array_equal(got.view(f"u{got.itemsize}"),
                                      dense[ids].view(f"u{got.itemsize}"))


def test_cpu_sparse_rows_parallel_twin_matches_serial():
    """Above ``SERIAL_WORK`` the parallel twin runs; its rows are the serial's."""
    from kernels.cpu import gather
    from kernels.parallel import SERIAL_WORK
    ids, indptr, indices, values, dense = sparse_case(3, 500, 40, 2 * SERIAL_WORK // 40 + 7,
                                                      np.float32, False)
    out = np.empty((ids.size, 40), np.float32)
    assert gather._dense.work(indptr, indices, values, True, out) >= SERIAL_WORK
    got = run_sparse(gather, ids, indptr, indices, values, dense)
    np.testing.assert_array_equal(got, dense[ids])


@sim
@pytest.mark.parametrize("seed,n,f,k,dtype,structural", [
    (0, 12, 5, 9, np.float32, False), (1, 7, 1, 11, np.float64, False),
    (2, 9, 3, 0, np.float32, False), (3, 10, 4, 6, np.float64, True)])
def test_sim_sparse_rows_match_cpu(seed, n, f, k, dtype, structural):
    from kernels.cpu import gather as cpu
    from kernels.cuda import gather as gpu
    case_ = sparse_case(seed, n, f, k, dtype, structural)
    want = run_sparse(cpu, *case_)
    got = run_sparse(gpu, *case_)
    np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{got.itemsize}"))


@pytest.mark.gpu
def test_gpu_sparse_rows_match_cpu():
    from test_cuda_kernels import _gpu
    C, G, dev = _gpu()
    ids, indptr, indices, values, dense = sparse_case(7, 3000, 67, 5000, np.float32, False)
    want = run_sparse(C.gather, ids, indptr, indices, values, dense)
    out = dev(np.full((ids.size, 67), np.nan, np.float32))
    G.gather.take_sparse_rows(dev(ids), dev(indptr), dev(indices), dev(values), out)
    np.testing.assert_array_equal(out.get(), want)


@sim
@pytest.mark.parametrize("structural", [False, True])
def test_sim_take_rows_of_a_device_matrix_without_blocking_reads(structural):
    """``spla.take_rows`` of a GPU ``spla.Matrix``: its dense rows, in a fill
    and one launch and no read back with ``check=False``."""
    import fake_cupy

    import spla
    with fake_cupy.installed() as cp:
        ids, indptr, indices, values, dense = sparse_case(4, 11, 6, 9, np.float32, structural)
        X = spla.Matrix.from_csr(indptr, indices, values, shape=dense.shape)
        G = X.to("cuda")
        dev_ids = cp.asarray(ids)
        fake_cupy.reset()
        got = spla.take_rows(G, dev_ids, check=False)
        assert (fake_cupy.STATS["reads"], fake_cupy.STATS["launches"]) == (0, 2), \
            fake_cupy.STATS
        np.testing.assert_array_equal(np.asarray(got), X.to_dense()[ids])
        assert spla.backend.device_of(got) == "cuda"
