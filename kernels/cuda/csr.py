"""Building canonical CSR from coordinates, and checking CSR, CUDA.

Twin of ``kernels.cpu.csr``.  ``coo_to_csr`` sorts the coordinates by
(row, column) with a stable sort (duplicates stay in input order), marks the
first entry of each run of equal coordinates, and folds each run with one
thread: summing in input order (as the CPU kernel does) or keeping the first.
``first_unsorted`` checks one row per thread.
"""

import numpy as np
from numba import cuda

from kernels.cuda._util import launch, scan, stable_order, _xp


@cuda.jit(cache=True)
def _fold_runs(order, starts, nnz, vals, sum_duplicates, out):
    """``out[u]``: the first value of run ``u``, or the run's sum in input order."""
    m = starts.size
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for u in range(start, m, stride):
        lo = starts[u]
        hi = starts[u + 1] if u + 1 < m else nnz
        out[u] = vals[order[lo]]
        if sum_duplicates:
            for t in range(lo + 1, hi):
                out[u] += vals[order[t]]


@cuda.jit(cache=True)
def _row_first_unsorted(ptr, idx, bad):
    n = ptr.size - 1
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, n, stride):
        bad[i] = -1
        for t in range(ptr[i] + 1, ptr[i + 1]):
            if idx[t] <= idx[t - 1]:
                bad[i] = t
                break


def coo_to_csr(rows, cols, vals, hv, nrows, sum_duplicates):
    """Returns (indptr, indices, values, first duplicate position or -1)."""
    xp = _xp(rows)
    nnz = rows.size
    val_dtype = vals.dtype
    if nnz == 0:
        return (xp.zeros(nrows + 1, np.int64), xp.zeros(0, np.int64),
                xp.zeros(0, val_dtype), -1)
    r = rows.astype(np.int64, copy=False)
    c = cols.astype(np.int64, copy=False)
    ncols = int(c.max()) + 1
    order = stable_order(xp, r, c, nrows, ncols)
    sr = r[order]
    sc = c[order]
    new = xp.empty(nnz, np.bool_)
    new[0] = True
    new[1:] = (sr[1:] != sr[:-1]) | (sc[1:] != sc[:-1])
    starts = xp.flatnonzero(new)
    dups = xp.flatnonzero(~new)
    # The CPU kernel reports the source position of the first repeat met in
    # (row, column) order: the second entry of the first duplicated run.
    first_dup = int(order[dups[0]]) if dups.size else -1
    idx = sc[starts]
    ptr = xp.zeros(nrows + 1, np.int64)
    ptr[1:] = xp.bincount(sr[starts], minlength=nrows)
    ptr = scan(xp, ptr)
    if not hv:
        return ptr, idx, xp.zeros(0, val_dtype), first_dup
    out = xp.empty(starts.size, val_dtype)
    launch(_fold_runs, starts.size, order, starts, nnz, vals,
                                           bool(sum_duplicates), out)
    return ptr, idx, out, first_dup


def first_unsorted(ptr, idx):
    """Smallest entry position that is not strictly after its row neighbour, or -1."""
    xp = _xp(ptr)
    n = ptr.size - 1
    if n <= 0 or idx.size == 0:
        return -1
    bad = xp.empty(n, np.int64)
    launch(_row_first_unsorted, n, ptr, idx, bad)
    hits = xp.flatnonzero(bad >= 0)
    if hits.size == 0:
        return -1
    return int(bad[hits[0]])
