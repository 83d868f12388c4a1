"""Row and column extraction, CPU.

``gather_rows`` builds ``A[rows, :]`` (rows may repeat, any order).
``extract_cols`` builds ``A[:, cols]`` where ``cols`` may repeat and come in
any order: output column ``t`` is input column ``cols[t]``.  A column map in
CSR form (input column -> output positions, built by a counting sort) lets
each row be expanded in one pass and then sorted.
"""

import numba
import numpy as np
from numba import prange


@numba.njit(parallel=True, cache=True)
def gather_rows(ptr, idx, val, hv, rows):
    n = rows.size
    out_ptr = np.zeros(n + 1, np.int64)
    for i in prange(n):
        r = rows[i]
        out_ptr[i + 1] = ptr[r + 1] - ptr[r]
    for i in range(n):
        out_ptr[i + 1] += out_ptr[i]
    nnz = out_ptr[n]
    out_idx = np.empty(nnz, idx.dtype)
    out_val = np.empty(nnz if hv else 0, val.dtype)
    for i in prange(n):
        r = rows[i]
        lo = ptr[r]
        f = out_ptr[i]
        for q in range(lo, ptr[r + 1]):
            out_idx[f + q - lo] = idx[q]
            if hv:
                out_val[f + q - lo] = val[q]
    return out_ptr, out_idx, out_val


@numba.njit(cache=True)
def column_map(cols, ncols):
    """CSR map from input column to the output positions that select it."""
    map_ptr = np.zeros(ncols + 1, np.int64)
    for t in range(cols.size):
        map_ptr[cols[t] + 1] += 1
    for c in range(ncols):
        map_ptr[c + 1] += map_ptr[c]
    fill = map_ptr[:-1].copy()
    map_pos = np.empty(cols.size, np.int64)
    for t in range(cols.size):
        c = cols[t]
        map_pos[fill[c]] = t
        fill[c] += 1
    return map_ptr, map_pos


@numba.njit(parallel=True, cache=True)
def extract_cols(ptr, idx, val, hv, cols, ncols):
    """``A[:, cols]``: returns (indptr, indices, values, source positions)."""
    n = ptr.size - 1
    map_ptr, map_pos = column_map(cols, ncols)
    out_ptr = np.zeros(n + 1, np.int64)
    for i in prange(n):
        c = 0
        for q in range(ptr[i], ptr[i + 1]):
            j = idx[q]
            c += map_ptr[j + 1] - map_ptr[j]
        out_ptr[i + 1] = c
    for i in range(n):
        out_ptr[i + 1] += out_ptr[i]
    nnz = out_ptr[n]
    out_idx = np.empty(nnz, np.int64)
    src = np.empty(nnz, np.int64)
    for i in prange(n):
        f = out_ptr[i]
        for q in range(ptr[i], ptr[i + 1]):
            j = idx[q]
            for m in range(map_ptr[j], map_ptr[j + 1]):
                out_idx[f] = map_pos[m]
                src[f] = q
                f += 1
        # Sort the row's (output column, source) pairs by output column.
        lo = out_ptr[i]
        hi = out_ptr[i + 1]
        if hi - lo > 1:
            order = np.argsort(out_idx[lo:hi])
            tmp_i = out_idx[lo:hi][order]
            tmp_s = src[lo:hi][order]
            out_idx[lo:hi] = tmp_i
            src[lo:hi] = tmp_s
    out_val = np.empty(nnz if hv else 0, val.dtype)
    if hv:
        for t in prange(nnz):
            out_val[t] = val[src[t]]
    return out_ptr, out_idx, out_val, src


@numba.njit(parallel=True, cache=True)
def take(arr, pos):
    """``arr[pos]`` for int64 positions, in parallel.

    The samplers' picks are random positions in the graph's index array:
    each read is a cache miss, so spreading them over the threads is what
    makes the gather scale (numpy's fancy indexing runs on one thread).
    """
    out = np.empty(pos.size, arr.dtype)
    for i in prange(pos.size):
        out[i] = arr[pos[i]]
    return out
