"""Pinned staging of minibatch inputs for a GPU fed by CPU sampling: ``Staging``.

The hybrid pipeline samples and gathers features on the CPU in the
prefetch thread; the minibatches must then reach the GPU without the
training loop ever blocking on a copy.  ``Staging`` does the copy half:

* the producer (the prefetch thread) gathers a bulk's ``x`` rows and ``y``
  labels into one slot of a ring of page-locked ("pinned") host buffers,
  issues non-blocking host-to-device copies on a side CUDA stream and
  records a *ready* event after them;
* the consumer makes its own stream wait on that event (a device-side
  wait: the host never blocks) before it uses the tensors;
* when the consumer takes the next bulk it records a *release* event on
  its stream, and the slot's pinned buffer is written again only after
  that event has completed, so a buffer is never overwritten while a copy
  out of it may still run.

The scheduling (which slot, when it may be reused, how large it is) is
plain Python in ``SlotRing``, separate from the torch/CUDA calls, so it is
tested without a GPU with stand-in events.  Slots grow when a bulk needs
more than they hold (to 1.5 times the need, so a growing epoch does not
reallocate at every bulk) and never shrink within a loader's life.

Examples
--------
>>> ring = SlotRing(2)
>>> a = ring.acquire({"x": 10})
>>> a.index, a.capacity
(0, {'x': 15})
>>> b = ring.acquire({"x": 4})
>>> b.index, b.capacity
(1, {'x': 6})
>>> ring.release(a, token=None)
>>> ring.acquire({"x": 12}).index   # slot 0 again: 15 >= 12, no growth
0
"""

import dataclasses
import threading
import time
from dataclasses import dataclass, field

from spla.checks import as_int


@dataclass
class Slot:
    """One entry of a ``SlotRing``: its index, capacities, buffers and release token.

    Examples
    --------
    >>> Slot(0).capacity
    {}
    """

    index: int
    #: elements each named buffer holds
    capacity: dict = field(default_factory=dict)
    #: the buffers themselves (owned by the caller of the ring)
    buffers: dict = field(default_factory=dict)
    #: what must complete before the buffers are written again (an event)
    token: object = None
    #: names whose buffer must be reallocated at the capacity above
    grown: tuple = ()


