"""The staging ring (sampling.loading.staging) and the loader's staged prefetch path."""

import threading

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from sampling import GraphSAGE, NodeLoader
from sampling.loading.staging import SlotRing, Staging, staging_for
from spla import Matrix
from spla.exceptions import InvalidValue

torch = pytest.importorskip("torch")


@settings(max_examples=40, deadline=None)
@given(slots=st.integers(1, 4), needs=st.lists(st.integers(0, 50), min_size=1, max_size=12))
def test_ring_order_sizes_and_release_tokens(slots, needs):
    """Slots come in ring order, hold what each bulk needs, and each release
    token is waited for before its slot is handed out again."""
    waited = []
    ring = SlotRing(slots, wait=waited.append)
    expected_tokens = []
    for k, need in enumerate(needs):
        slot = ring.acquire({"x": need})
        assert slot.index == k % slots
        assert slot.capacity["x"] >= need
        if k >= slots:
            expected_tokens.append(("tok", k - slots))
        ring.release(slot, ("tok", k))
    assert waited == expected_tokens


def test_ring_grows_only_when_needed():
    ring = SlotRing(1)
    s = ring.acquire({"x": 10, "y": 2})
    assert s.capacity == {"x": 15, "y": 3} and set(s.grown) == {"x", "y"}
    ring.release(s, None)
    s = ring.acquire({"x": 15, "y": 4})
    assert s.capacity == {"x": 15, "y": 6} and s.grown == ("y",)


def test_ring_blocks_until_release():
    """A slot still held is not handed out: the producer waits for the consumer."""
    ring = SlotRing(1)
    held = ring.acquire({"x": 1})
    got = []
    t = threading.Thread(target=lambda: got.append(ring.acquire({"x": 1}).index))
    t.start()
    t.join(0.2)
    assert t.is_alive() and got == []
    ring.release(held, None)
    t.join(5)
    assert got == [0]


def test_ring_close_wakes_waiter():
    ring = SlotRing(1)
    ring.acquire({})
    errors = []

    def take():
        try:
            ring.acquire({})
        except RuntimeError as e:
            errors.append(str(e))

    t = threading.Thread(target=take)
    t.start()
    ring.close()
    t.join(5)
    assert errors and "closed" in errors[0]


def test_ring_bad_slots():
    with pytest.raises(InvalidValue, match="slots"):
        SlotRing(0)


def test_staging_round_trip_and_slot_reuse():
    """Staged bulks come back identical; a slot is released only by the next take."""
    from sampling.loading.inputs import Inputs
    A, X, y = _loader_inputs()
    inputs = Inputs("f", 60, X, y, "cpu")
    sampler = GraphSAGE(A, [3, 2])
    st_ = Staging(torch, torch.device("cpu"), slots=2)
    rng = np.random.default_rng(0)
    prev = None
    for b in range(5):
        mbs = sampler.sample([rng.choice(60, k, replace=False) for k in (b + 1, 2 * b + 1)],
                             seed=b)
        staged = st_.stage(mbs, inputs, X)
        out = staged.take(prev)
        for a, o in zip(mbs, out):
            assert torch.equal(torch.from_numpy(X[a.input_nodes]), o.x)
            assert torch.equal(torch.from_numpy(y[a.seeds]), o.y)
        prev = staged
    st_.end_epoch(prev)
    assert all(st_.ring._free)


def test_staging_for_argument():
    X = np.ones((3, 2), np.float32)
    from sampling.loading.inputs import Inputs
    inp = Inputs("f", 3, X, None, "cpu")
    with pytest.raises(InvalidValue, match="staging"):
        staging_for("f", inp, 3, X, None, 1, "yes")
    assert staging_for("f", inp, 3, X, None, 0, True) is None


def _loader_inputs(n=60):
    rng = np.random.default_rng(1)
    A = sp.random(n, n, density=0.1, random_state=2, format="csr", dtype=np.float32)
    A.data[:] = 1
    return Matrix.from_scipy(A), rng.random((n, 5), np.float32), rng.integers(0, 4, n)


def _epochs(loader, epochs=2):
    out = []
    for _ in range(epochs):
        out.append([(mb.seeds.tolist(), mb.x.numpy().tobytes(), mb.y.tolist())
                    for mb in loader])
    return out


