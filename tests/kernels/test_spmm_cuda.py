"""The CUDA twins of ``kernels.cpu.spmm`` and ``kernels.cpu.positions`` against the CPU kernels.

The simulator needs ``NUMBA_ENABLE_CUDASIM=1`` before ``numba.cuda`` is
first imported, so the ``test_sim_*`` tests here run in the simulator child
process of ``tests/kernels/test_cuda_kernels.py`` (``SPLA_IN_CUDASIM=1``)
and skip elsewhere.  Inputs stay tiny (the simulator runs each GPU thread
as a Python thread) and come in the two type families of the other kernel
tests (int64 indices with float64 values, int32 with float32), so the CPU
reference kernels compile few signatures.

The CPU kernels are checked against scipy and the law of the dropout mask in
``tests/spla/test_spmm.py`` and ``tests/spla/test_from_edge_index.py``;
here each CUDA kernel must return what its CPU twin returns: the same
arrays (exactly for patterns, positions, masks and fingerprints; to
rounding for the products, whose multiply-adds a GPU may fuse).  The last
test runs ``spla.spmm``, ``spla.dropout``, ``spla.entry_positions`` and
``spla.is_symmetric_pattern`` on a matrix moved to the stand-in for cupy
(``tests/fake_cupy.py``), so spla's dispatch reaches these kernels.
"""

import sys

import numpy as np
import pytest

from sim_marks import sim


#: (index dtype, value dtype) families, as in test_cuda_kernels.py.
FAMILIES = ((np.int64, np.float64), (np.int32, np.float32))


def _host(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)


def rand_csr(rs, nrows, ncols, max_row, idt, vdt):
    """Canonical CSR with empty rows and a hub row (one row of width ``max_row``)."""
    ptr = np.zeros(nrows + 1, np.int64)
    cols = [np.zeros(0, np.int64)]
    for i in range(nrows):
        d = 0 if rs.rand() < 0.3 else rs.randint(1, max_row + 1)
        d = max_row if i == nrows // 2 else d
        d = min(d, ncols)
        cols.append(np.sort(rs.choice(ncols, d, replace=False)))
        ptr[i + 1] = ptr[i] + d
    idx = np.concatenate(cols).astype(idt)
    return ptr, idx, rs.standard_normal(idx.size).astype(vdt)


def _tol(vdt):
    return dict(rtol=1e-5, atol=1e-5) if vdt == np.float32 else dict(rtol=1e-12, atol=1e-12)


def check_spmm(C, G, dev):
    rs = np.random.RandomState(5)
    for (idt, vdt), (m, n, f) in zip(FAMILIES * 2, ((7, 9, 3), (6, 5, 2), (1, 4, 1), (0, 3, 2))):
        ptr, idx, val = rand_csr(rs, m, n, 4, idt, vdt)
        x = rs.standard_normal((n, f)).astype(vdt)
        for values in (val, np.zeros(0, vdt)):
            want = C.spmm.spmm_rows(ptr, idx, values, x, np.empty((m, f), vdt))
            out = dev(np.full((m, f), np.nan, vdt))      # garbage in out must not leak
            got = G.spmm.spmm_rows(dev(ptr), dev(idx), dev(values), dev(x), out)
            assert got is out
            np.testing.assert_allclose(_host(got), want, **_tol(vdt))
        trows = np.empty(idx.size, idt)
        tptr, perm = C.spmm.transpose_pattern(ptr, idx, n, trows)
        gtrows = dev(np.empty(idx.size, idt))
        gtptr, gperm = G.spmm.transpose_pattern(dev(ptr), dev(idx), n, gtrows)
        for g, w in ((gtptr, tptr), (gperm, perm), (gtrows, trows)):
            g = _host(g)
            assert g.dtype == w.dtype and np.array_equal(g, w), (g, w)


def check_dropout(C, G, dev):
    rs = np.random.RandomState(6)
    key = np.uint64(0x1234_5678_9ABC_DEF1)
    for (idt, vdt), threshold in zip(FAMILIES, (np.uint32(2 ** 31), np.uint32(3_000_000_000))):
        scale = vdt(2.0)
        for size in (0, 1, 7):
            x = rs.standard_normal(size).astype(vdt)
            want = C.spmm.dropout(x, np.empty_like(x), key, threshold, scale)
            got = G.spmm.dropout(dev(x), dev(np.empty_like(x)), key, threshold, scale)
            assert np.array_equal(_host(got), want)
        x = rs.standard_normal((4, 3)).astype(vdt)
        offsets = np.array([0, 9, 3, 40], np.int64)
        want = C.spmm.dropout_rows(x, np.empty_like(x), offsets, key, threshold, scale)
        got = G.spmm.dropout_rows(dev(x), dev(np.empty_like(x)), dev(offsets), key, threshold,
                                  scale)
        assert np.array_equal(_host(got), want)
        assert 0 < np.count_nonzero(want) < want.size   # some kept, some dropped
        ptr, idx, val = rand_csr(rs, 4, 6, 3, idt, vdt)
        want = C.spmm.dropout_entries(ptr, idx, val, np.empty_like(val), offsets, key,
                                      threshold, scale)
        got = G.spmm.dropout_entries(dev(ptr), dev(idx), dev(val), dev(np.empty_like(val)),
                                     dev(offsets), key, threshold, scale)
        assert np.array_equal(_host(got), want)


