"""The GNN models: the aggregation's gradient, shapes, and minibatches of every sampler."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import spla  # noqa: E402
from sampling import FastGCN, GraphSAGE, LADIES, epoch_batches  # noqa: E402
from sampling.datasets import load  # noqa: E402
from sampling.models import (GCN, BlockOperator, SAGE as SAGEModel,  # noqa: E402
                             model_for, block_matmul as spmm)


@pytest.fixture(scope="module")
def cora():
    return load("cora")


def _block_matrix(values=None):
    """A 3 x 5 block with an empty row (a destination with no neighbour)."""
    rows = [0, 0, 0, 2, 2]
    cols = [1, 3, 4, 0, 3]
    return spla.Matrix.from_coo(rows, cols, values, shape=(3, 5))


@pytest.mark.parametrize("values", [None, [1.0, 2.0, 1.0, 3.0, 1.0], [0.5, 0.1, 0.2, 0.7, 0.3]])
@pytest.mark.parametrize("normalize", [True, False])
def test_gradcheck_sparse_aggregation(values, normalize):
    op = BlockOperator(_block_matrix(values), normalize=normalize, dtype=torch.float64)
    x = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: spmm(op, x), (x,))
    assert torch.autograd.gradgradcheck(lambda x: spmm(op, x), (x,))


def test_mean_aggregation_values():
    # Draw counts (sampling with replacement) weight the mean; an empty row gives 0.
    M = _block_matrix([1.0, 2.0, 1.0, 3.0, 1.0])
    dense = M.to_dense()
    x = torch.randn(5, 2, dtype=torch.float64)
    got = spmm(BlockOperator(M, normalize=True, dtype=torch.float64), x)
    sums = dense.sum(axis=1, keepdims=True)
    want = (dense / np.where(sums == 0, 1, sums)) @ x.numpy()
    assert np.allclose(got.numpy(), want)
    assert np.all(got.numpy()[1] == 0)
    raw = spmm(BlockOperator(M, normalize=False, dtype=torch.float64), x)
    assert np.allclose(raw.numpy(), dense @ x.numpy())


def test_gradient_of_a_sampled_block_is_the_transpose_product(cora):
    mb, = GraphSAGE(cora.A, [5, 5], replace=True).sample([cora.train_idx[:20]], seed=1)
    op = BlockOperator(mb.blocks[0], dtype=torch.float64)
    x = torch.randn(op.num_src, 3, dtype=torch.float64, requires_grad=True)
    g = torch.randn(op.num_dst, 3, dtype=torch.float64)
    spmm(op, x).backward(g)
    A = op.A.to_dense().numpy()
    assert np.allclose(x.grad.numpy(), A.T @ g.numpy())
    assert np.allclose(A.sum(axis=1)[A.sum(axis=1) > 0], 1.0)


SAMPLERS = {
    "sage": lambda A: GraphSAGE(A, [6, 4]),
    "sage_replace": lambda A: GraphSAGE(A, [6, 4], replace=True),
    "ladies": lambda A: LADIES(A, [64, 64]),
    "fastgcn": lambda A: FastGCN(A, [64, 64]),
}


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_models_consume_minibatches_of_every_sampler(cora, name):
    sampler = SAMPLERS[name](cora.A)
    batches = epoch_batches(cora.train_idx, 32, seed=0)
    mbs = sampler.sample(batches[:2], seed=0)
    x_all = torch.from_numpy(cora.x.to_scipy().toarray().astype(np.float32))
    torch.manual_seed(0)
    model = model_for(name.split("_")[0], cora.num_features, 16, cora.num_classes, 2, 0.5)
    assert isinstance(model, SAGEModel if name.startswith("sage") else GCN)
    for mb in mbs:
        x = x_all[torch.from_numpy(np.asarray(mb.input_nodes))]
        out = model(x, mb)
        assert out.shape == (mb.batch_size, cora.num_classes)
        loss = torch.nn.functional.cross_entropy(out, torch.from_numpy(cora.y[mb.seeds]))
        model.zero_grad()
        loss.backward()
        grads = [p.grad for p in model.parameters()]
        assert all(g is not None and torch.isfinite(g).all() for g in grads)
    model.eval()
    with torch.no_grad():
        a = model(x, mb)
        b = model(x, mb)
    assert torch.equal(a, b)  # no dropout in eval mode


def test_output_shapes_and_depths():
    M = _block_matrix()
    blocks = [M, spla.Matrix.from_coo([0, 1], [0, 2], shape=(2, 3))]
    x = torch.randn(5, 7)
    for cls in (SAGEModel, GCN):
        model = cls(7, 8, 4, num_layers=2)
        assert model(x, blocks).shape == (2, 4)
        with pytest.raises(spla.DimensionMismatch, match="2 layers"):
            cls(7, 8, 4, num_layers=2)(x, blocks[:1])
        with pytest.raises(spla.InvalidValue):
            cls(7, 8, 4, num_layers=0)
        with pytest.raises(spla.InvalidValue):
            cls(7, 8, 4, dropout=1.0)
    with pytest.raises(spla.DimensionMismatch, match="rows"):
        spmm(BlockOperator(M), torch.randn(4, 2))
    with pytest.raises(spla.InvalidValue, match="sampler_name"):
        model_for("gat", 7, 8, 4, 2, 0.5)


def test_the_protocol_example_of_the_module_docstring(cora):
    # The custom model that sampling.models documents (the protocol the
    # Trainer calls) runs on minibatches of every sampler.
    import textwrap
    import sampling.models.layers as M
    code = M.__doc__.split("::\n", 1)[1].split("\nPyTorch is an optional")[0]
    namespace = {"torch": torch, "BlockOperator": BlockOperator}
    exec(textwrap.dedent(code), namespace)
    x_all = torch.from_numpy(cora.x.to_scipy().toarray().astype(np.float32))
    for name, make in SAMPLERS.items():
        mb = make(cora.A).sample([cora.train_idx[:16]], seed=3)[0]
        model = namespace["MeanMLP"](cora.num_features, cora.num_classes)
        out = model(x_all[torch.from_numpy(np.asarray(mb.input_nodes))], mb)
        assert out.shape == (mb.batch_size, cora.num_classes), name


# ---------------------------------------------------------------------------
# The CPU kernels behind the aggregation (spla.spmm) and dropout (spla.dropout)

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import sampling.models.layers as models  # noqa: E402
from strategies import SETTINGS, twins  # noqa: E402

_BLOCK_PLANS = ((np.dtype(np.int32), np.dtype(np.float64)), (np.dtype(np.int32), None),
                (np.dtype(np.int64), np.dtype(np.float32)))


def _dense_mean(M, normalize=True):
    """The (row-normalised) dense adjacency, float64, from the matrix's own arrays."""
    D = M.to_dense().astype(np.float64)
    if normalize:
        s = D.sum(axis=1, keepdims=True)
        D = D / np.where(s == 0, 1, s)
    return D


