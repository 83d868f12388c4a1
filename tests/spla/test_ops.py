"""The spla operators against scipy.sparse and plain-Python references."""

import operator

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import kernels.cpu.spgemm as cpu_spgemm
import spla
from spla import Matrix, semiring

try:
    from strategies import (ALL_PLANS, PLANS, SETTINGS, assert_canonical,
                            pattern, rows_dict, twin_pairs_mxm,
                            twin_pairs_same_shape, twin_rows, twins)
except ImportError:  # collected as a package
    from tests.strategies import (ALL_PLANS, PLANS, SETTINGS,
                                  assert_canonical, pattern, rows_dict,
                                  twin_pairs_mxm, twin_pairs_same_shape, twin_rows, twins)


def _result_dtype(*dtypes):
    given_ = [d for d in dtypes if d is not None]
    return np.result_type(*given_) if given_ else None


def _is_float(dtype):
    return dtype is not None and np.dtype(dtype).kind == "f"


# ---------------------------------------------------------------------------
# mxm
# ---------------------------------------------------------------------------

# (add, mul) in plain Python over numpy scalars of the output dtype; None for
# the count / structural semirings, handled apart.
SEMIRING_REF = {
    "plus_times": (operator.add, operator.mul),
    "min_plus": (min, operator.add),
    "max_times": (max, operator.mul),
    "max_plus": (max, operator.add),
    "min_times": (min, operator.mul),
    "plus_pair": None,
    "any_pair": None,
}


def _expected_mxm_dtype(name, a_dtype, b_dtype):
    if name == "any_pair":
        return None
    if name == "plus_pair":
        return np.dtype(np.int64)
    return _result_dtype(a_dtype, b_dtype) or np.dtype(np.int64)


def reference_mxm(a, b, name):
    """Dict-of-rows product: ``{i: {j: value}}`` (value None for any_pair)."""
    out_dt = _expected_mxm_dtype(name, a.dtype, b.dtype)
    cdt = out_dt or np.dtype(np.int64)
    arows, brows = twin_rows(a, cdt), twin_rows(b, cdt)
    out = {}
    with np.errstate(over="ignore"):
        for i in range(a.shape[0]):
            acc = {}
            for k, av in arows[i]:
                for j, bv in brows[k]:
                    if name == "any_pair":
                        acc[j] = None
                    elif name == "plus_pair":
                        acc[j] = acc.get(j, 0) + 1
                    else:
                        add, mul = SEMIRING_REF[name]
                        p = cdt.type(mul(av, bv))
                        acc[j] = p if j not in acc else cdt.type(add(acc[j], p))
            out[i] = acc
    return out, out_dt


def check_against_reference(C, a, b, name):
    ref, out_dt = reference_mxm(a, b, name)
    assert_canonical(C)
    assert C.shape == (a.shape[0], b.shape[1])
    assert C.dtype == out_dt
    got = rows_dict(C)
    for i in range(C.nrows):
        assert sorted(got[i]) == sorted(ref[i]), f"pattern of row {i}"
        if out_dt is None:
            continue
        cols = sorted(ref[i])
        g = np.array([got[i][j] for j in cols], dtype=out_dt)
        e = np.array([ref[i][j] for j in cols], dtype=out_dt)
        if name == "plus_times" and _is_float(out_dt):
            rtol = 1e-5 if out_dt == np.float32 else 1e-12
            np.testing.assert_allclose(g, e, rtol=rtol, atol=rtol * 64)
        else:
            np.testing.assert_array_equal(g, e)


@SETTINGS
@given(twin_pairs_mxm())
def test_mxm_plus_times_matches_scipy(ab):
    a, b = ab
    E = spla.mxm(a.M, b.M)
    assert isinstance(E, spla.MxmExpr)
    C = E.new()
    check_against_reference(C, a, b, "plus_times")
    expected = (a.S @ b.S).toarray()
    out_dt = _expected_mxm_dtype("plus_times", a.dtype, b.dtype)
    got = C.to_dense()
    if _is_float(out_dt):
        rtol = 1e-5 if out_dt == np.float32 else 1e-12
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol * 64)
    else:
        np.testing.assert_array_equal(got, expected)
    # the @ operator is the same product
    assert (a.M @ b.M).new().isequal(C)


