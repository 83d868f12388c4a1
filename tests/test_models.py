"""The GNN models: the aggregation's gradient, shapes, and minibatches of every sampler."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import spla  # noqa: E402
from sampling import FastGCN, GraphSAGE, LADIES, epoch_batches  # noqa: E402
from sampling.datasets import load  # noqa: E402
from sampling.models import (GCN, BlockOperator, GraphSAGE as SAGEModel,  # noqa: E402
                             model_for, spmm)


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
    import sampling.models as M
    code = M.__doc__.split("::\n", 1)[1].split("\nPyTorch is an optional")[0]
    namespace = {"torch": torch, "BlockOperator": BlockOperator}
    exec(textwrap.dedent(code), namespace)
    x_all = torch.from_numpy(cora.x.to_scipy().toarray().astype(np.float32))
    for name, make in SAMPLERS.items():
        mb = make(cora.A).sample([cora.train_idx[:16]], seed=3)[0]
        model = namespace["MeanMLP"](cora.num_features, cora.num_classes)
        out = model(x_all[torch.from_numpy(np.asarray(mb.input_nodes))], mb)
        assert out.shape == (mb.batch_size, cora.num_classes), name
