"""sampling.train.p3 on one process: column ranges, the column store, push-pull, P3Model, byte model.

The references are independent of the module: numpy slicing for the store,
plain products ``x[ids] @ W`` and torch's autograd for push-pull, the
data-parallel ``sampling.models`` GraphSAGE / GCN for ``P3Model``, and the
byte model's formulas written out by hand.  Several ranks run in
tests/mpi/test_p3_mpi.py.
"""

import copy

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import spla
from spla.exceptions import (DimensionMismatch, DTypeError, IndexOutOfRange, InvalidValue,
                              LayoutError)
from sampling import GraphSAGE as SageSampler
from sampling.models import GCN, SAGE as GraphSAGE, SAGEConv
from sampling.train.p3 import (ColumnFeatureStore, P3Model, PushPull, PushPullPlan, StepInput,
                         byte_model, column_range, push_pull, share_inputs)


# -- column ranges and the store --------------------------------------------------------

@given(f=st.integers(0, 200), p=st.integers(1, 40))
def test_column_ranges_tile_the_columns(f, p):
    ranges = [column_range(f, p, r) for r in range(p)]
    assert ranges[0][0] == 0 and ranges[-1][1] == f
    for (a, b), (c, _) in zip(ranges, ranges[1:]):
        assert b == c and a <= b
    sizes = [b - a for a, b in ranges]
    assert max(sizes) - min(sizes) <= 1
    assert ranges == [(f * r // p, f * (r + 1) // p) for r in range(p)]
    if f >= p:
        assert min(sizes) >= 1


def test_column_range_refuses_a_rank_beyond_p():
    with pytest.raises(LayoutError, match="column_range: argument 'r' must be a rank below"):
        column_range(10, 2, 2)


@settings(deadline=None, max_examples=40)
@given(x=hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2, min_side=1,
                                                 max_side=9),
                    elements=st.floats(-1e6, 1e6)),
       sparse=st.booleans(), dtype=st.sampled_from([None, np.float32, np.float64]),
       data=st.data())
def test_store_gathers_numpy_rows(x, sparse, dtype, data):
    n, f = x.shape
    store = ColumnFeatureStore(sp.csr_matrix(x) if sparse else x, dtype=dtype)
    assert store.columns == (0, f) and store.shape == (n, f)
    assert store.sparse == sparse
    assert store.dtype == np.dtype(dtype or np.float64)
    ids = np.asarray(data.draw(st.lists(st.integers(0, n - 1), max_size=12)), np.int64)
    got = store.gather(ids)
    assert got.shape == (ids.size, f) and got.dtype == store.dtype
    np.testing.assert_array_equal(got, x[ids].astype(store.dtype))


def test_store_keeps_labels_and_splits():
    x = np.ones((4, 3), np.float32)
    store = ColumnFeatureStore(x, labels=np.array([0, 1, -1, 2]), num_classes=3,
                               splits={"train": np.array([0, 3])})
    assert store.dtype == np.float32
    assert store.labels.tolist() == [0, 1, -1, 2]
    assert store.mask("train").tolist() == [True, False, False, True]
    assert "columns 0:3 on rank 0 of 1" in repr(store)
    structural = ColumnFeatureStore(spla.Matrix.from_coo([0, 1], [2, 0], shape=(2, 3)))
    assert structural.sparse and structural.dtype == np.float32
    np.testing.assert_array_equal(structural.gather([1, 0]), [[1, 0, 0], [0, 0, 1]])
    local = ColumnFeatureStore.from_local(x[:, :3], 3)
    np.testing.assert_array_equal(local.gather([3, 0]), x[[3, 0]])


