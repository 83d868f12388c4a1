"""HeteroFeatureStore: the one-exchange packing of every type's requests, simulated on
p ranks in one process (each rank's store built with a stand-in communicator, the
all-to-allv done by hand), against the replicated gather ``X[t][ids]``."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import spla
from sampling.loading.hetero_features import HeteroFeatureStore
from sampling.loading.hetero_loader import HeteroInputs


class RankOf:
    """Only what building a store asks of a communicator: its size and this rank."""

    def __init__(self, rank, size):
        self.rank, self.size = rank, size

    def Get_rank(self):
        return self.rank

    def Get_size(self):
        return self.size


def _alltoallv(sends):
    """Each rank's (send, sendcounts) -> each rank's (recv, recvcounts), as MPI would."""
    p = len(sends)
    cuts = [np.split(s, np.cumsum(k)[:-1]) for s, k in sends]
    recv = [np.concatenate([cuts[src][dst] for src in range(p)]) for dst in range(p)]
    counts = [np.array([sends[src][1][dst] for src in range(p)], np.int64) for dst in range(p)]
    return list(zip(recv, counts))


def _exchange(stores, ids):
    """Every rank's fetch of ``ids[rank]`` through plan / serve / unpack."""
    reqs = [s.plan(i) for s, i in zip(stores, ids)]
    got = _alltoallv([(r.send, r.sendcounts) for r in reqs])
    replies = _alltoallv([s.serve(recv, counts) for s, (recv, counts) in zip(stores, got)])
    return [s.unpack(r, back) for s, r, (back, _) in zip(stores, reqs, replies)]


@st.composite
def cases(draw):
    p = draw(st.integers(1, 4))
    c = draw(st.sampled_from([d for d in range(1, p + 1) if p % d == 0]))
    ntypes = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    X = {f"t{j}": rng.standard_normal((draw(st.integers(0, 9)), draw(st.integers(0, 4))))
         for j in range(ntypes)}
    ids = [{t: rng.integers(0, A.shape[0], draw(st.integers(0, 6)) if A.shape[0] else 0)
            for t, A in X.items() if draw(st.booleans())} for _ in range(p)]
    by_part = draw(st.booleans())
    return p, c, X, ids, by_part, rng


class Parts:
    """A stand-in HeteroPartition (what the store reads: parts and part by type)."""


