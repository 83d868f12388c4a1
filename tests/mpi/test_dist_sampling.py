"""Distributed samplers give exactly the single-process minibatches for
every p, c and mode; the graph-replicated mode moves no bytes."""

import numpy as np
import pytest

import spla
from spla import comm as C
from spla.layout import Layout, chunk
from sampling import FastGCN, GraphSAGE, LADIES, epoch_batches, gather_minibatches
from sampling.samplers.base import owned_batches
from sampling.datasets import load


def grids(p):
    return [("1d", 1)] + [("1.5d", c) for c in range(2, p + 1) if p % c == 0]


@pytest.fixture(scope="module")
def cora():
    return load("cora")


SAMPLERS = {
    "sage": lambda G: GraphSAGE(G, [5, 3]),
    "sage_replace": lambda G: GraphSAGE(G, [4, 4], replace=True),
    "sage_weighted": lambda G: GraphSAGE(G, [4, 2], weighted=True),
    "ladies": lambda G: LADIES(G, [40, 30]),
    "fastgcn": lambda G: FastGCN(G, [40, 30]),
}


@pytest.mark.parametrize("name", list(SAMPLERS))
@pytest.mark.parametrize("replicate", [False, True])
def test_same_minibatches_for_every_grid(comm, cora, name, replicate):
    G = cora.A
    if name == "sage_weighted":
        G = G.with_values((np.arange(G.nnz) % 7 + 1).astype(np.float32))
    batches = epoch_batches(cora.train_idx, 20, seed=3)  # 7 minibatches
    ref = SAMPLERS[name](G).sample(batches, seed=11, epoch=1)
    for layout, c in grids(comm.size):
        D = spla.distribute(G, comm, layout=layout, replication=c, replicate_graph=replicate)
        sampler = SAMPLERS[name](D)
        with C.counting() as moved:
            mine = sampler.sample(batches, seed=11, epoch=1)
        L = Layout(layout, comm.size, c, replicate)
        expect_idx = owned_batches(len(batches), L, comm.rank, name in ("ladies", "fastgcn"))
        assert [mb.index for mb in mine] == expect_idx
        every = gather_minibatches(mine, comm)
        assert len(every) == len(ref)
        for a, b in zip(every, ref):
            assert a == b, (name, layout, c, a.index)
        if replicate:
            assert sum(moved.values()) == 0, dict(moved)


def test_node_wise_ownership_is_chunk(comm):
    L = Layout("1d", comm.size)
    k = 7
    got = owned_batches(k, L, comm.rank, False)
    s, e = chunk(k, comm.size, comm.rank)
    assert got == list(range(s, e))
    counts = np.array(comm.allgather(len(got)))
    assert counts.sum() == k


def test_bad_bulk_raises_on_every_rank(comm, cora):
    D = spla.distribute(cora.A, comm)
    bad = [np.array([0, 1]), np.array([5, cora.num_nodes])]  # out of range
    with pytest.raises(spla.IndexOutOfRange, match="batches\\[1\\]"):
        GraphSAGE(D, [2]).sample(bad, seed=0)


@pytest.mark.parametrize("name", ["sage", "ladies"])
def test_pooled_fetch_gives_the_same_minibatches_and_moves_more(comm, cora, name,
                                                                monkeypatch):
    """The samplers fetch with the default (direct) strategy; forcing the
    pooled one changes no draw, and moves at least as many bytes in all."""
    batches = epoch_batches(cora.train_idx, 20, seed=5)
    ref = SAMPLERS[name](cora.A).sample(batches, seed=2, epoch=0)
    direct_view = spla.DistMatrix.rows_view
    for layout, c in grids(comm.size):
        totals = {}
        for strategy in ("direct", "pooled"):
            monkeypatch.setattr(spla.DistMatrix, "rows_view",
                                lambda self, rows, s=strategy: direct_view(self, rows, s))
            D = spla.distribute(cora.A, comm, layout=layout, replication=c)
            with C.counting() as moved:
                mine = SAMPLERS[name](D).sample(batches, seed=2, epoch=0)
            assert gather_minibatches(mine, comm) == ref, (name, layout, c, strategy)
            totals[strategy] = sum(comm.allgather(sum(moved.values())))
            if strategy == "direct":
                assert not any(k.endswith((".pool", ".share")) and v for k, v in moved.items())
        assert totals["direct"] <= totals["pooled"], (layout, c, totals)


# -- a bad argument on one rank raises on every rank (no rank left waiting) ---

def _on_rank_1(comm, bad, good):
    return bad if comm.rank == 1 else good


def _raises_everywhere(comm, cls, match, call):
    """``call()`` raises ``cls`` on every rank; ranks other than 1 name rank 1."""
    with pytest.raises(cls, match=match) as info:
        call()
    if comm.rank != 1:
        assert "rank 1" in str(info.value)
    # The ranks are still in step: a collective right after completes.
    assert comm.allreduce(1) == comm.size


BATCHES = [np.array([0, 1, 2]), np.array([3, 4]), np.array([5, 6]), np.array([7, 8])]

