"""Per-thread counts of device operations: launches and blocking reads.

The CUDA kernels' Python drivers submit work to the GPU and, now and then,
wait for a result on the host.  Each wait drains the device's queue, and
each launch costs host time, so both are budgets a driver keeps; these
counters make the budgets testable (the simulator tests assert them) and
visible (``benchmarks/bench_gpu.py`` prints them).

Counts are per thread (a sampler running in a prefetch thread does not add
to the caller's), hold three integers, and are read through ``counting``.
The CPU kernels count nothing.
"""

import threading
from contextlib import contextmanager


class _Counts(threading.local):
    def __init__(self):
        self.launches = 0
        self.reads = 0


_COUNTS = _Counts()


def add_launch(n=1):
    """Record ``n`` device launches (kernels, scans, fills) by this thread."""
    _COUNTS.launches += n


def add_read(n=1):
    """Record ``n`` blocking device-to-host reads by this thread."""
    _COUNTS.reads += n


class Tally:
    """Launches and blocking reads counted inside one ``counting`` block.

    Attributes
    ----------
    launches : int
    reads : int
    """

    __slots__ = ("launches", "reads")

    def __init__(self):
        self.launches = 0
        self.reads = 0

    def __repr__(self):
        return f"Tally(launches={self.launches}, reads={self.reads})"


@contextmanager
def counting():
    """Count this thread's device launches and blocking reads in a block.

    Yields
    ------
    Tally
        Filled in when the block ends.

    Examples
    --------
    >>> from kernels.opcount import add_launch, counting
    >>> with counting() as t:
    ...     add_launch(2)
    >>> t.launches, t.reads
    (2, 0)
    """
    tally = Tally()
    l0, r0 = _COUNTS.launches, _COUNTS.reads
    try:
        yield tally
    finally:
        tally.launches = _COUNTS.launches - l0
        tally.reads = _COUNTS.reads - r0