@pytest.mark.parametrize("name", [n for n in SEMIRING_REF if n != "plus_times"])
@SETTINGS
@given(ab=twin_pairs_mxm())
def test_mxm_semirings_match_reference(name, ab):
    a, b = ab
    C = spla.mxm(a.M, b.M, name).new()
    check_against_reference(C, a, b, name)
    # the Semiring object and its name are the same thing
    assert spla.mxm(a.M, b.M, getattr(semiring, name)).new().isequal(C)


def test_mxm_semirings_hand_computed(backend):
    A = backend.matrix(Matrix.from_dense(np.array([[1.0, 2.0], [0.0, 3.0]])))
    B = backend.matrix(Matrix.from_dense(np.array([[4.0, 0.0], [5.0, 6.0]])))
    dense = lambda C: backend.host(C.to_dense())  # noqa: E731
    np.testing.assert_array_equal(dense(spla.mxm(A, B).new()), [[14, 12], [15, 18]])
    C = spla.mxm(A, B, "min_plus").new()
    assert C.device == backend.device
    np.testing.assert_array_equal(dense(C), [[5, 8], [8, 9]])
    C = spla.mxm(A, B, "max_times").new()
    np.testing.assert_array_equal(dense(C), [[10, 12], [15, 18]])
    C = spla.mxm(A, B, "plus_pair").new()
    assert C.dtype == np.int64
    np.testing.assert_array_equal(dense(C), [[2, 1], [1, 1]])
    C = spla.mxm(A, B, "any_pair").new()
    assert C.is_structural and C.nnz == 4


@st.composite
def gather_cases(draw):
    # A has at most one entry per row (a row selection with any values) and
    # at least two columns, so one extra row of two entries can force the
    # general (Gustavson) path on the same data.
    a, b = draw(twin_pairs_mxm(min_k=2, a_max_row_nnz=1))
    name = draw(st.sampled_from(sorted(SEMIRING_REF)))
    return a, b, name


@SETTINGS
@given(gather_cases())
def test_mxm_row_gather_fast_path_equals_general_path(case):
    a, b, name = case
    C = spla.mxm(a.M, b.M, name).new()          # row-gather fast path
    check_against_reference(C, a, b, name)
    # A plus one row of two entries, with A's index and value dtypes
    M = a.M
    vals = None if M.values is None else np.r_[M.values, [1, 1]].astype(M.dtype)
    A2 = Matrix.from_csr(np.r_[M.indptr, M.nnz + 2],
                         np.r_[M.indices, [0, 1]].astype(M.indices.dtype), vals,
                         shape=(M.nrows + 1, M.ncols))
    assert not spla.mxm(A2, b.M).is_row_selection()
    G = spla.mxm(A2, b.M, name).new()            # general path
    top = spla.extract(G, rows=np.arange(a.shape[0]))
    assert top.isequal(C)
    if name == "plus_times":
        exp = (a.S @ b.S).toarray()
        if _is_float(C.dtype):
            np.testing.assert_allclose(C.to_dense(), exp, rtol=1e-5, atol=1e-4)
        else:
            np.testing.assert_array_equal(C.to_dense(), exp)


def _count_calls(monkeypatch, module, names):
    calls = {n: 0 for n in names}
    for n in names:
        orig = getattr(module, n)

        def wrapper(*args, _orig=orig, _n=n, **kwargs):
            calls[_n] += 1
            return _orig(*args, **kwargs)
        monkeypatch.setattr(module, n, wrapper)
    return calls


