"""DistMatrix under mpiexec: layouts, factories, gather, row fetches, errors.

Every expectation is computed from ``chunk`` and a single-process
reference, so the same module runs with any number of ranks.
"""

import numpy as np
import pytest
import scipy.sparse as sp

import spla
from spla import comm as C
from spla.layout import Layout, chunk


def grids(p):
    """(layout, c) pairs that fit p ranks: 1D and every 1.5D c dividing p."""
    out = [("1d", 1)]
    out += [("1.5d", c) for c in range(1, p + 1) if p % c == 0]
    return out


def random_matrix(n, m, density, seed, dtype=np.float64):
    S = sp.random(n, m, density=density, format="csr", random_state=seed, dtype=dtype)
    return spla.Matrix.from_scipy(S)


@pytest.fixture(scope="module")
def A():
    return random_matrix(41, 41, 0.12, 3)


@pytest.mark.parametrize("replicate", [False, True])
@pytest.mark.parametrize("root_only", [False, True])
def test_distribute_and_gather(comm, A, replicate, root_only):
    for layout, c in grids(comm.size):
        D = spla.distribute(A if (comm.rank == 0 or not root_only) else None, comm,
                            layout=layout, replication=c, replicate_graph=replicate)
        L = Layout(layout, comm.size, c, replicate)
        start, stop = L.block_rows(A.nrows, comm.rank)
        assert (D.row_start, D.row_stop) == (start, stop)
        assert D.local.isequal(spla.extract(A, rows=np.arange(start, stop)))
        assert D.shape == A.shape and D.nnz == A.nnz
        assert D.gather().isequal(A)


def test_empty_blocks_when_more_ranks_than_rows(comm):
    A = random_matrix(2, 5, 0.5, 1)
    D = spla.distribute(A, comm)
    s, e = chunk(2, comm.size, comm.rank)
    assert D.lshape == (e - s, 5)
    assert D.gather().isequal(A)


def test_from_local_and_from_generator(comm, A):
    for layout, c in grids(comm.size):
        L = Layout(layout, comm.size, c)
        s, e = L.block_rows(A.nrows, comm.rank)
        block = spla.extract(A, rows=np.arange(s, e))
        D1 = spla.DistMatrix.from_local(block, A.shape, comm=comm, layout=layout, replication=c)
        D2 = spla.DistMatrix.from_generator(
            lambda s, e: spla.extract(A, rows=np.arange(s, e)), A.shape, comm=comm,
            layout=layout, replication=c)
        assert D1.gather().isequal(A) and D2.gather().isequal(A)


@pytest.mark.parametrize("replicate", [False, True])
def test_fetch_rows_matches_extraction(comm, A, replicate):
    rng = np.random.default_rng(100 + comm.rank)  # different requests per rank
    for layout, c in grids(comm.size):
        D = spla.distribute(A, comm, layout=layout, replication=c, replicate_graph=replicate)
        want = rng.integers(0, A.nrows, size=rng.integers(0, 15))
        with C.counting() as moved:
            V = D.rows_view(want)
        for r in np.unique(want):
            got = spla.extract(V, rows=[r])
            assert got.isequal(spla.extract(A, rows=[r])), (layout, c, r)
        if replicate:
            assert sum(moved.values()) == 0


def test_alltoallv_in_rounds(comm, monkeypatch):
    """Messages larger than the per-round limit are split and reassembled."""
    monkeypatch.setattr(C, "_INT_MAX", 3)
    p = comm.size
    counts = np.array([(comm.rank + r) % 5 + 1 for r in range(p)])
    send = np.concatenate([np.full(counts[r], 100 * comm.rank + r, np.int64) for r in range(p)])
    recv, rc = C.alltoallv(comm, send, counts, "test")
    expect = np.concatenate([np.full((r + comm.rank) % 5 + 1, 100 * r + comm.rank, np.int64)
                             for r in range(p)])
    assert np.array_equal(recv, expect)


def test_bad_replication_raises_on_every_rank(comm, A):
    with pytest.raises(spla.LayoutError, match="replication"):
        spla.distribute(A, comm, layout="1.5d", replication=comm.size + 1)
    with pytest.raises(spla.LayoutError, match="replication"):
        spla.distribute(A, comm, layout="1d", replication=2)


def test_ranks_passing_different_shapes_raise_everywhere(comm):
    M = random_matrix(10 + (comm.rank if comm.size > 1 else 0) % 2, 10, 0.2, 5)
    if comm.size == 1:
        pytest.skip("needs two ranks to disagree")
    with pytest.raises(spla.LayoutError, match="same matrix shape"):
        spla.distribute(M, comm)


def test_mismatched_operand_grids_raise_everywhere(comm, A):
    if comm.size % 2:
        pytest.skip("needs an even number of ranks for c = 2")
    D1 = spla.distribute(A, comm, layout="1d")
    D2 = spla.distribute(A, comm, layout="1.5d", replication=2)
    with pytest.raises(spla.LayoutError, match="process grid"):
        spla.mxm(D1, D2)
