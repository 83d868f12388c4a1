"""P3 under mpiexec (any number of ranks): column store, push-pull, training, errors, bytes.

* every rank's ``ColumnFeatureStore`` holds exactly ``x[:, f*r//p : f*(r+1)//p]``
  (dense, sparse, ``from_local``; f not divisible by p), and the ranges tile
  the columns;
* ``PushPull`` forward equals the dense product ``x[ids] @ W`` of this
  rank's minibatch and its backward the full gradient's rows of this
  rank's columns (float64, 1e-10), with ranks of different batch sizes
  and a rank without a minibatch;
* a few SGD steps of GraphSAGE and GCN with ``P3Model`` give the losses
  and (gathered) parameters of the data-parallel row-fetch run to 1e-5;
* more ranks than columns, mismatched widths, a model whose first layer is
  not linear, and a bad argument on one rank raise on every rank;
* ``share_inputs`` (each rank samples only its own minibatch) gives every
  rank the layer-1 inputs that sampling every minibatch gives, and
  ``P3Model`` the same output from them;
* the bytes counted by ``spla.comm`` equal ``byte_model``'s for both
  strategies.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import scipy.sparse as sp
import torch

import spla
from spla import comm as C
from spla.exceptions import DimensionMismatch, InvalidValue, LayoutError
from sampling import GraphSAGE as SageSampler
from sampling.loading.features import FeatureStore
from sampling.models import GCN, SAGE as GraphSAGE
from sampling.train.p3 import (ColumnFeatureStore, P3Model, PushPull, PushPullPlan, StepInput,
                         byte_model, column_range, share_inputs)


def raises_everywhere(comm, cls, bad_call, good_call, text, bad=None, marked=True):
    """``bad_call`` on rank ``bad`` (default min(1, p-1)), ``good_call`` elsewhere: same error.

    ``marked``: the other ranks' message ends ``[raised on rank b of p]``
    (an agreed local check); False for a comparison of every rank's values,
    whose message is the same everywhere.
    """
    bad = min(1, comm.size - 1) if bad is None else bad
    with pytest.raises(cls) as info:
        (bad_call if comm.rank == bad else good_call)()
    seen = comm.allgather((type(info.value).__name__, str(info.value)))
    assert {name for name, _ in seen} == {cls.__name__}, seen
    assert text in seen[bad][1], seen[bad][1]
    for r, (_, msg) in enumerate(seen):
        want = (seen[bad][1] if r == bad or not marked
                else seen[bad][1] + f" [raised on rank {bad} of {comm.size}]")
        assert msg == want, (r, seen)
    comm.Barrier()


def shapes(p):
    return [(7, p), (13, p + 3), (5, 2 * p + 1), (3, 17)]


@pytest.mark.parametrize("kind", ["dense", "sparse", "from_local"])
def test_store_holds_its_columns(comm, kind):
    p, r = comm.size, comm.rank
    for n, f in shapes(p):
        rng = np.random.default_rng(n * 100 + f)
        x = rng.standard_normal((n, f))
        x[rng.random((n, f)) < 0.5] = 0.0
        s, e = f * r // p, f * (r + 1) // p
        if kind == "dense":
            store = ColumnFeatureStore(x, comm=comm)
        elif kind == "sparse":
            store = ColumnFeatureStore(sp.csr_matrix(x), comm=comm)
            assert store.sparse
        else:
            store = ColumnFeatureStore.from_local(x[:, s:e], f, comm=comm)
        assert store.columns == (s, e) == column_range(f, p, r)
        assert store.shape == (n, f)
        ids = rng.integers(0, n, 11)
        want = x[ids][:, s:e]
        np.testing.assert_array_equal(store.gather(ids), want.astype(store.dtype))
        ranges = comm.allgather(store.columns)
        assert ranges[0][0] == 0 and ranges[-1][1] == f
        assert all(a[1] == b[0] and a[0] < a[1] for a, b in zip(ranges, ranges[1:] + [(f, f + 1)]))


# Derandomised, so every rank draws the same examples (the store is collective).
@settings(derandomize=True, database=None, max_examples=15, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(n=st.integers(1, 12), extra=st.integers(0, 9), sparse=st.booleans(),
       seed=st.integers(0, 2 ** 32 - 1))
def test_store_matches_numpy_slices_drawn(comm, n, extra, sparse, seed):
    p, r = comm.size, comm.rank
    f = p + extra  # divisible by p or not
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, f))
    x[rng.random((n, f)) < 0.3] = 0.0
    store = ColumnFeatureStore(sp.csr_matrix(x) if sparse else x, comm=comm)
    s, e = f * r // p, f * (r + 1) // p
    assert store.columns == (s, e) and e > s
    ids = rng.integers(0, n, 7)
    np.testing.assert_array_equal(store.gather(ids), x[ids, s:e])
    pieces = comm.allgather(store.gather(ids))
    np.testing.assert_array_equal(np.concatenate(pieces, axis=1), x[ids])


def test_more_ranks_than_columns_raises_everywhere(comm):
    p = comm.size
    x = np.ones((4, p - 1))
    with pytest.raises(LayoutError, match="at least as many columns as ranks"):
        ColumnFeatureStore(x, comm=comm)
    with pytest.raises(LayoutError, match="at least as many columns as ranks"):
        ColumnFeatureStore.from_local(np.ones((4, 0)), p - 1, comm=comm)
    comm.Barrier()


def test_bad_features_on_one_rank_raise_everywhere(comm):
    p = comm.size
    good = np.ones((4, p + 1))
    bad = good.copy()
    bad[2, 0] = np.nan
    raises_everywhere(comm, InvalidValue, lambda: ColumnFeatureStore(bad, comm=comm),
                      lambda: ColumnFeatureStore(good, comm=comm), "finite values")
    if p > 1:
        raises_everywhere(comm, DimensionMismatch,
                          lambda: ColumnFeatureStore(np.ones((5, p + 1)), comm=comm),
                          lambda: ColumnFeatureStore(good, comm=comm), "same shape",
                          marked=False)


def test_model_errors_raise_everywhere(comm):
    p = comm.size
    f = p + 2
    store = ColumnFeatureStore(np.ones((6, f)), comm=comm)
    torch.manual_seed(0)
    good = GraphSAGE(f, 4, 3, num_layers=2, dropout=0.0)
    wide = GraphSAGE(f + 1, 4, 3, num_layers=2, dropout=0.0)

    class MLPFirst(torch.nn.Module):  # a first layer that is not linear in its input
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList([torch.nn.Sequential(torch.nn.Linear(f, 4),
                                                                   torch.nn.ReLU())])

    raises_everywhere(comm, DimensionMismatch, lambda: P3Model(wide, store),
                      lambda: P3Model(good, store), "input width")
    raises_everywhere(comm, InvalidValue, lambda: P3Model(MLPFirst(), store),
                      lambda: P3Model(good, store), "linear in its input")
    # All ranks wrong together: every rank raises its own error.
    with pytest.raises(InvalidValue, match=r"SAGE \(GraphSAGE\) or GCN"):
        P3Model(MLPFirst(), store)
    comm.Barrier()


def _step_ids(p, n, seed):
    """Every rank's layer-1 rows (different sizes; the last rank has none when p > 1)."""
    rng = np.random.default_rng(seed)
    ids = [rng.integers(0, n, 3 + 2 * i) for i in range(p)]
    if p > 1:
        ids[-1] = ids[-1][:0]
    return ids