@settings(max_examples=40, deadline=None)
@given(cases())
def test_one_exchange_equals_the_replicated_gather(case):
    p, c, X, ids, by_part, rng = case
    partition = None
    if by_part:
        from sampling.datasets.hetero import HeteroPartition
        partition = HeteroPartition.__new__(HeteroPartition)
        partition.parts = p // c
        partition.part = {t: rng.integers(0, p // c, A.shape[0]) for t, A in X.items()}
    stores = [HeteroFeatureStore(X, comm=RankOf(r, p), replication=c, partition=partition,
                                 agree=False) for r in range(p)]
    held = {t: sorted(np.concatenate([s.row_ids(t) for s in stores[::c]]).tolist())
            for t in X}
    assert held == {t: list(range(A.shape[0])) for t, A in X.items()}   # each row once per c
    out = [stores[0].fetch(i) for i in ids] if p == 1 else _exchange(stores, ids)
    for mine, want in zip(out, ids):
        for t, a in want.items():
            ref = np.ascontiguousarray(X[t][a], np.float32)
            assert mine[t].dtype == np.float32 and mine[t].shape == ref.shape
            assert np.array_equal(mine[t], ref)
    for r, req in enumerate(s.plan(i) for s, i in zip(stores, ids)):
        # one message per rank of the process column (T counts each), none to the others
        to = np.flatnonzero(req.sendcounts)
        assert to.tolist() == [k * c + r % c for k in range(p // c)]


def test_every_row_is_a_view_or_a_copy_of_the_block_only():
    X = {"a": np.arange(20, dtype=np.float32).reshape(10, 2), "b": np.ones((3, 5), np.float32)}
    s = HeteroFeatureStore(X, comm=RankOf(1, 2), agree=False)
    assert s.local["a"].shape == (5, 2) and s.local["b"].shape == (1, 5)
    assert np.shares_memory(s.local["a"], X["a"])          # a float32 block: no copy
    assert s.nbytes == 5 * 2 * 4 + 5 * 4
    assert "block 1 of 2" in repr(s)


def test_empty_minibatch_and_missing_types():
    X = {"a": np.arange(6.0).reshape(3, 2), "b": np.zeros((2, 0))}
    s = HeteroFeatureStore(X)
    out = s.fetch({"a": np.zeros(0, np.int64), "b": np.array([1, 0])})
    assert out["a"].shape == (0, 2) and out["b"].shape == (2, 0)
    assert s.fetch({}) == {}


def test_bad_input():
    X = {"a": np.ones((3, 2))}
    with pytest.raises(spla.DTypeError, match="HeteroFeatureStore.*features"):
        HeteroFeatureStore([np.ones((3, 2))])
    with pytest.raises(spla.DimensionMismatch, match="features\\['a'\\]"):
        HeteroFeatureStore({"a": np.ones(3)})
    with pytest.raises(spla.LayoutError, match="replication"):
        HeteroFeatureStore(X, comm=RankOf(0, 4), replication=3, agree=False)
    with pytest.raises(spla.DTypeError, match="partition"):
        HeteroFeatureStore(X, partition={"a": [0, 0, 0]})
    s = HeteroFeatureStore(X)
    with pytest.raises(spla.InvalidValue, match="fetch.*type 'z'"):
        s.fetch({"z": [0]})
    with pytest.raises(spla.IndexOutOfRange, match="fetch"):
        s.fetch({"a": [3]})


def test_partition_places_rows_by_part():
    from sampling.datasets.mag import mag_dataset
    G = mag_dataset(4)
    P = G.partition(2, seed=0, method="hash")
    stores = [HeteroFeatureStore(G.x, comm=RankOf(r, 2), partition=P, agree=False)
              for r in range(2)]
    for t in G.x:
        for r, s in enumerate(stores):
            assert (P.part[t][s.row_ids(t)] == r).all()
    ids = [{t: np.arange(G.num_nodes[t])[::3 + r] for t in G.x} for r in range(2)]
    for mine, want in zip(_exchange(stores, ids), ids):
        for t, a in want.items():
            assert np.array_equal(mine[t], G.x[t][a])


def test_loader_inputs_take_a_store():
    torch = pytest.importorskip("torch")
    from sampling.datasets.mag import mag_dataset
    G = mag_dataset(4)
    store = HeteroFeatureStore(G.x)
    parts = [{"paper": np.array([3, 1]), "author": np.array([0])}, {}, {"paper": np.array([2])}]
    a = HeteroInputs("f", G, "paper", store, None, "cpu")
    b = HeteroInputs("f", G, "paper", None, None, "cpu")
    assert a.kind == b.kind == "hetero"            # one process: nothing to duplicate
    xa, xb = a.gather_x(parts, a.features), b.gather_x(parts, b.features)
    assert [sorted(d) for d in xa] == [sorted(d) for d in xb] == [["author", "paper"], [],
                                                                  ["paper"]]
    for da, db in zip(xa, xb):
        for t in da:
            assert torch.equal(da[t], db[t])
    wrong = HeteroFeatureStore({"paper": np.ones((3, 2))})
    with pytest.raises(spla.DimensionMismatch, match="store of the graph"):
        HeteroInputs("f", G, "paper", wrong, None, "cpu")
    elsewhere = HeteroFeatureStore(G.x, comm=RankOf(0, 2), agree=False)
    with pytest.raises(spla.LayoutError, match="over the 1 rank"):
        HeteroInputs("f", G, "paper", elsewhere, None, "cpu")   # a local sampler


def test_a_partition_per_type():
    from spla.partition import Partition
    X = {"a": np.arange(12.0).reshape(6, 2), "b": np.arange(3.0).reshape(3, 1)}
    placed = {"a": Partition([1, 0, 1, 0, 1, 1], 2)}          # "b": contiguous blocks
    stores = [HeteroFeatureStore(X, comm=RankOf(r, 2), partition=placed, agree=False)
              for r in range(2)]
    assert stores[0].row_ids("a").tolist() == [1, 3] and stores[0].row_ids("b").tolist() == [0, 1]
    ids = [{"a": np.array([5, 1, 0]), "b": np.array([2])}, {"a": np.array([3]), "b": np.array([0])}]
    for mine, want in zip(_exchange(stores, ids), ids):
        for t, a in want.items():
            assert np.array_equal(mine[t], X[t][a].astype(np.float32))
    with pytest.raises(spla.LayoutError, match="2 parts"):
        HeteroFeatureStore(X, comm=RankOf(0, 4), partition=placed, agree=False)
    with pytest.raises(spla.DimensionMismatch, match="type 'a'"):
        HeteroFeatureStore(X, comm=RankOf(0, 2), partition={"a": Partition([0, 1], 2)},
                           agree=False)


def test_distribute_keeps_every_relation_and_refuses_a_bad_partition():
    from sampling.datasets.mag import mag_dataset
    G = mag_dataset(4)
    D = G.distribute()                                        # one rank
    assert D.edge_types == G.edge_types and D.x is G.x
    for r, A in D.relations.items():
        assert type(A).__name__ == "DistMatrix" and A.gather().isequal(G.relations[r])
    with pytest.raises(spla.DTypeError, match="HeteroGraph.distribute.*partition"):
        G.distribute(partition=[0, 1])
