"""The masked dot product of a ``pair`` multiply (``kernels.cpu.masked._pair_rows``):
every slot's value against a plain-Python count of the common ids, on narrow
and wide k ranges (position table, merge and search paths), with empty rows,
masks hit everywhere or nowhere, value masks' zeros; and through ``spla.mxm``
against the general path (``plus_times`` over all-one values)."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spla
from kernels.cpu import masked as km
from kernels.semiring_ops import ADD_ANY, ADD_MAX, ADD_MIN, ADD_PLUS, ADD_TIMES, MUL_PAIR
from spla import Matrix, semiring

SET = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MONOIDS = (ADD_PLUS, ADD_MIN, ADD_MAX, ADD_ANY, ADD_TIMES)


def _csr(D, stretch=1):
    """CSR arrays of a boolean pattern, int32 ids (as a Matrix holds them:
    the kernel's signatures are then those a triangle count compiles
    anyway), its columns spread by stretch."""
    S = sp.csr_matrix(D.astype(np.float64))
    S.sort_indices()
    return S.indptr.astype(np.int64), (S.indices * stretch).astype(np.int32)


def _reference(a_ptr, a_idx, bt_ptr, bt_idx, m_ptr, m_idx, m_ok, add):
    """(value or None) per slot: the count of ids common to A's row i and
    Bᵀ's row j, or 1 for a monoid other than plus; None without any."""
    out = []
    for i in range(m_ptr.size - 1):
        row = set(a_idx[a_ptr[i]:a_ptr[i + 1]].tolist())
        for s in range(m_ptr[i], m_ptr[i + 1]):
            j = m_idx[s]
            c = len(row & set(bt_idx[bt_ptr[j]:bt_ptr[j + 1]].tolist()))
            out.append(None if (c == 0 or not m_ok[s]) else (c if add == ADD_PLUS else 1))
    return out


@SET
@given(seed=st.integers(0, 2**31 - 1), rows=st.integers(0, 90), k=st.integers(1, 40),
       p=st.sampled_from([0.0, 0.1, 0.3, 0.9, 1.0]), pm=st.sampled_from([0.0, 0.3, 1.0]),
       wide=st.booleans(), add=st.sampled_from(MONOIDS),
       zeros=st.sampled_from([0.0, 0.5]))
