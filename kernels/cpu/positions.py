"""Where entries sit in a canonical CSR matrix, and whether its pattern is symmetric (CPU only).

``find_entries`` answers, for each query ``(row, col)``, the position of that
entry among the matrix's stored entries (``indptr[row]`` plus the rank of
``col`` in the row), or -1 when the matrix stores no such entry: a binary
search bounded to the row, one query per iteration of a parallel loop.

``pattern_fingerprints`` folds the pattern into two 64-bit sums of hashed
coordinates, once as stored and once transposed: equal sums say the pattern
equals its transpose's.  It reads the index arrays once, in order, with no
random access, which is what makes it cheap on a 31 M-entry graph (the
exact alternatives walk the transpose and touch a random row per entry,
about ten times slower); see ``spla.edges.is_symmetric_pattern`` for what
the comparison promises.

The GPU path of both lives in ``spla.edges`` (array-module code on cupy
arrays), so there is no CUDA twin here.
"""

import numpy as np
from numba import prange

from kernels.common import lower_bound, mix64
from kernels.parallel import parallel_kernel

# Keys of the two hash families (odd 64-bit constants with no structure in
# common with splitmix64's own).
_K1 = np.uint64(0xD1B54A32D192ED03)
_K2 = np.uint64(0x8CB92BA72F3D8DD7)
_M1 = np.uint64(0xBF58476D1CE4E5B9)


@parallel_kernel(lambda indptr, indices, rows, cols: int(rows.size))
def find_entries(indptr, indices, rows, cols):
    """Position of entry ``(rows[t], cols[t])`` in the stored entries, or -1."""
    out = np.empty(rows.size, np.int64)
    for t in prange(rows.size):
        r = rows[t]
        lo = indptr[r]
        hi = indptr[r + 1]
        c = cols[t]
        p = lower_bound(indices, lo, hi, c)
        out[t] = p if p < hi and indices[p] == c else -1
    return out


@parallel_kernel(lambda indptr, indices: int(indices.size))
def pattern_fingerprints(indptr, indices):
    """(f1, f1 of the transpose, f2, f2 of the transpose), uint64 sums mod 2**64.

    ``h(a, b)`` is a bijection of ``b`` for each ``a`` (distinct entries of a
    row hash apart); ``f1`` sums ``h`` over the entries, ``f2`` sums a second
    avalanche of ``h``, so two independent 64-bit comparisons must both pass.
    """
    n = indptr.size - 1
    s1 = np.uint64(0)
    t1 = np.uint64(0)
    s2 = np.uint64(0)
    t2 = np.uint64(0)
    for i in prange(n):
        ui = np.uint64(i)
        hi = mix64(ui + _K1)
        a1 = np.uint64(0)
        b1 = np.uint64(0)
        a2 = np.uint64(0)
        b2 = np.uint64(0)
        for k in range(indptr[i], indptr[i + 1]):
            uj = np.uint64(indices[k])
            hj = mix64(uj + _K1)
            h = mix64(hi ^ (uj * _M1))       # entry (i, j)
            ht = mix64(hj ^ (ui * _M1))      # entry (j, i) of the transpose
            a1 += h
            b1 += ht
            a2 += mix64(h ^ _K2)
            b2 += mix64(ht ^ _K2)
        s1 += a1
        t1 += b1
        s2 += a2
        t2 += b2
    return s1, t1, s2, t2