class SlotRing:
    """A thread-safe ring of ``slots`` reusable buffer slots, taken in ring order.

    ``acquire(needs)`` returns the next slot in ring order once the
    consumer has released it (blocking until then), with each named
    capacity raised to 1.5 times the need when the need exceeds it (the
    names in ``slot.grown``).  Before returning, the slot's release token
    is passed to ``wait(token)`` (on a GPU: synchronise the consumer's
    release event), so the caller may write its buffers at once.
    ``release(slot, token)`` hands the slot back.

    Parameters
    ----------
    slots : int
        Slots in the ring (>= 1).
    wait : callable, optional
        ``wait(token)`` blocks until the released token has completed;
        ``None`` tokens are skipped.

    Examples
    --------
    >>> done = []
    >>> ring = SlotRing(1, wait=done.append)
    >>> s = ring.acquire({"y": 3})
    >>> ring.release(s, token="event-0")
    >>> ring.acquire({"y": 3}).index, done
    (0, ['event-0'])
    """

    def __init__(self, slots, wait=None):
        n = as_int("SlotRing", "slots", slots, minimum=1)
        self._slots = [Slot(i) for i in range(n)]
        self._free = [True] * n
        self._next = 0
        self._wait = wait
        self._cv = threading.Condition()
        self._closed = False

    def __len__(self):
        return len(self._slots)

    def acquire(self, needs):
        """The next slot in ring order, free and sized for ``needs`` (name -> elements)."""
        with self._cv:
            i = self._next
            while not self._free[i] and not self._closed:
                self._cv.wait()
            if self._closed:
                raise RuntimeError("SlotRing.acquire: the ring was closed")
            self._free[i] = False
            self._next = (i + 1) % len(self._slots)
            slot = self._slots[i]
        token, slot.token = slot.token, None
        if token is not None and self._wait is not None:
            self._wait(token)
        grown = []
        for name, need in needs.items():
            need = int(need)
            if name not in slot.capacity or need > slot.capacity[name]:
                slot.capacity[name] = max(need + need // 2, 1)
                grown.append(name)
        slot.grown = tuple(grown)
        return slot

    def release(self, slot, token):
        """Hand ``slot`` back; its buffers are written again once ``token`` completes."""
        with self._cv:
            slot.token = token
            self._free[slot.index] = True
            self._cv.notify_all()

    def reset(self):
        """Free every slot still taken (their bulks will never be consumed).

        Called once no producer runs: the slots' tokens, if any, are kept.
        """
        with self._cv:
            self._free = [True] * len(self._slots)
            self._next = 0
            self._cv.notify_all()

    def close(self):
        """Wake and fail every waiting ``acquire`` (the ring is not used again)."""
        with self._cv:
            self._closed = True
            self._cv.notify_all()


class Staged:
    """A staged bulk: its minibatches, usable on the consumer's stream after ``take()``.

    Examples
    --------
    >>> s = Staged(["mb"], None, None, None, 0.0, ())
    >>> s.take(None)
    ['mb']
    """

    def __init__(self, mbs, ready, slot, staging, seconds, tensors, fetch=0.0):
        self.mbs = mbs
        #: the device tensors the minibatches' x and y are views of
        self.tensors = tensors
        self.ready = ready
        self.slot = slot
        self.staging = staging
        #: seconds the producer spent copying this bulk (and waiting for its slot)
        self.seconds = seconds
        #: seconds it spent gathering the inputs into the slot (``stage(mbs, inputs)``)
        self.fetch = fetch

    def take(self, previous):
        """Make the consumer's stream wait for the copies; release ``previous``'s slot.

        Returns the minibatches.  ``previous`` is the last bulk taken (or
        None): its slot is released with an event recorded now on the
        consumer's stream, after every use of its tensors was queued.
        """
        if self.staging is not None:
            self.staging.consume(self, previous)
        return self.mbs


class Staging:
    """Copies bulks of minibatch inputs to ``device`` through a ring of pinned buffers.

    ``stage(mbs, inputs, features)`` (producer thread) gathers the feature
    rows (float32) of every minibatch's input vertices and the labels
    (int64) of its seeds into one slot's pinned buffers, copies them to the
    device on a side stream and returns a ``Staged`` whose minibatches hold
    device views; ``Staged.take`` (consumer thread) orders the consumer's
    stream after the copies.  On a CPU ``device`` (tests, and a loader
    asked to stage without a GPU) the same gathers and ring run with
    ordinary host buffers and no streams.

    Parameters
    ----------
    torch : module
        The torch module.
    device : torch.device
        Where the minibatches go.
    slots : int
        Ring slots (a loader with ``prefetch=k`` uses ``k + 2``: ``k``
        waiting bulks, one in production, one being trained on).

    Examples
    --------
    >>> import numpy as np, torch, spla
    >>> from sampling import GraphSAGE
    >>> from sampling.loading.inputs import Inputs
    >>> A = spla.Matrix.from_dense(np.ones((3, 3)) - np.eye(3))
    >>> X = np.arange(6, dtype=np.float32).reshape(3, 2)
    >>> inputs = Inputs("f", 3, X, np.array([7, 8, 9]), "cpu")
    >>> mb, = GraphSAGE(A, [1]).sample([np.array([2])], seed=0)
    >>> st = Staging(torch, torch.device("cpu"), slots=2)
    >>> out, = st.stage([mb], inputs, X).take(None)
    >>> torch.equal(out.x, torch.from_numpy(X[mb.input_nodes])), out.y.tolist()
    (True, [9])
    """

    def __init__(self, torch, device, slots):
        self.torch = torch
        self.device = device
        self.cuda = device.type == "cuda"
        self._stream = torch.cuda.Stream(device=device) if self.cuda else None
        self.ring = SlotRing(slots, wait=self._sync if self.cuda else None)

    @staticmethod
    def _sync(event):
        event.synchronize()

    def _buffer(self, slot, name, dtype):
        """``slot``'s host buffer ``name``, (re)allocated pinned when it grew."""
        if name in slot.grown or name not in slot.buffers:
            slot.buffers[name] = self.torch.empty(slot.capacity[name], dtype=dtype,
                                                  pin_memory=self.cuda)
        return slot.buffers[name]

    def stage(self, mbs, inputs, features):
        """Gather and copy the inputs of the minibatches ``mbs``; a ``Staged`` bulk.

        ``inputs`` is the loader's host ``Inputs`` and ``features`` what it
        gathers from: the rows of each minibatch's input vertices and the
        labels of its seeds are gathered straight into one slot's pinned
        buffers (no host copy of the bulk besides them), then copied.
        """
        torch = self.torch
        t0 = time.perf_counter()
        width = inputs.width(features)
        rows_x = [int(mb.input_nodes.size) for mb in mbs] if inputs.kind is not None else []
        rows_y = [int(mb.seeds.size) for mb in mbs] if inputs.labels is not None else []
        nx, ny = sum(rows_x) * width, sum(rows_y)
        slot = self.ring.acquire({"x": nx, "y": ny})
        hx = self._buffer(slot, "x", torch.float32)[:nx]
        hy = self._buffer(slot, "y", torch.int64)[:ny]
        t1 = time.perf_counter()
        if nx:
            inputs.gather_x_into([mb.input_nodes for mb in mbs], features,
                                 hx.numpy().reshape(-1, width))
        if ny:
            inputs.gather_y_into([mb.seeds for mb in mbs], hy)
        fetch = time.perf_counter() - t1
        dx, dy, ready = self._copy(hx, hy)
        px = iter(dx.view(sum(rows_x), width).split(rows_x)) if rows_x else None
        py = iter(dy.split(rows_y)) if rows_y else None
        out = [dataclasses.replace(mb, x=next(px) if px else None, y=next(py) if py else None)
               for mb in mbs]
        tensors = tuple(t for t, m in ((dx, rows_x), (dy, rows_y)) if m)
        return Staged(out, ready, slot, self, time.perf_counter() - t0 - fetch, tensors,
                      fetch=fetch)

    def _copy(self, hx, hy):
        """The device copies of the packed buffers, and the event after them (or None)."""
        torch = self.torch
        if not self.cuda:
            return hx.clone(), hy.clone(), None
        with torch.cuda.stream(self._stream):
            dx = hx.to(self.device, non_blocking=True)
            dy = hy.to(self.device, non_blocking=True)
            ready = torch.cuda.Event()
            ready.record(self._stream)
        # The copy phase as measured: the producer waits for its own
        # copies (the consumer does not), so the next slot is packed
        # only when this one's bytes are on the device.
        ready.synchronize()
        return dx, dy, ready

    def consume(self, staged, previous):
        """The consumer's half of ``Staged.take`` (see there)."""
        torch = self.torch
        if self.cuda and staged.ready is not None:
            cur = torch.cuda.current_stream(self.device)
            cur.wait_event(staged.ready)
            # The device tensors were made on the side stream: tell the
            # caching allocator they are used on the consumer's stream too.
            for t in staged.tensors:
                t.record_stream(cur)
        if previous is not None and previous.slot is not None:
            token = None
            if self.cuda:
                token = torch.cuda.Event()
                token.record(torch.cuda.current_stream(self.device))
            self.ring.release(previous.slot, token)
            previous.slot = None

    def end_epoch(self, held):
        """The epoch's producer has ended: release ``held`` (the bulk in use, or
        None) after the consumer's queued work, and every slot of a bulk never
        consumed (its copies were complete when it was staged)."""
        if held is not None:
            self.consume(Staged([], None, None, None, 0.0, ()), held)
        self.ring.reset()





def staging_for(func, inputs, n, features, labels, prefetch, staging):
    """The ``(Staging, host inputs)`` a ``NodeLoader`` stages through, or None.

    ``staging`` is the loader's argument: ``"auto"`` stages when the loader
    prefetches (``prefetch > 0``) onto a CUDA device from features on the
    host (numpy, scipy, a ``FeatureStore`` or a CPU tensor); ``True``
    stages such features whenever it prefetches (on a CPU device too: the
    same ring and packing, for tests); ``False`` never.  The host inputs gather ``x`` and
    ``y`` on the CPU, the staging moves them.

    Examples
    --------
    >>> import numpy as np
    >>> from sampling.loading.inputs import Inputs
    >>> X = np.ones((3, 2), np.float32)
    >>> inp = Inputs("f", 3, X, None, "cpu")
    >>> staging_for("f", inp, 3, X, None, 2, "auto") is None   # a CPU device
    True
    >>> st, host = staging_for("f", inp, 3, X, None, 2, True)
    >>> len(st.ring), host.device.type
    (4, 'cpu')
    """
    from spla.checks import describe, fail
    from spla.exceptions import InvalidValue
    if staging not in ("auto", True, False):
        fail(InvalidValue, func, "staging", "'auto', True or False", describe(staging))
    if not prefetch or staging is False or inputs.kind is None:
        return None
    from sampling.loading.inputs import Inputs
    # Only features gathered on the host are staged (a device tensor or a
    # device feature cache gathers on the GPU already).
    host_features = inputs.kind in ("numpy", "sparse", "store") or (
        inputs.kind == "torch" and inputs.features.device.type == "cpu")
    if not host_features or (staging == "auto" and inputs.device.type != "cuda"):
        return None
    host = Inputs(func, n, features, labels, "cpu")
    return Staging(inputs.torch, inputs.device, prefetch + 2), host

__all__ = ["SlotRing", "Slot", "Staging", "Staged", "staging_for"]
