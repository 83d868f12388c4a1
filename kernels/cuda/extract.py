"""Row and column extraction, CUDA.

Twin of ``kernels.cpu.extract``.  ``gather_rows`` copies one output row per
thread.  ``extract_cols`` builds the same column map as the CPU kernel (input
column -> output positions, in increasing position), expands each row with
one thread, then sorts the expansion by (row, output column) with a stable
sort; output columns are distinct within a row, so the order is the CPU one.

The map is dense (indexed by input column) under the CPU kernel's rule
(``kernels.common.use_dense_map``); otherwise it holds the distinct
selected columns sorted, and a thread finds an entry's column by binary
search (``kernels.common.lower_bound``) instead of the CPU's hash table:
same runs, same positions, no array of the input's column count.
"""

import numpy as np
from numba import cuda

from kernels.common import lower_bound as _lower_bound
from kernels.common import use_dense_map
from kernels.cuda._util import argsort_stable, device, host_int, launch, scan, stable_order, _xp

lower_bound = device(_lower_bound)


@cuda.jit(cache=True)
def _gather_count(ptr, rows, counts):
    n = rows.size
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, n, stride):
        r = rows[i]
        counts[i + 1] = ptr[r + 1] - ptr[r]


@cuda.jit(cache=True)
def _gather_fill(ptr, idx, val, hv, rows, out_ptr, out_idx, out_val):
    n = rows.size
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, n, stride):
        r = rows[i]
        lo = ptr[r]
        f = out_ptr[i]
        for q in range(lo, ptr[r + 1]):
            out_idx[f + q - lo] = idx[q]
            if hv:
                out_val[f + q - lo] = val[q]


@cuda.jit(cache=True)
def _cols_count(ptr, idx, map_ptr, keys, searched, counts):
    n = ptr.size - 1
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, n, stride):
        c = 0
        for q in range(ptr[i], ptr[i + 1]):
            u = idx[q]
            if searched:
                # The run of a selected column, -1 for the others.
                p = lower_bound(keys, 0, keys.size, u)
                u = p if p < keys.size and keys[p] == u else -1
            if u >= 0:
                c += map_ptr[u + 1] - map_ptr[u]
        counts[i + 1] = c


@cuda.jit(cache=True)
def _cols_expand(ptr, idx, map_ptr, map_pos, keys, searched, out_ptr, e_row, e_idx,
                 e_src):
    n = ptr.size - 1
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, n, stride):
        f = out_ptr[i]
        for q in range(ptr[i], ptr[i + 1]):
            u = idx[q]
            if searched:
                p = lower_bound(keys, 0, keys.size, u)
                u = p if p < keys.size and keys[p] == u else -1
            if u < 0:
                continue
            for m in range(map_ptr[u], map_ptr[u + 1]):
                e_row[f] = i
                e_idx[f] = map_pos[m]
                e_src[f] = q
                f += 1


@cuda.jit(cache=True)
def _take(src, val, out):
    n = src.size
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for t in range(start, n, stride):
        out[t] = val[src[t]]


def gather_rows(ptr, idx, val, hv, rows):
    xp = _xp(ptr)
    n = rows.size
    out_ptr = xp.zeros(n + 1, np.int64)
    if n:
        launch(_gather_count, n, ptr, rows, out_ptr)
        out_ptr = scan(xp, out_ptr)
    nnz = host_int(out_ptr[n])
    out_idx = xp.empty(nnz, idx.dtype)
    out_val = xp.empty(nnz if hv else 0, val.dtype)
    if nnz:
        launch(_gather_fill, n, ptr, idx, val, bool(hv), rows, out_ptr,
                                       out_idx, out_val)
    return out_ptr, out_idx, out_val


def column_map(cols, ncols):
    """Dense CSR map from input column to the output positions that select it."""
    xp = _xp(cols)
    map_ptr = xp.zeros(ncols + 1, np.int64)
    if cols.size == 0:
        return map_ptr, xp.zeros(0, np.int64)
    map_ptr[1:] = xp.bincount(cols, minlength=ncols)
    # A stable sort by column lists each column's positions in increasing
    # order, as the CPU counting sort does.
    return scan(xp, map_ptr), argsort_stable(xp, cols)


