"""Per-row top-k selection kernels (CPU).

``topk_rows(indptr, values, k, largest)`` keeps, in every row of a canonical
CSR matrix, the ``k`` entries that rank first: the largest values (the
smallest with ``largest=False``), ties broken by the smaller position.  In a
canonical row positions increase with the column, so "smaller position" is
"smaller column": the kept set is one well-defined set, whatever the thread
count or the backend.  A row of at most ``k`` entries (or any row when ``k``
is negative) is kept whole.

Returns ``(indptr, positions)`` like the sample kernels: ``positions`` index
the input's entries, ascending within each row (so the kept entries stay in
column order and the caller gathers indices and values with them).

The values must hold no NaN (the caller refuses them): the ranking relies on
``<`` and ``==`` being a total order on the values.

Per row, the selection is a bounded heap built in the row's own output
slice (no scratch beyond the output): the first ``k`` positions are
heapified with the worst-ranked entry at the root, every later entry that
ranks before the root replaces it, and the slice is finally heap-sorted by
position.  ``O(d log k)`` per row of ``d`` entries, no allocation, so the
CUDA twin calls the very same row function as a device function.
"""

import numba
import numpy as np
from numba import prange

from kernels.parallel import parallel_kernel


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


def _topk_work(indptr, values, k, largest):
    # Every entry of a row longer than k is compared; shorter rows are copied.
    return int(indptr[-1])


@parallel_kernel(_topk_work)
def topk_rows(indptr, values, k, largest):
    """Per-row top-k positions: ``(indptr, positions)``; see the module docstring."""
    n = indptr.size - 1
    out_ptr = np.zeros(n + 1, np.int64)
    for i in prange(n):
        out_ptr[i + 1] = row_slots(indptr[i], indptr[i + 1], k)
    for i in range(n):
        out_ptr[i + 1] += out_ptr[i]
    out = np.empty(out_ptr[n], np.int64)
    for i in prange(n):
        select_row(out, out_ptr[i], out_ptr[i + 1] - out_ptr[i], indptr[i],
                   indptr[i + 1], values, largest)
    return out_ptr, out
