"""NodeLoader (epochs, bulks, prefetch, features and labels, threads, errors)
and GraphSAGE's fanout -1 (every neighbour).

References are independent of the loader: the minibatches of an epoch are
those of ``epoch_batches`` sampled one at a time with their ids, features
and labels are numpy indexing of the inputs, and a -1 layer is compared with
the rows of the scipy adjacency.
"""

import gc
import sys
import threading
import time

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_array_equal

import spla
from spla.exceptions import (DimensionMismatch, DTypeError, IndexOutOfRange, InvalidValue,
                             MissingDependency)
from sampling import (ALL_NEIGHBORS, BulkPlanner, FastGCN, FeatureStore, GraphSAGE, LADIES,
                      NodeLoader, epoch_batches)
from sampling.datasets import load
from sampling.loading.epochs import count_batches as _count_batches, cut as _cut
from sampling.loading.loader import DEFAULT_BULK

torch = pytest.importorskip("torch")

PREFETCH_THREAD = "NodeLoader-prefetch"


@pytest.fixture(scope="module")
def cora():
    return load("cora")


@pytest.fixture(scope="module")
def sage(cora):
    return GraphSAGE(cora.A, [4, 3])


def reference_epoch(sampler, seeds, batch_size, *, seed, epoch, drop_last=False):
    """Minibatch i of the epoch: epoch_batches' i-th, sampled alone with id i."""
    bs = epoch_batches(seeds, batch_size, seed=seed, epoch=epoch, drop_last=drop_last)
    return [sampler.sample([b], seed=seed, epoch=epoch, batch_ids=[i])[0]
            for i, b in enumerate(bs)]


def prefetch_threads():
    return [t for t in threading.enumerate() if t.name == PREFETCH_THREAD and t.is_alive()]


def host(a):
    return np.asarray(spla.backend.to_host(a))


# ---------------------------------------------------------------------------
# Fanout -1
# ---------------------------------------------------------------------------

def neighbours_in_block(block):
    """{global dst id: set of global src ids} of a block."""
    S = block.to_scipy()
    src, dst = host(block.src_nodes), host(block.dst_nodes)
    return {int(dst[i]): set(src[S.indices[S.indptr[i]:S.indptr[i + 1]]].tolist())
            for i in range(dst.size)}


def scipy_neighbours(S, v):
    return set(S.indices[S.indptr[v]:S.indptr[v + 1]].tolist())


@st.composite
def graphs_and_seeds(draw):
    n = draw(st.integers(1, 24))
    density = draw(st.floats(0.0, 0.6))
    rs = draw(st.integers(0, 2 ** 31 - 1))
    S = sp.random(n, n, density=density, random_state=rs, format="csr")
    S.data[:] = 1.0
    S.sort_indices()
    k = draw(st.integers(1, n))
    seeds = np.random.default_rng(rs).permutation(n)[:k].astype(np.int64)
    return S, seeds


@settings(max_examples=40, deadline=None)
@given(graphs_and_seeds(), st.booleans(), st.integers(0, 2 ** 64 - 1))
def test_all_neighbours_layer_is_the_whole_row(gs, replace, seed):
    """[-1, -1]: every block row is exactly the vertex's row of A, with
    replacement or not (values 1: each neighbour once)."""
    S, seeds = gs
    A = spla.Matrix.from_scipy(S, structural=True)
    mb, = GraphSAGE(A, [-1, -1], replace=replace).sample([seeds], seed=seed)
    for block in mb.blocks:
        got = neighbours_in_block(block)
        assert set(got) == set(host(block.dst_nodes).tolist())
        for v, nb in got.items():
            assert nb == scipy_neighbours(S, v), v
        if replace:
            assert_array_equal(block.to_scipy().data, 1.0)
    # The frontier after the seeds' hop is the seeds then their neighbours.
    hop1 = set(seeds.tolist()).union(*(scipy_neighbours(S, v) for v in seeds.tolist()))
    assert set(host(mb.blocks[0].dst_nodes).tolist()) == hop1