@pytest.mark.parametrize("call, cls, text", [
    (lambda: ColumnFeatureStore(np.ones(3)), DimensionMismatch,
     "ColumnFeatureStore: argument 'features' must be a 2-D (n, f) matrix"),
    (lambda: ColumnFeatureStore(np.array([[1.0, np.inf]])), InvalidValue, "finite values"),
    (lambda: ColumnFeatureStore(np.ones((2, 2), complex)), DTypeError, "real numbers"),
    (lambda: ColumnFeatureStore(np.ones((2, 2)), dtype=np.int32), DTypeError,
     "argument 'dtype' must be float32 or float64"),
    (lambda: ColumnFeatureStore(np.ones((2, 0))), LayoutError,
     "at least as many columns as ranks"),
    (lambda: ColumnFeatureStore(np.ones((2, 2)), labels=np.array([0, 5]), num_classes=3),
     InvalidValue, "labels"),
    (lambda: ColumnFeatureStore.from_local(np.ones((2, 2)), 3), DimensionMismatch,
     "ColumnFeatureStore.from_local: argument 'local' must be 3 columns"),
    (lambda: ColumnFeatureStore(np.ones((2, 2))).gather([2]), IndexOutOfRange,
     "ColumnFeatureStore.rows: argument 'ids'"),
])
def test_store_errors(call, cls, text):
    with pytest.raises(cls) as info:
        call()
    assert text in str(info.value)


# -- push-pull ---------------------------------------------------------------------------

def test_push_pull_heads_equal_dense_products_and_gradients():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((9, 5))
    w = [torch.tensor(rng.standard_normal((5, 3)), requires_grad=True) for _ in range(2)]
    plan = PushPullPlan([9], [[4], [9]])
    for data in (x, sp.csr_matrix(x)):
        root, neigh = push_pull(data, plan, None, *w)
        np.testing.assert_allclose(root.detach().numpy(), x[:4] @ w[0].detach().numpy(),
                                   atol=1e-12)
        np.testing.assert_allclose(neigh.detach().numpy(), x @ w[1].detach().numpy(),
                                   atol=1e-12)
        R = [rng.standard_normal((4, 3)), rng.standard_normal((9, 3))]
        for q in w:
            q.grad = None
        ((root * torch.from_numpy(R[0])).sum() + (neigh * torch.from_numpy(R[1])).sum()).backward()
        np.testing.assert_allclose(w[0].grad.numpy(), x[:4].T @ R[0], atol=1e-12)
        np.testing.assert_allclose(w[1].grad.numpy(), x.T @ R[1], atol=1e-12)


def test_push_pull_gradcheck():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 4))
    plan = PushPullPlan([6], [[2], [6]])
    w = tuple(torch.tensor(rng.standard_normal((4, 3)), requires_grad=True) for _ in range(2))
    assert torch.autograd.gradcheck(lambda *ws: PushPull.apply(x, plan, None, *ws), w)


def test_push_pull_with_an_unused_head_and_no_rows():
    w = torch.ones(2, 3, dtype=torch.float64, requires_grad=True)
    v = torch.ones(2, 3, dtype=torch.float64, requires_grad=True)
    x = np.arange(8.0).reshape(4, 2)
    root, neigh = push_pull(x, PushPullPlan([4], [[1], [4]]), None, w, v)
    neigh.sum().backward()  # the root head gets no gradient
    np.testing.assert_array_equal(w.grad.numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(v.grad.numpy(), np.repeat(x.sum(0)[:, None], 3, 1))
    (empty,) = push_pull(x[:0], PushPullPlan([0]), None, w)
    assert empty.shape == (0, 3)


@pytest.mark.parametrize("args, cls, text", [
    (lambda w: (np.ones((3, 2)), PushPullPlan([3, 0]), None, w), DimensionMismatch,
     "one row count per rank (1)"),
    (lambda w: (np.ones((4, 2)), PushPullPlan([3]), None, w), DimensionMismatch,
     "a 2-D array of 3 rows"),
    (lambda w: (np.ones((3, 5)), PushPullPlan([3]), None, w), DimensionMismatch,
     "weights[0]' must be shape (5, 4)"),
    (lambda w: (np.ones((3, 2)), PushPullPlan([3]), None, w, w), DimensionMismatch,
     "one weight per head (1)"),
    (lambda w: (np.ones((3, 2)), [3], None, w), DTypeError, "a PushPullPlan"),
])
def test_push_pull_errors(args, cls, text):
    w = torch.ones(2, 4, requires_grad=True)
    with pytest.raises(cls) as info:
        PushPull.apply(*args(w))
    assert text in str(info.value)


def test_push_pull_refuses_a_step_beyond_mpi_counts():
    rows = 2 ** 29  # x 4 hidden > 2**31 - 1 elements; the rows are a broadcast view
    x = np.broadcast_to(np.zeros((1, 2)), (rows, 2))
    with pytest.raises(InvalidValue, match="at most 2147483647 partial activations"):
        PushPull.apply(x, PushPullPlan([rows]), None, torch.ones(2, 4, requires_grad=True))


def test_plan_errors():
    with pytest.raises(DimensionMismatch, match="head_rows"):
        PushPullPlan([3, 2], [[4, 2]])
    with pytest.raises(InvalidValue, match="row_counts"):
        PushPullPlan([-1])


# -- P3Model against the data-parallel model ---------------------------------------------

def _setup(seed, f=7, n=30):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, f))
    rows = np.repeat(np.arange(n), 3)
    A = spla.Matrix.from_coo(rows, rng.integers(0, n, rows.size), shape=(n, n))
    return x, A


