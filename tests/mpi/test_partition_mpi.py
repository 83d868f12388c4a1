"""Distributing a graph by parts: ``spla.distribute(A, comm, partition=P)``.

Process row ``i`` holds the rows of part ``i``'s vertices; every id in and
out stays the user's, so row fetches, the gathered matrix, products and the
samplers must give exactly what the user's graph gives in one process, for
every p, c and partition (expectations come from the local matrix, never
from per-rank-count constants).  Run under mpiexec with 1 to 4 ranks by
tests/train/test_mpi.py.
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
            for root_only in (False, True):
                given = A if (not root_only or comm.rank == 0) else None
                D = spla.distribute(given, comm, layout=layout, replication=c, partition=P)
                i = comm.rank // c
                s, e = int(P.bounds[i]), int(P.bounds[i + 1])
                mine = np.flatnonzero(P.part == i)
                assert (D.row_start, D.row_stop) == (s, e), (layout, c, P.method)
                np.testing.assert_array_equal(D.row_ids, mine)
                assert D.layout.bounds == tuple(P.bounds.tolist())
                assert D.partition is P and D.nnz == A.nnz
                assert D.local.isequal(spla.extract(A, rows=mine))
                assert D.gather().isequal(A)


@pytest.mark.parametrize("strategy", ["direct", "pooled"])
def test_row_fetches_are_rows_of_the_users_graph(comm, cora, strategy):
    A = cora.A
    rng = np.random.default_rng(comm.rank)          # ranks ask for different rows
    ids = rng.integers(0, A.nrows, 40)
    for layout, c in grids(comm.size):
        for P in partitions(A, comm.size // c):
            D = spla.distribute(A, comm, layout=layout, replication=c, partition=P)
            M, got = D.fetch_rows(ids, strategy=strategy)
            assert (np.diff(got) > 0).all()
            if strategy == "direct":
                np.testing.assert_array_equal(got, np.unique(ids))
            else:
                assert np.isin(ids, got).all()
            assert M.isequal(spla.extract(A, rows=got)), (layout, c, P.method)
            V = D.rows_view(ids, strategy=strategy)
            assert spla.extract(V, rows=np.unique(ids)).isequal(
                spla.extract(A, rows=np.unique(ids)))


def test_sampling_on_a_partitioned_graph_is_sampling_the_users_graph(comm, cora):
    # Draws are keyed by user ids and rows keep the user's column order, so
    # the minibatches cannot depend on where the rows live.
    A = cora.A
    batches = epoch_batches(cora.train_idx, 20, seed=3)
    ref = GraphSAGE(A, [5, 3]).sample(batches, seed=11, epoch=1)
    for layout, c in grids(comm.size):
        for P in partitions(A, comm.size // c):
            D = spla.distribute(A, comm, layout=layout, replication=c, partition=P)
            every = gather_minibatches(GraphSAGE(D, [5, 3]).sample(batches, seed=11, epoch=1),
                                       comm)
            assert len(every) == len(ref)
            for a, b in zip(every, ref):
                assert a == b, (layout, c, P.method, a.index)


def test_product_with_a_partitioned_graph(comm, cora):
    A = cora.A
    P = random_partition(A.nrows, comm.size, 4, empty_first=True)
    D = spla.distribute(A, comm, partition=P)
    Q = spla.distribute(A, comm, partition=P)
    got = spla.mxm(Q, D).gather()
    assert got.isequal((A @ A).new())


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
                                                     f"matrix's {A.nrows} rows"):
        spla.distribute(A, comm, partition=P)
    bad = Partition(np.zeros(A.nrows, np.int64), p + 1)
    with pytest.raises(spla.LayoutError, match=f"in p/c = {p} parts"):
        spla.distribute(A, comm, partition=bad)


@pytest.mark.parametrize("name", ["LADIES", "FastGCN"])
def test_layer_wise_sampling_on_a_partitioned_graph(comm, cora, name):
    import sampling
    sampler = getattr(sampling, name)
    A = cora.A
    batches = epoch_batches(cora.train_idx, 20, seed=3)
    ref = sampler(A, [40, 30]).sample(batches, seed=11, epoch=1)
    for P in (random_partition(A.nrows, comm.size, 6),
              random_partition(A.nrows, comm.size, 7, empty_first=True)):
        D = spla.distribute(A, comm, partition=P)
        every = gather_minibatches(sampler(D, [40, 30]).sample(batches, seed=11, epoch=1),
                                   comm)
        assert len(every) == len(ref) and all(a == b for a, b in zip(every, ref))


def test_feature_store_placed_by_the_partition(comm, cora):
    """Features co-located with the graph's parts: the same rows as the global
    matrix for any ids, nothing on the wire for a rank's own vertices, and a
    degree cache that ranks the user's vertices, not storage positions."""
    from sampling.loading.features import FeatureStore, hottest
    A = cora.A
    n = A.nrows
    x = np.random.default_rng(5).standard_normal((n, 6)).astype(np.float32)
    rng = np.random.default_rng(100 + comm.rank)
    ids = rng.integers(0, n, 300)
    deg = np.diff(A.to_scipy().indptr)
    for layout, c in grids(comm.size):
        for P in partitions(A, comm.size // c):
            D = spla.distribute(A, comm, layout=layout, replication=c, partition=P)
            store = FeatureStore(x, mode="partitioned", comm=comm, replication=c, partition=P)
            np.testing.assert_array_equal(store.row_ids, D.row_ids)
            np.testing.assert_array_equal(store.local, x[store.row_ids])
            np.testing.assert_array_equal(store.fetch(ids), x[ids])
            with spla.comm.counting() as moved:
                own = store.fetch(store.row_ids)
            np.testing.assert_array_equal(own, x[store.row_ids])
            assert sum(moved.values()) == 0, (layout, c, P.method, dict(moved))
            mine = FeatureStore.from_local(x[D.row_ids], n, comm=comm, replication=c,
                                           partition=P, cache=0.1, cache_graph=D)
            k = mine.cache_stats().cached_rows
            np.testing.assert_array_equal(mine.cached_ids, np.sort(hottest(deg, k)))
            np.testing.assert_array_equal(mine.fetch(ids), x[ids])


def test_feature_store_partition_errors_raise_on_every_rank(comm, cora):
    from sampling.loading.features import FeatureStore
    n, p = cora.A.nrows, comm.size
    x = np.zeros((n, 2), np.float32)
    with pytest.raises(spla.LayoutError, match=f"'partition' must be a Partition in p/c = {p} "
                                               "parts"):
        FeatureStore(x, mode="partitioned", comm=comm,
                     partition=Partition(np.zeros(n, np.int64), p + 1))
    if p > 1:
        P = random_partition(n, p, 20 + (comm.rank == p - 1))
        with pytest.raises(spla.LayoutError, match="'partition' must be the same on every "
                                                   "rank"):
            FeatureStore(x, mode="partitioned", comm=comm, partition=P)
    with pytest.raises(spla.InvalidValue, match="'partition' must be None for a replicated"):
        FeatureStore(x, partition=random_partition(n, p, 1))