BAD_CALLS = {
    "GraphSAGE fanout 0": (spla.InvalidValue, r"fanouts\[0\]",
                           lambda c, D: GraphSAGE(D, _on_rank_1(c, [0], [2]))),
    "GraphSAGE fanout too large": (spla.InvalidValue, r"fanouts\[1\]",
                                   lambda c, D: GraphSAGE(D, [2, _on_rank_1(c, 2 ** 40, 2)])),
    "LADIES layer size 0": (spla.InvalidValue, r"layer_sizes\[0\]",
                            lambda c, D: LADIES(D, _on_rank_1(c, [0], [10]))),
    "FastGCN no layers": (spla.InvalidValue, "layer_sizes",
                          lambda c, D: FastGCN(D, _on_rank_1(c, [], [10]))),
    "seed -1": (spla.InvalidValue, "seed",
                lambda c, D: GraphSAGE(D, [2]).sample(BATCHES, seed=_on_rank_1(c, -1, 0))),
    "seed 2**64": (spla.InvalidValue, "seed",
                   lambda c, D: LADIES(D, [5]).sample(BATCHES, seed=_on_rank_1(c, 2 ** 64, 0))),
    "epoch -1": (spla.InvalidValue, "epoch",
                 lambda c, D: GraphSAGE(D, [2]).sample(BATCHES, seed=0,
                                                       epoch=_on_rank_1(c, -1, 0))),
    "epoch float": (spla.InvalidValue, "epoch",
                    lambda c, D: FastGCN(D, [5]).sample(BATCHES, seed=0,
                                                        epoch=_on_rank_1(c, 1.5, 1))),
    "batch out of range": (spla.IndexOutOfRange, r"batches\[1\]",
                           lambda c, D: GraphSAGE(D, [2]).sample(
                               _on_rank_1(c, [BATCHES[0], np.array([D.nrows])], BATCHES),
                               seed=0)),
    "empty batch": (spla.InvalidValue, r"batches\[0\]",
                    lambda c, D: LADIES(D, [5]).sample(
                        _on_rank_1(c, [np.zeros(0, np.int64)], BATCHES), seed=0)),
    "fewer minibatches": (spla.LayoutError, "len\\(batches\\)",
                          lambda c, D: GraphSAGE(D, [2]).sample(
                              _on_rank_1(c, BATCHES[:3], BATCHES), seed=0)),
    "different seed": (spla.LayoutError, "seed",
                       lambda c, D: GraphSAGE(D, [2]).sample(BATCHES,
                                                             seed=_on_rank_1(c, 7, 0))),
}


@pytest.mark.parametrize("case", list(BAD_CALLS))
def test_bad_argument_on_one_rank_raises_on_every_rank(comm, cora, case):
    if comm.size < 2:
        pytest.skip("needs a rank 1")
    cls, match, call = BAD_CALLS[case]
    D = spla.distribute(cora.A, comm, layout="1d")
    _raises_everywhere(comm, cls, match, lambda: call(comm, D))


def test_draws_beyond_memory_raise_on_every_rank(comm, cora):
    # 2**31 - 1 draws per frontier vertex, with replacement: terabytes.
    D = spla.distribute(cora.A, comm)
    batches = epoch_batches(cora.train_idx, 20, seed=0)
    with pytest.raises(spla.InvalidValue, match=r"fanouts\[0\].*replace=True"):
        GraphSAGE(D, [2 ** 31 - 1], replace=True).sample(batches, seed=0)
    assert comm.allreduce(1) == comm.size


def test_feature_store_bad_arguments_on_one_rank_raise_on_every_rank(comm):
    if comm.size < 2:
        pytest.skip("needs a rank 1")
    from sampling.loading.features import FeatureStore
    x = np.arange(40, dtype=np.float32).reshape(20, 2)
    nan = x.copy()
    nan[chunk(20, comm.size, 1)[0], 1] = np.nan  # in rank 1's block: each rank checks its own
    y = np.arange(20) % 3
    _raises_everywhere(comm, spla.InvalidValue, "features", lambda: FeatureStore(
        _on_rank_1(comm, nan, x), mode="partitioned", comm=comm))
    _raises_everywhere(comm, spla.InvalidValue, "labels", lambda: FeatureStore(
        x, labels=_on_rank_1(comm, y - 2, y), mode="partitioned", comm=comm))
    _raises_everywhere(comm, spla.DTypeError, "labels", lambda: FeatureStore(
        x, labels=_on_rank_1(comm, y + 0.5, y), mode="partitioned", comm=comm))
    _raises_everywhere(comm, spla.LayoutError, "replication", lambda: FeatureStore(
        x, mode="partitioned", comm=comm, replication=_on_rank_1(comm, comm.size + 1, 1)))
    _raises_everywhere(comm, spla.InvalidValue, "mode", lambda: FeatureStore(
        x, mode=_on_rank_1(comm, "everywhere", "partitioned"), comm=comm))
    store = FeatureStore(x, labels=y, mode="partitioned", comm=comm)
    _raises_everywhere(comm, spla.IndexOutOfRange, "ids", lambda: store.fetch(
        _on_rank_1(comm, np.array([0, 20]), np.array([1, 2]))))
    _raises_everywhere(comm, spla.DTypeError, "ids", lambda: store.fetch(
        _on_rank_1(comm, np.array([0.5]), np.array([1]))))
    assert np.array_equal(store.fetch(np.array([19, 0])), x[[19, 0]])
