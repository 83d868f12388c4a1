"""``spla.mxv`` / ``spla.vxm`` with a DistMatrix equal the single-process
products bit for bit, on every layout, replication and partition, and a bad
argument on one rank raises the same error on every rank."""

import numpy as np
import pytest
import scipy.sparse as sp

import spla
from spla.partition import Partition

SEMIRINGS = ["plus_times", "min_plus", "max_times", "plus_pair", "any_secondi", "min_second"]


def grids(p):
    return [("1d", 1)] + [("1.5d", c) for c in range(2, p + 1) if p % c == 0]


def layouts(comm, A):
    """Every way the test distributes A: block rows, replicated, and by a
    random partition (its first part left empty) when A is square."""
    rng = np.random.default_rng(5)
    parts = {}
    for layout, c in grids(comm.size):
        q = comm.size // c
        P = Partition(rng.integers(1 if q > 1 else 0, q, A.nrows), q, method="random")
        parts[(layout, c, "block")] = spla.distribute(A, comm, layout=layout, replication=c)
        parts[(layout, c, "replicated")] = spla.distribute(A, comm, layout=layout,
                                                           replication=c, replicate_graph=True)
        if A.nrows == A.ncols:
            parts[(layout, c, "partition")] = spla.distribute(A, comm, layout=layout,
                                                              replication=c, partition=P)
    return parts


def bits(v):
    """A Vector as comparable bytes: indices, dtype and value bits."""
    vals = None if v.values is None else np.asarray(v.values).tobytes()
    return v.size, np.asarray(v.indices).tolist(), str(v.dtype), vals


def random_matrix(m, n, seed):
    rs = np.random.RandomState(seed)
    return spla.Matrix.from_scipy(sp.random(m, n, density=0.15, format="csr",
                                            random_state=rs, dtype=np.float32))


@pytest.fixture(scope="module")
def A():
    return random_matrix(41, 41, 11)


@pytest.mark.parametrize("semiring", SEMIRINGS)
@pytest.mark.parametrize("shape", [(41, 41), (43, 29), (3, 50)])
def test_products_equal_the_local_ones(comm, shape, semiring):
    A = random_matrix(*shape, 11)
    rs = np.random.RandomState(3)
    u_row = spla.Vector.from_dense(rs.rand(A.nrows).astype(np.float32) * (rs.rand(A.nrows) < .6))
    u_col = spla.Vector.from_dense(rs.rand(A.ncols).astype(np.float32) * (rs.rand(A.ncols) < .6))
    want_vxm = bits(spla.vxm(u_row, A, semiring))
    want_mxv = bits(spla.mxv(A, u_col, semiring))
    for key, D in layouts(comm, A).items():
        assert bits(spla.vxm(u_row, D, semiring)) == want_vxm, key
        assert bits(spla.mxv(D, u_col, semiring)) == want_mxv, key


def test_column_sums_keep_the_single_process_order(comm):
    """Sums of many float32 terms of mixed magnitude: a reordering would show."""
    rs = np.random.RandomState(0)
    M = sp.random(200, 200, density=0.3, format="csr", random_state=rs, dtype=np.float32)
    M.data *= (10.0 ** rs.uniform(-4, 4, M.nnz)).astype(np.float32)
    A = spla.Matrix.from_scipy(M)
    ones = spla.Vector.from_dense(np.ones(A.nrows, np.float32))
    want = np.asarray(spla.reduce_columnwise(A, "plus"))
    for key, D in layouts(comm, A).items():
        got = spla.vxm(ones, D).to_dense()
        assert got.tobytes() == want.tobytes(), key


def test_structural_matrix_and_masks(comm, A):
    S = spla.Matrix.from_csr(A.indptr, A.indices, None, A.shape)
    u = spla.Vector.from_coo([0, 3, 7], size=A.nrows)
    seen = spla.Vector.from_coo([1, 2, 5], size=A.ncols)
    out = spla.Vector.from_dense(np.arange(A.ncols, dtype=np.int64))
    want = bits(spla.vxm(u, S, "any_secondi", mask=~seen.S))
    want_acc = bits(spla.vxm(u, S, "any_secondi", mask=seen.S, out=out, accum="plus"))
    w = spla.Vector.from_coo([2, 4], size=A.ncols)
    want_mxv = bits(spla.mxv(S, w, "lor_land", mask=u.S, out=u, replace=True))
    for key, D in layouts(comm, S).items():
        assert bits(spla.vxm(u, D, "any_secondi", mask=~seen.S)) == want, key
        assert bits(spla.vxm(u, D, "any_secondi", mask=seen.S, out=out,
                             accum="plus")) == want_acc, key
        assert bits(spla.mxv(D, w, "lor_land", mask=u.S, out=u, replace=True)) == want_mxv, key


def test_bfs_levels_equal_the_local_ones(comm):
    rs = np.random.RandomState(4)
    G = spla.Matrix.from_scipy(sp.random(60, 60, density=0.04, format="csr", random_state=rs))

    def levels(X):
        level = np.full(60, -1)
        frontier = spla.Vector.from_coo([0], size=60)
        visited = frontier
        d = 0
        while frontier.nvals:
            level[np.asarray(frontier.indices)] = d
            frontier = spla.vxm(frontier, X, "any_secondi", mask=~visited.S)
            visited = spla.ewise_add(visited, frontier, "any") if frontier.nvals else visited
            d += 1
        return level.tolist()

    want = levels(G)
    for key, D in layouts(comm, G).items():
        assert levels(D) == want, key


def _on_bad_rank(comm, bad, good):
    return bad if comm.rank == min(1, comm.size - 1) else good


@pytest.mark.parametrize("op", ["mxv", "vxm"])
def test_bad_arguments_raise_on_every_rank(comm, A, op):
    from test_collective_errors import raises_everywhere
    D = spla.distribute(A, comm)
    n = A.ncols if op == "mxv" else A.nrows
    good = spla.Vector.from_dense(np.ones(n, np.float32))
    short = spla.Vector.from_dense(np.ones(n - 1, np.float32))

    def call(u, semiring="plus_times", **kw):
        return lambda: (spla.mxv(D, u, semiring, **kw) if op == "mxv"
                        else spla.vxm(u, D, semiring, **kw))

    raises_everywhere(comm, spla.DimensionMismatch, call(short), call(good),
                      f"{op}: argument 'u'")
    raises_everywhere(comm, spla.DTypeError, call(np.ones(n)), call(good),
                      f"{op}: argument 'u'")
    raises_everywhere(comm, spla.InvalidValue, call(good, "no_such_semiring"), call(good),
                      f"{op}: argument 'semiring'")
    raises_everywhere(comm, spla.InvalidValue, call(good, replace="yes"), call(good),
                      f"{op}: argument 'replace'")


def test_docs_algorithms_on_a_distributed_graph(comm):
    """docs/graphblas.rst's vector algorithms, as written there, on every layout of a
    DistMatrix equal the local run (their operators, mxv and vxm, are distributed)."""
    from graphblas_doc import doc_algorithms
    algo = doc_algorithms()
    rs = np.random.RandomState(6)
    D = (rs.rand(30, 30) < 0.08) * rs.randint(1, 5, size=(30, 30)).astype(np.float64)
    np.fill_diagonal(D, 0)
    G = spla.Matrix.from_dense(np.maximum(D, D.T))
    runs = (("bfs", (3,)), ("sssp", (3,)), ("components", ()))
    want = {name: algo[name](G, *args) for name, args in runs}
    for key, X in layouts(comm, G).items():
        for name, args in runs:
            np.testing.assert_array_equal(algo[name](X, *args), want[name], err_msg=str(key))