def test_mxm_is_lazy(monkeypatch):
    A = Matrix.from_dense(np.array([[1.0, 2.0], [0.0, 3.0]]))
    Q = Matrix.from_coo([0, 1], [1, 1], shape=(2, 2))
    calls = _count_calls(monkeypatch, cpu_spgemm,
                         ["spgemm_gather", "spgemm"])
    E = spla.mxm(A, A)
    F = Q @ A
    assert isinstance(E, spla.MxmExpr) and isinstance(F, spla.MxmExpr)
    assert sum(calls.values()) == 0, "mxm computed before .new()"
    r = repr(E)
    assert "lazy" in r and "2x2" in r and "plus_times" in r and ".new()" in r
    assert E.shape == (2, 2) and E.device == "cpu" and E.dtype == np.float64
    assert E.a is A and E.b is A and E.semiring is semiring.plus_times
    assert F.is_row_selection() and not E.is_row_selection()
    C = E.new()
    assert isinstance(C, Matrix)
    assert calls["spgemm"] == 1 and calls["spgemm_gather"] == 0
    np.testing.assert_array_equal(C.to_dense(), [[1, 8], [0, 9]])
    G = F.new()
    assert calls["spgemm_gather"] == 1
    np.testing.assert_array_equal(G.to_dense(), [[0, 3], [0, 3]])
    # each .new() computes again (an expression holds no result)
    E.new()
    assert calls["spgemm"] == 2


def test_mxm_chains_of_expressions():
    rng = np.random.default_rng(0)
    D1, D2, D3 = (rng.integers(0, 3, size=s).astype(np.float64)
                  for s in [(4, 5), (5, 3), (3, 6)])
    A, B, C = (Matrix.from_dense(D) for D in (D1, D2, D3))
    expected = D1 @ D2 @ D3
    for expr in [(A @ B) @ C, A @ (B @ C), spla.mxm(A @ B, C), spla.mxm(A, B @ C)]:
        assert isinstance(expr, spla.MxmExpr)
        np.testing.assert_array_equal(expr.new().to_dense(), expected)


def test_operators_accept_expressions():
    rng = np.random.default_rng(1)
    D = rng.integers(0, 3, size=(5, 5)).astype(np.float64)
    A = Matrix.from_dense(D)
    E = A @ A
    M = E.new()
    assert spla.extract(E, [3, 0, 3], [1, 4]).isequal(spla.extract(M, [3, 0, 3], [1, 4]))
    assert spla.extract_rows(E, [2]).isequal(spla.extract_rows(M, [2]))
    assert spla.extract_cols(E, [2]).isequal(spla.extract_cols(M, [2]))
    np.testing.assert_array_equal(spla.reduce_rowwise(E), spla.reduce_rowwise(M))
    assert spla.apply(E, "square").isequal(spla.apply(M, "square"))
    assert spla.select(E, "value>", 4).isequal(spla.select(M, "value>", 4))
    assert spla.ewise_add(E, A).isequal(spla.ewise_add(M, A))
    assert spla.ewise_mult(A, E).isequal(spla.ewise_mult(A, M))
    assert spla.transpose(E).isequal(spla.transpose(M))
    assert spla.vstack([E, A]).isequal(spla.vstack([M, A]))
    assert spla.block_diag([A, E]).isequal(spla.block_diag([A, M]))
    assert spla.normalize_rows(E).isequal(spla.normalize_rows(M))
    ce, ke = spla.compact_columns(E)
    cm, km = spla.compact_columns(M)
    assert ce.isequal(cm) and np.array_equal(ke, km)
    assert (A @ E).new().isequal((A @ M).new())
    assert (E @ A).new().isequal((M @ A).new())
    np.testing.assert_array_equal(M.to_dense(), D @ D)


# ---------------------------------------------------------------------------
# extraction
# ---------------------------------------------------------------------------

