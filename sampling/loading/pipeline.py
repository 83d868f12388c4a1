"""Background production of items with bounded lookahead: ``Prefetcher``.

One job: run ``make(0), make(1), ..., make(count - 1)`` in a daemon thread,
at most ``ahead`` results ahead of the consumer, and hand each result back
in order with what producing it cost (seconds and bytes moved).  The
``NodeLoader`` (``prefetch=k``) and the trainer (``--prefetch K``) sample
and fetch their bulks this way while the main thread trains.

Guarantees
----------
* Order: ``get()`` returns ``make(0)``, ``make(1)``, ... in turn.
* Errors: an exception raised by ``make(i)`` is raised again, as is, by
  the ``get()`` that would have returned item ``i``; the thread ends there.
* No leaked thread: ``stop()`` (idempotent) makes the thread finish the
  item it is producing, if any, and joins it; a consumer that drops the
  prefetcher without stopping it (a ``break``, an exception) stops it
  through a finalizer, since the thread never refers to the prefetcher.
* numba's thread count is per Python thread: the producer uses the count
  of the thread that built the prefetcher (a trainer sets it), not numba's
  default of every core.  The numba kernels release the GIL, so a long
  kernel in the background does not stall the training loop's Python.
* Costs: each item comes with the seconds ``make`` ran and the bytes it
  moved (``spla.comm.counting`` inside the producer thread: counters are
  per thread, so the consumer's own counters never see them).

MPI
---
The background thread's sampling and feature fetches are MPI collectives
(sampling a ``DistMatrix``, fetching from a partitioned ``FeatureStore``),
and the training loop's gradient Allreduce is one too.  Two ways keep them
from interleaving unsafely:

* *all MPI on one thread*: the background thread would have to hand its
  messages to the main thread, which would then progress them between
  training steps; the sampling kernels and the fetch are interleaved with
  their messages (requests, then rows, then the next layer), so the
  background work would stall at every message until the main thread
  looked, and the overlap would be lost.
* *duplicated communicators* (chosen): the background thread uses its
  own communicators (``Sampler.dup()``, ``FeatureStore.dup()``, one
  ``comm.Dup()`` each, collective), the main thread keeps the original
  ones for the Allreduce.  The ``mpich`` wheel provides
  ``MPI_THREAD_MULTIPLE`` (mpi4py asks for it by default), under which
  collectives on *distinct* communicators may run concurrently from
  different threads.  MPI requires that the collectives of *one*
  communicator are called in the same order on every rank: each
  communicator is used by one thread only, and every rank produces the
  same bulks in the same order (the bulk schedule of an epoch is agreed
  before it starts), so this holds for both.

``prefetch_allowed(comm, func)`` checks the thread level: below
``THREAD_MULTIPLE`` it warns once (``PrefetchWarning``) and the caller
runs synchronously instead.

An unexpected error in one rank's background thread is raised on that
rank's main thread at its next ``get()``; the other ranks may be inside a
background collective waiting for it, so the job must end: the main job
runs inside ``spla.comm.abort_on_error``, which aborts every rank.

Examples
--------
>>> p = Prefetcher(lambda i: i * i, 4, ahead=2)
>>> [p.get().value for _ in range(4)]
[0, 1, 4, 9]
>>> p.stop()
"""

import queue
import threading
import time
import warnings
import weakref
from dataclasses import dataclass, field

from spla import comm as C
from spla.checks import as_int, describe, fail
from spla.exceptions import DTypeError


class PrefetchWarning(RuntimeWarning):
    """Prefetching was asked for but runs synchronously (see ``prefetch_allowed``).

    Examples
    --------
    >>> issubclass(PrefetchWarning, RuntimeWarning)
    True
    """


@dataclass
class Produced:
    """One item of a ``Prefetcher`` with what producing it cost.

    Attributes
    ----------
    value
        What ``make(i)`` returned.
    index : int
        ``i``.
    seconds : float
        Wall-clock seconds ``make(i)`` ran (in the background thread).
    bytes_moved : dict
        Bytes sent by this rank while ``make(i)`` ran, per operation name
        (``spla.comm.counting`` in the producer thread).
    waited : float
        Seconds the consumer's ``get()`` was blocked waiting for the item.

    Examples
    --------
    >>> Produced(value=1, index=0).bytes_moved
    {}
    """

    value: object
    index: int
    seconds: float = 0.0
    bytes_moved: dict = field(default_factory=dict)
    waited: float = 0.0