def check_positions(C, G, dev):
    rs = np.random.RandomState(7)
    for idt, vdt in FAMILIES:
        ptr, idx, _ = rand_csr(rs, 6, 6, 4, idt, vdt)
        rows = rs.randint(0, 6, 11).astype(np.int64)
        cols = rs.randint(0, 6, 11).astype(np.int64)
        want = C.positions.find_entries(ptr, idx, rows, cols)
        got = G.positions.find_entries(dev(ptr), dev(idx), dev(rows), dev(cols))
        assert np.array_equal(_host(got), want)
        assert (want >= 0).any() and (want < 0).any()
        # A symmetric pattern (the nonzeros of M + M^T) and the one-sided one.
        dense = np.zeros((6, 6), bool)
        dense[np.repeat(np.arange(6), np.diff(ptr)), idx] = True
        for pat in (dense, dense | dense.T):
            sptr = np.concatenate([[0], np.cumsum(pat.sum(1))]).astype(np.int64)
            sidx = np.nonzero(pat)[1].astype(idt)
            want = C.positions.pattern_fingerprints(sptr, sidx)
            got = G.positions.pattern_fingerprints(dev(sptr), dev(sidx))
            assert [int(g) for g in got] == [int(w) for w in want]
            assert (want[0] == want[1]) == bool((pat == pat.T).all())


def _twins():
    import kernels.cpu  # noqa: F401 - binds the submodules
    import kernels.cuda  # noqa: F401
    from kernels import cpu, cuda
    return cpu, cuda


@sim
@pytest.mark.cudasim
def test_sim_spmm_and_transpose_pattern_match_cpu():
    check_spmm(*_twins(), lambda a: a)


@sim
@pytest.mark.cudasim
def test_sim_dropout_masks_match_cpu():
    check_dropout(*_twins(), lambda a: a)


@sim
@pytest.mark.cudasim
def test_sim_entry_positions_and_fingerprints_match_cpu():
    check_positions(*_twins(), lambda a: a)


@sim
@pytest.mark.cudasim
def test_sim_spla_operators_dispatch_to_the_cuda_kernels():
    """spla's operators on a 'cuda' matrix (the cupy stand-in) give the CPU's results."""
    import fake_cupy

    import spla
    saved = sys.modules.get("cupy")
    cp = fake_cupy.install()
    fake_cupy.count_kernels()    # kernels get plain views of the stand-in's arrays
    try:
        rs = np.random.RandomState(8)
        ptr, idx, val = rand_csr(rs, 7, 7, 4, np.int32, np.float32)
        A = spla.Matrix.from_csr(ptr, idx, val, shape=(7, 7))
        Ag = A.to("cuda")
        assert Ag.device == "cuda"
        X = rs.standard_normal((7, 3)).astype(np.float32)
        G = rs.standard_normal((7, 2)).astype(np.float32)
        got = spla.spmm(Ag, cp.asarray(X))
        assert spla.backend.device_of(got) == "cuda"
        np.testing.assert_allclose(_host(got), spla.spmm(A, X), **_tol(np.float32))
        got = spla.spmm(Ag, cp.asarray(G), transpose=True)
        np.testing.assert_allclose(_host(got), spla.spmm(A, G, transpose=True),
                                   **_tol(np.float32))
        got = spla.dropout(cp.asarray(G), 0.3, seed=4, stream=2)
        assert np.array_equal(_host(got), spla.dropout(G, 0.3, seed=4, stream=2))
        got = spla.dropout(cp.asarray(G[2:5]), 0.3, seed=4, row_offsets=[4, 6, 8])
        want = spla.dropout(G, 0.3, seed=4)[2:5]
        assert np.array_equal(_host(got), want)
        got = spla.dropout(Ag, 0.3, seed=4, row_offsets=np.arange(7) * 5)
        want = spla.dropout(A, 0.3, seed=4, row_offsets=np.arange(7) * 5)
        assert got.device == "cuda" and got.to("cpu").isequal(want)
        rows, cols = np.array([0, 3, 3, 6]), np.array([1, 0, 4, 2])
        got = spla.entry_positions(Ag, cp.asarray(rows), cp.asarray(cols))
        assert np.array_equal(_host(got), spla.entry_positions(A, rows, cols))
        S = spla.ewise_add(A, spla.transpose(A)).structure()
        assert [spla.is_symmetric_pattern(M.to("cuda")) for M in (A, S)] == \
            [spla.is_symmetric_pattern(A), True]
    finally:
        if saved is None:
            sys.modules.pop("cupy", None)
        else:
            sys.modules["cupy"] = saved


# --------------------------------------------------------------------------
# On a real GPU (cupy arrays), in the normal process.

from test_cuda_kernels import _gpu  # noqa: E402


@pytest.mark.gpu
def test_gpu_spmm_dropout_positions_match_cpu():
    C, G, to_device = _gpu()
    check_spmm(C, G, to_device)
    check_dropout(C, G, to_device)
    check_positions(C, G, to_device)
