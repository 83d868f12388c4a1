"""BNS-GCN (sampling.train.bns) in one process, against independent references.

* ``normalized_adjacency`` equals the scipy formulas (GCN's symmetric
  normalisation with self loops, the row mean) on hypothesis graphs;
* ``keep_mask``: a pure function of (seed, epoch, id); each vertex kept
  with probability q (a binomial test over many vertices, per epoch and
  per vertex over epochs), independent between epochs;
* one-process BNS training (every q: no boundary) reproduces a plain torch
  full-graph GCN / GraphSAGE written from the formulas, loss by loss;
* bad input raises clear errors; the main job's ``--mode bns`` runs and
  refuses options that do not apply.

``reference_losses`` is also the reference of tests/mpi/test_bns_mpi.py.
"""

import copy

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

import spla
from sampling.train import bns
from sampling.datasets import load
from spla.exceptions import DTypeError, InvalidValue

torch = pytest.importorskip("torch")


# -- the independent reference: dense torch from the formulas -------------------------
def reference_adjacency(A, kind):
    """GCN: D^-1/2 (A + I) D^-1/2; mean: D^-1 A, from scipy (pattern of A only)."""
    S = sp.csr_matrix(A.to_scipy() != 0, dtype=np.float64)
    if kind == "gcn":
        S = S.tolil()
        S.setdiag(1.0)
        S = S.tocsr()
        d = np.asarray(S.sum(axis=1)).ravel()
        Dm = sp.diags(1 / np.sqrt(d))
        return (Dm @ S @ Dm).toarray()
    d = np.asarray(S.sum(axis=1)).ravel()
    return (sp.diags(np.where(d > 0, 1 / np.where(d > 0, d, 1), 0.0)) @ S).toarray()


def reference_features(x):
    X = x.to_scipy().toarray().astype(np.float64) if isinstance(x, spla.Matrix) else x
    s = X.sum(axis=1, keepdims=True)
    return X / np.where(s == 0, 1, s)


def reference_losses(ds, model, kind, epochs, *, lr=0.01, weight_decay=5e-4, seed=0,
                     dropout=0.0):
    """Full-graph training in one process, plain torch on dense matrices.

    ``model``: a copy of the BNS model before training (only its parameters
    are used, as the initial values).  Dropout (if any) uses the same keyed
    masks as BNS (``dropout_by_id`` with the vertex ids 0..n-1).
    """
    model = copy.deepcopy(model)
    A = torch.tensor(reference_adjacency(ds.A, bns.KINDS[kind]), dtype=torch.float32)
    X = torch.tensor(reference_features(ds.x), dtype=torch.float32)
    y = torch.from_numpy(np.asarray(ds.y, np.int64))
    train = torch.from_numpy(np.asarray(ds.train_idx, np.int64))
    ids = np.arange(A.shape[0])
    params = list(model.parameters())
    opt = torch.optim.Adam(params, lr=lr, weight_decay=weight_decay)
    losses = []
    for e in range(epochs):
        opt.zero_grad()
        h = X
        for i, layer in enumerate(model.layers):
            if dropout:
                h = bns.dropout_by_id(h, ids, dropout, seed=seed, epoch=e, layer=i)
            if kind == "gcn":
                h = A @ (h @ layer.lin.weight.T) + layer.bias
            else:
                h = (h @ layer.lin_root.weight.T + layer.lin_root.bias
                     + (A @ h) @ layer.lin_neigh.weight.T)
            if i < len(model.layers) - 1:
                h = torch.relu(h)
        loss = torch.nn.functional.cross_entropy(h[train], y[train])
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return losses


# -- the aggregation matrix ---------------------------------------------------------------
@st.composite
def graphs(draw):
    n = draw(st.integers(1, 12))
    mask = draw(st.lists(st.booleans(), min_size=n * n, max_size=n * n))
    dense = np.array(mask, bool).reshape(n, n)
    return spla.Matrix.from_dense(dense.astype(np.float64), structural=True)


