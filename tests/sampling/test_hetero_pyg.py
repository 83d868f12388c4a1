"""HeteroMiniBatch.to_pyg_data with PyG models: full-neighbourhood forward equals PyG's
forward on the whole graph, and a ``to_hetero`` GraphSAGE trains on the minibatches."""

import dataclasses

import numpy as np
import pytest

from sampling import HeteroGraphSAGE
from sampling.datasets.mag import mag_dataset

torch = pytest.importorskip("torch")
pyg = pytest.importorskip("torch_geometric")
from torch_geometric.data import HeteroData  # noqa: E402
from torch_geometric.nn import SAGEConv, to_hetero  # noqa: E402


class Net(torch.nn.Module):
    def __init__(self, hidden, out):
        super().__init__()
        self.conv1 = SAGEConv((-1, -1), hidden)
        self.conv2 = SAGEConv((-1, -1), out)

    def forward(self, x, edge_index):
        return self.conv2(self.conv1(x, edge_index).relu(), edge_index)


def _whole(G):
    data = HeteroData()
    for t, n in G.num_nodes.items():
        data[t].x = torch.from_numpy(G.x[t])
    for rel, A in G.relations.items():
        S = A.to_scipy().tocoo()
        data[rel].edge_index = torch.from_numpy(np.stack([S.col, S.row]).astype(np.int64))
    return data


def _with_features(G, mb):
    x = {t: G.x[t][ids] for t, ids in mb.input_nodes.items()}
    y = {mb.seed_type: G.y[mb.seed_type][mb.seeds]}
    return dataclasses.replace(mb, x=x, y=y)


def _model(G, whole):
    torch.manual_seed(0)
    model = to_hetero(Net(8, G.num_classes), (list(G.node_types), list(G.edge_types)),
                      aggr="sum")
    with torch.no_grad():
        model(whole.x_dict, whole.edge_index_dict)        # initialise the lazy layers
    return model


def test_full_neighbourhood_equals_whole_graph_forward():
    G = mag_dataset(5).to_undirected()
    whole = _whole(G)
    model = _model(G, whole)
    with torch.no_grad():
        full = model(whole.x_dict, whole.edge_index_dict)["paper"]
    seeds = [np.array([3, 0, 17, 31, 8]), np.array([1, 2])]
    for mb in HeteroGraphSAGE(G, [-1, -1]).sample(seeds, node_type="paper", seed=0):
        data = _with_features(G, mb).to_pyg_data()
        assert torch.equal(data["paper"].n_id[:mb.batch_size], torch.from_numpy(mb.seeds))
        with torch.no_grad():
            out = model(data.x_dict, data.edge_index_dict)["paper"][:data["paper"].batch_size]
        ref = full[torch.from_numpy(mb.seeds)]
        assert torch.allclose(out, ref, atol=1e-5), (out - ref).abs().max()
    # a sampled (not full) neighbourhood gives different outputs: the test can fail
    mb, = HeteroGraphSAGE(G, [1, 1]).sample([seeds[0]], node_type="paper", seed=0)
    data = _with_features(G, mb).to_pyg_data()
    with torch.no_grad():
        out = model(data.x_dict, data.edge_index_dict)["paper"][:mb.batch_size]
    assert not torch.allclose(out, full[torch.from_numpy(mb.seeds)], atol=1e-5)


def test_to_hetero_graphsage_trains_on_minibatches():
    G = mag_dataset(8).to_undirected()
    whole = _whole(G)
    model = _model(G, whole)
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    sampler = HeteroGraphSAGE(G, [10, 5])
    train = G.split("train", "paper")
    rng = np.random.default_rng(0)
    for epoch in range(15):
        batches = np.array_split(rng.permutation(train), 4)
        for mb in sampler.sample(batches, node_type="paper", seed=1, epoch=epoch):
            data = _with_features(G, mb).to_pyg_data()
            out = model(data.x_dict, data.edge_index_dict)["paper"][:data["paper"].batch_size]
            loss = torch.nn.functional.cross_entropy(out, data["paper"].y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    test = G.split("test", "paper")
    with torch.no_grad():
        pred = model(whole.x_dict, whole.edge_index_dict)["paper"].argmax(1).numpy()
    acc = float(np.mean(pred[test] == G.y["paper"][test]))
    assert acc > 0.6, acc          # chance is 0.25