@pytest.mark.parametrize("replace", [False, True])
def test_mixed_fanouts(cora, replace):
    S = cora.A.to_scipy()
    seeds = cora.train_idx[:40]
    mb, = GraphSAGE(cora.A, [-1, 2], replace=replace).sample([seeds], seed=5, epoch=1)
    out = neighbours_in_block(mb.blocks[-1])
    assert all(out[v] == scipy_neighbours(S, v) for v in seeds.tolist())
    assert_array_equal(mb.blocks[-1].to_scipy().data, 1.0)

    def check_two(block):
        """A fanout-2 block: two distinct picks (two draws, folded, with replacement)."""
        B = block.to_scipy()
        deg = np.diff(S.indptr)[host(block.dst_nodes)]
        if replace:
            assert_array_equal(np.asarray(B.sum(axis=1)).ravel(), np.where(deg > 0, 2, 0))
        else:
            assert_array_equal(np.diff(B.indptr), np.minimum(2, deg))
        for v, nb in neighbours_in_block(block).items():
            assert nb <= scipy_neighbours(S, v)

    check_two(mb.blocks[0])
    mb2, = GraphSAGE(cora.A, [2, -1], replace=replace).sample([seeds], seed=5, epoch=1)
    for v, nb in neighbours_in_block(mb2.blocks[0]).items():
        assert nb == scipy_neighbours(S, v)
    check_two(mb2.blocks[-1])


def test_all_neighbours_weighted_takes_positive_weights(cora):
    """Weighted -1: every neighbour of positive weight (weight 0 is never drawn)."""
    w = (np.arange(cora.A.nnz) % 4).astype(np.float32)      # a quarter are 0
    A = cora.A.with_values(w)
    S = A.to_scipy()
    seeds = cora.train_idx[:30]
    mb, = GraphSAGE(A, [-1], weighted=True).sample([seeds], seed=1)
    for v, nb in neighbours_in_block(mb.blocks[0]).items():
        row = slice(S.indptr[v], S.indptr[v + 1])
        assert nb == set(S.indices[row][S.data[row] > 0].tolist())


@pytest.mark.parametrize("fanouts", [[-1], [-1, 3], [3, -1], [-1, -1]])
@pytest.mark.parametrize("replace", [False, True])
def test_all_neighbours_bulk_equals_alone(cora, fanouts, replace):
    sampler = GraphSAGE(cora.A, fanouts, replace=replace)
    batches = epoch_batches(cora.train_idx, 30, seed=2)
    bulk = sampler.sample(batches, seed=9, epoch=3)
    for i, b in enumerate(batches):
        alone, = sampler.sample([b], seed=9, epoch=3, batch_ids=[i])
        assert alone == bulk[i]


def test_all_neighbours_estimate_and_bulk_check(cora):
    maxdeg = int(host(cora.A.row_degrees()).max())
    assert (GraphSAGE(cora.A, [-1, 5]).estimate_bytes(64)
            == GraphSAGE(cora.A, [maxdeg, 5]).estimate_bytes(64))
    # -1 draws nothing with replacement: only the later hops' draws count.
    with_rep = GraphSAGE(cora.A, [-1, 5], replace=True).estimate_bytes(64)
    assert with_rep < GraphSAGE(cora.A, [maxdeg, 5], replace=True).estimate_bytes(64)
    assert with_rep > GraphSAGE(cora.A, [-1, 5]).estimate_bytes(64)
    assert (GraphSAGE(cora.A, [-1], replace=True).estimate_bytes(64)
            == GraphSAGE(cora.A, [-1]).estimate_bytes(64))
    # The bulk check bounds the frontier after a -1 layer and names the later fanout.
    huge = GraphSAGE(cora.A, [-1, 2 ** 31 - 1], replace=True)
    with pytest.raises(InvalidValue) as info:
        huge.sample([cora.train_idx[:64]], seed=0)
    assert "argument 'fanouts[1]'" in str(info.value)
    mb, = GraphSAGE(cora.A, [-1, 3], replace=True).sample([cora.train_idx[:64]], seed=0)
    assert mb.blocks[-1].num_edges == int(host(cora.A.row_degrees())[cora.train_idx[:64]].sum())