@settings(max_examples=30, deadline=None)
@given(graphs(), st.sampled_from(["gcn", "mean"]))
def test_normalized_adjacency_equals_the_formula(A, kind):
    got = bns.normalized_adjacency(A, kind)
    np.testing.assert_allclose(got.to_dense(), reference_adjacency(A, kind), rtol=1e-12,
                               atol=0)


def test_normalized_adjacency_rejects_bad_input():
    with pytest.raises(DTypeError, match="normalized_adjacency: argument 'A'"):
        bns.normalized_adjacency(np.eye(3))
    with pytest.raises(InvalidValue, match="argument 'kind' must be 'gcn' or 'mean'"):
        bns.normalized_adjacency(spla.Matrix.from_dense(np.eye(2)), "sum")


# -- the kept set ---------------------------------------------------------------------------
def test_keep_mask_is_a_pure_function_of_seed_epoch_and_id():
    ids = np.arange(0, 50_000, 7)
    a = bns.keep_mask(ids, 0.3, seed=5, epoch=2)
    # Asked in pieces, in another order: the same decisions (what lets the
    # owner and every reader of a vertex agree without talking).
    perm = np.random.default_rng(0).permutation(ids.size)
    b = np.empty_like(a)
    for part in np.array_split(perm, 7):
        b[part] = bns.keep_mask(ids[part], 0.3, seed=5, epoch=2)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, bns.keep_mask(ids, 0.3, seed=5, epoch=3))
    assert not np.array_equal(a, bns.keep_mask(ids, 0.3, seed=6, epoch=2))
    assert bns.keep_mask(ids, 1.0, seed=5, epoch=2).all()
    assert not bns.keep_mask(ids, 0.0, seed=5, epoch=2).any()


@pytest.mark.parametrize("q", [0.01, 0.1, 0.5, 0.9])
def test_keep_mask_follows_binomial_q(q):
    n = 200_000
    kept = bns.keep_mask(np.arange(n), q, seed=11, epoch=4)
    # The count of kept vertices is Binomial(n, q): two-sided test at 1e-4.
    p = scipy.stats.binomtest(int(kept.sum()), n, q).pvalue
    assert p > 1e-4, (q, kept.sum(), n * q)
    # Per vertex over epochs: each of 300 vertices kept ~ Binomial(400, q),
    # the 300 counts together tested against that law (chi-square on bins).
    epochs = 400
    counts = sum(bns.keep_mask(np.arange(300), q, seed=11, epoch=e).astype(int)
                 for e in range(epochs))
    mean, var = epochs * q, epochs * q * (1 - q)
    z = (counts.mean() - mean) / np.sqrt(var / counts.size)
    assert abs(z) < 4.5, (q, counts.mean(), mean)
    assert 0.6 < counts.var() / var < 1.5, (q, counts.var(), var)


def test_keep_mask_is_independent_between_epochs():
    ids = np.arange(100_000)
    a = bns.keep_mask(ids, 0.5, seed=1, epoch=0)
    b = bns.keep_mask(ids, 0.5, seed=1, epoch=1)
    # P(kept twice) = q^2 for independent epochs.
    both = int((a & b).sum())
    assert scipy.stats.binomtest(both, ids.size, 0.25).pvalue > 1e-4


@pytest.mark.parametrize("q", [-0.1, 1.5, float("nan"), "0.5", True])
def test_keep_mask_rejects_a_bad_q(q):
    with pytest.raises(InvalidValue, match=r"keep_mask: argument 'q' must be a probability "
                                           r"in \[0, 1\]"):
        bns.keep_mask([1, 2], q, seed=0, epoch=0)


# -- one process: BNS is full-graph training ------------------------------------------------
@pytest.fixture(scope="module")
def small():
    return load("rmat:7")


