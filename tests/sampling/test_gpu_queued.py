"""Queued bulks on the GPU path, under the CUDA simulator with cupy stood in for.

``Sampler.sample(wait=False)`` and ``spla.sample_hops(wait=False)`` queue a
bulk's fused hops and leave its one blocking read to ``wait()``;
``NodeLoader`` queues the next bulk before waiting for this one; host
minibatches are stacked and checked on the host.  The stand-in
(``tests/fake_cupy.py``) counts every read and launch; the minibatches are
compared with the CPU's.  Run in the simulator child of
``tests/kernels/test_cuda_kernels.py`` (``SIM_FILES``), skipped elsewhere.
"""

import numpy as np
import pytest

from test_gpu_path import READS_PER_BULK, _graph, _host, _seeds, assert_same_minibatches

from sim_marks import sim

pytestmark = sim


@pytest.fixture(scope="module")
def cp():
    """The cupy stand-in, installed for this module's tests only."""
    import fake_cupy
    with fake_cupy.installed() as mod:
        yield mod


def test_sim_wait_false_leaves_the_read_to_wait(cp):
    """``sample(wait=False)`` queues a bulk's launches and returns before its
    one read; two bulks can be in flight, and each ``wait()`` gives the
    minibatches that ``wait=True`` gives, with the one read."""
    import fake_cupy
    import spla
    from sampling import GraphSAGE
    A, _ = _graph(seed=6)
    seeds = [cp.asarray(s) for s in _seeds(A.nrows, k=4)]
    s = GraphSAGE(A.to("cuda"), [3, 2])
    want = [s.sample(seeds, seed=2, epoch=e) for e in (1, 2)]
    fake_cupy.reset()
    first = s.sample(seeds, seed=2, epoch=1, wait=False)
    second = s.sample(seeds, seed=2, epoch=2, wait=False)
    assert isinstance(first, spla.Pending) and not first.done and not second.done
    assert fake_cupy.STATS["reads"] == 0 and fake_cupy.STATS["launches"] > 0, fake_cupy.STATS
    got = [first.wait()]
    assert fake_cupy.STATS["reads"] == READS_PER_BULK
    got.append(second.wait())
    assert fake_cupy.STATS["reads"] == 2 * READS_PER_BULK
    for g, w in zip(got, want):
        assert_same_minibatches(g, w)
    nodes = cp.concatenate(seeds)
    ptr = np.cumsum([0] + [x.size for x in seeds])
    fake_cupy.reset()
    p = spla.sample_hops(A.to("cuda"), nodes, ptr, [3, 2], seed=2, streams=[0, 1],
                         check=False, wait=False)
    assert fake_cupy.STATS["reads"] == 0 and not p.done
    assert len(p.wait()) == 2 and fake_cupy.STATS["reads"] == 1


def test_sim_wait_false_raises_a_bad_seed_in_wait(cp):
    """A repeated seed the GPU's hops find is raised by ``wait()``, with the
    error the CPU's call raises."""
    from sampling import GraphSAGE
    from spla.exceptions import SplaError
    A, _ = _graph(seed=4)
    seeds = _seeds(A.nrows, k=3)
    seeds[1][3] = seeds[1][0]
    with pytest.raises(SplaError) as cpu:
        GraphSAGE(A, [3, 2]).sample(seeds, seed=1)
    p = GraphSAGE(A.to("cuda"), [3, 2]).sample([cp.asarray(x) for x in seeds], seed=1,
                                               wait=False)
    for _ in range(2):
        with pytest.raises(SplaError) as gpu:
            p.wait()
        assert (type(gpu.value), str(gpu.value)) == (type(cpu.value), str(cpu.value))


