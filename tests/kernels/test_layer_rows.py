"""Long rows in the layer-wise GPU kernels (``kernels/cuda/layer_rows.py``):
rows longer than ``LONG_ROW`` go to a block in ``extract_groups``,
``compact_groups`` and ``group_row_sums``, with the CPU twins' results bit
for bit.  Inputs mix a few long rows (several entries per thread of the
simulator's 8-thread blocks) with short and empty ones.

Run in the simulator child of ``tests/kernels/test_cuda_kernels.py`` (this
file is in its ``SIM_FILES``); skipped elsewhere.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_layer_groups import _cuts, _same

from sim_marks import sim

pytestmark = sim

SETTINGS = settings(max_examples=8, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
#: seed, rows, columns, groups, long rows, a repeated column, a small sort bound
CASES = st.tuples(st.integers(0, 2 ** 32 - 1), st.integers(1, 8), st.integers(8, 40),
                  st.integers(1, 4), st.integers(1, 3), st.booleans(), st.booleans())


@pytest.fixture(scope="module")
def cp():
    import fake_cupy
    with fake_cupy.installed() as mod:
        yield mod


def _csr(rng, nrows, ncols, n_long):
    """Sparse short rows and ``n_long`` rows of 5 to ``ncols`` entries."""
    dense = rng.random((nrows, ncols)) < 0.15
    for r in rng.choice(nrows, min(n_long, nrows), replace=False):
        dense[r, rng.choice(ncols, rng.integers(5, ncols + 1), replace=False)] = True
    ptr = np.concatenate([[0], np.cumsum(dense.sum(1))]).astype(np.int64)
    return ptr, np.nonzero(dense)[1].astype(np.int32), dense


def _small_sorts(monkeypatch, small):
    """With ``small``, long runs past the block sort's bound (its one-thread branch)."""
    from kernels.cuda import layer_rows
    if small:
        monkeypatch.setattr(layer_rows, "SORT_MAX", 4)


@given(case=CASES)
@SETTINGS
def test_sim_extract_groups_of_long_rows_equals_the_cpu(cp, case, monkeypatch):
    """Long rows (some repeated, some outside every group), empty groups, a
    column repeated in a group."""
    from kernels.cpu import groups as C
    from kernels.cuda import groups as G
    from kernels.cuda.layer_rows import LONG_ROW
    seed, nrows, ncols, n_groups, n_long, dup, small = case
    _small_sorts(monkeypatch, small)
    rng = np.random.default_rng(seed)
    ptr, idx, _ = _csr(rng, nrows, ncols, n_long)
    assert np.diff(ptr).max() > LONG_ROW
    rows = rng.integers(0, nrows, 2 * nrows + 2).astype(np.int64)
    rows[1] = np.argmax(np.diff(ptr))          # a long row in the first group
    rptr = _cuts(rng, rows.size - 2, n_groups) + 1
    colss = [rng.choice(ncols, rng.integers(0, ncols + 1), replace=False)
             for _ in range(n_groups)]
    colss[-1] = colss[-1][:0] if n_groups > 1 else colss[-1]   # an empty group
    if dup and colss[0].size >= 2:
        colss[0][-1] = colss[0][0]
    cols = np.concatenate(colss).astype(np.int64)
    cptr = np.concatenate([[0], np.cumsum([c.size for c in colss])]).astype(np.int64)
    want = C.extract_groups(ptr, idx, rows, rptr, cols, cptr, ncols)
    got = G.extract_groups(cp.asarray(ptr), cp.asarray(idx), cp.asarray(rows), rptr,
                           cp.asarray(cols), cptr, ncols)
    _same(got, want, f"extract {case}")


