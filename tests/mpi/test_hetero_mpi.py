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


@pytest.mark.parametrize("prefetch", [0, 2])
def test_node_loader_over_distributed_relations(comm, prefetch):
    """NodeLoader with (type, ids) seeds runs the homogeneous epoch loop: every rank the
    same number of steps, step s of rank r minibatch s * p + r, each the one-process one;
    with prefetch, a background thread samples on the sampler's twin (``dup()``)."""
    pytest.importorskip("torch")
    import numpy as np
    from sampling import NodeLoader
    G = mag_dataset(6).to_undirected()
    train = G.split("train", "paper")
    D = _distributed(G, comm, "1d", 1, False)
    loader = NodeLoader(HeteroGraphSAGE(D, [3, 2]), ("paper", train), 8, bulk=2, seed=7,
                        prefetch=prefetch)
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


class CountingComm:
    """A communicator that counts the Alltoallv calls made through it."""

    def __init__(self, comm):
        self.comm, self.alltoallv = comm, 0

    def Alltoallv(self, *args, **kw):
        self.alltoallv += 1
        return self.comm.Alltoallv(*args, **kw)

    def __getattr__(self, name):
        return getattr(self.comm, name)


@pytest.mark.parametrize("replication", [1, 2])
def test_per_type_store_fetches_every_type_in_one_exchange(comm, replication):
    import numpy as np
    from sampling.loading.hetero_features import HeteroFeatureStore
    p, r = comm.Get_size(), comm.Get_rank()
    if p % replication:
        pytest.skip("replication must divide the ranks")
    G = mag_dataset(5)
    rng = np.random.default_rng(0)                    # the same features on every rank
    X = {t: rng.standard_normal((n, 1 + 2 * j)) for j, (t, n) in enumerate(G.num_nodes.items())}
    X["field_of_study"] = X["field_of_study"][:, :0]  # a type of width 0
    counted = CountingComm(comm)
    store = HeteroFeatureStore(X, comm=counted, replication=replication)
    assert sum(s.shape[0] for s in comm.allgather(store.local["paper"])) == \
        G.num_nodes["paper"] * replication            # each row on c ranks only
    mine = np.random.default_rng(r)
    ids = {t: mine.integers(0, n, 7 * r) for t, n in G.num_nodes.items()}
    ids.pop("author") if r == 0 else None             # a type some rank does not ask for
    before = counted.alltoallv
    got = store.fetch(ids)
    assert counted.alltoallv - before == (2 if p > 1 else 0)    # request + reply, 4 types
    assert sorted(got) == sorted(ids)
    for t, a in ids.items():
        assert np.array_equal(got[t], np.ascontiguousarray(X[t][a], np.float32))
    with pytest.raises(spla.InvalidValue, match="type 'x'"):
        store.fetch({"x": [0]} if r == p - 1 else {})


def test_node_loader_fetches_a_bulk_of_every_type_at_once(comm, monkeypatch):
    """Under MPI the loader's default features are a per-type store: mb.x equals the
    replicated gather, bit for bit, with one exchange per bulk."""
    torch = pytest.importorskip("torch")
    import numpy as np
    from spla import comm as C
    from sampling import NodeLoader
    G = mag_dataset(5).to_undirected()
    D = _distributed(G, comm, "1d", 1, False)
    calls = []
    real = C.alltoallv
    monkeypatch.setattr(C, "alltoallv",
                        lambda cm, s, k, op: calls.append(op) or real(cm, s, k, op))
    loader = NodeLoader(HeteroGraphSAGE(D, [3, 2]), ("paper", G.split("train", "paper")), 8,
                        bulk=2, seed=3)
    store = loader._inputs.features
    assert (loader._inputs.kind == "store") == (comm.Get_size() > 1)
    mbs = list(loader)
    bulks = len(loader._bulks())
    if comm.Get_size() > 1:
        assert store.local["paper"].shape[0] < G.num_nodes["paper"]
        assert calls.count("features.hetero.request") == bulks
        assert calls.count("features.hetero.reply") == bulks
    for m in mbs:
        assert sorted(m.x) == sorted(G.x)
        for t, x in m.x.items():
            assert torch.equal(x, torch.from_numpy(G.x[t][m.input_nodes[t]]))


def test_relations_placed_by_destination_partition(comm):
    torch = pytest.importorskip("torch")
    import numpy as np
    from sampling import NodeLoader
    G = mag_dataset(6).to_undirected()
    p, r = comm.Get_size(), comm.Get_rank()
    P = G.partition(p, seed=0, method="hash")
    D = G.distribute(comm, partition=P)
    for (_, _, d), A in D.relations.items():           # the rows of the vertices it owns
        assert (P.part[d][A.row_ids] == r).all()
    batches = epoch_batches(G.split("train", "paper"), 6, seed=2)
    ref = HeteroGraphSAGE(G, [3, 2]).sample(batches, node_type="paper", seed=5, epoch=1)
    got = HeteroGraphSAGE(D, [3, 2]).sample(batches, node_type="paper", seed=5, epoch=1)
    assert got and all(m == ref[m.index] for m in got)
    loader = NodeLoader(HeteroGraphSAGE(D, [3, 2]), ("paper", G.split("train", "paper")), 8,
                        bulk=2, seed=3)
    store = loader._inputs.features
    if p > 1:
        assert (P.part["author"][store.row_ids("author")] == r).all()
    for m in loader:
        for t, x in m.x.items():
            assert torch.equal(x, torch.from_numpy(G.x[t][m.input_nodes[t]]))
