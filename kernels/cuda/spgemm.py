"""Sparse times sparse (SpGEMM) over a semiring, CUDA.

Twin of ``kernels.cpu.spgemm``.  ``spgemm_symbolic`` and ``spgemm_numeric``
send each row to one of three paths (``spgemm_hash.row_paths``): rows of
at most ``spgemm_hash.CAP`` products to a block-per-row hash table in shared
memory, longer rows over few enough columns to a block-per-row dense
accumulator (both in ``kernels.cuda.spgemm_hash``), and the rest, long rows
over very many columns, to ESC (expand, sort, compress), below:

1. **count**: each entry ``p`` of A contributes the length of row
   ``a_idx[p]`` of B; a scan over A's entries gives each entry its slice of
   an expansion buffer (entries in row order, so rows get contiguous slices).
2. **expand**: one thread per *product* ``t`` finds its entry of A and its
   row by binary search in the scans and writes ``(row, column[, product])``:
   the buffer holds the pairs ``(p, q)`` in the order the CPU kernel visits
   them (A's entries of the row ascending, then B's entries ascending).
   Per-product threads keep the GPU busy whatever the shape: a few rows with
   huge products (LADIES' one row per minibatch, hub rows of an R-MAT graph)
   would leave one thread per row doing all the work.
3. **sort**: a stable sort by (row, column), so each run of equal
   coordinates keeps the expansion order.
4. **compress**: ``spgemm_symbolic`` counts the runs per row;
   ``spgemm_numeric`` reduces each run with one thread, adding the terms in
   the CPU kernel's order, so floating-point sums are bit-identical.

Steps 2-4 run over chunks of whole rows of at most ``_util.CHUNK_ITEMS``
products (``_util.row_chunks``), so the memory is bounded by the chunk, not
the product.

Products are stored to the expansion buffer before they are added, so the
GPU compiler cannot contract ``acc + a * b`` into a fused multiply-add that
the CPU does not do.

``spgemm_gather`` (A with at most one entry per row) is one thread per
output entry, which finds its row by binary search: a hub row of B is copied
by many threads, not one.
"""

import numba
import numpy as np
from numba import cuda

from kernels.cuda import spgemm_hash
from kernels.cuda._util import (device, host_int, launch, row_chunks, scan, stable_order, to_host,
                                _xp)
from kernels.common import index_dtype
from kernels.common import lower_bound as _lower_bound
from kernels.semiring_ops import add_op as _add_op
from kernels.semiring_ops import mul_op as _mul_op

add_op = device(_add_op)
mul_op = device(_mul_op)
lower_bound = device(_lower_bound)

@numba.njit(cache=True, inline="always")
def _locate_product(t, ent, a_ptr, a_idx, b_ptr):
    """Product ``t``'s row of A, entry of A and entry of B (binary searches)."""
    p = _lower_bound(ent, 0, ent.size, t + 1) - 1
    i = _lower_bound(a_ptr, 0, a_ptr.size, p + 1) - 1
    k = a_idx[p]
    return i, p, b_ptr[k] + (t - ent[p])


_locate = device(_locate_product)


@cuda.jit(cache=True)
def _expand_structure(a_ptr, a_idx, b_ptr, b_idx, ent, t0, r0, e_row, e_col):
    """Products ``t0 + u`` for ``u < e_row.size``: local row ``i - r0``, column."""
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for u in range(start, e_row.size, stride):
        i, p, q = _locate(t0 + u, ent, a_ptr, a_idx, b_ptr)
        e_row[u] = i - r0
        e_col[u] = b_idx[q]


@cuda.jit(cache=True)
def _expand_values(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, mul,
                   one, ent, t0, r0, e_row, e_col, e_val):
    onev = one[0]
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for u in range(start, e_row.size, stride):
        i, p, q = _locate(t0 + u, ent, a_ptr, a_idx, b_ptr)
        av = a_val[p] if a_hv else onev
        bv = b_val[q] if b_hv else onev
        e_row[u] = i - r0
        e_col[u] = b_idx[q]
        e_val[u] = mul_op(mul, av, bv, onev)


@cuda.jit(cache=True)
def _reduce_runs(order, starts, total, e_col, e_val, add, out_idx, out_val):
    """Output entry ``u``: the column of run ``u`` and its terms added in order."""
    m = starts.size
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for u in range(start, m, stride):
        lo = starts[u]
        hi = starts[u + 1] if u + 1 < m else total
        e = order[lo]
        out_idx[u] = e_col[e]
        out_val[u] = e_val[e]
        # Accumulate in out_val[u] (the output dtype), like the CPU kernel's
        # acc[j]: each addition is rounded as there.
        for t in range(lo + 1, hi):
            out_val[u] = add_op(add, out_val[u], e_val[order[t]])


@cuda.jit(cache=True)
def _gather_count(a_ptr, a_idx, b_ptr, counts):
    n = a_ptr.size - 1
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, n, stride):
        c = 0
        if a_ptr[i + 1] > a_ptr[i]:
            k = a_idx[a_ptr[i]]
            c = b_ptr[k + 1] - b_ptr[k]
        counts[i + 1] = c


