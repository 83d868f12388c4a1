"""Where entries sit in a canonical CSR matrix, and whether its pattern is symmetric, CPU.

``find_entries`` answers, for each query ``(row, col)``, the position of that
entry among the matrix's stored entries (``indptr[row]`` plus the rank of
``col`` in the row), or -1 when the matrix stores no such entry: a binary
search bounded to the row, one query per iteration of a parallel loop.

``pattern_fingerprints`` folds the pattern into two 64-bit sums of hashed
coordinates, once as stored and once transposed: equal sums say the pattern
equals its transpose's.  It reads the index arrays once, in order, with no
random access, which is what makes it cheap on a large graph (the exact
alternatives walk the transpose and touch a random row per entry); see ``spla.edges.is_symmetric_pattern`` for what
the comparison promises.

The CUDA twin is ``kernels.cuda.positions``.
"""

import numpy as np
from numba import prange

from kernels.common import lower_bound
from kernels.fingerprint import row_fingerprint
from kernels.parallel import parallel_kernel


@parallel_kernel(lambda indptr, indices, rows, cols: int(rows.size),
                 inputs=("indptr", "indices", "rows", "cols"))
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


@parallel_kernel(lambda indptr, indices: int(indices.size), inputs=("indptr", "indices"))
def pattern_fingerprints(indptr, indices):
    """(f1, f1 of the transpose, f2, f2 of the transpose), uint64 sums mod 2**64.

    The sums over the rows of ``kernels.fingerprint.row_fingerprint``: two
    independent 64-bit comparisons must both pass.
    """
    n = indptr.size - 1
    s1 = np.uint64(0)
    t1 = np.uint64(0)
    s2 = np.uint64(0)
    t2 = np.uint64(0)
    for i in prange(n):
        a1, b1, a2, b2 = row_fingerprint(indptr, indices, i)
        s1 += a1
        t1 += b1
        s2 += a2
        t2 += b2
    return s1, t1, s2, t2
