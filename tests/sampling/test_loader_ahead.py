"""NodeLoader keeps one bulk queued ahead when the sampler's device work can run
ahead of the host (``Sampler.sample(wait=False)`` returns a ``spla.Pending``
that is not done: a node-wise sampler on a GPU graph).

A GPU is stood in for by a sampler whose ``_sample_stacked`` returns its
layers behind a ``Pending`` that is not done, logging when each bulk is
launched and waited for: the order of those events is the loader's
schedule, and the minibatches must be the plain sampler's.  The GPU path
itself runs in ``tests/sampling/test_gpu_path.py`` (CUDA simulator).
"""

import numpy as np
import pytest

import spla
import spla.generators
from sampling import GraphSAGE, NodeLoader

torch = pytest.importorskip("torch")


class DeferredSAGE(GraphSAGE):
    """GraphSAGE whose bulks wait like a GPU's: launched by ``sample``, built by ``wait``."""

    def __init__(self, A, fanouts, log):
        super().__init__(A, fanouts)
        self.log = log

    def _sample_stacked(self, B, seed, epoch):
        layers = super()._sample_stacked(B, seed, epoch)
        bulk = B.ids[0]
        self.log.append(("launch", bulk))

        def finish():
            self.log.append(("wait", bulk))
            return layers.wait() if isinstance(layers, spla.Pending) else layers

        return spla.Pending(finish)


def _graph():
    return spla.generators.rmat(8, 8, seed=3).structure()


def _same(got, want):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.input_nodes.tolist() == b.input_nodes.tolist()
        for x, y in zip(a.blocks, b.blocks):
            assert x.adj.isequal(y.adj)


@pytest.mark.parametrize("prefetch", [0, 2])
def test_the_next_bulk_is_launched_before_this_one_is_waited_for(prefetch):
    A = _graph()
    log = []
    seeds = np.arange(0, 200, 3)
    kw = dict(batch_size=10, bulk=2, seed=5, prefetch=prefetch)
    got = list(NodeLoader(DeferredSAGE(A, [4, 3], log), seeds, **kw))
    want = list(NodeLoader(GraphSAGE(A, [4, 3]), seeds, **kw))
    _same(got, want)
    bulks = [0, 2, 4, 6]  # a bulk is logged by its first batch id
    expected = [("launch", 0), ("launch", 2), ("wait", 0)]
    for prev, nxt in zip(bulks[1:], bulks[2:]):
        expected += [("launch", nxt), ("wait", prev)]
    expected.append(("wait", bulks[-1]))
    assert log == expected


def test_a_sampler_done_in_the_call_is_not_run_ahead():
    """On the CPU the bulk is sampled by the call: sampling the next one before
    training on this one would only hold two bulks in memory."""
    A = _graph()
    calls = []

    class Counting(GraphSAGE):
        def _sample_stacked(self, B, seed, epoch):
            calls.append(B.ids[0])
            return super()._sample_stacked(B, seed, epoch)

    it = iter(NodeLoader(Counting(A, [4]), np.arange(40), batch_size=10, bulk=2, seed=1))
    next(it)
    assert calls == [0]


def test_an_epoch_stopped_early_drops_the_bulk_ahead():
    A = _graph()
    log = []
    it = iter(NodeLoader(DeferredSAGE(A, [4], log), np.arange(60), batch_size=10, bulk=2,
                         seed=1))
    next(it)
    it.close()
    assert log == [("launch", 0), ("launch", 2), ("wait", 0)]
    with pytest.raises(StopIteration):
        next(it)


def test_bulks_in_flight_give_the_minibatches_of_single_calls(backend):
    """Two bulks queued (``wait=False``) and waited for out of order give the
    minibatches of one ``wait=True`` call, on every backend this machine has
    (on a GPU the second bulk runs behind the first on the device)."""
    A = _graph()
    rng = np.random.default_rng(4)
    seeds = [rng.choice(A.nrows, 12, replace=False) for _ in range(6)]
    want = GraphSAGE(A, [4, 3]).sample(seeds, seed=2, epoch=1)
    s = GraphSAGE(backend.matrix(A), [4, 3])
    given = [backend.asarray(x) for x in seeds]
    first = s.sample(given[:3], seed=2, epoch=1, wait=False)
    second = s.sample(given[3:], seed=2, epoch=1, batch_ids=[3, 4, 5], wait=False)
    got = second.wait()
    got = first.wait() + got
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert backend.host(a.input_nodes).tolist() == b.input_nodes.tolist()
        for x, y in zip(a.blocks, b.blocks):
            assert x.adj.device == backend.device
            assert x.adj.to("cpu").isequal(y.adj)


def test_a_sampler_with_its_own_sample_is_called_as_before():
    """A subclass that overrides ``sample`` with the signature it had before
    ``wait`` existed still samples through the loader."""
    A = _graph()
    calls = []

    class Logged(GraphSAGE):
        def sample(self, batches, *, seed, epoch=0, batch_ids=None):
            calls.append(list(batch_ids))
            return super().sample(batches, seed=seed, epoch=epoch, batch_ids=batch_ids)

    got = list(NodeLoader(Logged(A, [4]), np.arange(40), batch_size=10, bulk=2, seed=1))
    want = list(NodeLoader(GraphSAGE(A, [4]), np.arange(40), batch_size=10, bulk=2, seed=1))
    _same(got, want)
    assert calls == [[0, 1], [2, 3]]