@cuda.jit(cache=True)
def _gather_fill(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, mul,
                 one, out_ptr, out_idx, out_val):
    onev = one[0]
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for t in range(start, out_idx.size, stride):
        # The row whose slice of the output holds t; it has exactly one
        # entry of A, since its slice is not empty.
        i = lower_bound(out_ptr, 0, out_ptr.size, t + 1) - 1
        p = a_ptr[i]
        k = a_idx[p]
        q = b_ptr[k] + (t - out_ptr[i])
        av = a_val[p] if a_hv else onev
        bv = b_val[q] if b_hv else onev
        out_idx[t] = b_idx[q]
        out_val[t] = mul_op(mul, av, bv, onev)


def _entry_offsets(xp, a_idx, b_ptr, total=True):
    """Scan of the products per entry of A (``ent[p]``: entry p's first), and
    their total (a read; None when ``total`` is False)."""
    k = a_idx.astype(np.int64)
    ent = xp.zeros(a_idx.size + 1, np.int64)
    ent[1:] = xp.cumsum(b_ptr[k + 1] - b_ptr[k])
    return ent, (host_int(ent[-1]) if total else None)


def _runs(xp, e_row, e_col, nrows, ncols):
    """(order, run starts) of the expansion sorted stably by (row, column)."""
    total = e_row.size
    order = stable_order(xp, e_row, e_col, nrows, ncols)
    sr = e_row[order]
    sc = e_col[order]
    new = xp.empty(total, np.bool_)
    new[0] = True
    new[1:] = (sr[1:] != sr[:-1]) | (sc[1:] != sc[:-1])
    return order, sr, xp.flatnonzero(new)


def _esc_symbolic(a_ptr, a_idx, b_ptr, b_idx, ncols):
    """Exclusive-scanned row pointer of ``A @ B`` (structure only), by ESC."""
    xp = _xp(a_ptr)
    n = a_ptr.size - 1
    if n <= 0:
        return xp.zeros(max(n, 0) + 1, np.int64)
    ent, total = _entry_offsets(xp, a_idx, b_ptr)
    out_ptr = xp.zeros(n + 1, np.int64)
    for r0, r1, t0, t1 in row_chunks(ent[a_ptr], total):
        if t1 == t0:
            continue
        e_row = xp.empty(t1 - t0, np.int64)
        e_col = xp.empty(t1 - t0, np.int64)
        launch(_expand_structure, t1 - t0, a_ptr, a_idx, b_ptr, b_idx, ent, t0, r0,
                                                  e_row, e_col)
        _, sr, starts = _runs(xp, e_row, e_col, r1 - r0, ncols)
        out_ptr[1 + r0:1 + r1] = xp.bincount(sr[starts], minlength=r1 - r0)
    return scan(xp, out_ptr)


def _esc_numeric(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv,
                 ncols, out_ptr, add, mul, one):
    """Fill ``A @ B`` given its row pointer, by ESC: returns (indices, values)."""
    xp = _xp(a_ptr)
    n = a_ptr.size - 1
    # Column indices as the CPU kernel types them: int32 when they fit.
    idx_dtype = index_dtype(ncols)
    nnz = host_int(out_ptr[n]) if n > 0 else 0
    if nnz == 0:
        return xp.zeros(0, idx_dtype), xp.zeros(0, one.dtype)
    ent, total = _entry_offsets(xp, a_idx, b_ptr)
    out_idx = xp.empty(nnz, idx_dtype)
    out_val = xp.empty(nnz, one.dtype)
    chunks = row_chunks(ent[a_ptr], total)
    bounds = to_host(out_ptr[np.array([c[0] for c in chunks] + [n])]) if len(chunks) > 1 \
        else np.array([0, nnz])
    for (r0, r1, t0, t1), o0, o1 in zip(chunks, bounds[:-1], bounds[1:]):
        if t1 == t0:
            continue
        e_row = xp.empty(t1 - t0, np.int64)
        e_col = xp.empty(t1 - t0, np.int64)
        e_val = xp.empty(t1 - t0, one.dtype)
        launch(_expand_values, t1 - t0, a_ptr, a_idx, a_val, bool(a_hv), b_ptr,
                                               b_idx, b_val, bool(b_hv), mul, one, ent,
                                               t0, r0, e_row, e_col, e_val)
        order, _, starts = _runs(xp, e_row, e_col, r1 - r0, ncols)
        m = starts.size
        launch(_reduce_runs, m, order, starts, t1 - t0, e_col, e_val, add,
                                       out_idx[int(o0):int(o1)], out_val[int(o0):int(o1)])
    return out_idx, out_val


def _split(xp, a_ptr, a_idx, b_ptr, ncols):
    """(hash rows, dense rows, ESC rows): ``spgemm_hash.row_paths`` on each row's products."""
    ent, _ = _entry_offsets(xp, a_idx, b_ptr, total=False)
    return spgemm_hash.row_paths(xp, ent[a_ptr[1:]] - ent[a_ptr[:-1]], ncols)


