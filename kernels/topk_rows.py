"""Per-row top-k selection of one row: the functions both backends' kernels call.

``kernels.cpu.topk`` runs them in a parallel loop over rows, and
``kernels.cuda.topk`` as device functions, one thread per row, so both keep
the same entries by construction (the kept set is unique anyway: ties are
broken by position).  See ``kernels.cpu.topk`` for the contract; nothing
here allocates.
"""

import numba
import numpy as np


@numba.njit(cache=True, inline="always")
def ranks_before(values, a, b, largest):
    """Whether the entry at position ``a`` ranks before the one at ``b``.

    Larger (smaller, with ``largest`` False) values first; equal values by
    the smaller position.  A strict total order on distinct positions.
    """
    va = values[a]
    vb = values[b]
    if va != vb:
        if largest:
            return va > vb
        return va < vb
    return a < b


@numba.njit(cache=True, inline="always")
def _sift_worst(out, o, size, i, values, largest):
    """Restore the heap ``out[o:o+size]`` (worst-ranked entry at the root) below ``i``."""
    while True:
        worst = i
        c = 2 * i + 1
        if c < size and ranks_before(values, out[o + worst], out[o + c], largest):
            worst = c
        c += 1
        if c < size and ranks_before(values, out[o + worst], out[o + c], largest):
            worst = c
        if worst == i:
            return
        t = out[o + i]
        out[o + i] = out[o + worst]
        out[o + worst] = t
        i = worst


@numba.njit(cache=True, inline="always")
def _sift_max(out, o, size, i):
    """Restore the max-heap of positions ``out[o:o+size]`` below ``i``."""
    while True:
        big = i
        c = 2 * i + 1
        if c < size and out[o + c] > out[o + big]:
            big = c
        c += 1
        if c < size and out[o + c] > out[o + big]:
            big = c
        if big == i:
            return
        t = out[o + i]
        out[o + i] = out[o + big]
        out[o + big] = t
        i = big


@numba.njit(cache=True, inline="always")
def row_slots(lo, hi, k):
    """Entries kept from a row ``[lo, hi)``: all of them, or ``k`` (k < 0: all)."""
    d = hi - lo
    if k < 0 or d <= k:
        return np.int64(d)
    return np.int64(k)


@numba.njit(cache=True, inline="always")
def select_row(out, o, cnt, lo, hi, values, largest):
    """Write the positions of the ``cnt`` first-ranked entries of ``[lo, hi)``
    to ``out[o:o+cnt]``, ascending; ``cnt`` comes from ``row_slots``."""
    if cnt == hi - lo:
        for t in range(cnt):
            out[o + t] = lo + t
        return
    for t in range(cnt):
        out[o + t] = lo + t
    for i in range(cnt // 2 - 1, -1, -1):
        _sift_worst(out, o, cnt, i, values, largest)
    for p in range(lo + cnt, hi):
        if ranks_before(values, p, out[o], largest):
            out[o] = p
            _sift_worst(out, o, cnt, 0, values, largest)
    # Heap sort by position: the kept entries in column order.
    for i in range(cnt // 2 - 1, -1, -1):
        _sift_max(out, o, cnt, i)
    for end in range(cnt - 1, 0, -1):
        t = out[o]
        out[o] = out[o + end]
        out[o + end] = t
        _sift_max(out, o, end, 0)