@pytest.mark.parametrize("prefetch", [1, 3])
def test_loader_staged_prefetch_identical_to_sync(prefetch):
    """The staged prefetch path (forced on the CPU) yields the synchronous minibatches."""
    A, X, y = _loader_inputs()
    seeds = np.arange(0, 60, 2)
    make = lambda **kw: NodeLoader(GraphSAGE(A, [3, 2]), seeds, 4, features=X, labels=y,
                                   bulk=2, seed=5, **kw)
    sync = make()
    staged = make(prefetch=prefetch, staging=True)
    assert staged._staging is not None
    assert _epochs(staged) == _epochs(sync)
    it = iter(staged)
    next(it)
    it.close()   # an early stop hands the held slot back
    assert all(staged._staging[0].ring._free)


def _features_of_kind(kind, X):
    from sampling import FeatureStore
    return {"numpy": X, "numpy-f64": X.astype(np.float64), "numpy-strided": np.asfortranarray(X),
            "store": FeatureStore(X), "scipy": sp.csr_matrix(X), "torch": torch.from_numpy(X)}[kind]


def _epochs_of(loader, epochs=2):
    out = []
    for _ in range(epochs):
        out.append([(mb.seeds.tolist(), None if mb.x is None else mb.x.numpy().tobytes(),
                     None if mb.y is None else mb.y.tolist()) for mb in loader])
    return out


@pytest.mark.parametrize("kind", ["numpy", "numpy-f64", "numpy-strided", "store", "scipy",
                                  "torch"])
@pytest.mark.parametrize("with_labels", [True, False])
def test_staged_inputs_are_gathered_into_the_slot(kind, with_labels, monkeypatch):
    """The staged path gathers every host kind of features (and the labels)
    straight into the ring's buffers, never through the minibatch tensors
    that the synchronous path builds, and yields the same minibatches."""
    from sampling.loading.inputs import Inputs
    A, X, y = _loader_inputs()
    F = _features_of_kind(kind, X)
    seeds = np.arange(0, 60, 3)
    make = lambda **kw: NodeLoader(GraphSAGE(A, [3, 2]), seeds, 4, features=F,
                                   labels=y if with_labels else None, bulk=3, seed=2, **kw)
    want = _epochs_of(make())
    staged = make(prefetch=2, staging=True)

    def refused(self, *a, **kw):
        raise AssertionError("the staged path gathered into minibatch tensors")
    monkeypatch.setattr(Inputs, "gather_x", refused)
    monkeypatch.setattr(Inputs, "gather_y", refused)
    assert staged._staging is not None
    assert _epochs_of(staged) == want
    it = iter(staged)
    assert len(list(it)) == len(want[0])
    # The gather into the slot is the epoch's fetch time, not its copy time.
    assert it.stats.fetch > 0 and it.stats.copy > 0


def test_loader_auto_does_not_stage_on_cpu():
    A, X, y = _loader_inputs()
    ld = NodeLoader(GraphSAGE(A, [2]), np.arange(10), 4, features=X, labels=y, prefetch=1)
    assert ld._staging is None


def _cuda():
    return torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda(), reason="needs a CUDA device")
def test_loader_staged_cuda_identical_to_sync():
    A, X, y = _loader_inputs()
    seeds = np.arange(0, 60, 2)
    make = lambda **kw: NodeLoader(GraphSAGE(A, [3, 2]), seeds, 4, features=X, labels=y,
                                   bulk=2, seed=5, device="cuda", **kw)
    staged = make(prefetch=2)
    assert staged._staging is not None
    for a, b in zip(make(), staged):
        assert b.x.device.type == "cuda"
        assert torch.equal(a.x, b.x) and torch.equal(a.y, b.y)


def test_staging_for_host_tensor_features_only():
    """CPU tensors are staged when asked; the staged loader matches the synchronous one."""
    A, X, y = _loader_inputs()
    T = torch.from_numpy(X)
    seeds = np.arange(40)
    make = lambda **kw: NodeLoader(GraphSAGE(A, [2]), seeds, 8, features=T, labels=y,
                                   bulk=2, seed=1, **kw)
    staged = make(prefetch=2, staging=True)
    assert staged._staging is not None and len(staged._staging[0].ring) == 4
    assert _epochs(staged, 1) == _epochs(make(), 1)
    assert make(prefetch=2, staging=False)._staging is None