@st.composite
def extract_cases(draw):
    t = draw(twins())
    m, n = t.shape
    rows = None if draw(st.booleans()) else draw(
        st.lists(st.integers(0, m - 1), max_size=9) if m else st.just([]))
    cols = None if draw(st.booleans()) else draw(
        st.lists(st.integers(0, n - 1), max_size=9) if n else st.just([]))
    return t, rows, cols


@SETTINGS
@given(extract_cases())
def test_extract_matches_fancy_indexing(case):
    t, rows, cols = case
    r = np.arange(t.shape[0]) if rows is None else np.array(rows, np.int64)
    c = np.arange(t.shape[1]) if cols is None else np.array(cols, np.int64)
    X = spla.extract(t.M, rows, cols)
    assert_canonical(X)
    assert X.shape == (r.size, c.size)
    assert X.dtype == t.dtype
    mask = t.mask[np.ix_(r, c)]
    np.testing.assert_array_equal(pattern(X), mask)
    np.testing.assert_array_equal(X.to_dense(), t.dense[np.ix_(r, c)])
    if r.size and c.size:
        np.testing.assert_array_equal(X.to_scipy().toarray(), t.S[r][:, c].toarray())
    # the shorthands and A[rows, cols] (lists) agree
    if rows is not None and cols is None:
        assert spla.extract_rows(t.M, rows).isequal(X)
    if cols is not None and rows is None:
        assert spla.extract_cols(t.M, cols).isequal(X)
    key = (slice(None) if rows is None else list(rows),
           slice(None) if cols is None else list(cols))
    assert t.M[key].isequal(X)


def test_extract_repeated_unsorted_hand_computed(backend):
    A = backend.matrix(Matrix.from_dense(np.arange(1.0, 13.0).reshape(3, 4)))
    X = spla.extract(A, rows=backend.asarray([2, 0, 2]), cols=backend.asarray([3, 1, 1, 0]))
    assert X.device == backend.device
    np.testing.assert_array_equal(backend.host(X.to_dense()),
                                  [[12, 10, 10, 9], [4, 2, 2, 1], [12, 10, 10, 9]])
    np.testing.assert_array_equal(backend.host(X.indices[:4]), [0, 1, 2, 3])


def test_getitem_with_numpy_index_arrays():
    A = Matrix.from_dense(np.arange(12.0).reshape(3, 4))
    X = A[np.array([0, 2]), :]
    np.testing.assert_array_equal(X.to_dense(), [[0, 1, 2, 3], [8, 9, 10, 11]])
    Y = A[np.array([2, 0]), np.array([3, 1])]
    np.testing.assert_array_equal(Y.to_dense(), [[11, 9], [3, 1]])


@SETTINGS
@given(t=twins())
def test_compact_columns(backend, t):
    C, kept = spla.compact_columns(backend.matrix(t.M))
    assert C.device == backend.device
    C = C.to("cpu")
    assert_canonical(C)
    exp_kept = np.flatnonzero(t.mask.any(axis=0))
    np.testing.assert_array_equal(backend.host(kept), exp_kept)
    assert C.shape == (t.shape[0], exp_kept.size)
    assert C.dtype == t.dtype
    np.testing.assert_array_equal(pattern(C), t.mask[:, exp_kept])
    np.testing.assert_array_equal(C.to_dense(), t.dense[:, exp_kept])


# ---------------------------------------------------------------------------
# reduce_rowwise, apply, select, normalize_rows
# ---------------------------------------------------------------------------

def _identity(monoid, dtype):
    dtype = np.dtype(dtype)
    if monoid in ("plus",):
        return dtype.type(0)
    if monoid == "times":
        return dtype.type(1)
    big = np.inf if dtype.kind == "f" else np.iinfo(dtype).max
    small = -np.inf if dtype.kind == "f" else np.iinfo(dtype).min
    return dtype.type(big if monoid == "min" else small)