@pytest.mark.parametrize("Model, layers, sparse", [(GraphSAGE, 2, False), (GCN, 2, False),
                                                   (GraphSAGE, 3, True), (GCN, 1, True)])
def test_p3_model_equals_the_dense_model(Model, layers, sparse):
    x, A = _setup(2)
    x[np.abs(x) < 0.7] = 0.0
    mb = SageSampler(A, [3] * layers).sample([np.array([1, 4, 9, 20])], seed=3)[0]
    torch.manual_seed(0)
    net = Model(x.shape[1], 5, 3, num_layers=layers, dropout=0.5).double()
    # A copy: P3Model shares the first layer's bias and layers 2..L with its model.
    p3 = P3Model(copy.deepcopy(net), ColumnFeatureStore(sp.csr_matrix(x) if sparse else x))
    net.eval()
    p3.eval()  # no dropout: the models must agree exactly
    xin = torch.from_numpy(x[mb.input_nodes])
    want, got = net(xin, mb), p3([mb])
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), atol=1e-10)
    G = torch.from_numpy(np.random.default_rng(4).standard_normal(tuple(want.shape)))
    (want * G).sum().backward()
    (got * G).sum().backward()
    first = net.layers[0]
    full = ([first.lin_root.weight, first.lin_neigh.weight] if Model is GraphSAGE
            else [first.lin.weight])
    for a, b in zip(full, p3.local_parameters()):
        np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy().T, atol=1e-10)
    bias = first.lin_root.bias if Model is GraphSAGE else first.bias
    np.testing.assert_allclose(p3.bias.grad.numpy(), bias.grad.numpy(), atol=1e-10)
    for a, b in zip([q for layer in net.layers[1:] for q in layer.parameters()],
                    [q for layer in p3.rest for q in layer.parameters()]):
        np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), atol=1e-10)
    assert {id(q) for q in p3.replicated_parameters()} | {id(q) for q in p3.local_parameters()} \
        == {id(q) for q in p3.parameters()}


def test_p3_model_training_steps_equal_the_dense_model():
    x, A = _setup(5)
    y = torch.from_numpy(np.random.default_rng(6).integers(0, 3, x.shape[0]))
    sampler = SageSampler(A, [3, 2])
    torch.manual_seed(1)
    net = GraphSAGE(x.shape[1], 6, 3, num_layers=2, dropout=0.0).double()
    torch.manual_seed(1)
    p3 = P3Model(GraphSAGE(x.shape[1], 6, 3, num_layers=2, dropout=0.0).double(),
                 ColumnFeatureStore(x))
    opt_a = torch.optim.SGD(net.parameters(), lr=0.3)
    opt_b = torch.optim.SGD(p3.parameters(), lr=0.3)
    for step in range(4):
        mb = sampler.sample([np.arange(step, 30, 5)], seed=2, epoch=step)[0]
        la = torch.nn.functional.cross_entropy(net(torch.from_numpy(x[mb.input_nodes]), mb),
                                               y[mb.seeds])
        lb = torch.nn.functional.cross_entropy(p3([mb]), y[mb.seeds])
        assert abs(la.item() - lb.item()) < 1e-10
        for opt, loss in ((opt_a, la), (opt_b, lb)):
            opt.zero_grad()
            loss.backward()
            opt.step()
    np.testing.assert_allclose(p3.w_neigh.detach().numpy(),
                               net.layers[0].lin_neigh.weight.detach().numpy().T, atol=1e-10)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("Model, sparse", [(GraphSAGE, False), (GCN, True)])
