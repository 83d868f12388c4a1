"""Tests of spla.generators: R-MAT graphs, random CSR, selection matrices."""

import numba
import numpy as np
import pytest

import spla
from spla import Matrix
from spla.exceptions import DTypeError, IndexOutOfRange, InvalidValue, SplaError
from spla.generators import random_csr, rmat, selection_matrix
from spla.structure import vstack
from kernels.cpu import generate as kgen


def canonical(M):
    """Round-trip through the checked factory (raises if not canonical)."""
    C = Matrix.from_csr(np.asarray(M.indptr), np.asarray(M.indices),
                        None if M.values is None else np.asarray(M.values),
                        M.shape, check=True)
    assert C.isequal(M)
    return C


def reference_rmat(scale, edge_factor, seed, a=0.57, b=0.19, c=0.19,
                   symmetric=True, self_loops=False):
    """The R-MAT graph assembled edge by edge in Python (scipy dedups)."""
    import scipy.sparse as sp
    n = 1 << scale
    E = edge_factor * n
    keys = kgen.perm_keys(np.uint64(seed), scale)
    mask = np.uint64(n - 1)
    shift = np.uint64(max(1, (scale + 1) // 2))
    us, vs = [], []
    for e in range(E):
        u, v = kgen.rmat_edge(np.uint64(seed), e, scale, a, a + b, a + b + c)
        u = int(kgen.permute_vertex(np.uint64(u), mask, shift, keys))
        v = int(kgen.permute_vertex(np.uint64(v), mask, shift, keys))
        if u == v and not self_loops:
            continue
        us.append(u)
        vs.append(v)
        if symmetric and u != v:
            us.append(v)
            vs.append(u)
    S = sp.coo_matrix((np.ones(len(us)), (us, vs)), shape=(n, n)).tocsr()
    S.sum_duplicates()
    return Matrix.from_scipy(S, structural=True)


# ---- R-MAT ------------------------------------------------------------------

@pytest.mark.parametrize("symmetric,self_loops", [(True, False), (False, True),
                                                  (True, True), (False, False)])
def test_rmat_matches_edge_by_edge_reference(symmetric, self_loops):
    G = rmat(7, 4, seed=11, symmetric=symmetric, self_loops=self_loops)
    R = reference_rmat(7, 4, 11, symmetric=symmetric, self_loops=self_loops)
    assert G.isequal(R)


def test_rmat_deterministic_and_seed_dependent():
    G1 = rmat(10, 8, seed=5)
    G2 = rmat(10, 8, seed=5)
    G3 = rmat(10, 8, seed=6)
    assert G1.isequal(G2)
    assert not G1.isequal(G3)
    W1 = rmat(10, 8, seed=5, weighted=True)
    assert W1.isequal(rmat(10, 8, seed=5, weighted=True))
    assert not W1.isequal(rmat(10, 8, seed=6, weighted=True))


def test_rmat_independent_of_thread_count():
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        G1 = rmat(11, 8, seed=2, weighted=True)
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        G2 = rmat(11, 8, seed=2, weighted=True)
    finally:
        numba.set_num_threads(before)
    assert G1.isequal(G2)


@pytest.mark.parametrize("weighted", [False, True])
def test_rmat_canonical(weighted):
    G = rmat(9, 16, seed=0, weighted=weighted)
    canonical(G)
    assert G.indptr.dtype == np.int64
    assert G.indices.dtype == np.int32
    assert G.shape == (512, 512)
    assert G.is_structural != weighted


def test_rmat_symmetric_without_self_loops():
    G = rmat(10, 16, seed=3)
    assert G.isequal(G.T)
    D = G.to_scipy()
    assert D.diagonal().sum() == 0
    W = rmat(10, 16, seed=3, weighted=True)
    assert W.isequal(W.T)                     # symmetric weights too
    assert W.structure().isequal(G)


def test_rmat_directed_and_self_loops():
    D = rmat(10, 16, seed=3, symmetric=False)
    assert not D.isequal(D.T)
    assert D.to_scipy().diagonal().sum() == 0
    L = rmat(10, 16, seed=3, symmetric=False, self_loops=True)
    loops = int(L.to_scipy().diagonal().sum())
    assert loops > 0
    assert L.nnz == D.nnz + loops
    # The symmetric graph is the directed one plus its transpose.
    sym = (D.to_scipy() + D.to_scipy().T)
    sym.data[:] = 1
    assert rmat(10, 16, seed=3).isequal(Matrix.from_scipy(sym, structural=True))


def test_rmat_weights_in_unit_interval():
    W = rmat(10, 8, seed=9, weighted=True)
    assert W.dtype == np.float32
    v = np.asarray(W.values)
    assert v.min() > 0.0 and v.max() <= 1.0
    assert np.unique(v).size > 0.9 * v.size / 2   # pairs share a weight, little else
    assert 0.45 < v.mean() < 0.55


@pytest.mark.parametrize("bounds", [[0, 1024], [0, 1, 2, 1024],
                                    [0, 100, 100, 517, 1000, 1024],
                                    [0, 333, 666, 1024]])
@pytest.mark.parametrize("weighted,symmetric", [(False, True), (True, True), (False, False)])
def test_rmat_blocks_union_is_full(bounds, weighted, symmetric):
    full = rmat(10, 8, seed=4, weighted=weighted, symmetric=symmetric)
    blocks = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        B = rmat(10, 8, seed=4, weighted=weighted, symmetric=symmetric, rows=(lo, hi))
        assert B.shape == (hi - lo, 1024)
        canonical(B)
        blocks.append(B)
    assert vstack(blocks).isequal(full)


def test_rmat_blocks_larger_than_a_bucket():
    # 2**13 rows: several buckets of 1024 rows; odd split points.
    full = rmat(13, 4, seed=8)
    parts = [rmat(13, 4, seed=8, rows=r) for r in [(0, 3001), (3001, 3001), (3001, 8192)]]
    assert vstack(parts).isequal(full)


def test_rmat_degree_heavy_tailed():
    G = rmat(12, 16, seed=1)
    d = np.asarray(G.row_degrees())
    assert d.max() > 20 * d.mean()
    # Degree is not correlated with id.  Unpermuted, vertex 0 would be the
    # largest hub and hubs would be ids with few set bits (popcount ~2);
    # permuted, the top hubs have the popcount of random 12-bit ids (~6).
    hubs = np.argsort(d)[-20:]
    assert hubs[-1] != 0
    assert np.mean([bin(int(h)).count("1") for h in hubs]) > 4
    assert abs(np.corrcoef(d, np.arange(d.size))[0, 1]) < 0.1


def _expected_distinct(scale, E, a, b, c, symmetric, self_loops):
    """E[number of stored entries] from the R-MAT cell probabilities."""
    P = np.array([[a, b], [c, 1.0 - a - b - c]])
    K = np.ones((1, 1))
    for _ in range(scale):
        K = np.kron(K, P)
    if symmetric:
        U = np.triu(K + K.T, 1)          # unordered pairs u < v
        e = 2 * (1.0 - (1.0 - U[U > 0]) ** E).sum()
        if self_loops:
            e += (1.0 - (1.0 - np.diag(K)) ** E).sum()
        return e
    if not self_loops:
        np.fill_diagonal(K, 0.0)
    return (1.0 - (1.0 - K[K > 0]) ** E).sum()


@pytest.mark.parametrize("symmetric,self_loops", [(True, False), (False, True)])
def test_rmat_expected_edge_count(symmetric, self_loops):
    scale, ef = 10, 8
    expect = _expected_distinct(scale, ef << scale, 0.57, 0.19, 0.19, symmetric, self_loops)
    got = np.mean([rmat(scale, ef, seed=s, symmetric=symmetric,
                        self_loops=self_loops).nnz for s in range(4)])
    assert abs(got - expect) < 0.02 * expect


def test_rmat_quadrant_probabilities():
    # Level 0 of the descent picks the quadrants with probabilities a, b, c, d.
    a, b, c = 0.5, 0.2, 0.1
    n_edges = 20000
    counts = np.zeros((2, 2))
    for e in range(n_edges):
        u, v = kgen.rmat_edge(np.uint64(7), e, 3, a, a + b, a + b + c)
        counts[int(u) >> 2, int(v) >> 2] += 1
    p = counts / n_edges
    expect = np.array([[a, b], [c, 1 - a - b - c]])
    assert np.abs(p - expect).max() < 0.015


@pytest.mark.parametrize("scale", [0, 1, 2, 3, 5, 8, 12])
def test_permutation_is_a_bijection(scale):
    n = 1 << scale
    keys = kgen.perm_keys(np.uint64(123), scale)
    mask = np.uint64(n - 1)
    shift = np.uint64(max(1, (scale + 1) // 2))
    img = [int(kgen.permute_vertex(np.uint64(x), mask, shift, keys)) for x in range(n)]
    assert sorted(img) == list(range(n))
    if scale >= 8:
        assert sum(i == x for x, i in enumerate(img)) < 5


def test_rmat_small_scales_and_edge_cases():
    G0 = rmat(0, 4, seed=0)
    assert G0.shape == (1, 1) and G0.nnz == 0
    L0 = rmat(0, 4, seed=0, self_loops=True)
    assert L0.nnz == 1
    G1 = rmat(1, 4, seed=0)
    canonical(G1)
    E = rmat(5, 2, seed=0, rows=(7, 7))
    assert E.shape == (0, 32) and E.nnz == 0


def test_rmat_custom_probabilities():
    # a = b = c = d = 0.25 is an Erdos-Renyi-like graph: no hubs.
    G = rmat(12, 8, seed=0, a=0.25, b=0.25, c=0.25)
    d = np.asarray(G.row_degrees())
    assert d.max() < 4 * d.mean()


@pytest.mark.parametrize("kwargs,exc", [
    (dict(scale=-1), InvalidValue),
    (dict(scale=41), InvalidValue),
    (dict(scale=3.0), InvalidValue),
    (dict(scale="3"), InvalidValue),
    (dict(scale=True), InvalidValue),
    (dict(edge_factor=0), InvalidValue),
    (dict(edge_factor=2.5), InvalidValue),
    (dict(seed=-1), InvalidValue),
    (dict(seed=2 ** 64), InvalidValue),
    (dict(seed=1.0), InvalidValue),
    (dict(a=0.6, b=0.2, c=0.2), InvalidValue),
    (dict(a=0.5, b=0.3, c=0.3), InvalidValue),
    (dict(a=-0.1), InvalidValue),
    (dict(b=float("nan")), InvalidValue),
    (dict(c="0.1"), InvalidValue),
    (dict(rows=(5, 3)), InvalidValue),
    (dict(rows=(0, 33)), InvalidValue),
    (dict(rows=(-1, 3)), InvalidValue),
    (dict(rows=(1,)), InvalidValue),
    (dict(rows=3), InvalidValue),
    (dict(rows=(0.0, 3)), InvalidValue),
    (dict(symmetric=1), InvalidValue),
    (dict(weighted="yes"), InvalidValue),
])
def test_rmat_errors(kwargs, exc):
    args = dict(scale=5, edge_factor=4, seed=0)
    args.update(kwargs)
    with pytest.raises(exc) as info:
        rmat(args.pop("scale"), args.pop("edge_factor"), **args)
    assert isinstance(info.value, SplaError) and isinstance(info.value, ValueError)
    assert str(info.value).startswith("rmat: argument")


def test_rmat_seed_is_keyword_only():
    with pytest.raises(TypeError):
        rmat(5, 4, 0)
    with pytest.raises(TypeError):
        rmat(5)


# ---- random_csr -------------------------------------------------------------

def test_random_csr_shape_and_rows():
    A = random_csr(200, 50, 7, seed=3)
    canonical(A)
    assert A.shape == (200, 50)
    assert (np.asarray(A.row_degrees()) == 7).all()
    assert A.dtype == np.float32
    v = np.asarray(A.values)
    assert v.min() > 0 and v.max() <= 1


def test_random_csr_deterministic_and_seeded():
    A = random_csr(100, 1000, 16, seed=1)
    assert A.isequal(random_csr(100, 1000, 16, seed=1))
    assert not A.isequal(random_csr(100, 1000, 16, seed=2))
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        B = random_csr(100, 1000, 16, seed=1)
    finally:
        numba.set_num_threads(before)
    assert A.isequal(B)


def test_random_csr_columns_uniform():
    nrows, ncols, k = 20000, 40, 5
    A = random_csr(nrows, ncols, k, seed=0, dtype=None)
    assert A.is_structural
    counts = np.bincount(np.asarray(A.indices), minlength=ncols)
    expect = nrows * k / ncols
    chi2 = ((counts - expect) ** 2 / expect).sum()
    assert chi2 < 90          # 39 degrees of freedom: p ~ 1e-5
    # Pairs of columns too (Floyd's algorithm is uniform over k-subsets).
    presence = np.asarray(A.to_scipy().toarray() > 0, dtype=float)
    co = presence[:, 0] @ presence[:, 1] / nrows
    assert abs(co - k * (k - 1) / (ncols * (ncols - 1))) < 0.005


def test_random_csr_edge_cases():
    F = random_csr(5, 6, 6, seed=0)
    assert (np.asarray(F.indices).reshape(5, 6) == np.arange(6)).all()
    Z = random_csr(5, 6, 0, seed=0)
    assert Z.nnz == 0 and Z.shape == (5, 6)
    E = random_csr(0, 6, 2, seed=0)
    assert E.shape == (0, 6)
    D = random_csr(5, 6, 2, seed=0, dtype=np.float64)
    assert D.dtype == np.float64


def test_random_csr_blocks_union_is_full():
    full = random_csr(1000, 300, 9, seed=5)
    parts = [random_csr(1000, 300, 9, seed=5, rows=r)
             for r in [(0, 1), (1, 400), (400, 400), (400, 1000)]]
    assert vstack(parts).isequal(full)


@pytest.mark.parametrize("kwargs,exc", [
    (dict(nnz_per_row=11), InvalidValue),
    (dict(nnz_per_row=-1), InvalidValue),
    (dict(nrows=-1), InvalidValue),
    (dict(ncols=2.0), InvalidValue),
    (dict(seed=-3), InvalidValue),
    (dict(dtype=np.int32), DTypeError),
    (dict(dtype="not a dtype"), DTypeError),
    (dict(rows=(3, 2)), InvalidValue),
])
def test_random_csr_errors(kwargs, exc):
    args = dict(nrows=20, ncols=10, nnz_per_row=3, seed=0)
    args.update(kwargs)
    with pytest.raises(exc):
        random_csr(args.pop("nrows"), args.pop("ncols"), args.pop("nnz_per_row"), **args)


# ---- selection_matrix -------------------------------------------------------

def test_selection_matrix_gathers_rows():
    A = random_csr(50, 30, 4, seed=0)
    rows = np.array([3, 3, 49, 0, 17])
    Q = selection_matrix(rows, 50)
    canonical(Q)
    assert Q.shape == (5, 50) and Q.is_structural
    assert (Q @ A).new().isequal(spla.extract_rows(A, rows))
    assert (Q @ A).is_row_selection()


def test_selection_matrix_errors_and_empty():
    with pytest.raises(IndexOutOfRange):
        selection_matrix([0, 5], 5)
    with pytest.raises(IndexOutOfRange):
        selection_matrix([-1], 5)
    with pytest.raises(DTypeError):
        selection_matrix(np.array([0.0]), 5)
    E = selection_matrix([], 5)
    assert E.shape == (0, 5) and E.nnz == 0