@pytest.mark.parametrize("monoid", ["plus", "max", "min", "times", "count", "any"])
@SETTINGS
@given(t=twins(min_value=-4, max_value=4))
def test_reduce_rowwise_matches_numpy(monoid, t):
    got = spla.reduce_rowwise(t.M, monoid)
    assert isinstance(got, np.ndarray) and got.shape == (t.shape[0],)
    if monoid == "count":
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, t.mask.sum(axis=1))
        return
    dt = t.dtype or np.dtype(np.int64)
    assert got.dtype == dt
    D = t.dense.astype(dt)
    if monoid == "any":
        for i in range(t.shape[0]):
            row = D[i, t.mask[i]]
            if row.size:
                assert got[i] in row
            else:
                assert got[i] == _identity("plus", dt)
        return
    ident = _identity(monoid, dt)
    filled = np.where(t.mask, D, ident)
    ref = {"plus": lambda: filled.sum(axis=1, dtype=dt),
           "max": lambda: filled.max(axis=1, initial=ident),
           "min": lambda: filled.min(axis=1, initial=ident),
           "times": lambda: filled.prod(axis=1, dtype=dt)}[monoid]()
    if _is_float(dt) and monoid in ("plus", "times"):
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(got, ref)


def test_reduce_rowwise_empty_rows_give_identities():
    A = Matrix.from_coo([1], [0], np.array([5], np.int32), shape=(2, 2))
    assert spla.reduce_rowwise(A, "plus").tolist() == [0, 5]
    assert spla.reduce_rowwise(A, "min").tolist() == [np.iinfo(np.int32).max, 5]
    assert spla.reduce_rowwise(A, "max").tolist() == [np.iinfo(np.int32).min, 5]
    F = A.astype(np.float32)
    assert spla.reduce_rowwise(F, "min").tolist() == [np.inf, 5.0]
    assert spla.reduce_rowwise(F, "max").tolist() == [-np.inf, 5.0]
    assert spla.reduce_rowwise(F, "times").tolist() == [1.0, 5.0]
    assert spla.reduce_rowwise(F, semiring.plus).dtype == np.float32


_NAMED = {
    "identity": lambda v: v,
    "square": lambda v: v * v,
    "reciprocal": lambda v: 1.0 / v.astype(np.float64) if v.dtype.kind in "iu" else 1 / v,
    "abs": np.abs,
    "neg": np.negative,
    "sqrt": np.sqrt,
    "exp": np.exp,
    "log": np.log,
    "one": np.ones_like,
}


@pytest.mark.parametrize("op", sorted(_NAMED))
@SETTINGS
@given(t=twins(min_value=-4, max_value=4))
def test_apply_named_ops(op, t):
    with np.errstate(all="ignore"):  # log/sqrt of negatives, 1/0: NaN and inf are kept
        out = spla.apply(t.M, op)
    assert_canonical(out)
    np.testing.assert_array_equal(out.indptr, t.M.indptr)
    np.testing.assert_array_equal(out.indices, t.M.indices)
    v = t.vals() if t.dtype is not None else np.ones(t.M.nnz, np.float64)
    with np.errstate(all="ignore"):
        expected = _NAMED[op](v)
    assert out.values.dtype == expected.dtype
    np.testing.assert_array_equal(out.values, expected)


def test_apply_named_ops_hand_computed():
    A = Matrix.from_dense(np.array([[4.0, 0.0], [0.0, -2.0]]))
    assert spla.apply(A, "square").values.tolist() == [16.0, 4.0]
    assert spla.apply(A, "reciprocal").values.tolist() == [0.25, -0.5]
    assert spla.apply(A, "abs").values.tolist() == [4.0, 2.0]
    assert spla.apply(A, "neg").values.tolist() == [-4.0, 2.0]
    assert spla.apply(A, "one").values.tolist() == [1.0, 1.0]
    assert spla.apply(A.structure(), "square").values.tolist() == [1.0, 1.0]


@numba.njit
def _affine(x):
    return 2 * x + 1


@numba.njit
def _checker(i, j, v):
    return (i + j) % 2 == 0 and v > 0


