"""HeteroGraphSAGE on distributed relations gives exactly the single-process minibatches
(every rank samples its share of the bulk), for 1-4 ranks and both layouts."""

import pytest

import spla
from sampling import HeteroGraph, HeteroGraphSAGE, epoch_batches
from sampling.samplers.base import owned_batches
from sampling.datasets.mag import mag_dataset


def _distributed(G, comm, layout, c, replicate):
    rel = {r: spla.distribute(A, comm, layout=layout, replication=c, replicate_graph=replicate)
           for r, A in G.relations.items()}
    return HeteroGraph(G.num_nodes, rel, x=G.x, y=G.y, num_classes=G.num_classes)


def grids(p):
    return [("1d", 1)] + [("1.5d", c) for c in range(2, p + 1) if p % c == 0]


@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("replicate", [False, True])
def test_same_minibatches_on_every_grid(comm, replace, replicate):
    G = mag_dataset(6).to_undirected()
    batches = epoch_batches(G.split("train", "paper"), 6, seed=2)     # 6 minibatches
    fan = {r: [3, 2] for r in G.edge_types}
    fan[("paper", "cites", "paper")] = [-1, 0]
    ref = HeteroGraphSAGE(G, fan, replace=replace).sample(batches, node_type="paper", seed=5,
                                                          epoch=1)
    p = comm.Get_size()
    for layout, c in grids(p):
        D = _distributed(G, comm, layout, c, replicate)
        s = HeteroGraphSAGE(D, fan, replace=replace)
        got = s.sample(batches, node_type="paper", seed=5, epoch=1)
        lay = next(iter(D.relations.values())).layout
        mine = owned_batches(len(batches), lay, comm.Get_rank(), False)
        assert [m.index for m in got] == mine
        for m in got:
            assert m == ref[m.index]


def test_errors_on_every_rank(comm):
    G = mag_dataset(4).to_undirected()
    D = _distributed(G, comm, "1d", 1, False)
    s = HeteroGraphSAGE(D, [2])
    bad = [[10**6]] if comm.Get_rank() == comm.Get_size() - 1 else [[0]]   # one rank only
    with pytest.raises(spla.SplaError):
        s.sample(bad, node_type="paper", seed=0)
    with pytest.raises(spla.InvalidValue, match="weighted"):
        HeteroGraphSAGE(D, [2], weighted=True)


def test_dist_embedding_matches_single_process(comm):
    torch = pytest.importorskip("torch")
    import numpy as np
    from sampling import Embedding
    from sampling.models.embedding import DistEmbedding
    from spla.layout import chunk
    n, dim, p, r = 23, 3, comm.Get_size(), comm.Get_rank()

    def ids_of(rank):                      # every rank knows every rank's ids
        rng = np.random.default_rng(rank)
        return rng.integers(0, n, 2 + 3 * rank)
    weights = torch.arange(1.0, dim + 1.0)

    dist = DistEmbedding(n, dim, comm=comm, seed=4)
    opt = torch.optim.SGD(dist.parameters(), lr=0.5)
    out = dist(ids_of(r))
    (out * weights).pow(2).sum().backward()
    opt.step()

    ref = Embedding(n, dim, seed=4)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.5)
    assert torch.equal(out.detach(), ref(ids_of(r)).detach())
    loss = sum((ref(ids_of(q)) * weights).pow(2).sum() for q in range(p))
    loss.backward()
    ref_opt.step()
    s, e = chunk(n, p, r)
    assert dist.weight.grad.is_sparse
    assert torch.allclose(dist.weight.detach(), ref.weight.detach()[s:e], atol=1e-6)
    empty = dist(np.zeros(0, np.int64)) if r == 0 else dist(ids_of(r))   # a rank with no ids
    assert empty.shape[1] == dim


def test_node_loader_over_distributed_relations(comm):
    """NodeLoader with (type, ids) seeds runs the homogeneous epoch loop: every rank the
    same number of steps, step s of rank r minibatch s * p + r, each the one-process one."""
    pytest.importorskip("torch")
    import numpy as np
    from sampling import NodeLoader
    G = mag_dataset(6).to_undirected()
    train = G.split("train", "paper")
    D = _distributed(G, comm, "1d", 1, False)
    loader = NodeLoader(HeteroGraphSAGE(D, [3, 2]), ("paper", train), 8, bulk=2, seed=7)
    ref = HeteroGraphSAGE(G, [3, 2])
    mbs = list(loader)
    p, r = comm.Get_size(), comm.Get_rank()
    assert len(set(comm.allgather(len(mbs)))) == 1 and len(mbs) == len(loader)
    assert [m.index for m in mbs] == [s * p + r for s in range(len(mbs))]
    seen = np.concatenate(comm.allgather(np.concatenate([m.seeds for m in mbs])))
    assert sorted(seen.tolist()) == sorted(train.tolist())
    for m in mbs[:2]:
        want, = ref.sample([m.seeds], node_type="paper", seed=7, epoch=0, batch_ids=[m.index])
        assert m == want
        assert np.array_equal(m.y["paper"].numpy(), G.y["paper"][m.seeds])
