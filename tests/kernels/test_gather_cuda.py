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