# User functions are compiled once here: a plain lambda made afresh in every
# hypothesis example would be compiled (with the parallel kernel) per example.
# The kernels taking a user function are not cached on disk, so every dtype
# costs a compilation per run: one plan (float64) here, the others by hand.
@SETTINGS
@given(t=twins(plan=PLANS[1], min_value=-4, max_value=4))
def test_apply_user_function(t):
    out = spla.apply(t.M, _affine)
    np.testing.assert_array_equal(out.indices, t.M.indices)
    v = t.vals() if t.dtype is not None else np.ones(t.M.nnz)
    np.testing.assert_array_equal(out.values, 2 * v + 1)
    assert out.values.shape == (t.M.nnz,)


def test_apply_user_function_dtypes():
    A = Matrix.from_dense(np.array([[3, 0], [0, -2]], np.int32))
    assert spla.apply(A, lambda x: x * 0.5).values.tolist() == [1.5, -1.0]
    pos = spla.apply(A, lambda x: x > 0)
    assert pos.values.dtype in (np.float64, np.int64)
    assert pos.values.tolist() == [1, 0]


_INDEX_PREDS = {
    "tril": lambda i, j, v, s: j <= i + s, "triu": lambda i, j, v, s: j >= i + s,
    "diag": lambda i, j, v, s: j == i + s, "offdiag": lambda i, j, v, s: j != i + s,
    "row<": lambda i, j, v, s: i < s, "row>=": lambda i, j, v, s: i >= s,
    "col<": lambda i, j, v, s: j < s, "col>=": lambda i, j, v, s: j >= s,
    "value>": lambda i, j, v, s: v > s, "value>=": lambda i, j, v, s: v >= s,
    "value<": lambda i, j, v, s: v < s, "value<=": lambda i, j, v, s: v <= s,
    "value==": lambda i, j, v, s: v == s, "value!=": lambda i, j, v, s: v != s,
    "nonzero": lambda i, j, v, s: v != 0,
}


def _check_select(X, t, keep):
    assert_canonical(X)
    assert X.shape == t.shape and X.dtype == t.dtype
    np.testing.assert_array_equal(pattern(X), keep)
    np.testing.assert_array_equal(X.to_dense(), np.where(keep, t.dense, 0))


@pytest.mark.parametrize("pred", sorted(_INDEX_PREDS))
@SETTINGS
@given(t=twins(min_value=-3, max_value=3), thunk=st.integers(-2, 3))
def test_select_named_predicates(pred, t, thunk):
    X = spla.select(t.M, pred, thunk)
    i, j = np.indices(t.shape)
    keep = t.mask & _INDEX_PREDS[pred](i, j, t.dense, thunk)
    _check_select(X, t, keep)


def test_select_plain_python_function():
    A = Matrix.from_dense(np.array([[1.0, 2.0], [3.0, 4.0]]))
    X = spla.select(A, lambda i, j, v: i != j or v > 3)
    np.testing.assert_array_equal(X.to_dense(), [[0, 2], [3, 4]])


def test_select_hand_computed():
    A = Matrix.from_dense(np.array([[1.0, 2.0, 0.0], [3.0, 4.0, 5.0], [0.0, 6.0, 7.0]]))
    np.testing.assert_array_equal(spla.select(A, "triu", 1).values, [2.0, 5.0])
    np.testing.assert_array_equal(spla.select(A, "diag").values, [1.0, 4.0, 7.0])
    np.testing.assert_array_equal(spla.select(A, "value>=", 5).values, [5.0, 6.0, 7.0])
    np.testing.assert_array_equal(spla.select(A, "row>=", 2).values, [6.0, 7.0])


@SETTINGS
@given(t=twins(plan=PLANS[1], min_value=-3, max_value=3))
def test_select_user_function(t):
    X = spla.select(t.M, _checker)
    i, j = np.indices(t.shape)
    keep = t.mask & ((i + j) % 2 == 0) & (t.dense > 0)
    _check_select(X, t, keep)


