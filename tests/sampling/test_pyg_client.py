"""PyTorch Geometric as a client: its layers trained and run on our minibatches.

The references are PyG's own layers applied to the whole graph: a sampler
that takes every neighbour must give exactly the full-graph outputs for the
seeds, through ``to_pyg`` (NeighborSampler's per-layer loop) and through
``to_pyg_data`` (NeighborLoader's merged graph with ``trim_to_layer``).
"""

import numpy as np
import pytest

import spla
from sampling import ALL_NEIGHBORS, GraphSAGE, LADIES, NodeLoader
from sampling.datasets import load

torch = pytest.importorskip("torch")
pyg = pytest.importorskip("torch_geometric")
from torch_geometric.nn import MessagePassing, SAGEConv  # noqa: E402
from torch_geometric.utils import trim_to_layer  # noqa: E402

F = torch.nn.functional


@pytest.fixture(scope="module")
def cora():
    ds = load("cora")
    # Row-normalised bag-of-words features, as the trainer (and PyG's NormalizeFeatures)
    x = torch.from_numpy(spla.normalize_rows(ds.x.astype(np.float32)).to_dense())
    S = ds.A.to_scipy().tocoo()
    # PyG orientation of the stored entry A[target, source]: row 0 sources
    edge_index = torch.from_numpy(np.stack([S.col, S.row]).astype(np.int64))
    return ds, x, torch.from_numpy(ds.y), edge_index


class SAGE(torch.nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.convs = torch.nn.ModuleList(SAGEConv(a, b) for a, b in zip(sizes, sizes[1:]))

    def _act(self, k, x):
        if k < len(self.convs) - 1:
            x = F.dropout(F.relu(x), 0.5, self.training)
        return x

    def forward_adjs(self, x, adjs):
        """PyG's NeighborSampler loop: targets are the first size[1] sources."""
        for k, (edge_index, _, size) in enumerate(adjs):
            x = self._act(k, self.convs[k]((x, x[:size[1]]), edge_index))
        return x

    def forward_trimmed(self, x, edge_index, nodes, edges):
        """PyG's NeighborLoader loop on a merged graph, trimmed layer by layer."""
        for k, conv in enumerate(self.convs):
            x, edge_index, _ = trim_to_layer(k, nodes, edges, x, edge_index)
            x = self._act(k, conv(x, edge_index))
        return x

    def forward_full(self, x, edge_index):
        for k, conv in enumerate(self.convs):
            x = self._act(k, conv(x, edge_index))
        return x


def test_sageconv_trains_on_cora(cora):
    ds, x, y, edge_index = cora
    torch.manual_seed(0)
    model = SAGE([x.shape[1], 64, ds.num_classes])
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    loader = NodeLoader(GraphSAGE(ds.A, [10, 10]), ds.train_idx, 32, features=x.numpy(),
                        labels=ds.y, seed=0)
    for epoch in range(20):
        model.train()
        for mb in loader:                      # each pass is the next epoch
            batch_size, n_id, adjs = mb.to_pyg()[:3]
            # The loader's features and labels are those of n_id and the seeds.
            assert torch.equal(mb.x, x[n_id]) and torch.equal(mb.y, y[n_id[:batch_size]])
            loss = F.cross_entropy(model.forward_adjs(mb.x, adjs), mb.y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert loader.epoch == 20
    model.eval()
    with torch.no_grad():
        pred = model.forward_full(x, edge_index).argmax(1)
    test = torch.from_numpy(ds.test_idx)
    acc = (pred[test] == y[test]).float().mean().item()
    assert acc >= 0.78, acc


def _full_neighbourhood_batch(ds, seeds, layers):
    mb, = GraphSAGE(ds.A, [ALL_NEIGHBORS] * layers).sample([seeds], seed=5)
    return mb


@pytest.mark.parametrize("layers", [1, 2, 3])
def test_blocks_give_the_full_graph_outputs(cora, layers):
    ds, x, y, edge_index = cora
    seeds = ds.test_idx[::37]
    torch.manual_seed(layers)
    model = SAGE([x.shape[1]] + [16] * (layers - 1) + [ds.num_classes]).eval()
    mb = _full_neighbourhood_batch(ds, seeds, layers)
    with torch.no_grad():
        full = model.forward_full(x, edge_index)[torch.from_numpy(seeds)]
        batch_size, n_id, adjs = mb.to_pyg()[:3]
        blocks = model.forward_adjs(x[n_id], adjs)
        data = mb.to_pyg_data()
        merged = model.forward_trimmed(x[data.n_id], data.edge_index, data.num_sampled_nodes,
                                       data.num_sampled_edges)[:data.batch_size]
    assert batch_size == data.batch_size == seeds.size
    torch.testing.assert_close(blocks, full, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(merged, full, rtol=1e-5, atol=1e-5)


def test_merged_graph_is_smaller_than_the_blocks(cora):
    # each vertex's in-edges once: fewer edges than the blocks, which re-sample
    ds, *_ = cora
    mb = _full_neighbourhood_batch(ds, ds.test_idx[:20], 2)
    data = mb.to_pyg_data()
    assert data.edge_index.shape[1] == sum(data.num_sampled_edges) < mb.num_sampled_edges


class WeightedSum(MessagePassing):
    """sum_j w_ji x_j: the block adjacency times x, if the weights line up with the edges."""

    def __init__(self):
        super().__init__(aggr="add")

    def forward(self, x, edge_index, edge_weight, size):
        return self.propagate(edge_index, x=x, edge_weight=edge_weight, size=size)

    def message(self, x_j, edge_weight):
        return edge_weight[:, None] * x_j


@pytest.mark.parametrize("kind", ["weighted", "replace", "ladies"])
def test_edge_weights_and_edge_ids(cora, kind):
    ds, x, y, edge_index = cora
    S = ds.A.to_scipy()
    w = np.random.default_rng(1).uniform(0.1, 1.0, S.nnz)
    A = spla.Matrix.from_csr(S.indptr, S.indices, w, S.shape)
    sampler = {"weighted": lambda: GraphSAGE(A, [6, 4], weighted=True),
               "replace": lambda: GraphSAGE(A, [6, 4], replace=True),
               "ladies": lambda: LADIES(A, [64, 64])}[kind]()
    mb, = sampler.sample([ds.train_idx[:30]], seed=2)
    out = mb.to_pyg()
    Sc = S.tocoo()
    for blk, (ei, e_id, size), wt in zip(mb.blocks, out.adjs, out.edge_weight):
        # edge_weight: the block's values, aligned with edge_index
        B = blk.to_scipy()
        xs = x[out.n_id[:size[0]]]
        ref = torch.from_numpy((B @ xs.double().numpy()).astype(np.float32))
        got = WeightedSum()(xs, ei, wt, size=size)
        torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-6)
        # e_id: A's entry there is the edge (target, source), with the edge's value
        src, dst = out.n_id[ei[0]].numpy(), out.n_id[ei[1]].numpy()
        e = e_id.numpy()
        stored = e >= 0
        np.testing.assert_array_equal(Sc.row[e[stored]], dst[stored])
        np.testing.assert_array_equal(Sc.col[e[stored]], src[stored])
        if kind == "weighted":
            assert stored.all()
            np.testing.assert_array_equal(wt.numpy(), w[e].astype(np.float32))
        else:  # LADIES' self loops are not edges of A
            assert np.all(src[~stored] == dst[~stored])
            assert stored.all() if kind == "replace" else (~stored).any()
