"""Row and column extraction, CPU.

``gather_rows`` builds ``A[rows, :]`` (rows may repeat, any order).
``extract_cols`` builds ``A[:, cols]`` where ``cols`` may repeat and come in
any order: output column ``t`` is input column ``cols[t]``.  A column map
(input column -> the output positions that select it, in increasing
position) lets each row be expanded in one pass and then sorted.

The map is dense (a counting sort over the input columns) when the column
count is small next to the work, and hashed (a stable sort of ``cols`` and a
hash table of its distinct columns, ``kernels.common.probe``) otherwise, so
a matrix of 2**40 columns and a few entries costs what its entries cost.
Both give the same positions in the same order.
"""

import numba
import numpy as np
from numba import prange

from kernels.common import (EMPTY_KEY, get_bit, lower_bound, probe, sort_pairs, table_bits,
                            use_dense_map)
from kernels.parallel import parallel_kernel



def _gather_work(ptr, idx, val, hv, rows):
    return int(rows.size)


@parallel_kernel(_gather_work, inputs=("ptr", "idx", "val", "rows"))
def gather_rows(ptr, idx, val, hv, rows):
    n = rows.size
    out_ptr = np.empty(n + 1, np.int64)
    out_ptr[0] = 0
    # Each row's start, read once here: the copy pass below then issues its
    # (random, cache-missing) row reads without waiting on ptr first.
    starts = np.empty(n, np.int64)
    for i in prange(n):
        r = rows[i]
        s = ptr[r]
        starts[i] = s
        out_ptr[i + 1] = ptr[r + 1] - s
    for i in range(n):
        out_ptr[i + 1] += out_ptr[i]
    nnz = out_ptr[n]
    out_idx = np.empty(nnz, idx.dtype)
    out_val = np.empty(nnz if hv else 0, val.dtype)
    for i in prange(n):
        # Unsigned offsets: numba adds a negative-index wraparound to every
        # signed access, which keeps LLVM from turning the row copy into a
        # vector copy.
        lo = np.uint64(starts[i])
        f = np.uint64(out_ptr[i])
        m = np.uint64(out_ptr[i + 1]) - f
        for q in range(m):
            out_idx[f + q] = idx[lo + q]
        if hv:
            for q in range(m):
                out_val[f + q] = val[lo + q]
    return out_ptr, out_idx, out_val


@numba.njit(cache=True, nogil=True)
def column_map(cols, ncols):
    """Dense CSR map from input column to the output positions that select it."""
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


@numba.njit(cache=True, nogil=True)
def hashed_column_map(cols):
    """The column map over the distinct selected columns only.

    Returns ``(table, bits, run_ptr, map_pos)``: ``table`` maps an input
    column to its run ``u``; ``map_pos[run_ptr[u]:run_ptr[u+1]]`` are the
    output positions selecting it, increasing (a stable sort).
    """
    m = cols.size
    map_pos = np.argsort(cols, kind="mergesort")
    runs = 0
    for t in range(m):
        if t == 0 or cols[map_pos[t]] != cols[map_pos[t - 1]]:
            runs += 1
    run_ptr = np.empty(runs + 1, np.int64)
    bits = table_bits(runs)
    table = np.full(np.int64(2) << bits, EMPTY_KEY, np.int64)
    u = -1
    for t in range(m):
        c = np.int64(cols[map_pos[t]])
        if t == 0 or c != cols[map_pos[t - 1]]:
            u += 1
            run_ptr[u] = t
            s = probe(table, c, bits)
            table[2 * s] = c
            table[2 * s + 1] = u
    run_ptr[runs] = m
    return table, bits, run_ptr, map_pos.astype(np.int64)


@numba.njit(cache=True, inline="always")
def _run(j, hashed, map_ptr, table, bits, sel):
    """Run of input column ``j`` in the column map (-1: not selected).

    The dense map is read only for columns ``sel`` (a bit per column) marks:
    ncols / 8 bytes stay in cache where the map (8 bytes a column) does not,
    and most entries' columns are not selected.
    """
    if not hashed:
        return np.int64(j) if get_bit(sel, j) else np.int64(-1)
    s = probe(table, np.int64(j), bits)
    if table[2 * s] == EMPTY_KEY:
        return np.int64(-1)
    return table[2 * s + 1]


def _cols_work(ptr, idx, *rest):
    return int(idx.size)


@parallel_kernel(_cols_work, inputs=("ptr", "idx", "val", "map_ptr", "map_pos", "sel"))
def _extract_distinct_cols(ptr, idx, val, hv, map_ptr, map_pos, sel):
    """``_extract_cols`` for a dense map whose columns are selected once each.

    An entry then yields at most one output entry, so both passes run
    without a branch on whether its column is selected (a coin toss the
    branch predictor loses when a few columns in ten are taken): the count
    adds the column's bit, and the fill writes every entry's position to
    the row's next slot and advances by the bit.  A full row's later writes
    go to a spare slot past the end (``nnz``), never into the next row,
    which another thread may be filling.  Output columns are looked up
    afterwards for the kept entries only.
    """
    n = ptr.size - 1
    out_ptr = np.zeros(n + 1, np.int64)
    for i in prange(n):
        c = np.int64(0)
        for q in range(np.uint64(ptr[i]), np.uint64(ptr[i + 1])):
            c += get_bit(sel, idx[q])
        out_ptr[i + 1] = c
    for i in range(n):
        out_ptr[i + 1] += out_ptr[i]
    nnz = out_ptr[n]
    src = np.empty(nnz + 1, np.int64)
    for i in prange(n):
        f = out_ptr[i]
        end = out_ptr[i + 1]
        if f == end:
            continue
        for q in range(ptr[i], ptr[i + 1]):
            src[f if f < end else nnz] = q
            f += get_bit(sel, idx[np.uint64(q)])
    out_idx = np.empty(nnz, np.int64)
    out_val = np.empty(nnz if hv else 0, val.dtype)
    for i in prange(n):
        for t in range(out_ptr[i], out_ptr[i + 1]):
            out_idx[t] = map_pos[map_ptr[idx[src[t]]]]
        sort_pairs(out_idx, src, out_ptr[i], out_ptr[i + 1])
        if hv:
            for t in range(out_ptr[i], out_ptr[i + 1]):
                out_val[t] = val[src[t]]
    return out_ptr, out_idx, out_val, src[:nnz]