@pytest.mark.parametrize("kind", ["gcn", "sage"])
@pytest.mark.parametrize("dropout", [0.0, 0.5])
def test_one_process_equals_plain_full_graph_training(small, kind, dropout):
    t = bns.BNSTrainer(small, model=kind, boundary_keep=0.3, hidden=8, layers=2,
                       dropout=dropout, seed=3)
    ref = reference_losses(small, t.model, kind, 6, seed=3, dropout=dropout)
    got = [t.train_epoch(e, validate=False).loss for e in range(6)]
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-5)
    assert got[-1] < got[0]


def test_sparse_features_train_like_dense_ones():
    # Cora's bag-of-words features are held as a sparse tensor: the same
    # losses as the dense reference (3-layer GCN: also a hidden-to-hidden layer).
    ds = load("cora")
    t = bns.BNSTrainer(ds, hidden=16, layers=3, dropout=0.5)
    assert t.x.is_sparse
    ref = reference_losses(ds, t.model, "gcn", 3, dropout=0.5)
    got = [t.train_epoch(e, validate=False).loss for e in range(3)]
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-5)


def test_one_rank_sample_and_report(small):
    G = bns.BoundaryGraph(spla.distribute(bns.normalized_adjacency(small.A)))
    S = G.sample(0.5, seed=0, epoch=0)
    assert G.num_boundary == 0 and S.num_kept == 0 and not S.communicates
    assert S.adj.isequal(G.local) and G.local.shape == (small.num_nodes, small.num_nodes)
    t = bns.BNSTrainer(small, hidden=8)
    lines = []
    acc = t.fit(2, log=lines.append)
    assert lines[0] == bns.bns_header() and len(lines) == 3
    s = t.history[-1]
    assert s.epoch == 2 and s.kept.tolist() == [0] and s.total_bytes == 0
    assert 0 <= s.val_acc <= 1 and 0 <= acc <= 1 and s.work_bytes[0] > 0
    table = bns.rank_table(t.history)
    assert table[0].split()[:3] == ["rank", "inner", "boundary"] and len(table) == 3


def test_dropout_by_id_keeps_with_probability_one_minus_p():
    h = torch.ones(400, 50)
    out = bns.dropout_by_id(h, np.arange(400), 0.3, seed=2, epoch=0, layer=1)
    kept = int((out != 0).sum())
    assert scipy.stats.binomtest(kept, h.numel(), 0.7).pvalue > 1e-4
    np.testing.assert_allclose(out[out != 0].numpy(), 1 / 0.7, rtol=1e-6)
    # A sparse input draws exactly what the dense one does at its entries.
    d = torch.zeros(5, 6)
    d[1, 2], d[4, 0], d[3, 5] = 1.0, 2.0, 3.0
    dense = bns.dropout_by_id(d, [9, 8, 7, 6, 5], 0.5, seed=1, epoch=3, layer=0)
    sparse = bns.dropout_by_id(d.to_sparse(), [9, 8, 7, 6, 5], 0.5, seed=1, epoch=3, layer=0)
    assert torch.equal(sparse.to_dense(), dense)



# -- the device ------------------------------------------------------------------------------
def _cuda():
    return torch.cuda.is_available()


def test_device_given_as_a_name_or_a_torch_device_trains_alike(small):
    losses = []
    for device in ("cpu", torch.device("cpu")):
        t = bns.BNSTrainer(small, boundary_keep=0.5, hidden=8, dropout=0.5, seed=1,
                           device=device)
        assert t.device == torch.device("cpu") and "on cpu" in t.describe()
        losses.append([t.train_epoch(e, validate=False).loss for e in range(2)])
    assert losses[0] == losses[1]


@pytest.mark.parametrize("device, err, text", [
    ("tpu:0", InvalidValue, "argument 'device' must be a device name"),
    (3.5, InvalidValue, "argument 'device' must be a device name"),
])
def test_trainer_rejects_a_bad_device(small, device, err, text):
    with pytest.raises(err, match=f"BNSTrainer: {text}"):
        bns.BNSTrainer(small, device=device)