@pytest.mark.parametrize("make,arg,text", [
    (lambda A: GraphSAGE(A, [0]), "fanouts[0]", "a positive integer or -1 (all neighbours)"),
    (lambda A: GraphSAGE(A, [5, -2]), "fanouts[1]", "a positive integer or -1 (all neighbours)"),
    (lambda A: GraphSAGE(A, [-1.0]), "fanouts[0]", "an integer"),
    (lambda A: GraphSAGE(A, [2 ** 31]), "fanouts[0]", "-1 (all neighbours) or an integer in"),
    (lambda A: LADIES(A, [-1]), "layer_sizes[0]", "node-wise fanout only"),
    (lambda A: FastGCN(A, [4, -1]), "layer_sizes[1]", "fixed number of vertices per layer"),
    (lambda A: LADIES(A, [0]), "layer_sizes[0]", "a positive integer"),
])
def test_bad_fanouts(cora, make, arg, text):
    with pytest.raises(InvalidValue) as info:
        make(cora.A)
    assert f"argument '{arg}'" in str(info.value) and text in str(info.value), str(info.value)


def test_all_neighbors_constant():
    assert ALL_NEIGHBORS == -1


# ---------------------------------------------------------------------------
# Epochs and the minibatches of an epoch
# ---------------------------------------------------------------------------

def test_epoch_is_the_reference_epoch(cora, sage):
    """Each minibatch is epoch_batches' minibatch i sampled alone with id i."""
    loader = NodeLoader(sage, cora.train_idx, 32, seed=7, bulk=2)
    for epoch in range(2):
        got = list(loader)
        ref = reference_epoch(sage, cora.train_idx, 32, seed=7, epoch=epoch)
        assert len(got) == len(ref) == len(loader) == 5
        assert got == ref
        assert [mb.index for mb in got] == list(range(5))
        assert all(mb.meta["epoch"] == epoch for mb in got)


def test_epochs_differ_and_seed_repeats(cora, sage):
    loader = NodeLoader(sage, cora.train_idx, 20, shuffle=False, seed=3)
    e0, e1 = list(loader), list(loader)
    # The same seeds per minibatch (no shuffle), other neighbourhoods.
    for a, b in zip(e0, e1):
        assert_array_equal(a.seeds, b.seeds)
    assert sum(a != b for a, b in zip(e0, e1)) >= len(e0) - 1
    assert sum(not np.array_equal(a.input_nodes, b.input_nodes) for a, b in zip(e0, e1)) > 0
    again = NodeLoader(sage, cora.train_idx, 20, shuffle=False, seed=3)
    assert list(again) == e0 and list(again) == e1
    other = NodeLoader(sage, cora.train_idx, 20, shuffle=False, seed=4)
    assert list(other) != e0


def test_shuffles_differ_between_epochs_and_cover_the_seeds(cora, sage):
    loader = NodeLoader(sage, cora.train_idx, 32)
    orders = [np.concatenate([host(mb.seeds) for mb in loader]) for _ in range(3)]
    for o in orders:
        assert_array_equal(np.sort(o), np.sort(cora.train_idx))
    assert not np.array_equal(orders[0], orders[1])
    assert not np.array_equal(orders[1], orders[2])


def test_set_epoch(cora, sage):
    loader = NodeLoader(sage, cora.train_idx, 50, seed=1)
    assert loader.epoch == 0
    list(loader)
    assert loader.epoch == 1
    loader.set_epoch(4)
    assert loader.epoch == 4
    it = iter(loader)
    assert it.epoch == 4 and loader.epoch == 5
    assert list(it) == reference_epoch(sage, cora.train_idx, 50, seed=1, epoch=4)
    assert next(iter(loader)).meta["epoch"] == 5
    loader.set_epoch(0)
    fresh = NodeLoader(sage, cora.train_idx, 50, seed=1)
    assert list(loader) == list(fresh)
    for bad in (-1, 2 ** 47, 1.0):
        with pytest.raises(InvalidValue, match="NodeLoader.set_epoch: argument 'epoch'"):
            loader.set_epoch(bad)


