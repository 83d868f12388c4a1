"""Per-row top-k selection, CUDA.

Twin of ``kernels.cpu.topk``, one thread per row: the kernels call the very
``@numba.njit`` row functions the CPU kernel calls (``kernels.topk_rows``),
which numba-cuda compiles as device functions, so both
backends keep the same entries by construction (the kept set is unique
anyway: ties are broken by position).  The row pointer is scanned with the
array module between the two launches.
"""

import numpy as np
from numba import cuda

from kernels import topk_rows as _rows
from kernels.cuda._util import device, host_int, launch, scan, _xp

row_slots = device(_rows.row_slots)
select_row = device(_rows.select_row)


@cuda.jit(cache=True)
def _topk_count(indptr, k, out_ptr):
    n = indptr.size - 1
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, n, stride):
        out_ptr[i + 1] = row_slots(indptr[i], indptr[i + 1], k)


@cuda.jit(cache=True)
def _topk_fill(indptr, values, largest, out_ptr, out):
    n = indptr.size - 1
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, n, stride):
        cnt = out_ptr[i + 1] - out_ptr[i]
        if cnt:
            select_row(out, out_ptr[i], cnt, indptr[i], indptr[i + 1], values,
                       largest)


def topk_rows(indptr, values, k, largest):
    """Per-row top-k positions: ``(indptr, positions)``; see ``kernels.cpu.topk``."""
    xp = _xp(indptr)
    n = indptr.size - 1
    if n <= 0:
        return xp.zeros(1, np.int64), xp.zeros(0, np.int64)
    k = np.int64(k)
    largest = bool(largest)
    out_ptr = xp.zeros(n + 1, np.int64)
    launch(_topk_count, n, indptr, k, out_ptr)
    out_ptr = scan(xp, out_ptr)
    total = host_int(out_ptr[n])
    out = xp.empty(total, np.int64)
    if total:
        launch(_topk_fill, n, indptr, values, largest, out_ptr, out)
    return out_ptr, out
