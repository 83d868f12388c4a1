"""Distributing a renumbered graph: ``spla.distribute(A, comm, partition=P)``.

Process row ``i`` holds part ``i`` of ``P.permute(A)``; row fetches, the
gathered matrix and the samplers must then behave exactly as on the
renumbered graph held by one process, for every p and c (expectations come
from the local matrix, never from per-rank-count constants).  Run under
mpiexec with 1 to 4 ranks by tests/test_mpi.py.
"""

import numpy as np
import pytest

import spla
from spla.partition import Partition, block, metis
from sampling import GraphSAGE, epoch_batches, gather_minibatches
from sampling.datasets import load


def grids(p):
    return [("1d", 1)] + [("1.5d", c) for c in range(2, p + 1) if p % c == 0]


@pytest.fixture(scope="module")
def cora():
    return load("cora")


def random_partition(n, parts, seed, empty_first=False):
    """A seeded membership, the same on every rank; part 0 left empty on request."""
    rng = np.random.default_rng(seed)
    lo = 1 if empty_first and parts > 1 else 0
    return Partition(rng.integers(lo, parts, n), parts, method="random")


def partitions(A, parts):
    """The partitions every test runs over: random (one with an empty part),
    block, and METIS when pymetis is installed."""
    out = [random_partition(A.nrows, parts, 1), random_partition(A.nrows, parts, 2, True),
           block(A, parts)]
    try:
        import pymetis  # noqa: F401
    except ImportError:
        return out
    return out + [metis(A, parts, seed=0)]


def test_each_process_row_holds_its_part(comm, cora):
    A = cora.A
    for layout, c in grids(comm.size):
        parts = comm.size // c
        for P in partitions(A, parts):
            R = P.permute(A)
            for root_only in (False, True):
                given = A if (not root_only or comm.rank == 0) else None
                D = spla.distribute(given, comm, layout=layout, replication=c, partition=P)
                i = comm.rank // c
                s, e = int(P.bounds[i]), int(P.bounds[i + 1])
                assert (D.row_start, D.row_stop) == (s, e), (layout, c, P.method)
                assert D.layout.bounds == tuple(P.bounds.tolist())
                assert D.partition is P and D.nnz == A.nnz
                assert D.local.isequal(spla.extract(R, rows=np.arange(s, e)))
                assert D.gather().isequal(R)


@pytest.mark.parametrize("strategy", ["direct", "pooled"])
def test_row_fetches_are_rows_of_the_renumbered_graph(comm, cora, strategy):
    A = cora.A
    rng = np.random.default_rng(comm.rank)          # ranks ask for different rows
    ids = rng.integers(0, A.nrows, 40)
    for layout, c in grids(comm.size):
        for P in partitions(A, comm.size // c):
            R = P.permute(A)
            D = spla.distribute(A, comm, layout=layout, replication=c, partition=P)
            M, got = D.fetch_rows(ids, strategy=strategy)
            if strategy == "direct":
                np.testing.assert_array_equal(got, np.unique(ids))
            assert M.isequal(spla.extract(R, rows=got)), (layout, c, P.method)
            V = D.rows_view(ids, strategy=strategy)
            assert spla.extract(V, rows=np.unique(ids)).isequal(
                spla.extract(R, rows=np.unique(ids)))


def test_sampling_on_a_partitioned_graph_is_sampling_the_renumbered_graph(comm, cora):
    A = cora.A
    batches_user = epoch_batches(cora.train_idx, 20, seed=3)
    for layout, c in grids(comm.size):
        for P in partitions(A, comm.size // c):
            R = P.permute(A)
            batches = [P.to_new(b) for b in batches_user]
            ref = GraphSAGE(R, [5, 3]).sample(batches, seed=11, epoch=1)
            D = spla.distribute(A, comm, layout=layout, replication=c, partition=P)
            every = gather_minibatches(GraphSAGE(D, [5, 3]).sample(batches, seed=11, epoch=1),
                                       comm)
            assert len(every) == len(ref)
            for a, b in zip(every, ref):
                assert a == b, (layout, c, P.method, a.index)


def test_product_with_a_partitioned_graph(comm, cora):
    A = cora.A
    P = random_partition(A.nrows, comm.size, 4, empty_first=True)
    R = P.permute(A)
    D = spla.distribute(A, comm, partition=P)
    Q = spla.distribute(A, comm, partition=P)
    got = spla.mxm(Q, D).gather()
    assert got.isequal((R @ R).new())


def test_partitions_that_disagree_raise_on_every_rank(comm, cora):
    A = cora.A
    p = comm.size
    if p == 1:
        pytest.skip("needs two ranks to disagree")
    mine = random_partition(A.nrows, p, 10 + (comm.rank == p - 1))
    with pytest.raises(spla.LayoutError, match=f"rank 0 passed a partition of {A.nrows} "
                                               f"vertices in {p} parts"):
        spla.distribute(A, comm, partition=mine)
    only_root = random_partition(A.nrows, p, 1) if comm.rank == 0 else None
    with pytest.raises(spla.LayoutError, match="'partition' must be the same on every rank"):
        spla.distribute(A, comm, partition=only_root)


def test_a_bad_partition_on_one_rank_raises_on_every_rank(comm, cora):
    A = cora.A
    p = comm.size
    P = random_partition(A.nrows, p, 1)
    if comm.rank == p - 1:
        P = random_partition(A.nrows + 1, p, 1)
    with pytest.raises(spla.DimensionMismatch, match="'partition' must be a Partition of the "
                                                     f"matrix's {A.nrows} vertices"):
        spla.distribute(A, comm, partition=P)
    bad = Partition(np.zeros(A.nrows, np.int64), p + 1)
    with pytest.raises(spla.LayoutError, match=f"in p/c = {p} parts"):
        spla.distribute(A, comm, partition=bad)


@pytest.mark.parametrize("name", ["LADIES", "FastGCN"])
def test_layer_wise_sampling_on_a_partitioned_graph(comm, cora, name):
    import sampling
    sampler = getattr(sampling, name)
    if comm.size == 1:
        pytest.skip("one part is chunk's one block: nothing to get wrong")
    A = cora.A
    P = random_partition(A.nrows, comm.size, 6)
    batches = [P.to_new(b) for b in epoch_batches(cora.train_idx, 20, seed=3)]
    ref = sampler(P.permute(A), [40, 30]).sample(batches, seed=11, epoch=1)
    D = spla.distribute(A, comm, partition=P)
    every = gather_minibatches(sampler(D, [40, 30]).sample(batches, seed=11, epoch=1), comm)
    assert len(every) == len(ref) and all(a == b for a, b in zip(every, ref))