class Prefetcher:
    """Produce ``make(0..count-1)`` in a daemon thread, at most ``ahead`` items ahead.

    An item takes a slot before it is produced and gives it back when the
    consumer takes it, so at most ``ahead`` produced items wait at a time
    (and one more may be in production).

    Parameters
    ----------
    make : callable
        ``make(i)`` produces item ``i`` (runs in the background thread).
    count : int
        Items to produce (>= 0).
    ahead : int
        Items produced ahead of the consumer (>= 1).
    name : str, default "spla-prefetch"
        The thread's name.

    Examples
    --------
    >>> p = Prefetcher(lambda i: [i] * i, 3, ahead=1)
    >>> item = p.get()
    >>> item.index, item.value, item.seconds >= 0, dict(item.bytes_moved)
    (0, [], True, {})
    >>> p.get().value, p.get().value
    ([1], [2, 2])
    >>> p.stop()
    >>> p.get()
    Traceback (most recent call last):
    ...
    StopIteration
    """

    def __init__(self, make, count, ahead, *, name="spla-prefetch"):
        func = "Prefetcher"
        if not callable(make):
            fail(DTypeError, func, "make", "a callable make(i)", describe(make))
        self._count = as_int(func, "count", count, minimum=0)
        ahead = as_int(func, "ahead", ahead, minimum=1)
        self._taken = 0
        state = _State(ahead)
        self._state = state
        self._thread = threading.Thread(target=_produce,
                                        args=(make, self._count, state, _numba_threads()),
                                        name=name, daemon=True)
        # The finalizer holds the state and the thread, never the prefetcher:
        # dropping the prefetcher (a break, an exception) collects it and
        # stops the thread.  It exists before the thread does, so nothing
        # can start a thread that no one stops.
        self._finalizer = weakref.finalize(self, _stop, state, self._thread)
        try:
            self._thread.start()
        except BaseException:
            # Ctrl-C inside start(), which waits for the new thread to run:
            # the thread may exist already.  Told to stop before its first
            # item, it ends without producing anything; a daemon left
            # producing at interpreter exit can abort the process.
            self._finalizer.detach()
            _stop(state, self._thread, join=False)
            raise

    def get(self):
        """The next item as a ``Produced``; ``make``'s exception, raised as is.

        The item's ``bytes_moved`` are also recorded (``spla.comm.record``)
        in the caller's active ``spla.comm.counting`` blocks.  Raises
        ``StopIteration`` after the last item or after ``stop()``.
        """
        if self._taken >= self._count or not self._finalizer.alive:
            raise StopIteration
        t0 = time.perf_counter()
        while True:
            try:
                kind, item = self._state.queue.get(timeout=0.5)
                break
            except queue.Empty:
                if not self._thread.is_alive() and self._state.queue.empty():
                    raise RuntimeError("Prefetcher: the background thread ended without a "
                                       "result") from None
        waited = time.perf_counter() - t0
        if kind == "error":
            self.stop()
            raise item
        self._taken += 1
        self._state.slots.release()
        item.waited = waited
        # Hand the bytes back: the consumer's counting() blocks see what was
        # moved on its behalf (counters are per thread).
        for op, nbytes in item.bytes_moved.items():
            C.record(op, nbytes)
        return item

    def stop(self, wait=True):
        """Stop the thread: it finishes the item it is producing, if any, then ends.

        Joins the thread (unless called from it, or ``wait=False``: for a
        process about to end, whose thread may be blocked for good in a
        collective that other ranks left); idempotent.
        """
        if wait:
            self._finalizer()
        elif self._finalizer.detach() is not None:
            _stop(self._state, self._thread, join=False)

    def join(self, timeout=None):
        """Wait up to ``timeout`` seconds for the thread to end; whether it has."""
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def alive(self):
        """Whether the background thread is still running."""
        return self._thread.is_alive()


class _State:
    """What the producer thread and the consumer share (never the Prefetcher itself)."""

    def __init__(self, ahead):
        self.queue = queue.Queue()
        self.stop = threading.Event()
        self.slots = threading.Semaphore(ahead)


def _stop(state, thread, join=True):
    state.stop.set()
    state.slots.release()  # wakes a producer waiting for a slot
    if join and thread is not threading.current_thread():
        thread.join()
    # Produced items nobody will take: let them go now.
    while True:
        try:
            state.queue.get_nowait()
        except queue.Empty:
            break


def _numba_threads():
    try:
        import numba
        return numba.get_num_threads()
    except ImportError:  # pragma: no cover - numba is a dependency
        return None


def _produce(make, count, state, threads):
    try:
        if threads is not None:
            import numba
            numba.set_num_threads(threads)
        for i in range(count):
            state.slots.acquire()
            if state.stop.is_set():
                return
            t0 = time.perf_counter()
            with C.counting() as moved:
                value = make(i)
            state.queue.put(("ok", Produced(value, i, time.perf_counter() - t0, dict(moved))))
            # The consumer may have stopped while this item was produced.
            if state.stop.is_set():
                return
    except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
        state.queue.put(("error", exc))


def prefetch_allowed(comm, func="prefetch"):
    """Whether a background thread may run MPI collectives beside the caller's.

    True without MPI (``comm`` None) and when MPI runs at
    ``MPI_THREAD_MULTIPLE`` (the ``mpich`` wheel does; mpi4py asks for it
    by default).  Below that, concurrent MPI calls from two threads are
    not allowed: warns once with ``PrefetchWarning`` and returns False (the
    caller then produces synchronously).  Local, not collective: every rank
    of a job runs the same MPI library at the same level, so all agree.

    Examples
    --------
    >>> prefetch_allowed(None)
    True
    """
    if comm is None:
        return True
    MPI = C.mpi()
    level = MPI.Query_thread()
    if level >= MPI.THREAD_MULTIPLE:
        return True
    names = {MPI.THREAD_SINGLE: "MPI_THREAD_SINGLE", MPI.THREAD_FUNNELED: "MPI_THREAD_FUNNELED",
             MPI.THREAD_SERIALIZED: "MPI_THREAD_SERIALIZED"}
    warnings.warn(f"{func}: prefetching under MPI needs MPI_THREAD_MULTIPLE (the background "
                  f"thread's collectives run beside the main thread's), but MPI runs at "
                  f"{names.get(level, level)}; sampling synchronously instead (initialise "
                  "MPI with mpi4py's default thread level, or use prefetch 0)",
                  PrefetchWarning, stacklevel=3)
    return False


__all__ = ["Prefetcher", "Produced", "PrefetchWarning", "prefetch_allowed"]