@pytest.mark.parametrize("options", [dict(bulk=7), dict(bulk=100), dict(prefetch=1),
                                     dict(bulk=3, prefetch=2), dict(memory_budget="planner")])
def test_bulk_size_and_prefetch_change_nothing(cora, sage, options):
    options = dict(options)
    if options.get("memory_budget") == "planner":
        per = sage.estimate_bytes(24)
        options["memory_budget"] = 3 * per + 1
        assert BulkPlanner(sage, 3 * per + 1).bulk_size(24) == 3
    x, y = cora.x, cora.y
    ref_loader = NodeLoader(sage, cora.train_idx, 24, features=x, labels=y, seed=2, bulk=1)
    loader = NodeLoader(sage, cora.train_idx, 24, features=x, labels=y, seed=2, **options)
    for _ in range(2):
        a, b = list(ref_loader), list(loader)
        assert a == b
        for ma, mb in zip(a, b):
            assert torch.equal(ma.x, mb.x) and torch.equal(ma.y, mb.y)
    if "memory_budget" in options:
        assert loader.bulk == 3


def test_default_bulk(cora, sage):
    assert NodeLoader(sage, cora.train_idx, 10).bulk == DEFAULT_BULK == 16


def test_layerwise_sampler(cora):
    sampler = LADIES(cora.A, [30, 30])
    a = list(NodeLoader(sampler, cora.train_idx, 40, bulk=1, seed=3))
    b = list(NodeLoader(sampler, cora.train_idx, 40, bulk=4, prefetch=1, seed=3))
    assert a == b == reference_epoch(sampler, cora.train_idx, 40, seed=3, epoch=0)


