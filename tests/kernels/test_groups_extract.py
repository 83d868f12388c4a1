"""``kernels.cpu.groups.extract_groups`` against scipy, through both column maps."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from kernels.common import KernelLimitError
from kernels.cpu import groups as K


def _reference(S, rows, row_ptr, cols, col_ptr):
    blocks = [S[rows[row_ptr[g]:row_ptr[g + 1]]][:, cols[col_ptr[g]:col_ptr[g + 1]]]
              for g in range(row_ptr.size - 1)]
    return sp.block_diag(blocks, format="csr") if blocks else None


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 60), st.integers(1, 5), st.integers(0, 2 ** 31),
       st.booleans())
def test_extract_groups_matches_scipy(n, ncols, groups, seed, huge):
    rng = np.random.default_rng(seed)
    S = sp.random(n, ncols, density=rng.random(), format="csr", random_state=rng)
    S.sort_indices()
    S.data = np.arange(1, S.nnz + 1, dtype=np.float64)    # value = entry position + 1
    rows, cols, rp, cp = [], [], [0], [0]
    for _ in range(groups):
        r = rng.integers(0, n, rng.integers(0, 2 * n))          # rows may repeat
        c = rng.choice(ncols, rng.integers(0, ncols + 1), replace=False)
        rows.append(r)
        cols.append(c)
        rp.append(rp[-1] + r.size)
        cp.append(cp[-1] + c.size)
    rows = np.concatenate(rows).astype(np.int64)
    cols = np.concatenate(cols).astype(np.int64)
    rp, cp = np.array(rp, np.int64), np.array(cp, np.int64)
    ptr, idx = S.indptr.astype(np.int64), S.indices.astype(np.int64)
    # ncols itself: tag arrays (groups are large next to it); 2**40: hash tables.
    width = 2 ** 40 if huge else ncols
    indptr, indices, src, first_dup = K.extract_groups(ptr, idx, rows, rp, cols, cp, width)
    assert first_dup == -1
    want = _reference(S, rows, rp, cols, cp)
    got = sp.csr_matrix((S.data[src], indices, indptr), shape=want.shape)
    assert np.array_equal(got.toarray(), want.toarray())
    assert all(np.all(np.diff(indices[indptr[i]:indptr[i + 1]]) > 0)
               for i in range(indptr.size - 1))


@pytest.mark.parametrize("width", [10, 2 ** 40])
def test_a_row_repeating_a_column_is_refused_not_overrun(width):
    # Row 0 holds column 3 twice (not canonical): keeping both would pass the
    # row's bound (one entry per selected column).
    ptr = np.array([0, 3], np.int64)
    idx = np.array([3, 3, 5], np.int64)
    with pytest.raises(KernelLimitError, match="extract_groups: argument 'idx'"):
        K.extract_groups(ptr, idx, np.array([0], np.int64), np.array([0, 1], np.int64),
                         np.array([3], np.int64), np.array([0, 1], np.int64), width)


@pytest.mark.parametrize("huge", [False, True])
def test_rows_keeping_many_columns_are_placed_in_order(huge):
    """Rows keeping more than 32 of their group's columns are ordered by
    placement rather than sorting; rows keeping few, by sorting: both in one
    call, against scipy."""
    rng = np.random.default_rng(4)
    S = sp.random(30, 400, density=0.6, format="csr", random_state=rng)
    S.sort_indices()
    S.data = np.arange(1, S.nnz + 1, dtype=np.float64)
    rows = np.concatenate([np.arange(30), rng.integers(0, 30, 20)]).astype(np.int64)
    cols = np.concatenate([rng.choice(400, 300, replace=False),      # many kept per row
                           rng.choice(400, 20, replace=False),       # few kept per row
                           rng.choice(400, 390, replace=False)]).astype(np.int64)
    rp = np.array([0, 30, 40, 50], np.int64)
    cp = np.array([0, 300, 320, 710], np.int64)
    ptr, idx = S.indptr.astype(np.int64), S.indices.astype(np.int64)
    indptr, indices, src, _ = K.extract_groups(ptr, idx, rows, rp, cols, cp,
                                               2 ** 40 if huge else 400)
    want = _reference(S, rows, rp, cols, cp)
    got = sp.csr_matrix((S.data[src], indices, indptr), shape=want.shape)
    assert np.array_equal(got.toarray(), want.toarray())
    kept = np.diff(indptr)
    assert kept[:30].min() > 32 and kept[30:40].max() <= 32
    assert all(np.all(np.diff(indices[indptr[i]:indptr[i + 1]]) > 0)
               for i in range(indptr.size - 1))


@pytest.mark.parametrize("width", [None, 2 ** 40])
def test_groups_split_among_more_workers_than_groups(width):
    """Fewer groups than workers: each group's rows are split into pieces;
    any number of pieces gives the one-piece output, and a repeated column
    is reported once, at the same position."""
    rng = np.random.default_rng(6)
    S = sp.random(50, 300, density=0.3, format="csr", random_state=rng)
    S.sort_indices()
    ptr, idx = S.indptr.astype(np.int64), S.indices.astype(np.int32)  # a matrix's widths
    rows = rng.integers(0, 50, 70).astype(np.int64)
    rp = np.array([0, 40, 40, 70], np.int64)            # a group without rows too
    cols = np.concatenate([rng.choice(300, 120, replace=False),
                           rng.choice(300, 10, replace=False),
                           rng.choice(300, 200, replace=False)]).astype(np.int64)
    cp = np.array([0, 120, 130, 330], np.int64)
    ncols = np.int64(300 if width is None else width)
    for c in (cols, np.concatenate([cols[:125], cols[121:122], cols[126:]])):
        want = K._extract.call_twin("serial", ptr, idx, rows, rp, c, cp, ncols, 1)
        for parts in (2, 3, 5, 8):
            for twin in ("serial", "parallel"):
                got = K._extract.call_twin(twin, ptr, idx, rows, rp, c, cp, ncols, parts)
                assert all(np.array_equal(a, b) for a, b in zip(got[:3], want[:3]))
                assert got[3:] == want[3:]
    assert want[3] == 125   # the second list repeats a column in group 1
