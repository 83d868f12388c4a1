"""Distributed samplers give exactly the single-process minibatches for
every p, c and mode; the graph-replicated mode moves no bytes."""

import numpy as np
import pytest

import spla
from spla import comm as C
from spla.layout import Layout, chunk
from sampling import FastGCN, GraphSAGE, LADIES, epoch_batches, gather_minibatches
from sampling.base import owned_batches
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
