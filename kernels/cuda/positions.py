"""Where entries sit in a canonical CSR matrix, and whether its pattern is symmetric, CUDA.

Twin of ``kernels.cpu.positions`` (see there for the contracts), with the
same names, arguments and returns: ``find_entries`` one thread per query
(the binary search of ``kernels.common.lower_bound``, bounded to the
query's row); ``pattern_fingerprints`` one thread per row, writing its
``kernels.fingerprint.row_fingerprint``, then four uint64 sums (mod 2**64,
so the order of the additions does not matter) read back once.
"""

import numpy as np
from numba import cuda

from kernels.common import lower_bound as _lower_bound
from kernels.cuda._util import device, launch, to_host, _xp
from kernels.fingerprint import row_fingerprint as _row_fingerprint

lower_bound = device(_lower_bound)
row_fingerprint = device(_row_fingerprint)


@cuda.jit(cache=True)
def _find_entries(indptr, indices, rows, cols, out):
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for t in range(start, rows.size, stride):
        r = rows[t]
        lo = indptr[r]
        hi = indptr[r + 1]
        c = cols[t]
        p = lower_bound(indices, lo, hi, c)
        out[t] = p if p < hi and indices[p] == c else -1


def find_entries(indptr, indices, rows, cols):
    """Position of entry ``(rows[t], cols[t])`` in the stored entries, or -1."""
    out = _xp(indptr).empty(rows.size, np.int64)
    if rows.size:
        launch(_find_entries, rows.size, indptr, indices, rows, cols, out)
    return out


@cuda.jit(cache=True)
def _fingerprints(indptr, indices, parts):
    n = indptr.size - 1
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, n, stride):
        a1, b1, a2, b2 = row_fingerprint(indptr, indices, i)
        parts[i] = a1
        parts[n + i] = b1
        parts[2 * n + i] = a2
        parts[3 * n + i] = b2


def pattern_fingerprints(indptr, indices):
    """(f1, f1 of the transpose, f2, f2 of the transpose), uint64 sums mod 2**64."""
    xp = _xp(indptr)
    n = max(indptr.size - 1, 0)
    parts = xp.zeros(4 * n, np.uint64)
    if n:
        launch(_fingerprints, n, indptr, indices, parts)
    s = to_host(parts.reshape(4, n).sum(axis=1, dtype=np.uint64))
    return s[0], s[1], s[2], s[3]