def test_p3_model_on_a_gpu_equals_the_cpus(Model, sparse):
    # Push-pull stages the first layer through host memory; the heads, the
    # aggregation and layers 2..L run on the weights' device.
    x, A = _setup(8)
    x[np.abs(x) < 0.7] = 0.0
    mb = SageSampler(A, [3, 3]).sample([np.array([1, 4, 9, 20])], seed=3)[0]
    torch.manual_seed(0)
    net = Model(x.shape[1], 5, 3, num_layers=2, dropout=0.5).double()
    store = ColumnFeatureStore(sp.csr_matrix(x) if sparse else x)
    cpu = P3Model(copy.deepcopy(net), store).eval()
    gpu = P3Model(copy.deepcopy(net).to("cuda"), store).eval()
    want, got = cpu([mb]), gpu([mb])
    assert got.device.type == "cuda"
    np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy(), atol=1e-10)
    want.sum().backward()
    got.sum().backward()
    for a, b in zip(cpu.parameters(), gpu.parameters()):
        np.testing.assert_allclose(b.grad.cpu().numpy(), a.grad.numpy(), atol=1e-10)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_main_job_with_columns_on_a_gpu_trains_like_the_cpu():
    # Without dropout the two runs differ only by the rounding of their
    # products: the same minibatches (sampled on the host either way).
    import io
    from sampling.train import TrainOptions, run
    accs = [run(TrainOptions(dataset="cora", features="columns", device=device, epochs=5,
                             dropout=0.0, threads=1), out=io.StringIO())
            for device in ("cpu", "cuda")]
    assert abs(accs[1] - accs[0]) <= 0.01, accs


def test_p3_model_errors():
    x, A = _setup(7)
    store = ColumnFeatureStore(x)
    torch.manual_seed(0)

    class NotLinear(SAGEConv):  # a SAGEConv that squashes its input first
        def forward(self, h, op):
            return super().forward(torch.tanh(h), op)

    net = GraphSAGE(7, 4, 2, num_layers=2, dropout=0.0)
    odd = GraphSAGE(7, 4, 2, num_layers=2, dropout=0.0)
    odd.layers[0] = NotLinear(7, 4)
    with pytest.raises(InvalidValue, match="a first layer linear in its input.*NotLinear"):
        P3Model(odd, store)
    with pytest.raises(InvalidValue, match=r"SAGE \(GraphSAGE\) or GCN.*Linear"):
        P3Model(torch.nn.Linear(7, 2), store)
    with pytest.raises(DimensionMismatch, match="input width 7 .*; got input width 8"):
        P3Model(GraphSAGE(8, 4, 2), store)
    with pytest.raises(DTypeError, match="argument 'store' must be a ColumnFeatureStore"):
        P3Model(net, x)
    p3 = P3Model(net, store)
    mb = SageSampler(A, [2]).sample([np.array([0, 1])], seed=0)[0]
    with pytest.raises(DimensionMismatch, match="minibatches\\[0\\]' must be a MiniBatch of 2"):
        p3([mb])
    with pytest.raises(DimensionMismatch, match="one minibatch \\(or None\\) per rank"):
        p3([mb, mb])
    with pytest.raises(DimensionMismatch, match="minibatches\\[0\\]' must be a MiniBatch"):
        p3(share_inputs(mb, None))  # this rank's own entry must be its MiniBatch
    with pytest.raises(DimensionMismatch, match="'num_dst' must be at most the 2 input rows"):
        StepInput([0, 1], 3)


# -- byte model ----------------------------------------------------------------------------

@given(f=st.integers(1, 5000), hidden=st.integers(1, 256), batch=st.integers(0, 64),
       fanouts=st.lists(st.integers(0, 12), max_size=3), p=st.integers(1, 16),
       sage=st.booleans())