@parallel_kernel(_cols_work, inputs=("ptr", "idx", "val", "cols", "map_ptr", "map_pos"))
def _extract_cols(ptr, idx, val, hv, cols, map_ptr, map_pos, hashed, table, bits, sel):
    n = ptr.size - 1
    out_ptr = np.zeros(n + 1, np.int64)
    for i in prange(n):
        c = 0
        # Unsigned positions skip numba's negative-index wraparound (see
        # gather_rows): this pass reads every entry of A.
        for q in range(np.uint64(ptr[i]), np.uint64(ptr[i + 1])):
            u = _run(idx[q], hashed, map_ptr, table, bits, sel)
            if u >= 0:
                c += map_ptr[u + 1] - map_ptr[u]
        out_ptr[i + 1] = c
    for i in range(n):
        out_ptr[i + 1] += out_ptr[i]
    nnz = out_ptr[n]
    out_idx = np.empty(nnz, np.int64)
    src = np.empty(nnz, np.int64)
    for i in prange(n):
        f = out_ptr[i]
        if f == out_ptr[i + 1]:
            continue  # selects nothing: most rows when few columns are taken
        for q in range(ptr[i], ptr[i + 1]):
            u = _run(idx[np.uint64(q)], hashed, map_ptr, table, bits, sel)
            if u < 0:
                continue
            for m in range(map_ptr[u], map_ptr[u + 1]):
                out_idx[f] = map_pos[m]
                src[f] = q
                f += 1
        # Sort the row's (output column, source) pairs by output column
        # (distinct within a row), in place for the usual short rows.
        sort_pairs(out_idx, src, out_ptr[i], out_ptr[i + 1])
    out_val = np.empty(nnz if hv else 0, val.dtype)
    if hv:
        for t in prange(nnz):
            out_val[t] = val[src[t]]
    return out_ptr, out_idx, out_val, src


def extract_cols(ptr, idx, val, hv, cols, ncols):
    """``A[:, cols]``: returns (indptr, indices, values, source positions).

    Parameters
    ----------
    ptr, idx, val : arrays
        CSR input (``val`` may be empty when ``hv`` is False).
    hv : bool
        Whether the input has values.
    cols : int array
        Selected input columns (may repeat, any order).
    ncols : int
        Number of input columns: picks the dense or the hashed column map.
    """
    if use_dense_map(idx.size, cols.size, ncols):
        map_ptr, map_pos = column_map(cols, ncols)
        sel, distinct = selected_bitmap(cols, ncols)
        if distinct:
            return _extract_distinct_cols(ptr, idx, val, hv, map_ptr, map_pos, sel)
        table = np.zeros(0, np.int64)
        bits = 0
        hashed = False
    else:
        table, bits, map_ptr, map_pos = hashed_column_map(cols)
        hashed = True
        sel = np.zeros(0, np.uint64)
    return _extract_cols(ptr, idx, val, hv, cols, map_ptr, map_pos, hashed, table, bits, sel)


@numba.njit(cache=True, nogil=True)
def selected_bitmap(cols, ncols):
    """One bit per input column, set when ``cols`` selects it; and whether no
    column is selected twice."""
    sel = np.zeros((ncols + 63) >> 6, np.uint64)
    distinct = True
    for t in range(cols.size):
        j = np.uint64(cols[t])
        w = j >> np.uint64(6)
        b = np.uint64(1) << (j & np.uint64(63))
        if sel[w] & b:
            distinct = False
        sel[w] |= b
    return sel, distinct


def _take_work(arr, pos):
    return int(pos.size)


@parallel_kernel(_take_work, inputs=("arr", "pos"))
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


def _pairs_work(ptr, idx, val, hv, rows, *rest):
    return int(rows.size)


@parallel_kernel(_pairs_work, inputs=("ptr", "idx", "val", "rows", "cols", "fill"))
def _values_at(ptr, idx, val, hv, rows, cols, fill, out):
    for t in prange(rows.size):
        r = rows[t]
        lo = ptr[r]
        hi = ptr[r + 1]
        c = cols[t]
        p = lower_bound(idx, lo, hi, c)
        if p < hi and idx[p] == c:
            out[t] = val[p] if hv else 1
        else:
            out[t] = fill[0]


def extract_values(ptr, idx, val, hv, rows, cols, fill):
    """``A[rows[t], cols[t]]`` for every t (1 for a structural entry), ``fill[0]``
    where A holds none; the output has ``fill``'s dtype.

    A binary search in each row's sorted columns.  Each search waits on a
    few dependent loads, so a bulk's lookups (a layer-wise sampler's kept
    probabilities: tens of thousands) are shared among the threads; a few
    run on one (``kernels.parallel``).
    """
    out = np.empty(rows.size, fill.dtype)
    if rows.size:
        _values_at(ptr, idx, val, hv, rows, cols, fill, out)
    return out
