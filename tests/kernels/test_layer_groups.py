"""The fused per-group kernels (``kernels/cuda/layer_groups.py``) against their
CPU twins (``kernels.cpu.groups``), under the CUDA simulator with the cupy
stand-in (``tests/fake_cupy.py``), which also counts their device
operations and blocking reads.

They run in the simulator child of ``tests/kernels/test_cuda_kernels.py``
(this file is in its ``SIM_FILES``) and skip elsewhere.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim_marks import sim

pytestmark = sim

SETTINGS = settings(max_examples=12, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def cp():
    import fake_cupy
    with fake_cupy.installed() as mod:
        yield mod


def _host(a):
    return np.asarray(a.view(np.ndarray) if isinstance(a, np.ndarray) else a)


def _csr(rng, nrows, ncols, density):
    dense = rng.random((nrows, ncols)) < density
    ptr = np.concatenate([[0], np.cumsum(dense.sum(1))]).astype(np.int64)
    idx = np.nonzero(dense)[1].astype(np.int32 if ncols < 2 ** 31 else np.int64)
    return ptr, idx


def _cuts(rng, total, groups):
    cuts = np.sort(rng.integers(0, total + 1, groups - 1))
    return np.concatenate([[0], cuts, [total]]).astype(np.int64)


def _same(got, want, what):
    assert len(got) == len(want), what
    for g, w in zip(got, want):
        if isinstance(w, (int, np.integer)):
            assert int(g) == int(w), what
        else:
            g = _host(g)
            assert g.dtype == np.asarray(w).dtype and np.array_equal(g, w), (what, g, w)


CASES = st.tuples(st.integers(0, 9), st.integers(1, 12), st.integers(1, 4),
                  st.floats(0.0, 0.9), st.booleans(), st.integers(0, 2 ** 32 - 1))


@given(case=CASES)
@SETTINGS
def test_sim_compact_groups_equals_the_cpu_twin(cp, case, monkeypatch):
    """Leading columns (some groups none, a repeat when ``dup``), fused and the
    sorting fallback (``fits_compact`` false), with and without ``perm``."""
    from kernels.cpu import groups as C
    from kernels.cuda import groups as G
    from kernels.cuda import layer_groups
    nrows, ncols, n_groups, density, dup, seed = case
    rng = np.random.default_rng(seed)
    ptr, idx = _csr(rng, nrows, ncols, density)
    row_ptr = _cuts(rng, nrows, n_groups)
    firsts = [rng.choice(ncols, rng.integers(0, min(ncols, 4) + 1), replace=False)
              for _ in range(n_groups)]
    if dup and firsts[-1].size >= 2:
        firsts[-1][-1] = firsts[-1][0]
    first = np.concatenate(firsts).astype(np.int64)
    first_ptr = np.concatenate([[0], np.cumsum([f.size for f in firsts])]).astype(np.int64)
    for fits in (True, False):
        monkeypatch.setattr(layer_groups, "fits_compact", lambda g, n, fits=fits: fits)
        for with_perm in (True, False):
            want = C.compact_groups(ptr, idx, row_ptr, first, first_ptr, ncols, with_perm)
            got = G.compact_groups(cp.asarray(ptr), cp.asarray(idx), row_ptr,
                                   cp.asarray(first), first_ptr, ncols, with_perm)
            assert isinstance(got[3], np.ndarray) and not isinstance(got[3], cp.ndarray)
            _same(got, want, f"compact fits={fits} perm={with_perm} {case}")


@given(case=CASES)
@SETTINGS
def test_sim_extract_groups_equals_the_cpu_twin(cp, case):
    """Rows repeated and outside every group; a column repeated in a group when ``dup``."""
    from kernels.cpu import groups as C
    from kernels.cuda import groups as G
    nrows, ncols, n_groups, density, dup, seed = case
    rng = np.random.default_rng(seed)
    ptr, idx = _csr(rng, max(nrows, 1), ncols, density)
    rows = rng.integers(0, max(nrows, 1), 2 * nrows + 2).astype(np.int64)
    rptr = _cuts(rng, rows.size - 2, n_groups) + 1  # the first and last rows in none
    colss = [rng.choice(ncols, rng.integers(0, ncols + 1), replace=False)
             for _ in range(n_groups)]
    if dup and colss[0].size >= 2:
        colss[0][-1] = colss[0][0]
    cols = np.concatenate(colss).astype(np.int64)
    cptr = np.concatenate([[0], np.cumsum([c.size for c in colss])]).astype(np.int64)
    want = C.extract_groups(ptr, idx, rows, rptr, cols, cptr, ncols)
    got = G.extract_groups(cp.asarray(ptr), cp.asarray(idx), cp.asarray(rows), rptr,
                           cp.asarray(cols), cptr, ncols)
    _same(got, want, f"extract {case}")


def test_sim_fused_groups_keep_their_budget(cp):
    """With host pointers and trusted columns: compact_groups 6 device
    operations and 1 read, extract_groups 5 and 1, whatever the input's size."""
    import fake_cupy
    from kernels.cuda import groups as G
    for n in (6, 20):
        rng = np.random.default_rng(n)
        ptr, idx = _csr(rng, n, 3 * n, 0.3)
        row_ptr = np.array([0, n // 2, n], np.int64)
        first = cp.asarray(np.concatenate([rng.choice(3 * n, 2, replace=False)] * 2))
        fake_cupy.reset()
        G.compact_groups(cp.asarray(ptr), cp.asarray(idx), row_ptr, first,
                         np.array([0, 2, 4]), 3 * n, True, check=False)
        counts = {k: fake_cupy.STATS[k] for k in ("launches", "reads")}
        assert counts == {"launches": 6, "reads": 1}, counts
        rows = cp.asarray(rng.integers(0, n, n))
        cols = cp.asarray(np.concatenate([rng.choice(3 * n, n, replace=False)] * 2))
        fake_cupy.reset()
        G.extract_groups(cp.asarray(ptr), cp.asarray(idx), rows, row_ptr, cols,
                         np.array([0, n, 2 * n]), 3 * n, check=False)
        counts = {k: fake_cupy.STATS[k] for k in ("launches", "reads")}
        assert counts == {"launches": 5, "reads": 1}, counts