def test_byte_model_formulas(f, hidden, batch, fanouts, p, sage):
    m = byte_model(f=f, hidden=hidden, batch=batch, fanouts=fanouts, p=p, sage=sage)
    sizes = [batch]
    for k in fanouts:  # output layer first
        sizes.append(sizes[-1] * (k + 1))
    n_in = sizes[-1]
    n_dst = sizes[-2] if fanouts else 0
    assert m["input_rows"] == n_in
    assert m["row_fetch"] == round((p - 1) / p * n_in * (8 + 4 * f))
    assert m["push_pull"] == 2 * (p - 1) * (n_in + (n_dst if sage else 0)) * hidden * 4
    if n_in and p > 1:
        at = byte_model(f=1, hidden=hidden, batch=batch, fanouts=fanouts, p=p, sage=sage)
        # the row fetch is linear in f: it meets push-pull at the crossover
        slope = (p - 1) / p * n_in * 4
        assert abs(at["row_fetch"] + slope * (m["crossover_f"] - 1) - m["push_pull"]) <= 1


def test_byte_model_takes_measured_rows():
    m = byte_model(f=100, hidden=10, batch=2, fanouts=[3, 2], p=4, input_rows=15.5,
                   dst_rows=6)
    assert m["input_rows"] == 15.5 and m["dst_rows"] == 6
    assert m["push_pull"] == round(2 * 3 * (15.5 + 6) * 10 * 4)
    assert m["row_fetch"] == round(0.75 * 15.5 * (8 + 400))
    with pytest.raises(InvalidValue, match="'dst_rows' must be at most the input rows"):
        byte_model(f=1, hidden=1, batch=1, fanouts=[], p=2, dst_rows=2)
    with pytest.raises(InvalidValue, match="'input_rows' must be a count >= 0"):
        byte_model(f=1, hidden=1, batch=1, fanouts=[], p=2, input_rows=-1.0)


def test_byte_model_example():
    # 2 seeds, fanouts [3, 2]: 8 destinations in the first block, 24 inputs.
    m = byte_model(f=100, hidden=10, batch=2, fanouts=[3, 2], p=2)
    assert m["input_rows"] == 24
    assert m["push_pull"] == 2 * 1 * (24 + 8) * 10 * 4
    assert m["row_fetch"] == 12 * (8 + 400)


# -- the package: one module per job, every name importable from the package ------------

def test_package_reexports_the_names_of_each_job_module():
    import importlib

    from sampling.train import p3
    jobs = ["columns", "pushpull", "inputs", "model", "traffic"]
    seen = []
    for job in jobs:
        mod = importlib.import_module(f"sampling.train.p3.{job}")
        for name in mod.__all__:
            assert getattr(p3, name) is getattr(mod, name), (job, name)
            assert getattr(mod, name).__module__ == mod.__name__, (job, name)
        seen += mod.__all__
    assert sorted(seen) == sorted(p3.__all__) and len(set(seen)) == len(seen)


@pytest.mark.slow
def test_package_imports_without_torch_and_says_what_needs_it():
    import subprocess
    import sys
    from pathlib import Path

    code = """if True:
        import sys
        sys.modules["torch"] = None  # import torch raises ImportError
        import numpy as np
        from spla.exceptions import MissingDependency
        from sampling.train import p3
        s = p3.ColumnFeatureStore(np.eye(4), labels=np.arange(4))
        assert s.gather([3]).tolist() == [[0.0, 0.0, 0.0, 1.0]]
        assert p3.column_range(4, 2, 1) == (2, 4)
        assert p3.byte_model(f=8, hidden=4, batch=2, fanouts=[3, 2], p=2)["input_rows"] == 24
        assert p3.PushPullPlan([2, 1]).total_rows == 3
        assert p3.share_inputs(p3.StepInput([1, 2], 1), None)[0].num_dst == 1
        for name, call in [("push_pull", lambda: p3.push_pull(None, None, None)),
                           ("P3Model", lambda: p3.P3Model(None, s))]:
            try:
                call()
            except MissingDependency as e:
                assert str(e).startswith(name + " needs PyTorch"), e
            else:
                raise AssertionError(name + " ran without torch")
        print("ok")
    """
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]