def test_push_pull_equals_dense_first_layer(comm):
    p, r = comm.size, comm.rank
    n, f, h = 17, 2 * p + 3, 5
    rng = np.random.default_rng(3)
    x = rng.standard_normal((n, f))
    W = [rng.standard_normal((f, h)), rng.standard_normal((f, h))]
    ids = _step_ids(p, n, 4)
    roots = [len(a) // 2 for a in ids]
    plan = PushPullPlan([len(a) for a in ids], [roots, [len(a) for a in ids]])
    R = [[np.random.default_rng(100 + i * 2 + k).standard_normal((m, h))
          for k, m in enumerate((roots[i], len(ids[i])))] for i in range(p)]
    for store in (ColumnFeatureStore(x, comm=comm), ColumnFeatureStore(sp.csr_matrix(x),
                                                                       comm=comm)):
        s, e = store.columns
        ws = [torch.tensor(w[s:e], requires_grad=True) for w in W]
        outs = PushPull.apply(store.rows(np.concatenate(ids)), plan, comm, *ws)
        mine = ids[r]
        for k, m in enumerate((roots[r], len(mine))):
            np.testing.assert_allclose(outs[k].detach().numpy(), x[mine[:m]] @ W[k],
                                       rtol=0, atol=1e-10)
        # loss_i = sum_k <out_k of rank i, R[i][k]>: dL/dW_k = sum_i x[ids_i[:m]]^T R[i][k]
        loss = sum((o * torch.from_numpy(g)).sum() for o, g in zip(outs, R[r]))
        loss.backward()
        for k in range(2):
            full = sum(x[ids[i][:(roots[i], len(ids[i]))[k]]].T @ R[i][k] for i in range(p))
            np.testing.assert_allclose(ws[k].grad.numpy(), full[s:e], rtol=0, atol=1e-10)


def _graph(n, seed):
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(n), 4)
    cols = rng.integers(0, n, rows.size)
    return spla.Matrix.from_coo(rows, cols, shape=(n, n))