def _sub_rows(xp, ptr, rows):
    """The rows ``rows`` of a CSR with row pointer ``ptr``: their row pointer,
    and the positions of their entries in the CSR (row after row)."""
    lens = ptr[rows + 1] - ptr[rows]
    sub = xp.zeros(rows.size + 1, np.int64)
    sub[1:] = xp.cumsum(lens)
    return sub, xp.repeat(ptr[rows] - sub[:-1], lens) + xp.arange(host_int(sub[-1]))


def spgemm_symbolic(a_ptr, a_idx, b_ptr, b_idx, ncols, paths=None):
    """Exclusive-scanned row pointer of ``A @ B`` (structure only): the hash
    count for rows that fit a table, ESC for the others (``_split``; pass
    its result as ``paths`` when the numeric pass will need it too)."""
    xp = _xp(a_ptr)
    n = a_ptr.size - 1
    if n <= 0:
        return xp.zeros(max(n, 0) + 1, np.int64)
    small, dense, big = paths if paths is not None else _split(xp, a_ptr, a_idx, b_ptr, ncols)
    counts = xp.zeros(n + 1, np.int64)
    spgemm_hash.hash_count(small, a_ptr, a_idx, b_ptr, b_idx, counts)
    one = xp.ones(1, np.float64)
    spgemm_hash.dense_rows(xp, dense, a_ptr, a_idx, one, False, b_ptr, b_idx, one, False, 0,
                           0, one, ncols, False, counts, one, one)
    if big.size:
        s_ptr, pos = _sub_rows(xp, a_ptr, big)
        counts[big + 1] = xp.diff(_esc_symbolic(s_ptr, a_idx[pos], b_ptr, b_idx, ncols))
    return scan(xp, counts)


def spgemm_numeric(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv,
                   ncols, out_ptr, add, mul, one, paths=None):
    """Fill ``A @ B`` given the row pointer from ``spgemm_symbolic``:
    returns (indices, values); rows split between hash and ESC as there
    (``paths``: the symbolic pass's split, if at hand)."""
    xp = _xp(a_ptr)
    n = a_ptr.size - 1
    idx_dtype = index_dtype(ncols)
    nnz = host_int(out_ptr[n]) if n > 0 else 0
    if nnz == 0:
        return xp.zeros(0, idx_dtype), xp.zeros(0, one.dtype)
    small, dense, big = paths if paths is not None else _split(xp, a_ptr, a_idx, b_ptr, ncols)
    out_idx = xp.empty(nnz, idx_dtype)
    out_val = xp.empty(nnz, one.dtype)
    spgemm_hash.hash_fill(xp, small, a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv,
                          mul, add, one, out_ptr, out_idx, out_val)
    spgemm_hash.dense_rows(xp, dense, a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv,
                           mul, add, one, ncols, True, out_ptr, out_idx, out_val)
    if big.size:
        s_ptr, pos = _sub_rows(xp, a_ptr, big)
        o_ptr, dest = _sub_rows(xp, out_ptr, big)
        got_idx, got_val = _esc_numeric(s_ptr, a_idx[pos], a_val[pos] if a_hv else a_val, a_hv,
                                        b_ptr, b_idx, b_val, b_hv, ncols, o_ptr, add, mul, one)
        out_idx[dest] = got_idx
        out_val[dest] = got_val
    return out_idx, out_val


def spgemm(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, ncols, add, mul, one):
    """``A @ B`` over a semiring: (indptr, indices, values), by the counting
    pass then the filling pass (the CPU kernel's one-pass variant bounds rows
    by their products, which the sort-based device passes gain nothing from)."""
    paths = _split(_xp(a_ptr), a_ptr, a_idx, b_ptr, ncols) if a_ptr.size > 1 else None
    ptr = spgemm_symbolic(a_ptr, a_idx, b_ptr, b_idx, ncols, paths)
    return (ptr,) + spgemm_numeric(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv,
                                   ncols, ptr, add, mul, one, paths)


def spgemm_gather(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, mul,
                  one):
    """``A @ B`` for an A with at most one entry per row (row gather)."""
    xp = _xp(a_ptr)
    n = a_ptr.size - 1
    out_ptr = xp.zeros(n + 1, np.int64)
    if n > 0:
        launch(_gather_count, n, a_ptr, a_idx, b_ptr, out_ptr)
        out_ptr = scan(xp, out_ptr)
    nnz = host_int(out_ptr[n])
    out_idx = xp.empty(nnz, b_idx.dtype)
    out_val = xp.empty(nnz, one.dtype)
    if nnz:
        launch(_gather_fill, nnz, a_ptr, a_idx, a_val, bool(a_hv), b_ptr,
                                         b_idx, b_val, bool(b_hv), mul, one,
                                         out_ptr, out_idx, out_val)
    return out_ptr, out_idx, out_val