@SETTINGS
@given(t=twins(max_dim=8, plans=_BLOCK_PLANS, min_value=0, max_value=5), f=st.integers(0, 4),
       normalize=st.booleans())
def test_block_operator_products_match_dense_and_torch_sparse(t, f, normalize):
    op = BlockOperator(t.M, normalize=normalize, dtype=torch.float64)
    D = _dense_mean(t.M, normalize)
    x = torch.randn(op.num_src, f, dtype=torch.float64)
    g = torch.randn(op.num_dst, f, dtype=torch.float64)
    got = op.product(x)
    assert np.allclose(got.numpy(), D @ x.numpy())
    assert np.allclose(op.product(g, transpose=True).numpy(), D.T @ g.numpy())
    if t.M.nnz:   # the torch tensors kept for the GPU path and inspection agree
        assert np.allclose(op.A.to_dense().numpy(), D)
        assert np.allclose(op.AT.to_dense().numpy(), D.T)
    assert np.allclose(op.product(x.float()).numpy(), D @ x.numpy(), atol=1e-5)


@pytest.mark.parametrize("rows, cols, shape", [([], [], (3, 4)), ([0, 2, 2], [3, 0, 3], (3, 4)),
                                               ([], [], (0, 2))])
@pytest.mark.parametrize("transform_first", [False, True])
def test_layers_gradcheck_both_orders_and_empty_blocks(monkeypatch, rows, cols, shape,
                                                       transform_first):
    monkeypatch.setattr(models, "_transform_first", lambda *a: transform_first)
    op = BlockOperator(spla.Matrix.from_coo(rows, cols, shape=shape), dtype=torch.float64)
    h = torch.randn(shape[1], 3, dtype=torch.float64, requires_grad=True)
    torch.manual_seed(0)
    for conv in (models.SAGEConv(3, 2).double(), models.GCNConv(3, 2).double()):
        assert torch.autograd.gradcheck(lambda h: conv(h, op), (h,))
        assert torch.autograd.gradgradcheck(lambda h: conv(h, op), (h,))
    fused = lambda h: models._RootAndMean.apply(h, op)  # noqa: E731
    assert torch.autograd.gradcheck(fused, (h,))
    assert torch.autograd.gradgradcheck(fused, (h,))