def _gather_slices(comm, local):
    """The full (f, hidden) weight from every rank's column slice."""
    return np.concatenate(comm.allgather(local.detach().numpy()), axis=0)


@pytest.mark.parametrize("arch, idle", [("sage", False), ("gcn", False), ("sage", True)])
def test_training_equals_data_parallel_row_fetch(comm, arch, idle):
    """``idle``: the last rank has no minibatch in any step (when p > 1)."""
    p, r = comm.size, comm.rank
    n, f, hidden, classes = 40, 3 * p + 2, 6, 3
    rng = np.random.default_rng(7)
    x = rng.standard_normal((n, f)).astype(np.float32)
    y = torch.from_numpy(rng.integers(0, classes, n))
    A = _graph(n, 8)
    sampler = SageSampler(A, [3, 2])
    Model = GraphSAGE if arch == "sage" else GCN
    torch.manual_seed(11)
    dp = Model(f, hidden, classes, num_layers=2, dropout=0.0)
    torch.manual_seed(11)
    p3 = P3Model(Model(f, hidden, classes, num_layers=2, dropout=0.0),
                 ColumnFeatureStore(x, comm=comm))
    rows = FeatureStore(x, mode="partitioned", comm=comm)
    lr = 0.5
    busy = p - 1 if idle and p > 1 else p
    losses_dp, losses_p3 = [], []

    def sgd(params, total, reduce):
        for q in params:
            g = q.grad.numpy().reshape(-1).astype(np.float64)
            if reduce:
                g = C.allreduce_array(comm, g, "sum", None)
            with torch.no_grad():
                q -= lr * torch.from_numpy(g / total).reshape(q.shape).to(q.dtype)

    for step in range(3):
        seeds = np.random.default_rng(step).permutation(n)[:4 * busy - 1]
        batches = np.array_split(seeds, busy)
        mbs = sampler.sample(batches, seed=5, epoch=step)  # the same on every rank
        mbs = list(mbs) + [None] * (p - busy)
        total = len(seeds)
        mine = mbs[r]
        # data-parallel: fetch this rank's rows (collective), all-reduce every gradient
        xin = torch.from_numpy(rows.fetch(np.zeros(0, np.int64) if mine is None
                                          else mine.input_nodes))
        dp.zero_grad()
        if mine is None:
            loss = torch.zeros(())
            for q in dp.parameters():
                q.grad = torch.zeros_like(q)
        else:
            loss = torch.nn.functional.cross_entropy(dp(xin, mine), y[mine.seeds],
                                                     reduction="sum")
            loss.backward()
        sgd(dp.parameters(), total, True)
        losses_dp.append(float(C.allreduce_array(comm, np.array([loss.item()]), "sum", None)[0]))
        # push-pull: local slices keep their own (complete) gradient
        out = p3(mbs)
        labels = y[:0] if mine is None else y[mine.seeds]
        loss = torch.nn.functional.cross_entropy(out, labels, reduction="sum")
        p3.zero_grad()
        loss.backward()
        for q in p3.replicated_parameters():
            if q.grad is None:
                q.grad = torch.zeros_like(q)
        sgd(p3.replicated_parameters(), total, True)
        sgd(p3.local_parameters(), total, False)
        losses_p3.append(float(C.allreduce_array(comm, np.array([loss.item()]), "sum", None)[0]))
    np.testing.assert_allclose(losses_p3, losses_dp, rtol=1e-5, atol=1e-5)
    assert losses_dp[0] != losses_dp[-1]  # the steps did train
    first = dp.layers[0]
    pairs = ([(first.lin_root.weight, p3.w_root), (first.lin_neigh.weight, p3.w_neigh)]
             if arch == "sage" else [(first.lin.weight, p3.w)])
    for full, local in pairs:
        np.testing.assert_allclose(_gather_slices(comm, local), full.detach().numpy().T,
                                   rtol=1e-5, atol=1e-5)
    for a, b in zip(list(dp.layers[1].parameters()), list(p3.rest[0].parameters())):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-5, atol=1e-5)
    bias = first.lin_root.bias if arch == "sage" else first.bias
    np.testing.assert_allclose(p3.bias.detach().numpy(), bias.detach().numpy(), atol=1e-5)