def sorted_column_map(cols):
    """The column map over the distinct selected columns only.

    Returns ``(keys, run_ptr, map_pos)``: ``keys`` the distinct columns
    ascending; ``map_pos[run_ptr[u]:run_ptr[u+1]]`` the output positions
    selecting ``keys[u]``, increasing (a stable sort).
    """
    xp = _xp(cols)
    if cols.size == 0:
        return xp.zeros(0, np.int64), xp.zeros(1, np.int64), xp.zeros(0, np.int64)
    map_pos = argsort_stable(xp, cols)
    sc = cols[map_pos].astype(np.int64)
    new = xp.empty(sc.size, np.bool_)
    new[0] = True
    new[1:] = sc[1:] != sc[:-1]
    starts = xp.flatnonzero(new).astype(np.int64)
    run_ptr = xp.empty(starts.size + 1, np.int64)
    run_ptr[:-1] = starts
    run_ptr[-1] = sc.size
    return sc[starts], run_ptr, map_pos


def extract_cols(ptr, idx, val, hv, cols, ncols):
    """``A[:, cols]``: returns (indptr, indices, values, source positions)."""
    xp = _xp(ptr)
    n = ptr.size - 1
    if use_dense_map(idx.size, cols.size, ncols):
        map_ptr, map_pos = column_map(cols, ncols)
        keys = xp.zeros(0, np.int64)
        searched = False
    else:
        keys, map_ptr, map_pos = sorted_column_map(cols)
        searched = True
    out_ptr = xp.zeros(n + 1, np.int64)
    if n > 0 and cols.size:
        launch(_cols_count, n, ptr, idx, map_ptr, keys, searched, out_ptr)
        out_ptr = scan(xp, out_ptr)
    nnz = host_int(out_ptr[n]) if n > 0 else 0
    if nnz == 0:
        return (out_ptr, xp.zeros(0, np.int64), xp.zeros(0, val.dtype),
                xp.zeros(0, np.int64))
    e_row = xp.empty(nnz, np.int64)
    e_idx = xp.empty(nnz, np.int64)
    e_src = xp.empty(nnz, np.int64)
    launch(_cols_expand, n, ptr, idx, map_ptr, map_pos, keys, searched, out_ptr,
                                   e_row, e_idx, e_src)
    order = stable_order(xp, e_row, e_idx, n, cols.size)
    out_idx = e_idx[order]
    src = e_src[order]
    out_val = xp.empty(nnz if hv else 0, val.dtype)
    if hv:
        launch(_take, nnz, src, val, out_val)
    return out_ptr, out_idx, out_val, src


@cuda.jit(cache=True)
def _take_at(arr, pos, out):
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, pos.size, stride):
        out[i] = arr[pos[i]]


def take(arr, pos):
    """``arr[pos]`` for int64 positions (twin of the CPU ``take``)."""
    xp = _xp(pos)
    out = xp.empty(pos.size, arr.dtype)
    if pos.size:
        launch(_take_at, pos.size, arr, pos, out)
    return out


@cuda.jit(cache=True)
def _values_at(ptr, idx, val, hv, rows, cols, fill, out):
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for t in range(start, rows.size, stride):
        r = rows[t]
        lo = ptr[r]
        hi = ptr[r + 1]
        c = cols[t]
        p = lower_bound(idx, lo, hi, c)
        if p < hi and idx[p] == c:
            out[t] = val[p] if hv != 0 else 1
        else:
            out[t] = fill[0]


def extract_values(ptr, idx, val, hv, rows, cols, fill):
    """``A[rows[t], cols[t]]`` for every t (twin of the CPU ``extract_values``):
    a thread per lookup, one launch."""
    xp = _xp(rows)
    out = xp.empty(rows.size, fill.dtype)
    if rows.size:
        launch(_values_at, rows.size, ptr, idx, val, hv, rows, cols, fill, out)
    return out
