"""sampling.loading.pipeline: the Prefetcher (order, bounded lookahead, costs, errors,
no leaked threads), the MPI thread-level check, the GIL release of the numba
kernels that makes a background thread useful, and a background failure on
one MPI rank ending the job."""

import gc
import importlib
import os
import pkgutil
import shutil
import subprocess
import sys
import textwrap
import threading
import time
import warnings

import numba
import numpy as np
import pytest

import kernels
import spla
from spla import comm as C
from spla.exceptions import DTypeError, InvalidValue

from sampling import PrefetchWarning
from sampling.loading.pipeline import Prefetcher, Produced, prefetch_allowed

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MPIEXEC = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or shutil.which("mpiexec")
NAME = "test-prefetch"


def live(name=NAME):
    return [t for t in threading.enumerate() if t.name == name and t.is_alive()]


# -- Prefetcher ----------------------------------------------------------------------

def test_items_in_order_with_their_costs():
    def make(i):
        time.sleep(0.02 * (i % 2))
        C.record("test.op", 10 * i)
        return {"item": i}

    p = Prefetcher(make, 5, 2, name=NAME)
    with C.counting() as moved:
        got = [p.get() for _ in range(5)]
    assert [g.value for g in got] == [{"item": i} for i in range(5)]
    assert [g.index for g in got] == list(range(5))
    assert all(isinstance(g, Produced) for g in got)
    assert [g.bytes_moved for g in got] == [{"test.op": 10 * i} for i in range(5)]
    assert moved["test.op"] == 100                  # handed back to the consumer's counters
    assert all(g.seconds >= 0.018 for g in got[1::2])
    with pytest.raises(StopIteration):
        p.get()
    p.stop()
    assert not live()


def test_background_bytes_are_not_counted_before_they_are_taken():
    started = threading.Event()

    def make(i):
        C.record("test.op", 7)
        started.set()
        return i

    with C.counting() as moved:
        p = Prefetcher(make, 1, 1, name=NAME)
        assert started.wait(10)
        time.sleep(0.05)
        assert moved["test.op"] == 0                # other threads' bytes are not ours
        p.get()
        assert moved["test.op"] == 7
    p.stop()


def test_waited_is_the_consumers_blocked_time():
    p = Prefetcher(lambda i: time.sleep(0.3) or i, 1, 1, name=NAME)
    item = p.get()
    assert 0.2 <= item.waited and item.seconds >= 0.29
    p.stop()
    # An item produced before it is asked for costs the consumer no wait.
    p = Prefetcher(lambda i: i, 1, 1, name=NAME)
    time.sleep(0.3)
    assert p.get().waited < 0.2
    p.stop()


def test_lookahead_is_bounded():
    made = []
    lock = threading.Lock()

    def make(i):
        with lock:
            made.append(i)
        return i

    p = Prefetcher(make, 20, 3, name=NAME)
    for taken in range(5):
        time.sleep(0.2)                             # let the producer run as far as it may
        with lock:
            assert len(made) == min(20, taken + 3), (taken, made)
        p.get()
    p.stop()
    assert not live()


def test_error_is_raised_as_is_at_its_item_and_ends_the_thread():
    class Deliberate(Exception):
        pass

    err = Deliberate("item 2 failed")

    def make(i):
        if i == 2:
            raise err
        return i

    p = Prefetcher(make, 5, 2, name=NAME)
    assert [p.get().value, p.get().value] == [0, 1]
    with pytest.raises(Deliberate) as info:
        p.get()
    assert info.value is err
    with pytest.raises(StopIteration):
        p.get()
    assert not live()


def test_keyboard_interrupt_in_the_background_is_handed_over():
    def make(i):
        raise KeyboardInterrupt

    p = Prefetcher(make, 3, 1, name=NAME)
    with pytest.raises(KeyboardInterrupt):
        p.get()
    assert not live()