def test_counted_bytes_match_the_byte_model(comm):
    p, r = comm.size, comm.rank
    n, f, hidden, rows_each = 8 * p, p + 5, 4, 6
    x = np.random.default_rng(1).standard_normal((n, f)).astype(np.float32)
    # push-pull: every rank has rows_each rows, one head (GCN-like)
    store = ColumnFeatureStore(x, comm=comm)
    ids = [np.arange(rows_each) + i for i in range(p)]
    w = torch.zeros(store.col_stop - store.col_start, hidden, requires_grad=True)
    with C.counting() as moved:
        (out,) = PushPull.apply(store.rows(np.concatenate(ids)),
                                PushPullPlan([rows_each] * p), comm, w)
        out.sum().backward()
    model = byte_model(f=f, hidden=hidden, batch=rows_each, fanouts=[], p=p, sage=False)
    assert moved["p3.pull"] + moved["p3.gradient"] == model["push_pull"]
    # row fetch: every vertex once, so (p-1)/p of them are remote
    rows = FeatureStore(x, mode="partitioned", comm=comm)
    with C.counting() as moved:
        rows.fetch(np.arange(n))
    model = byte_model(f=f, hidden=hidden, batch=n, fanouts=[], p=p)
    assert moved["features.request"] + moved["features.reply"] == model["row_fetch"]


def test_shared_inputs_equal_sampling_every_minibatch(comm):
    p, r = comm.size, comm.rank
    n, f = 40, p + 3
    x = np.random.default_rng(2).standard_normal((n, f))
    A = _graph(n, 3)
    sampler = SageSampler(A, [3, 2])
    batches = np.array_split(np.arange(0, n, 3), p)
    everyone = sampler.sample(batches, seed=9, epoch=1)
    mine = sampler.sample([batches[r]], seed=9, epoch=1, batch_ids=[r])[0]
    if p > 1 and r == p - 1:
        mine, everyone = None, list(everyone[:-1]) + [None]
    elif p > 1:
        everyone = list(everyone[:-1]) + [None]
    with C.counting() as moved:
        shared = share_inputs(mine, comm)
    own = 0 if mine is None else mine.input_nodes.size
    assert moved["p3.inputs"] == (p - 1) * own * 8
    for got, want in zip(shared, everyone):
        if want is None:
            assert got is None
        else:
            np.testing.assert_array_equal(got.input_nodes, want.input_nodes)
            assert got.num_dst == want.blocks[0].num_dst
    torch.manual_seed(3)
    net = P3Model(GraphSAGE(f, 4, 3, num_layers=2, dropout=0.0).double(),
                  ColumnFeatureStore(x, comm=comm))
    step = list(shared)
    step[r] = mine
    out_shared = net(step)
    out_all = net(everyone)
    np.testing.assert_allclose(out_shared.detach().numpy(), out_all.detach().numpy(), atol=1e-12)
    # Own entry must be the MiniBatch: a StepInput there on one rank stops every rank.
    # (Rank 0 always has a minibatch; every rank takes part.)
    wrong = list(step)
    wrong[0] = StepInput(np.zeros(1, np.int64), 0) if r == 0 else wrong[0]
    raises_everywhere(comm, DimensionMismatch, lambda: net(wrong), lambda: net(step),
                      "a MiniBatch of 2 blocks", bad=0)