def test_pair_slots_equal_common_id_counts(seed, rows, k, p, pm, wide, add, zeros):
    """The serial twin of ``masked_dot``, every slot, against the plain-Python
    counts.  ``wide`` spreads the k ids past ``SMALL_K`` (short rows merge
    or search, long ones use the table); a hub row of A and a hub row of Bᵀ
    take the search branches; ``zeros``: a value mask's zero slots.  int64
    values only, with the operands passed read-only as the library passes
    them (``call_twin``): the signature a triangle count compiles anyway
    (each new one costs seconds to compile; other value types' folds are
    ``_pair_value``'s test)."""
    dtype = np.int64
    rs = np.random.RandomState(seed)
    stretch = km.SMALL_K // k + 1 if wide else 1
    nb = max(rows // 2, 1)
    Ad, Bd = rs.rand(rows, k) < p, rs.rand(nb, k) < p / 3
    if rows:  # hubs: 8 times longer than the rows they meet when k > 16
        Ad[0], Bd[0] = True, True
    a_ptr, a_idx = _csr(Ad, stretch)
    bt_ptr, bt_idx = _csr(Bd, stretch)
    m_ptr, m_idx = _csr(rs.rand(rows, nb) < pm)
    m_ok = rs.rand(m_idx.size) >= zeros
    one = np.ones(1, dtype)
    none = np.zeros(0, dtype)
    args = (a_ptr, a_idx, none, False, bt_ptr, bt_idx, none, False, m_ptr, m_idx, m_ok,
            add, MUL_PAIR, one)
    want = _reference(a_ptr, a_idx, bt_ptr, bt_idx, m_ptr, m_idx, m_ok, add)
    val, hit = km.masked_dot.call_twin("serial", *args)
    assert val.dtype == dtype and hit.size == m_idx.size
    assert [v if h else None for v, h in zip(val.tolist(), hit.tolist())] == want


@pytest.mark.parametrize("seed, wide, add", [(0, False, ADD_PLUS), (1, True, ADD_PLUS),
                                             (2, False, ADD_MIN)])
def test_pair_slots_on_the_parallel_twin(seed, wide, add):
    """The parallel twin, many blocks, against the plain-Python counts, with
    valued float64 operands passed read-only as a valued triangle count
    passes them (``call_twin``): the one parallel signature the suite
    compiles anyway.  Values are never read by a ``pair`` multiply."""
    rs = np.random.RandomState(seed)
    rows, k = 300, 30
    stretch = km.SMALL_K // k + 1 if wide else 1
    Ad, Bd = rs.rand(rows, k) < 0.2, rs.rand(rows // 2, k) < 0.1
    Ad[0], Bd[0] = True, True
    a_ptr, a_idx = _csr(Ad, stretch)
    bt_ptr, bt_idx = _csr(Bd, stretch)
    m_ptr, m_idx = _csr(rs.rand(rows, rows // 2) < 0.3)
    m_ok = rs.rand(m_idx.size) >= 0.2
    a_val = rs.rand(a_idx.size)
    args = (a_ptr, a_idx, a_val, True, bt_ptr, bt_idx, rs.rand(bt_idx.size), True, m_ptr,
            m_idx, m_ok, add, MUL_PAIR, np.ones(1))
    assert km.masked_dot.work(*args) >= km.masked_dot.threshold  # the parallel twin's size
    val, hit = km.masked_dot.call_twin("parallel", *args)
    want = _reference(a_ptr, a_idx, bt_ptr, bt_idx, m_ptr, m_idx, m_ok, add)
    assert [v if h else None for v, h in zip(val.tolist(), hit.tolist())] == want
    assert sum(v is not None for v in want) > 100


@pytest.mark.parametrize("dtype", [np.int64, np.float32])
def test_pair_value_repeats_the_fold_past_exact_counts(dtype):
    """Counts from ``EXACT_COUNT`` on are folded as the general path folds
    them: a float32 sum of ones stops at 2**24, an int64 one does not."""
    c = np.int64(km.EXACT_COUNT + 3)
    got = km._pair_value(c, ADD_PLUS, dtype(1))
    want = np.float32(2**24) if dtype is np.float32 else c
    assert got == want
    assert km._pair_value(np.int64(5), ADD_PLUS, dtype(1)) == 5
    assert km._pair_value(np.int64(5), ADD_MIN, dtype(1)) == 1


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), complement=st.booleans(), value_mask=st.booleans())
def test_plus_pair_equals_plus_times_over_ones(seed, complement, value_mask):
    """Through ``spla.mxm`` with the dot path forced: ``plus_pair`` counts
    equal ``plus_times`` of the all-one patterns (the general rows), on
    structural, value and complemented masks, and triangle counts match
    scipy's."""
    from spla import product
    rs = np.random.RandomState(seed)
    n = int(rs.randint(1, 70))
    S = sp.random(n, n, density=float(rs.choice([0.02, 0.2, 0.6])), random_state=rs,
                  format="csr")
    S = ((S + S.T) > 0).astype(np.float64)
    S.setdiag(0)
    S.eliminate_zeros()
    A = Matrix.from_scipy(S.tocsr(), structural=True)
    L = spla.select(A, "tril", -1)
    Mv = Matrix.from_scipy(sp.csr_matrix(S.multiply(rs.rand(n, n) < 0.5).toarray()
                                         * rs.randint(0, 2, (n, n))))
    mask = (Mv.V if value_mask else L.S)
    mask = ~mask if complement else mask
    ones = Matrix.from_scipy(L.to_scipy().astype(np.float64))
    orig = product._dot_is_cheaper
    product._dot_is_cheaper = lambda xp, A, B, M: True
    try:
        got = spla.mxm(L, L.T, semiring.plus_pair, mask=mask)
        ref = spla.mxm(ones, ones.T, semiring.plus_times, mask=mask)
    finally:
        product._dot_is_cheaper = orig
    g, r = got.to_scipy(), ref.to_scipy()
    assert (g.indptr == r.indptr).all() and (g.indices == r.indices).all()
    assert (g.data == r.data).all()
    if not (complement or value_mask):
        Ls = L.to_scipy()
        assert spla.reduce_scalar(got) == int((Ls @ Ls.T).multiply(Ls).sum())


def test_dot_choice_caches_counts_and_decides_as_before():
    """``_dot_is_cheaper`` caches row lengths and column counts on the
    (immutable) matrices; the cached values are numpy's, and the choice on
    cached matrices equals the choice on fresh copies."""
    from spla import product
    rs = np.random.RandomState(7)
    for p in (0.05, 0.3, 0.8):
        A = Matrix.from_scipy(sp.random(30, 20, density=p, random_state=rs, format="csr"))
        B = Matrix.from_scipy(sp.random(20, 25, density=p / 2, random_state=rs, format="csr"))
        M = Matrix.from_scipy(sp.random(30, 25, density=0.5, random_state=rs, format="csr"))
        fresh = [Matrix._new(X.indptr, X.indices, X.values, X.shape) for X in (A, B, M)]
        first = product._dot_is_cheaper(np, A, B, M)
        assert product._dot_is_cheaper(np, A, B, M) == first
        for X in (A, M):
            np.testing.assert_array_equal(X._cache["col_counts"],
                                          np.bincount(X.indices, minlength=X.ncols))
            np.testing.assert_array_equal(X._cache["row_lengths"], np.diff(X.indptr))
        assert product._dot_is_cheaper(np, *fresh) == first