@given(case=CASES)
@SETTINGS
def test_sim_compact_groups_of_long_rows_equals_the_cpu(cp, case, monkeypatch):
    """Long rows sorted by a block, with and without ``perm``; leading
    columns, one repeated when ``dup``."""
    from kernels.cpu import groups as C
    from kernels.cuda import groups as G
    seed, nrows, ncols, n_groups, n_long, dup, small = case
    _small_sorts(monkeypatch, small)
    rng = np.random.default_rng(seed)
    ptr, idx, _ = _csr(rng, nrows, ncols, n_long)
    row_ptr = _cuts(rng, nrows, n_groups)
    firsts = [rng.choice(ncols, rng.integers(0, 4), replace=False) for _ in range(n_groups)]
    if dup and firsts[0].size >= 2:
        firsts[0][-1] = firsts[0][0]
    first = np.concatenate(firsts).astype(np.int64)
    first_ptr = np.concatenate([[0], np.cumsum([f.size for f in firsts])]).astype(np.int64)
    for with_perm in (True, False):
        want = C.compact_groups(ptr, idx, row_ptr, first, first_ptr, ncols, with_perm)
        got = G.compact_groups(cp.asarray(ptr), cp.asarray(idx), row_ptr, cp.asarray(first),
                               first_ptr, ncols, with_perm)
        _same(got, want, f"compact perm={with_perm} {case}")


@given(case=CASES)
@SETTINGS
def test_sim_group_row_sums_of_long_rows_equal_the_cpu(cp, case):
    """Sums of groups holding long rows (and empty groups), bit for bit."""
    import spla
    from kernels.cuda.layer_rows import LONG_ROW
    from spla.layer_ops import reduce_row_groups
    seed, nrows, ncols, n_groups, n_long, _dup, _small = case
    rng = np.random.default_rng(seed)
    _, _, dense = _csr(rng, nrows, ncols, n_long)
    W = dense * rng.random(dense.shape) * 10.0 ** rng.integers(-4, 4, dense.shape)
    A = spla.Matrix.from_dense(W.astype(np.float32))
    picks = [rng.choice(nrows, rng.integers(0, nrows + 1), replace=False)
             for _ in range(n_groups)]
    longest = np.argmax(dense.sum(1))
    picks[0] = np.union1d(picks[0], [longest])[::-1]   # a long row, rows descending
    assert dense[longest].sum() > LONG_ROW
    rows = np.concatenate([np.zeros(0, np.int64)] + picks).astype(np.int64)
    ptr = np.concatenate([[0], np.cumsum([p.size for p in picks])]).astype(np.int64)
    want = reduce_row_groups(A, rows, ptr)
    got = reduce_row_groups(A.to("cuda"), cp.asarray(rows), ptr, check=False).to("cpu")
    assert np.array_equal(np.asarray(got.indptr), np.asarray(want.indptr))
    assert np.array_equal(np.asarray(got.indices), np.asarray(want.indices))
    assert np.asarray(got.values).tobytes() == np.asarray(want.values).tobytes()


def test_sim_keys_past_the_packing_bound_keep_one_thread_per_row(cp, monkeypatch):
    """``long_row_for``: every row on the one-thread path when packed sort keys
    could overflow; the results are the same."""
    from kernels.cpu import groups as C
    from kernels.cuda import groups as G
    from kernels.cuda import layer_rows
    assert layer_rows.long_row_for(10) == layer_rows.LONG_ROW
    assert layer_rows.long_row_for(layer_rows.KEY_LIMIT) == layer_rows.NEVER
    monkeypatch.setattr(layer_rows, "KEY_LIMIT", 1)
    rng = np.random.default_rng(5)
    ptr, idx, _ = _csr(rng, 4, 12, 2)
    rows = np.array([0, 1, 2, 3, 1], np.int64)
    rptr = np.array([0, 2, 5], np.int64)
    cols = np.array([3, 1, 7, 0, 2, 9, 11, 5], np.int64)
    cptr = np.array([0, 3, 8], np.int64)
    want = C.extract_groups(ptr, idx, rows, rptr, cols, cptr, 12)
    got = G.extract_groups(cp.asarray(ptr), cp.asarray(idx), cp.asarray(rows), rptr,
                           cp.asarray(cols), cptr, 12)
    _same(got, want, "extract, one thread per row")