@pytest.mark.parametrize("transform_first", [False, True])
def test_sage_layer_and_model_match_a_dense_reference(monkeypatch, cora, transform_first):
    monkeypatch.setattr(models, "_transform_first", lambda *a: transform_first)
    mb, = GraphSAGE(cora.A, [5, 3]).sample([cora.train_idx[:30]], seed=2)
    torch.manual_seed(1)
    model = SAGEModel(cora.num_features, 8, cora.num_classes, 2).double().eval()
    x = torch.from_numpy(cora.x.to_scipy().toarray()[mb.input_nodes].astype(np.float64))
    h = x.numpy()
    for layer, block in zip(model.layers, mb.blocks):
        D = _dense_mean(block.adj)
        Wr, b = layer.lin_root.weight.detach().numpy(), layer.lin_root.bias.detach().numpy()
        Wn = layer.lin_neigh.weight.detach().numpy()
        h_next = h[:block.num_dst] @ Wr.T + b + (D @ h) @ Wn.T
        h = np.maximum(h_next, 0) if layer is not model.layers[-1] else h_next
    with torch.no_grad():
        assert np.allclose(model(x, mb).numpy(), h)
    # The gradient of the loss reaches every parameter, equal in both orders.
    model.train()
    out = model(x, mb)
    out.sum().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())


def test_aggregation_order_follows_the_cost():
    def op(num_dst, num_src, nnz):
        return type("Op", (), dict(num_dst=num_dst, num_src=num_src, nnz=nnz))()
    # A wide input shrunk to a few classes on a dense block: transform first.
    assert models._transform_first(op(100, 1000, 20000), 1433, 7)
    # Equal widths: the product on fewer rows wins, aggregate first.
    assert not models._transform_first(op(41428, 62197, 206966), 64, 64)


@pytest.mark.parametrize("p", [0.2, 0.5])
def test_dropout_law_gradient_and_reproducibility(p):
    x = torch.ones(100_000, dtype=torch.float32, requires_grad=True)
    torch.manual_seed(3)
    y = models.feature_dropout(x, p)
    kept = (y != 0).numpy()
    from scipy import stats
    assert stats.binomtest(int(kept.sum()), kept.size, 1 - p).pvalue > 1e-6
    assert np.allclose(y.detach().numpy()[kept], 1 / (1 - p))
    g = torch.randn(100_000)
    y.backward(g)
    assert torch.equal(x.grad, g * y.detach())        # mask / (1 - p), the same elements
    torch.manual_seed(3)
    assert torch.equal(models.feature_dropout(x, p), y)       # torch.manual_seed reproduces it
    assert not torch.equal(models.feature_dropout(x, p), y)   # the next call draws a new mask
    assert models.feature_dropout(x, p, training=False) is x
    assert models.feature_dropout(x, 0.0) is x
    xd = torch.randn(40, 3, dtype=torch.float64, requires_grad=True)

    def reseeded(t):   # the same mask at every evaluation gradcheck makes
        torch.manual_seed(4)
        return models.feature_dropout(t, p)
    assert torch.autograd.gradcheck(reseeded, (xd,))
    assert torch.autograd.gradgradcheck(reseeded, (xd,))
    h = models.feature_dropout(torch.ones(64, dtype=torch.bfloat16), p)   # other dtypes: torch's own
    assert h.dtype == torch.bfloat16 and set(h.unique().tolist()) <= {0.0, 1 / (1 - p)} | {
        float(torch.tensor(1 / (1 - p), dtype=torch.bfloat16))}


def test_block_operator_refuses_what_is_not_a_block():
    with pytest.raises(spla.DTypeError, match="BlockOperator: argument 'block'"):
        BlockOperator(np.eye(3))


def test_former_model_names_warn_and_resolve():
    """The names that shadowed spla.spmm, spla.dropout and the sampler still resolve, with a warning."""
    import sampling.models as models
    for old, new in (("spmm", "block_matmul"), ("dropout", "feature_dropout"), ("GraphSAGE", "SAGE")):
        with pytest.warns(DeprecationWarning, match=f"sampling.models.{old} is deprecated"):
            assert getattr(models, old) is getattr(models, new)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        models.nope