def test_ctrl_c_while_the_thread_starts_leaves_no_thread(monkeypatch):
    """Thread.start() waits for the new thread; Ctrl-C there leaves a started thread
    that nobody holds.  It must end instead of producing into a queue no one reads
    (a daemon still producing at interpreter exit can abort the process)."""
    made = []
    original = threading.Thread.start

    def start_then_interrupt(self):
        original(self)
        raise KeyboardInterrupt

    monkeypatch.setattr(threading.Thread, "start", start_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        Prefetcher(made.append, 100, 1, name=NAME)
    monkeypatch.undo()
    deadline = time.monotonic() + 10
    while live() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not live(), threading.enumerate()
    assert len(made) <= 1, made


@pytest.mark.parametrize("how", ["stop", "stop_twice", "del", "midway"])
def test_no_leaked_thread(how):
    gate = threading.Event()

    def make(i):
        if how == "midway" and i == 1:
            gate.wait(10)                           # still producing when stopped
        return i

    p = Prefetcher(make, 100, 2, name=NAME)
    p.get()
    assert live()
    if how == "del":
        del p
        gc.collect()
    elif how == "midway":
        threading.Timer(0.2, gate.set).start()
        p.stop()                                    # waits for item 1, then joins
        assert p.alive is False
    else:
        p.stop()
        if how == "stop_twice":
            p.stop()
        with pytest.raises(StopIteration):
            p.get()
    assert not live(), threading.enumerate()


def test_empty_and_bad_arguments():
    p = Prefetcher(lambda i: i, 0, 1, name=NAME)
    with pytest.raises(StopIteration):
        p.get()
    p.stop()
    with pytest.raises(DTypeError, match=r"Prefetcher: argument 'make' must be a callable"):
        Prefetcher(3, 1, 1)
    with pytest.raises(InvalidValue, match=r"Prefetcher: argument 'ahead'"):
        Prefetcher(lambda i: i, 1, 0)
    with pytest.raises(InvalidValue, match=r"Prefetcher: argument 'count'"):
        Prefetcher(lambda i: i, -1, 1)
    assert not live()


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2,
                    reason="needs NUMBA_NUM_THREADS >= 2 to tell the caller's count from "
                           "numba's default")
def test_numba_thread_count_is_the_callers():
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        p = Prefetcher(lambda i: numba.get_num_threads(), 1, 1, name=NAME)
        assert p.get().value == 1
        p.stop()
    finally:
        numba.set_num_threads(before)


# -- the MPI thread level -----------------------------------------------------------------

class _MPIAt:
    """The real mpi4py.MPI, but reporting another thread level."""

    def __init__(self, level):
        self._mpi = C.mpi()
        self._level = level

    def __getattr__(self, name):
        return getattr(self._mpi, name)

    def Query_thread(self):
        return getattr(self._mpi, self._level)


def test_prefetch_allowed():
    assert prefetch_allowed(None) is True
    MPI = C.mpi()
    # The mpich wheel provides THREAD_MULTIPLE and mpi4py asks for it.
    assert MPI.Query_thread() == MPI.THREAD_MULTIPLE
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert prefetch_allowed(C.world(), "f") is True


def test_below_thread_multiple_warns_once_and_runs_synchronously(monkeypatch):
    from sampling import GraphSAGE, NodeLoader
    from sampling.datasets import load
    cora = load("cora")
    D = spla.distribute(cora.A)
    ref = list(NodeLoader(GraphSAGE(D, [3]), cora.train_idx, 20, bulk=2, seed=1))
    fake = _MPIAt("THREAD_SERIALIZED")
    monkeypatch.setattr(C, "mpi", lambda: fake)
    with pytest.warns(PrefetchWarning, match=r"NodeLoader: prefetching under MPI needs "
                      r"MPI_THREAD_MULTIPLE.*MPI_THREAD_SERIALIZED") as record:
        loader = NodeLoader(GraphSAGE(D, [3]), cora.train_idx, 20, bulk=2, seed=1,
                            prefetch=2)
        e0 = list(loader)
        list(loader)
    assert len(record) == 1
    assert e0 == ref
    assert not live("NodeLoader-prefetch")


# -- the numba kernels release the GIL ------------------------------------------------------

def _cpu_kernel_modules():
    cpu = os.path.join(os.path.dirname(kernels.__file__), "cpu")
    mods = [importlib.import_module(f"kernels.cpu.{m.name}")
            for m in pkgutil.iter_modules([cpu])]
    # spla.random draws its uniforms with a kernel of its own.
    return mods + [importlib.import_module("kernels.its"), importlib.import_module("spla.random")]