@SETTINGS
@given(t=twins(min_value=0, max_value=5))
def test_normalize_rows(t):
    N = spla.normalize_rows(t.M)
    assert_canonical(N)
    np.testing.assert_array_equal(pattern(N), t.mask)
    exp_dt = np.float32 if t.dtype == np.float32 else np.float64
    assert N.dtype == exp_dt
    D = t.dense.astype(np.float64)
    sums = D.sum(axis=1)
    expected = D / np.where(sums == 0, 1, sums)[:, None]
    np.testing.assert_allclose(N.to_dense(), expected, rtol=1e-6, atol=1e-7)
    got_sums = N.to_dense().astype(np.float64).sum(axis=1)
    np.testing.assert_allclose(got_sums[sums > 0], 1.0, rtol=1e-5)


# ---------------------------------------------------------------------------
# element-wise union and intersection
# ---------------------------------------------------------------------------

def _operand_dense(t, dt):
    return t.mask.astype(dt) if t.dtype is None else t.dense.astype(dt)


_ADD_REF = {"plus": np.add, "times": np.multiply, "min": np.minimum, "max": np.maximum,
            "any": lambda a, b: a}
_MULT_REF = {"times": np.multiply, "plus": np.add, "min": np.minimum, "max": np.maximum,
             "first": lambda a, b: a, "second": lambda a, b: b, "pair": None}


@pytest.mark.parametrize("monoid", sorted(_ADD_REF))
@SETTINGS
@given(ab=twin_pairs_same_shape())
def test_ewise_add(monoid, ab):
    a, b = ab
    C = spla.ewise_add(a.M, b.M, monoid)
    assert_canonical(C)
    union = a.mask | b.mask
    np.testing.assert_array_equal(pattern(C), union)
    dt = _result_dtype(a.dtype, b.dtype)
    assert C.dtype == dt
    if dt is None:
        return
    da, db = _operand_dense(a, dt), _operand_dense(b, dt)
    both = a.mask & b.mask
    got = C.to_dense()
    if monoid == "any":  # either operand's value where both are present
        assert np.all((got == da) | (got == db) | ~both)
        np.testing.assert_array_equal(got[~both], np.where(a.mask, da, db)[~both])
        return
    expected = np.where(both, _ADD_REF[monoid](da, db), np.where(a.mask, da, db))
    np.testing.assert_array_equal(got, expected)
    if monoid == "plus":
        np.testing.assert_allclose(C.to_dense(), (a.S + b.S).toarray(), rtol=1e-6)


@pytest.mark.parametrize("op", sorted(_MULT_REF))
@SETTINGS
@given(ab=twin_pairs_same_shape())
def test_ewise_mult(op, ab):
    a, b = ab
    C = spla.ewise_mult(a.M, b.M, op)
    assert_canonical(C)
    both = a.mask & b.mask
    np.testing.assert_array_equal(pattern(C), both)
    dt = None if op == "pair" else _result_dtype(a.dtype, b.dtype)
    assert C.dtype == dt
    if dt is None:
        return
    da, db = _operand_dense(a, dt), _operand_dense(b, dt)
    expected = np.where(both, _MULT_REF[op](da, db), 0)
    np.testing.assert_array_equal(C.to_dense(), expected)
    if op == "times":
        np.testing.assert_allclose(C.to_dense(), a.S.multiply(b.S).toarray(), rtol=1e-6)


def test_ewise_hand_computed():
    A = Matrix.from_dense(np.array([[1.0, 0.0, 3.0]]))
    B = Matrix.from_dense(np.array([[2.0, 5.0, 0.0]]))
    np.testing.assert_array_equal(spla.ewise_add(A, B).to_dense(), [[3, 5, 3]])
    np.testing.assert_array_equal(spla.ewise_add(A, B, "min").to_dense(), [[1, 5, 3]])
    np.testing.assert_array_equal(spla.ewise_mult(A, B).to_dense(), [[2, 0, 0]])
    np.testing.assert_array_equal(spla.ewise_mult(A, B, "max").values, [2.0])


