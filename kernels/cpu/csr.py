"""Building canonical CSR from coordinates, and checking CSR, CPU.

``coo_to_csr`` sorts by (row, column) with a counting sort on rows and a
per-row sort on columns, then folds duplicates (summing them) or reports
the first one.  ``check_csr`` returns the position of the first defect so the
caller can raise an error that says where.
"""

import numba
import numpy as np
from numba import prange

from kernels.parallel import parallel_kernel, read_only_args


def coo_to_csr(rows, cols, vals, hv, nrows, sum_duplicates):
    """Returns (indptr, indices, values, first duplicate position or -1).

    The coordinates are passed to the compiled kernel read-only, so that a
    caller's fresh arrays and a matrix's read-only ones share one compiled
    signature (see ``kernels.parallel.ParallelKernel``'s ``inputs``).
    """
    rows, cols, vals = read_only_args((rows, cols, vals), (0, 1, 2))
    return _coo_to_csr(rows, cols, vals, hv, nrows, sum_duplicates)


@numba.njit(cache=True, nogil=True)
def _coo_to_csr(rows, cols, vals, hv, nrows, sum_duplicates):
    nnz = rows.size
    ptr = np.zeros(nrows + 1, np.int64)
    for t in range(nnz):
        ptr[rows[t] + 1] += 1
    for i in range(nrows):
        ptr[i + 1] += ptr[i]
    fill = ptr[:-1].copy()
    idx = np.empty(nnz, np.int64)
    src = np.empty(nnz, np.int64)
    for t in range(nnz):
        r = rows[t]
        idx[fill[r]] = cols[t]
        src[fill[r]] = t
        fill[r] += 1
    # Stable per-row sort by column keeps the input order of duplicates.
    for i in range(nrows):
        lo = ptr[i]
        hi = ptr[i + 1]
        if hi - lo > 1:
            order = np.argsort(idx[lo:hi], kind="mergesort")
            idx[lo:hi] = idx[lo:hi][order]
            src[lo:hi] = src[lo:hi][order]
    out_val = np.empty(nnz if hv else 0, vals.dtype)
    if hv:
        for t in range(nnz):
            out_val[t] = vals[src[t]]
    # Fold duplicates.
    first_dup = -1
    new_ptr = np.zeros(nrows + 1, np.int64)
    f = 0
    for i in range(nrows):
        lo = ptr[i]
        hi = ptr[i + 1]
        for t in range(lo, hi):
            if t > lo and idx[t] == idx[f - 1]:
                if first_dup < 0:
                    first_dup = src[t]
                if not sum_duplicates:
                    continue
                if hv:
                    out_val[f - 1] += out_val[t]
            else:
                idx[f] = idx[t]
                if hv:
                    out_val[f] = out_val[t]
                f += 1
        new_ptr[i + 1] = f
    return new_ptr, idx[:f].copy(), out_val[:f].copy() if hv else out_val, first_dup


@parallel_kernel(lambda ptr, idx: int(idx.size), inputs=("ptr", "idx"))
def first_unsorted(ptr, idx):
    """Smallest entry position that is not strictly after its row neighbour, or -1."""
    n = ptr.size - 1
    bad = np.full(n, -1, np.int64)
    for i in prange(n):
        for t in range(ptr[i] + 1, ptr[i + 1]):
            if idx[t] <= idx[t - 1]:
                bad[i] = t
                break
    for i in range(n):
        if bad[i] >= 0:
            return bad[i]
    return -1