def test_len_drop_last_and_order(cora, sage):
    ids = cora.train_idx[::-1].copy()                         # 140 seeds, given order
    loader = NodeLoader(sage, ids, 32, shuffle=False)
    mbs = list(loader)
    assert len(loader) == len(mbs) == 5
    assert [mb.batch_size for mb in mbs] == [32, 32, 32, 32, 12]
    assert_array_equal(np.concatenate([host(mb.seeds) for mb in mbs]), ids)
    dropped = NodeLoader(sage, ids, 32, shuffle=False, drop_last=True)
    mbs = list(dropped)
    assert len(dropped) == len(mbs) == 4 and all(mb.batch_size == 32 for mb in mbs)
    assert_array_equal(np.concatenate([host(mb.seeds) for mb in mbs]), ids[:128])
    shuffled = NodeLoader(sage, ids, 32, drop_last=True)
    assert len(shuffled) == len(list(shuffled)) == 4
    whole = NodeLoader(sage, ids, 1000)
    mbs = list(whole)
    assert len(whole) == len(mbs) == 1 and mbs[0].batch_size == 140


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 60), st.integers(1, 70), st.integers(1, 5), st.booleans())
def test_cut(N, b, p, drop_last):
    """The cut of an epoch: one process as epoch_batches, p ranks a multiple of p
    minibatches of at most b seeds (exactly b with drop_last)."""
    order = np.random.default_rng(N * 1000 + b).permutation(N)
    try:
        m = _count_batches("f", N, b, p, drop_last)
    except InvalidValue as e:
        if p == 1:
            assert drop_last and b > N
        elif drop_last:
            assert N < p * b
        else:
            # infeasible: p * ceil(N / (p b)) non-empty minibatches need more seeds
            assert p * -(-N // (p * b)) > N
            if N >= p:                   # the batch size the message suggests works
                suggested = int(str(e).split("at least ")[1].split()[0])
                assert suggested > b
                _count_batches("f", N, suggested, p, drop_last)
        return
    parts = _cut(order, b, m, p, drop_last)
    sizes = [c.size for c in parts]
    assert len(parts) == m and all(0 < s <= b for s in sizes)
    cat = np.concatenate(parts)
    if p == 1:
        ref = [order[i:i + b] for i in range(0, N, b)]
        if drop_last:
            ref = [r for r in ref if r.size == b]
        assert [r.tolist() for r in ref] == [c.tolist() for c in parts]
    else:
        assert m % p == 0
        if drop_last:
            assert m == p * (N // (p * b)) and set(sizes) == {b}
            assert_array_equal(cat, order[:m * b])
        else:
            assert m == p * -(-N // (p * b)) and max(sizes) - min(sizes) <= 1
            assert_array_equal(cat, order)


# ---------------------------------------------------------------------------
# Seeds, features and labels
# ---------------------------------------------------------------------------

def test_mask_and_tensor_seeds(cora, sage):
    n = cora.num_nodes
    mask = np.zeros(n, bool)
    mask[cora.train_idx] = True
    ids = np.flatnonzero(mask)
    ref = list(NodeLoader(sage, ids, 30, seed=5))
    assert list(NodeLoader(sage, mask, 30, seed=5)) == ref
    assert list(NodeLoader(sage, torch.from_numpy(mask), 30, seed=5)) == ref
    assert list(NodeLoader(sage, torch.from_numpy(ids), 30, seed=5)) == ref
    assert list(NodeLoader(sage, ids.astype(np.int32).tolist(), 30, seed=5)) == ref


def feature_inputs(cora):
    X = np.random.default_rng(0).random((cora.num_nodes, 6)).astype(np.float64)
    X[X < 0.5] = 0.0
    return X, {
        "numpy": X,
        "numpy_int": (X * 10).astype(np.int32),
        "torch": torch.from_numpy(X),
        "scipy": sp.csr_matrix(X),
        "scipy_coo": sp.coo_matrix(X),
        "spla": spla.Matrix.from_scipy(sp.csr_matrix(X)),
        "store": FeatureStore(X),
    }


@pytest.mark.parametrize("kind", ["numpy", "numpy_int", "torch", "scipy", "scipy_coo",
                                  "spla", "store"])
def test_x_and_y_contents(cora, sage, kind):
    X, inputs = feature_inputs(cora)
    expect = (X * 10).astype(np.int32).astype(np.float32) if kind == "numpy_int" \
        else X.astype(np.float32)
    labels = cora.y
    for y_in in (labels, torch.from_numpy(labels)):
        loader = NodeLoader(sage, cora.train_idx, 50, features=inputs[kind], labels=y_in,
                            bulk=2)
        for mb in loader:
            assert mb.x.dtype == torch.float32 and mb.x.device.type == "cpu"
            assert_array_equal(mb.x.numpy(), expect[host(mb.input_nodes)])
            assert mb.y.dtype == torch.int64
            assert_array_equal(mb.y.numpy(), labels[host(mb.seeds)])


def test_structural_spla_features_are_ones(cora, sage):
    F = spla.Matrix.from_scipy(sp.identity(cora.num_nodes, format="csr"), structural=True)
    mb = next(iter(NodeLoader(sage, cora.train_idx, 10, features=F)))
    assert_array_equal(mb.x.numpy(), np.eye(cora.num_nodes, dtype=np.float32)[
        host(mb.input_nodes)])


def test_features_or_labels_alone(cora, sage):
    mb = next(iter(NodeLoader(sage, cora.train_idx, 10, labels=cora.y)))
    assert mb.x is None and mb.y is not None
    mb = next(iter(NodeLoader(sage, cora.train_idx, 10, features=cora.x.to_scipy())))
    assert mb.y is None and mb.x.shape[1] == cora.x.shape[1]
    mb = next(iter(NodeLoader(sage, cora.train_idx, 10)))
    assert mb.x is None and mb.y is None


def test_works_without_torch_unless_asked(cora, sage, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)      # import torch fails
    mbs = list(NodeLoader(sage, cora.train_idx, 64))
    assert len(mbs) == 3
    for kw in (dict(features=np.zeros((cora.num_nodes, 2))), dict(labels=cora.y)):
        with pytest.raises(MissingDependency, match="NodeLoader"):
            NodeLoader(sage, cora.train_idx, 64, **kw)


# ---------------------------------------------------------------------------
# Prefetch thread, threads
# ---------------------------------------------------------------------------

class FailingSampler(GraphSAGE):
    """Raises on its ``fail_at``-th call of sample (0-based)."""

    def __init__(self, *args, fail_at=1, **kw):
        super().__init__(*args, **kw)
        self.calls = 0
        self.fail_at = fail_at

    def sample(self, batches, **kw):
        self.calls += 1
        if self.calls - 1 == self.fail_at:
            raise InvalidValue("deliberate failure in bulk 1")
        return super().sample(batches, **kw)


@pytest.mark.parametrize("prefetch", [0, 1, 3])
def test_background_error_is_raised_where_the_bulk_would_be(cora, prefetch):
    sampler = FailingSampler(cora.A, [3], fail_at=1)
    loader = NodeLoader(sampler, cora.train_idx, 10, bulk=2, prefetch=prefetch)
    it = iter(loader)
    got = [next(it), next(it)]                           # bulk 0
    assert [mb.index for mb in got] == [0, 1]
    with pytest.raises(InvalidValue, match="deliberate failure in bulk 1"):
        next(it)
    with pytest.raises(StopIteration):
        next(it)
    assert not prefetch_threads()


@pytest.mark.parametrize("how", ["break", "del", "consumer_error", "close", "exhaust"])
def test_no_leaked_threads(cora, sage, how):
    loader = NodeLoader(sage, cora.train_idx, 5, bulk=1, prefetch=2)
    if how == "break":
        for mb in loader:
            break
    elif how == "del":
        it = iter(loader)
        next(it)
        assert prefetch_threads()                        # it is sampling ahead
        del it
    elif how == "consumer_error":
        def train():
            for mb in loader:
                raise RuntimeError("consumer failed")
        with pytest.raises(RuntimeError, match="consumer failed"):
            train()
    elif how == "close":
        it = iter(loader)
        next(it)
        it.close()
        with pytest.raises(StopIteration):
            next(it)
    else:
        assert len(list(loader)) == 28
    gc.collect()
    assert not prefetch_threads(), threading.enumerate()


def test_prefetch_stays_bounded(cora):
    """The producer samples at most ``prefetch`` bulks ahead of the consumer."""
    class Counting(GraphSAGE):
        calls = 0

        def sample(self, batches, **kw):
            type(self).calls += 1
            return super().sample(batches, **kw)

    sampler = Counting(cora.A, [2])
    loader = NodeLoader(sampler, cora.train_idx, 5, bulk=1, prefetch=2)
    it = iter(loader)
    next(it)
    time.sleep(1.0)                                      # let the producer run ahead
    assert Counting.calls <= 1 + 2
    it.close()


def test_several_threads_iterate_one_loader(cora, sage):
    loader = NodeLoader(sage, cora.train_idx, 35, seed=4, bulk=2, prefetch=1)
    results = {}
    errors = []

    def work():
        try:
            it = iter(loader)
            results[it.epoch] = list(it)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and sorted(results) == [0, 1, 2] and loader.epoch == 3
    for epoch, mbs in results.items():
        assert mbs == reference_epoch(sage, cora.train_idx, 35, seed=4, epoch=epoch)


def test_repr(cora, sage):
    r = repr(NodeLoader(sage, cora.train_idx, 32, features=cora.x.to_scipy(), labels=cora.y))
    for part in ("GraphSAGE", "140 seeds", "batch_size 32", "5 minibatches", "bulk 16",
                 "next epoch 0", "features: sparse", "labels: yes"):
        assert part in r, r


# ---------------------------------------------------------------------------
# Bad arguments
# ---------------------------------------------------------------------------

N_CORA = 2708


@pytest.mark.parametrize("kwargs,exc,arg", [
    (dict(sampler="GraphSAGE"), DTypeError, "sampler"),
    (dict(seeds=np.array([1, 2, 1])), InvalidValue, "seeds"),
    (dict(seeds=np.array([0, N_CORA])), IndexOutOfRange, "seeds"),
    (dict(seeds=np.array([-1, 3])), IndexOutOfRange, "seeds"),
    (dict(seeds=np.zeros(0, np.int64)), InvalidValue, "seeds"),
    (dict(seeds=np.array([0.0, 1.0])), DTypeError, "seeds"),
    (dict(seeds=np.ones((2, 2), np.int64)), InvalidValue, "seeds"),
    (dict(seeds=np.ones(10, bool)), DimensionMismatch, "seeds"),
    (dict(seeds=np.zeros(N_CORA, bool)), InvalidValue, "seeds"),
    (dict(batch_size=0), InvalidValue, "batch_size"),
    (dict(batch_size=2.0), InvalidValue, "batch_size"),
    (dict(batch_size=200, drop_last=True), InvalidValue, "batch_size"),
    (dict(seed=-1), InvalidValue, "seed"),
    (dict(seed=2 ** 64), InvalidValue, "seed"),
    (dict(bulk=0), InvalidValue, "bulk"),
    (dict(bulk=2, memory_budget=10 ** 9), InvalidValue, "bulk"),
    (dict(memory_budget=10), InvalidValue, "memory_budget"),
    (dict(memory_budget=0), InvalidValue, "memory_budget"),
    (dict(prefetch=-1), InvalidValue, "prefetch"),
    (dict(features=np.zeros((10, 3))), DimensionMismatch, "features"),
    (dict(features=np.zeros(N_CORA)), DimensionMismatch, "features"),
    (dict(features=np.zeros((N_CORA, 2), complex)), DTypeError, "features"),
    (dict(features=sp.csr_matrix(np.zeros((N_CORA, 2), complex))), DTypeError, "features"),
    (dict(features=[[0.0]] * N_CORA), DTypeError, "features"),
    (dict(features=FeatureStore(np.zeros((10, 2)))), DimensionMismatch, "features"),
    (dict(labels=np.zeros(N_CORA)), DTypeError, "labels"),
    (dict(labels=np.zeros(5, np.int64)), DimensionMismatch, "labels"),
    (dict(labels=np.full(N_CORA, -3)), InvalidValue, "labels"),
    (dict(labels=np.zeros(N_CORA, np.int64), device="nonsense"), InvalidValue, "device"),
    (dict(device=3), DTypeError, "device"),
])
def test_bad_arguments(cora, sage, kwargs, exc, arg):
    args = dict(sampler=sage, seeds=cora.train_idx, batch_size=32)
    args.update(kwargs)
    with pytest.raises(exc) as info:
        NodeLoader(args.pop("sampler"), args.pop("seeds"), args.pop("batch_size"), **args)
    assert str(info.value).startswith(f"NodeLoader: argument '{arg}'"), str(info.value)


def test_memory_budget_needs_an_estimate(cora):
    from sampling import Sampler

    class NoEstimate(Sampler):
        A = cora.A
        num_layers = 1

        def _sample_stacked(self, B, seed, epoch):  # pragma: no cover - never sampled
            raise AssertionError

    with pytest.raises(InvalidValue, match="argument 'memory_budget'.*estimate_bytes"):
        NodeLoader(NoEstimate(), cora.train_idx, 10, memory_budget=10 ** 9)
    assert NodeLoader(NoEstimate(), cora.train_idx, 10, bulk=3).bulk == 3


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU message")
def test_cuda_device_without_gpu(cora, sage):
    with pytest.raises(MissingDependency, match="argument 'device'"):
        NodeLoader(sage, cora.train_idx, 10, labels=cora.y, device="cuda")


def test_epoch_past_the_range(cora, sage):
    loader = NodeLoader(sage, cora.train_idx, 10)
    loader.set_epoch(2 ** 47 - 1)
    iter(loader)
    with pytest.raises(InvalidValue, match="argument 'epoch'"):
        iter(loader)


def _numba_max_threads():
    import numba
    return numba.config.NUMBA_NUM_THREADS


@pytest.mark.skipif(_numba_max_threads() < 2, reason="needs NUMBA_NUM_THREADS >= 2 to tell "
                    "the caller's thread count from numba's default")
def test_prefetch_thread_uses_the_callers_numba_threads(cora):
    import numba

    seen = []

    class Recording(GraphSAGE):
        def sample(self, batches, **kw):
            seen.append(numba.get_num_threads())
            return super().sample(batches, **kw)

    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        list(NodeLoader(Recording(cora.A, [2]), cora.train_idx, 50, bulk=1, prefetch=1))
    finally:
        numba.set_num_threads(before)
    assert seen == [1, 1, 1]


def test_sampler_on_each_backend(cora, backend):
    """A graph on the GPU: blocks stay there, x and y go to the device; bulks
    of 2 minibatches, so that on a GPU each bulk is queued before the last
    is waited for (``Sampler.sample(wait=False)``), with the same minibatches."""
    device = "cuda" if backend.name == "cupy" else "cpu"
    X = np.random.default_rng(2).random((cora.num_nodes, 4)).astype(np.float32)
    feats = {"numpy": X, "torch": torch.from_numpy(X).to(device),
             "backend": backend.asarray(X)}
    ref = list(NodeLoader(GraphSAGE(cora.A, [3, 2]), cora.train_idx, 40, seed=6))
    for name, F in feats.items():
        loader = NodeLoader(GraphSAGE(backend.matrix(cora.A), [3, 2]), cora.train_idx, 40,
                            features=F, labels=cora.y, seed=6, device=device, prefetch=1,
                            bulk=2)
        got = list(loader)
        assert len(got) == len(ref)
        for mb, r in zip(got, ref):
            assert mb.blocks[0].adj.device == backend.device
            for b, rb in zip(mb.blocks, r.blocks):
                assert (b.to_scipy() != rb.to_scipy()).nnz == 0
                assert_array_equal(host(b.src_nodes), host(rb.src_nodes))
            assert mb.x.device.type == device and mb.y.device.type == device, name
            assert_array_equal(mb.x.cpu().numpy(), X[host(mb.input_nodes)])
            assert_array_equal(mb.y.cpu().numpy(), cora.y[host(mb.seeds)])


def test_iterator_stats_count_what_producing_the_bulks_cost(cora, sage):
    """it.stats: bulks, sampled edges and seconds, with and without prefetch."""
    for prefetch in (0, 2):
        loader = NodeLoader(sage, cora.train_idx, 16, bulk=3, prefetch=prefetch, seed=1)
        it = iter(loader)
        mbs = list(it)
        assert it.stats.bulks == -(-len(mbs) // 3)
        assert it.stats.sampled_edges == sum(mb.num_sampled_edges for mb in mbs) > 0
        assert it.stats.sample > 0 and it.stats.fetch >= 0 and it.stats.wait >= 0
        if not prefetch:
            assert it.stats.wait == 0


def test_stop_with_a_timeout_ends_the_background_thread(cora, sage):
    loader = NodeLoader(sage, cora.train_idx, 8, bulk=1, prefetch=2, seed=1)
    it = iter(loader)
    next(it)
    assert it.stop(5.0) is True
    with pytest.raises(StopIteration):
        next(it)
    assert not [t for t in threading.enumerate() if t.name == PREFETCH_THREAD]


def test_partition_on_one_process_and_its_errors(cora, sage):
    """One process holds the one part: partition= gives the same minibatches as without it;
    a partition of another number of parts, or not a Partition, is refused by name."""
    one = spla.partition.block(cora.A, 1)
    plain = list(NodeLoader(sage, cora.train_idx, 16, seed=2, shuffle=False))
    parted = list(NodeLoader(sage, cora.train_idx, 16, seed=2, shuffle=False, partition=one))
    assert sorted(np.concatenate([mb.seeds for mb in parted]).tolist()) == \
        sorted(np.concatenate([mb.seeds for mb in plain]).tolist())
    with pytest.raises(DTypeError, match="NodeLoader: argument 'partition'"):
        NodeLoader(sage, cora.train_idx, 16, partition=[0, 1])
    with pytest.raises(spla.LayoutError, match=r"NodeLoader: argument 'partition' .*1 part"):
        NodeLoader(sage, cora.train_idx, 16, partition=spla.partition.block(cora.A, 2))