def test_sim_loader_queues_the_next_bulk_before_reading_this_one(cp, monkeypatch):
    """NodeLoader on a GPU graph: when the first minibatch comes out, the
    second bulk has been launched too and only the first bulk's read was
    made; the epoch's minibatches are those of the loader on the CPU graph."""
    import fake_cupy
    import kernels.cuda.hops as hops
    from sampling import GraphSAGE, NodeLoader
    A, _ = _graph(seed=8)
    seeds = np.arange(0, A.nrows, 2)
    kw = dict(batch_size=6, bulk=2, seed=4)
    cpu = NodeLoader(GraphSAGE(A, [3, 2]), seeds, **kw)
    list(cpu)
    want = list(cpu)  # epoch 1
    loader = NodeLoader(GraphSAGE(A.to("cuda"), [3, 2]), seeds, **kw)
    list(loader)  # epoch 0: compiles, and the graph's one-off work
    events = []
    launch, finish = hops.launch_hops, hops.LaunchedHops.finish

    def launched(*args, **kwargs):
        events.append("launch")
        return launch(*args, **kwargs)

    def finished(self):
        events.append("read")
        return finish(self)

    monkeypatch.setattr(hops, "launch_hops", launched)
    monkeypatch.setattr(hops.LaunchedHops, "finish", finished)
    fake_cupy.reset()
    it = iter(loader)  # epoch 1
    first = next(it)
    assert events == ["launch", "launch", "read"], events
    assert fake_cupy.STATS["reads"] == READS_PER_BULK, fake_cupy.STATS
    got = [first] + list(it)
    assert events == ["launch", "launch", "read", "read"], events  # 4 minibatches, bulks of 2
    assert fake_cupy.STATS["reads"] == 2 * READS_PER_BULK
    assert len(got) == 4
    assert_same_minibatches(got, want)


def test_sim_host_minibatches_are_stacked_on_the_host(cp, monkeypatch):
    """Minibatches given as host arrays to a GPU sampler (a loader's are) are
    checked and stacked on the host and uploaded once: two uploads per bulk
    (the vertices and their pointer) whatever its size, no read for the
    check (LADIES' bulk reads two values fewer than with device minibatches:
    the check's, and its first layer's count of the rows it sums, made on
    the host),
    the same minibatches, and a repeated vertex raises the CPU's error."""
    import fake_cupy
    from sampling import LADIES
    from sampling.samplers.batches import stack_batches
    from spla.exceptions import SplaError
    A, _ = _graph(seed=5)
    seeds = _seeds(A.nrows, k=5)
    uploads = []
    real = cp.asarray

    def counted(a, *args, **kw):
        if type(a) is np.ndarray or isinstance(a, list):
            uploads.append(len(a))
        return real(a, *args, **kw)

    monkeypatch.setattr(cp, "asarray", counted)
    fake_cupy.reset()
    B = stack_batches("f", seeds, A.nrows, cp)
    assert len(uploads) == 2 and fake_cupy.STATS["reads"] == 0, (uploads, fake_cupy.STATS)
    assert isinstance(B.nodes, cp.ndarray)
    assert np.array_equal(_host(B.nodes), np.concatenate(seeds))
    monkeypatch.setattr(cp, "asarray", real)
    s = LADIES(A.to("cuda"), [6, 5])
    s.sample([cp.asarray(x) for x in seeds], seed=3)  # compiles
    reads = {}
    for kind, given in (("device", [cp.asarray(x) for x in seeds]), ("host", seeds)):
        fake_cupy.reset()
        got = s.sample(given, seed=3)
        reads[kind] = fake_cupy.STATS["reads"]
        assert_same_minibatches(got, LADIES(A, [6, 5]).sample(seeds, seed=3))
    assert reads["host"] == reads["device"] - 2, reads
    seeds[2][1] = seeds[2][0]
    with pytest.raises(SplaError) as cpu:
        LADIES(A, [6, 5]).sample(seeds, seed=3)
    fake_cupy.reset()
    with pytest.raises(SplaError) as gpu:
        s.sample(seeds, seed=3)
    assert (type(gpu.value), str(gpu.value)) == (type(cpu.value), str(cpu.value))
    assert fake_cupy.STATS["reads"] == 0


def test_sim_wait_reads_on_the_launch_stream(cp, monkeypatch):
    """``wait()`` reads a bulk's sizes on the stream its kernels were queued on,
    whichever thread calls it and whatever stream is current there (a read
    on another stream would not wait for the bulk's kernels)."""
    import threading
    from sampling import GraphSAGE
    entered = []

    class Stream:
        def __init__(self, name):
            self.name = name

        def __enter__(self):
            entered.append(self.name)
            return self

        def __exit__(self, *exc):
            return False

    current = {"stream": Stream("launch")}
    monkeypatch.setattr(cp.cuda, "get_current_stream", lambda: current["stream"],
                        raising=False)
    A, _ = _graph(seed=6)
    seeds = [cp.asarray(s) for s in _seeds(A.nrows, k=2)]
    s = GraphSAGE(A.to("cuda"), [3, 2])
    pending = s.sample(seeds, seed=2, wait=False)
    current["stream"] = Stream("elsewhere")
    done = []
    t = threading.Thread(target=lambda: done.append(pending.wait()))
    t.start()
    t.join(120)
    assert len(done) == 1 and len(done[0]) == 2
    assert entered == ["launch"], entered
