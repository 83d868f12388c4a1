"""``spla.transpose`` leaves its own transpose's pattern on the result, so a
product that needs Tᵀ (masked ``mxm``'s dot kernel, ``vxm``'s pull) does
not transpose again; results against scipy, kernel calls counted."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given

import kernels.cpu.spmm as cpu_spmm
import spla
from spla import Matrix, Vector, product, semiring
from strategies import ALL_PLANS, SETTINGS, assert_canonical, twins


@pytest.fixture
def calls(monkeypatch):
    """Counts the CPU transpose kernel's calls (spla reaches it by attribute)."""
    seen = []
    kernel = cpu_spmm.transpose_pattern

    def counted(*args):
        seen.append(1)
        return kernel(*args)
    monkeypatch.setattr(cpu_spmm, "transpose_pattern", counted)
    return seen


def _fresh(M):
    """The same matrix without any cache."""
    return Matrix._new(M.indptr, M.indices, M.values, M.shape)


@SETTINGS
@given(twins(plans=ALL_PLANS))
def test_transpose_and_its_seeded_pattern_match_a_fresh_computation(t):
    A = t.M
    T = spla.transpose(A)
    assert_canonical(T)
    want = t.S.T.tocsr()
    want.sort_indices()
    np.testing.assert_array_equal(T.indptr, want.indptr)
    np.testing.assert_array_equal(T.indices, want.indices)
    if A.values is not None:
        np.testing.assert_array_equal(T.values, want.data.astype(A.dtype))
    seeded = T._cache["transpose_pattern"]
    made = product.transpose_pattern(_fresh(T), order=True)
    for got, ref in zip(seeded[:2], made[:2]):
        assert got.dtype == ref.dtype
        np.testing.assert_array_equal(got, ref)
    if A.values is None:
        assert seeded[2] is None
    else:
        np.testing.assert_array_equal(seeded[2], made[2])
    # and back: Tᵀ is A again, from the seeded pattern
    assert spla.transpose(T).isequal(A)


def _lower(n, p, seed, values):
    rs = np.random.RandomState(seed)
    D = np.tril((rs.rand(n, n) < p) * rs.randint(1, 5, size=(n, n)), -1).astype(np.float64)
    S = sp.csr_matrix(D + D.T)
    L = spla.select(Matrix.from_scipy(S, structural=not values), "tril", -1)
    return L, sp.csr_matrix(np.tril(S.toarray(), -1))


@pytest.mark.parametrize("dot", [True, False])
def test_triangle_count_with_lt_formed_in_the_call_transposes_once(calls, monkeypatch, dot):
    L, Ls = _lower(40, 0.2, 1, values=False)
    monkeypatch.setattr(product, "_dot_is_cheaper", lambda xp, A, B, M: dot)
    C = spla.mxm(L, L.T, semiring.plus_pair, mask=L.S)
    assert len(calls) == 1  # L.T itself; the product reads its seeded pattern
    P = (Ls > 0).astype(np.int64)
    want = (P @ P.T).multiply(P).tocsr()
    want.eliminate_zeros()
    assert spla.reduce_scalar(C) == want.sum()
    ref = spla.mxm(L, _fresh(spla.transpose(L)), semiring.plus_pair, mask=L.S)
    assert C.isequal(ref)
    np.testing.assert_array_equal(C.values, ref.values)


def test_valued_masked_product_reads_the_seeded_order(calls, monkeypatch):
    L, Ls = _lower(30, 0.3, 2, values=True)
    monkeypatch.setattr(product, "_dot_is_cheaper", lambda xp, A, B, M: True)
    C = spla.mxm(L, L.T, semiring.plus_times, mask=L.S)
    assert len(calls) == 1
    want = (Ls @ Ls.T).multiply(Ls > 0).tocsr()
    got = C.to_scipy()
    assert abs(got - want).max() == 0 if got.nnz else want.nnz == 0


def test_vxm_pull_on_a_transpose_reads_the_seeded_pattern(calls, monkeypatch):
    L, Ls = _lower(30, 0.3, 3, values=True)
    from spla import graphblas
    monkeypatch.setattr(graphblas, "PUSH_EDGES", 0)  # a dense u then pulls
    for T, dense in ((L.T, Ls.T.toarray()), (L.structure().T, (Ls.T > 0).toarray() * 1.0)):
        u = Vector.from_dense(np.arange(1.0, 31.0))
        got = spla.vxm(u, T).to_dense()
        np.testing.assert_array_equal(got, np.arange(1.0, 31.0) @ dense)
    assert len(calls) == 2  # the two transposes, no more


def test_transpose_reuses_the_operands_cached_pattern(calls):
    L, Ls = _lower(20, 0.3, 4, values=True)
    product.transpose_pattern(L, order=True)  # what a masked product leaves on L
    assert len(calls) == 1
    T = L.T
    assert len(calls) == 1
    np.testing.assert_array_equal(T.to_dense(), Ls.T.toarray())
    S = L.structure()
    product.transpose_pattern(S, order=False)
    assert S.T.isequal(L.T.structure()) and len(calls) == 2


def test_device_path_seeds_the_same_pattern_under_a_cupy_stand_in():
    import sys

    import fake_cupy
    L, _ = _lower(12, 0.4, 5, values=True)
    want = L.T
    saved = sys.modules.get("cupy")
    fake_cupy.install()
    try:
        T = L.to("cuda").T
        assert spla.backend.device_of(T.indices) == "cuda"
        host = T.to("cpu")
        assert host.isequal(want)
        np.testing.assert_array_equal(host.values, want.values)
        for got, ref in zip(T._cache["transpose_pattern"], want._cache["transpose_pattern"]):
            np.testing.assert_array_equal(spla.backend.to_host(got), ref)
    finally:
        if saved is None:
            sys.modules.pop("cupy", None)
        else:
            sys.modules["cupy"] = saved


@pytest.mark.parametrize("values", [False, True])
def test_transpose_caches_its_pattern_on_the_source(calls, values):
    """``A.T`` leaves the pattern it made on A (``product.transpose_pattern``'s
    format): a second ``A.T`` sorts nothing and equals the first; a pattern
    cached without its order does not serve a valued A's transpose."""
    L, Ls = _lower(25, 0.3, 6, values=values)
    if values:
        product.transpose_pattern(L, order=False)  # a structural product's leftover
        assert len(calls) == 1 and L._cache["transpose_pattern"][2] is None
    first = L.T
    n = len(calls)
    second = L.T
    assert len(calls) == n
    want = Ls.T.toarray() if values else (Ls.T > 0).toarray()
    for T in (first, second):
        assert_canonical(T)
        np.testing.assert_array_equal(T.to_dense(), want)
    made = product.transpose_pattern(_fresh(L), order=True)
    cached = L._cache["transpose_pattern"]
    for got, ref in zip(cached[:2], made[:2]):
        assert got.dtype == ref.dtype
        np.testing.assert_array_equal(got, ref)
    if values:
        np.testing.assert_array_equal(cached[2], made[2])
    else:
        assert cached[2] is None