def test_every_top_level_cpu_kernel_is_nogil():
    from numba.core.registry import CPUDispatcher
    from kernels.parallel import ParallelKernel
    seen = 0
    for mod in _cpu_kernel_modules():
        for name, obj in vars(mod).items():
            if isinstance(obj, ParallelKernel):
                for d in (obj.parallel, obj.serial):
                    assert d.targetoptions.get("nogil") is True, (mod.__name__, name)
                    seen += 1
            elif isinstance(obj, CPUDispatcher) and obj.__module__ == mod.__name__:
                if obj.targetoptions.get("inline") == "always":
                    continue                        # inlined into the kernels
                assert obj.targetoptions.get("nogil") is True, (mod.__name__, name)
                seen += 1
    assert seen >= 20


def _progress_during(call):
    """Iterations a pure-Python counter thread makes while the middle half of call() runs."""
    marks = []
    stop = threading.Event()

    def count():
        n = 0
        while not stop.is_set():
            n += 1
            if n % 500 == 0:
                marks.append((time.perf_counter(), n))

    t = threading.Thread(target=count, daemon=True)
    t.start()
    time.sleep(0.05)
    t0 = time.perf_counter()
    call()
    t1 = time.perf_counter()
    stop.set()
    t.join()
    lo, hi = t0 + 0.25 * (t1 - t0), t0 + 0.75 * (t1 - t0)
    inside = [n for at, n in marks if lo <= at <= hi]
    return (max(inside) - min(inside)) if inside else 0, t1 - t0


@numba.njit
def _holds_the_gil(n):
    x = np.uint64(88172645463325252)
    for _ in range(n):
        x ^= x << np.uint64(13)
        x ^= x >> np.uint64(7)
        x ^= x << np.uint64(17)
    return x


def test_a_long_kernel_runs_beside_python_threads():
    """While sample_rows runs a long kernel on one numba thread, a Python thread
    keeps counting; a control kernel that holds the GIL stops it (so the
    measure can tell the two apart)."""
    from spla.generators import random_csr
    A = random_csr(200_000, 200_000, 32, seed=1)
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        spla.sample_rows(A, 16, seed=0)             # compiled and warm
        free, secs = _progress_during(lambda: spla.sample_rows(A, 16, seed=1))
        _holds_the_gil(10)
        n = int(6e8 * secs)
        held, held_secs = _progress_during(lambda: _holds_the_gil(n))
    finally:
        numba.set_num_threads(before)
    assert held_secs > 0.1 and secs > 0.1, (held_secs, secs)
    assert held <= 1000, f"the control kernel let the counter run ({held} iterations)"
    assert free >= 20_000, (f"the counter made {free} iterations during the middle "
                            f"{secs / 2:.2f} s of sample_rows")


# -- MPI: an unexpected error on one rank's background thread ends the job -------------------

SCRIPT = """
    import numpy as np
    import spla
    from spla import comm as C
    from sampling import GraphSAGE, NodeLoader
    from sampling.datasets import load

    class FailsOnRank1(GraphSAGE):
        def sample(self, batches, **kw):
            if C.world().Get_rank() == 1 and kw["batch_ids"][0] >= 4:
                raise RuntimeError("background failure on rank 1")
            return super().sample(batches, **kw)

    with C.abort_on_error(prefix="script: "):
        cora = load("cora")
        D = spla.distribute(cora.A)
        loader = NodeLoader(FailsOnRank1(D, [3, 2]), cora.train_idx, 10, bulk=1, prefetch=2)
        for mb in loader:
            C.world().allreduce(1)                  # the training loop's collective
        print("rank", C.world().Get_rank(), "finished the epoch", flush=True)
"""


@pytest.mark.slow
@pytest.mark.mpi
@pytest.mark.skipif(MPIEXEC is None, reason="mpiexec not found (pip install mpich)")
def test_background_failure_on_one_rank_ends_the_job(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(SCRIPT))
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    start = time.monotonic()
    proc = subprocess.run([MPIEXEC, "-n", "2", sys.executable, str(script)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)
    seconds = time.monotonic() - start
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert "script: rank 1 of 2 failed" in out, out
    assert "RuntimeError: background failure on rank 1" in out, out
    assert "finished the epoch" not in out, out
    assert seconds < 60, f"the job took {seconds:.0f} s to end"
