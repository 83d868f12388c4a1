"""The CUDA masked kernels (``kernels.cuda.masked``) against their CPU twins.

Run in the CUDA-simulator child of
``tests/kernels/test_cuda_kernels.py::test_cuda_kernels_under_simulator``
(``SPLA_IN_CUDASIM=1``, listed in its ``SIM_FILES``); elsewhere they skip.
Inputs stay tiny: the simulator runs each GPU thread as a Python thread.
The CUDA kernels must return exactly what the CPU kernels return.
"""

import numpy as np
import pytest

from kernels import semiring_ops as ops

from sim_marks import sim


def csr(rs, m, n, p):
    D = (rs.rand(m, n) < p) * rs.randint(1, 5, size=(m, n))
    ptr = np.r_[0, np.cumsum((D != 0).sum(1))].astype(np.int64)
    r, c = np.nonzero(D)
    return ptr, c.astype(np.int64), D[r, c].astype(np.float64)


SEMIRINGS = ((ops.ADD_PLUS, ops.MUL_TIMES), (ops.ADD_MIN, ops.MUL_PLUS),
             (ops.ADD_ANY, ops.MUL_SECOND), (ops.ADD_MAX, ops.MUL_FIRST))


@sim
@pytest.mark.parametrize("add,mul", SEMIRINGS)
def test_sim_masked_spgemm_matches_cpu(add, mul):
    from kernels.cpu import masked as cpu
    from kernels.cuda import masked as gpu
    rs = np.random.RandomState(add * 7 + mul)
    a = csr(rs, 5, 4, 0.5)
    b = csr(rs, 4, 6, 0.5)
    m_ptr, m_idx, m_val = csr(rs, 5, 6, 0.6)
    m_ok = m_val != 1  # a value mask with a few zeros
    one = np.ones(1, np.float64)
    args = (a[0], a[1], a[2], True, b[0], b[1], b[2], True, m_ptr, m_idx, m_ok, add, mul, one)
    want_v, want_h = cpu.masked_spgemm(*args)
    got_v, got_h = gpu.masked_spgemm(*args)
    np.testing.assert_array_equal(got_h, want_h)
    np.testing.assert_array_equal(got_v[got_h], want_v[want_h])
    assert want_h.any()


@sim
@pytest.mark.parametrize("add,mul", SEMIRINGS)
@pytest.mark.parametrize("flip", [False, True])
def test_sim_mxv_pull_matches_cpu(add, mul, flip):
    from kernels.cpu import masked as cpu
    from kernels.cuda import masked as gpu
    rs = np.random.RandomState(add * 7 + mul + 50 * flip)
    ptr, idx, val = csr(rs, 6, 5, 0.5)
    u = rs.randint(1, 4, size=5).astype(np.float64)
    has = rs.rand(5) < 0.7
    for allow in (np.zeros(0, bool), rs.rand(6) < 0.5):
        args = (ptr, idx, val, True, u, has, allow, add, mul, np.ones(1, np.float64), flip)
        want_w, want_h = cpu.mxv_pull(*args)
        got_w, got_h = gpu.mxv_pull(*args)
        np.testing.assert_array_equal(got_h, want_h)
        np.testing.assert_array_equal(got_w[got_h], want_w[want_h])


@pytest.fixture(scope="module")
def cp():
    """The cupy stand-in (tests/fake_cupy.py), installed for this module's GPU-path tests."""
    import sys

    import fake_cupy
    saved = sys.modules.get("cupy")
    mod = fake_cupy.install()
    yield mod
    if saved is None:
        sys.modules.pop("cupy", None)
    else:
        sys.modules["cupy"] = saved


@sim
def test_sim_spla_masked_operators_gpu_equal_cpu(cp):
    """mxm with a mask, mxv, vxm (pull on the transpose) and a write step on the GPU path."""
    import spla
    from spla import Matrix, Vector, semiring
    rs = np.random.RandomState(5)
    D = (rs.rand(6, 6) < 0.4) * rs.randint(1, 4, size=(6, 6)).astype(np.float64)
    A = Matrix.from_dense(D)
    u = Vector.from_coo([0, 3], [1.0, 2.0], size=6)
    seen = Vector.from_coo([0, 1], size=6)
    Ag, ug, sg = A.to("cuda"), u.to("cuda"), seen.to("cuda")
    assert Ag.device == "cuda" and ug.device == "cuda"
    cases = [
        (lambda A, u, s: spla.mxm(A, A, semiring.min_plus, mask=A.S),
         lambda r: r.to("cpu")),
        (lambda A, u, s: spla.mxv(A, u, semiring.plus_times, mask=~s.S),
         lambda r: r.to("cpu")),
        (lambda A, u, s: spla.vxm(u, A, semiring.any_secondi, mask=~s.S, out=s,
                                  accum="plus"),
         lambda r: r.to("cpu")),
    ]
    for f, back in cases:
        want = f(A, u, seen)
        got = back(f(Ag, ug, sg))
        assert got.isequal(want), (got, want)


@sim
@pytest.mark.parametrize("add,mul", SEMIRINGS)
def test_sim_masked_dot_matches_cpu_and_push(add, mul):
    from kernels.cpu import masked as cpu
    from kernels.cuda import masked as gpu
    rs = np.random.RandomState(add * 5 + mul + 100)
    a = csr(rs, 5, 4, 0.6)
    bt = csr(rs, 6, 4, 0.6)            # Bᵀ (6 x 4), so B is 4 x 6
    m_ptr, m_idx, m_val = csr(rs, 5, 6, 0.6)
    m_ok = m_val != 1
    one = np.ones(1, np.float64)
    args = (a[0], a[1], a[2], True, bt[0], bt[1], bt[2], True, m_ptr, m_idx, m_ok, add, mul,
            one)
    want_v, want_h = cpu.masked_dot(*args)
    got_v, got_h = gpu.masked_dot(*args)
    np.testing.assert_array_equal(got_h, want_h)
    np.testing.assert_array_equal(got_v[got_h], want_v[want_h])


@sim
def test_sim_docs_algorithms_on_a_gpu_graph_equal_the_cpu(cp):
    """docs/graphblas.rst's algorithms, as written there, on a graph in device memory."""
    import spla
    from graphblas_doc import doc_algorithms
    from spla import backend
    algo = doc_algorithms()
    rs = np.random.RandomState(9)
    D = (rs.rand(7, 7) < 0.35) * rs.randint(1, 5, size=(7, 7)).astype(np.float64)
    np.fill_diagonal(D, 0)
    D = np.maximum(D, D.T)
    A = spla.Matrix.from_dense(D)
    Ag = A.to("cuda")
    assert Ag.device == "cuda"
    for name, args in (("bfs", (0,)), ("sssp", (0,)), ("triangles", ()),
                       ("components", ())):
        want = algo[name](A, *args)
        got = algo[name](Ag, *args)
        np.testing.assert_array_equal(backend.to_host(got), want, err_msg=name)