# ---------------------------------------------------------------------------
# transpose, vstack, block_diag
# ---------------------------------------------------------------------------

@SETTINGS
@given(twins())
def test_transpose(t):
    T = spla.transpose(t.M)
    assert_canonical(T)
    assert T.shape == t.shape[::-1] and T.dtype == t.dtype
    np.testing.assert_array_equal(pattern(T), t.mask.T)
    np.testing.assert_array_equal(T.to_dense(), t.dense.T)
    np.testing.assert_array_equal(T.to_scipy().toarray(), t.S.T.toarray())
    assert t.M.T.isequal(T)
    assert spla.transpose(T).isequal(t.M)  # an involution


@st.composite
def stack_cases(draw, same_ncols):
    # vstack and block_diag run no compiled kernel: every dtype plan is cheap.
    n = draw(st.integers(1, 3))
    structural = draw(st.booleans())
    plans = tuple(p for p in ALL_PLANS if (p[1] is None) == structural)
    ncols = draw(st.integers(0, 5))
    out = []
    for _ in range(n):
        shape = (draw(st.integers(0, 4)), ncols if same_ncols else draw(st.integers(0, 4)))
        out.append(draw(twins(shape, plans=plans)))
    return out


@SETTINGS
@given(stack_cases(same_ncols=True))
def test_vstack(ts):
    V = spla.vstack([t.M for t in ts])
    assert_canonical(V)
    assert V.shape == (sum(t.shape[0] for t in ts), ts[0].shape[1])
    assert V.dtype == _result_dtype(*[t.dtype for t in ts])
    np.testing.assert_array_equal(pattern(V), np.vstack([t.mask for t in ts]))
    np.testing.assert_array_equal(V.to_dense(),
                                  np.vstack([t.dense for t in ts]).astype(V.to_dense().dtype))
    if V.nrows and V.ncols:
        np.testing.assert_array_equal(V.to_scipy().toarray(),
                                      sp.vstack([t.S for t in ts]).toarray())


def _dense_block_diag(arrays, dtype):
    shape = (sum(a.shape[0] for a in arrays), sum(a.shape[1] for a in arrays))
    out = np.zeros(shape, dtype)
    r = c = 0
    for a in arrays:
        out[r:r + a.shape[0], c:c + a.shape[1]] = a
        r += a.shape[0]
        c += a.shape[1]
    return out


@SETTINGS
@given(stack_cases(same_ncols=False))
def test_block_diag(ts):
    Bd = spla.block_diag([t.M for t in ts])
    assert_canonical(Bd)
    assert Bd.dtype == _result_dtype(*[t.dtype for t in ts])
    np.testing.assert_array_equal(pattern(Bd), _dense_block_diag([t.mask for t in ts], bool))
    D = Bd.to_dense()
    np.testing.assert_array_equal(D, _dense_block_diag([t.dense for t in ts], D.dtype))
    if all(min(t.shape) > 0 for t in ts):
        np.testing.assert_array_equal(Bd.to_scipy().toarray(),
                                      sp.block_diag([t.S for t in ts]).toarray())


def test_stack_hand_computed():
    A = Matrix.from_dense(np.array([[1.0, 0.0]]))
    B = Matrix.from_dense(np.array([[0.0, 2.0], [3.0, 0.0]], np.float32))
    V = spla.vstack([A, B])
    assert V.dtype == np.float64
    np.testing.assert_array_equal(V.to_dense(), [[1, 0], [0, 2], [3, 0]])
    Bd = spla.block_diag([A, B])
    np.testing.assert_array_equal(Bd.to_dense(), [[1, 0, 0, 0], [0, 0, 0, 2], [0, 0, 3, 0]])