@pytest.mark.skipif(_cuda(), reason="checks the error of a machine without a CUDA GPU")
def test_trainer_on_a_gpu_it_cannot_see_says_so(small):
    from spla.exceptions import MissingDependency
    with pytest.raises(MissingDependency, match="BNSTrainer: argument 'device' is 'cuda', but "
                                                "this PyTorch build sees no CUDA GPU"):
        bns.BNSTrainer(small, device="cuda")


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("dataset, kind", [("rmat:7", "gcn"), ("rmat:7", "sage"),
                                           ("cora", "gcn")])
def test_gpu_training_follows_the_cpus(dataset, kind):
    # The same draws (host-made), the same initial parameters: the losses
    # agree up to the rounding of the GPU's sparse products.
    ds = load(dataset)
    runs = []
    for device in ("cpu", "cuda"):
        t = bns.BNSTrainer(ds, model=kind, boundary_keep=0.5, hidden=16, dropout=0.5,
                           seed=2, device=device)
        runs.append([t.train_epoch(e, validate=False).loss for e in range(4)])
        assert t.x.device.type == device and all(p.device.type == device
                                                 for p in t.model.parameters())
        runs[-1].append(t.evaluate("test"))
    np.testing.assert_allclose(runs[1][:4], runs[0][:4], rtol=0, atol=1e-4)
    assert abs(runs[1][4] - runs[0][4]) <= 0.02



@pytest.mark.gpu
@pytest.mark.skipif(not _cuda(), reason="needs a CUDA GPU")
def test_dropout_by_id_on_the_gpu_masks_as_the_cpu():
    # Drawn on the device (spla.random.uniform on cupy arrays): the same keyed masks.
    h = torch.randn(50, 7)
    ids = np.arange(100, 150)
    want = bns.dropout_by_id(h, ids, 0.4, seed=3, epoch=2, layer=1)
    got = bns.dropout_by_id(h.to("cuda"), ids, 0.4, seed=3, epoch=2, layer=1)
    assert got.device.type == "cuda" and torch.equal(got.cpu(), want)

# -- bad input ------------------------------------------------------------------------------
@pytest.mark.parametrize("kw, err, text", [
    (dict(boundary_keep=1.5), InvalidValue, "argument 'boundary_keep' must be a probability"),
    (dict(boundary_keep=-0.01), InvalidValue, "argument 'boundary_keep' must be a probability"),
    (dict(layers=0), InvalidValue, "argument 'layers' must be"),
    (dict(model="gat"), InvalidValue, "argument 'model' must be 'gcn' or 'sage'"),
    (dict(partition="random"), InvalidValue, "argument 'partition' must be 'block', 'metis'"),
    (dict(partition=spla.Partition([0, 1] * 64, 2)), InvalidValue,
     "argument 'partition' must be a partition into 1 parts"),
    (dict(dropout=1.0), InvalidValue, "argument 'dropout' must be a probability in"),
    (dict(layers=257), InvalidValue, "argument 'layers' must be a depth in \\[1, 256\\]"),
    (dict(hidden=0), InvalidValue, "argument 'hidden' must be"),
    (dict(lr=0.0), InvalidValue, "argument 'lr' must be a finite number > 0"),
    (dict(weight_decay=-1e-4), InvalidValue, "argument 'weight_decay' must be a finite "
     "number >= 0"),
])
def test_trainer_rejects_bad_arguments(small, kw, err, text):
    with pytest.raises(err, match=f"BNSTrainer: {text}"):
        bns.BNSTrainer(small, **kw)


def test_model_rejects_bad_arguments():
    with pytest.raises(InvalidValue, match="BNSModel: argument 'dropout' must be a probability"):
        bns.BNSModel("gcn", 4, 8, 2, dropout=-0.1)
    with pytest.raises(InvalidValue, match="BNSModel: argument 'model' must be 'gcn' or 'sage'"):
        bns.BNSModel("gat", 4, 8, 2)


def test_trainer_rejects_a_non_dataset():
    with pytest.raises(DTypeError, match="BNSTrainer: argument 'dataset' must be a "
                                         "sampling.datasets.Dataset"):
        bns.BNSTrainer(object())


def test_boundary_graph_rejects_a_local_matrix():
    with pytest.raises(DTypeError, match="BoundaryGraph: argument 'D' must be a "
                                         "spla.DistMatrix"):
        bns.BoundaryGraph(spla.Matrix.from_dense(np.eye(2)))


# -- the package ----------------------------------------------------------------------------
def test_package_exports_every_public_name_from_its_module():
    import importlib
    homes = {"graph": ["normalized_adjacency", "keep_mask", "BoundaryGraph", "BoundarySample"],
             "halo": ["CommStats", "exchange"], "model": ["dropout_by_id", "BNSModel"],
             "report": ["bns_header", "format_bns_row", "rank_table"],
             "trainer": ["BNSTrainer", "BNSEpochStats"]}
    placed = [name for names in homes.values() for name in names]
    assert sorted(placed + ["MODELS", "KINDS"]) == sorted(bns.__all__)
    for module, names in homes.items():
        mod = importlib.import_module(f"sampling.train.bns.{module}")
        for name in names:
            assert getattr(bns, name) is getattr(mod, name), name


def test_bns_tables_use_the_main_jobs_line_format():
    from sampling.train.report import header, table_line
    assert bns.bns_header().split("  ")[:3] == header().split("  ")[:3]
    cols = [("a", 3), ("bb", 4)]
    assert table_line(cols) == "  a    bb" and table_line(cols, ["1", "22"]) == "  1    22"


# -- the main job -----------------------------------------------------------------------------
def test_main_job_bns_mode(capsys):
    from sampling.train import main
    rc = main(["--mode", "bns", "--dataset", "rmat:7", "--boundary-keep", "0.5", "--epochs",
               "2", "--hidden", "8", "--model", "sage", "--threads", "1"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "BNS-GCN: model sage 2 layers x 8, boundary keep q = 0.5" in out
    assert bns.bns_header() in out and "max/mean" in out
    assert out.strip().splitlines()[-1].startswith("test accuracy: ")


@pytest.mark.parametrize("argv, text", [
    (["--mode", "bns", "--boundary-keep", "1.5"], "argument --boundary-keep: expected a "
                                                  "fraction in [0, 1], got '1.5'"),
    (["--boundary-keep", "0.5"], "--boundary-keep applies to --mode bns"),
    (["--model", "sage"], "--model sage applies to --mode bns"),
    (["--mode", "bns", "--fanouts", "5,5"], "--fanouts applies to --mode sampled"),
    (["--mode", "bns", "--graph", "partitioned"], "--graph applies to --mode sampled"),
    (["--mode", "bns", "--sample-on", "cpu"], "--sample-on applies to --mode sampled"),
])
def test_main_job_refuses_options_that_do_not_apply(capsys, argv, text):
    from sampling.train import main
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse's own errors
        rc = exc.code
    err = capsys.readouterr().err
    assert rc == 2 and text in err, err


@pytest.mark.skipif(_cuda(), reason="checks the error of a machine without a CUDA GPU")
def test_main_job_bns_on_a_gpu_it_cannot_see_says_so(capsys):
    # --device applies to --mode bns (the model on the GPU): no refusal of
    # the option, the missing GPU named instead.
    from sampling.train import main
    rc = main(["--mode", "bns", "--dataset", "rmat:6", "--device", "cuda", "--epochs", "1"])
    err = capsys.readouterr().err
    assert rc == 2 and "--device cuda: this PyTorch build sees no CUDA GPU" in err, err
