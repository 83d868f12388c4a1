"""Sparse times sparse (SpGEMM) over a semiring, CUDA.

Twin of ``kernels.cpu.spgemm``.  A dense per-row accumulator is out of the
question on a GPU, so both passes use ESC (expand, sort, compress):

1. **count**: one thread per row of A sums the lengths of the rows of B it
   touches; a scan gives each row its slice of an expansion buffer.
2. **expand**: one thread per row of A writes ``(row, column[, product])`` for
   every pair ``(p, q)`` in the order the CPU kernel visits them (A's entries
   of the row ascending, then B's entries ascending).
3. **sort**: a stable sort by (row, column), so each run of equal
   coordinates keeps the expansion order.
4. **compress**: ``spgemm_symbolic`` counts the runs per row;
   ``spgemm_numeric`` reduces each run with one thread, adding the terms in
   the CPU kernel's order, so floating-point sums are bit-identical.

Products are stored to the expansion buffer before they are added, so the
GPU compiler cannot contract ``acc + a * b`` into a fused multiply-add that
the CPU does not do.

``spgemm_gather`` (A with at most one entry per row) is one thread per row
copying a scaled row of B.
"""

import numpy as np
from numba import cuda

from kernels.cuda._util import (BLOCK, _xp, blocks, device, host_int, scan,
                                stable_order)
from kernels.common import index_dtype
from kernels.cpu import spgemm as _cpu_spgemm
from kernels.semiring_ops import add_op as _add_op
from kernels.semiring_ops import mul_op as _mul_op

add_op = device(_add_op)
mul_op = device(_mul_op)
gather_row_fill = device(_cpu_spgemm.gather_row_fill)


@cuda.jit(cache=True)
def _count_products(a_ptr, a_idx, b_ptr, counts):
    """``counts[i + 1]``: number of products of row ``i`` (``counts[0] == 0``)."""
    n = a_ptr.size - 1
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, n, stride):
        c = 0
        for p in range(a_ptr[i], a_ptr[i + 1]):
            k = a_idx[p]
            c += b_ptr[k + 1] - b_ptr[k]
        counts[i + 1] = c


@cuda.jit(cache=True)
def _expand_structure(a_ptr, a_idx, b_ptr, b_idx, off, e_row, e_col):
    n = a_ptr.size - 1
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, n, stride):
        f = off[i]
        for p in range(a_ptr[i], a_ptr[i + 1]):
            k = a_idx[p]
            for q in range(b_ptr[k], b_ptr[k + 1]):
                e_row[f] = i
                e_col[f] = b_idx[q]
                f += 1


@cuda.jit(cache=True)
def _expand_values(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, mul,
                   one, off, e_row, e_col, e_val):
    n = a_ptr.size - 1
    onev = one[0]
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, n, stride):
        f = off[i]
        for p in range(a_ptr[i], a_ptr[i + 1]):
            k = a_idx[p]
            av = a_val[p] if a_hv else onev
            for q in range(b_ptr[k], b_ptr[k + 1]):
                bv = b_val[q] if b_hv else onev
                e_row[f] = i
                e_col[f] = b_idx[q]
                e_val[f] = mul_op(mul, av, bv, onev)
                f += 1


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
    n = a_ptr.size - 1
    onev = one[0]
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, n, stride):
        gather_row_fill(i, a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, mul,
                        onev, out_ptr[i], out_idx, out_val)


def _offsets(xp, a_ptr, a_idx, b_ptr):
    """Row offsets into the expansion buffer, and its size."""
    n = a_ptr.size - 1
    counts = xp.zeros(n + 1, np.int64)
    _count_products[blocks(n), BLOCK](a_ptr, a_idx, b_ptr, counts)
    off = scan(xp, counts)
    return off, host_int(off[n])


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


def spgemm_symbolic(a_ptr, a_idx, b_ptr, b_idx, ncols):
    """Exclusive-scanned row pointer of ``A @ B`` (structure only)."""
    xp = _xp(a_ptr)
    n = a_ptr.size - 1
    if n <= 0:
        return xp.zeros(max(n, 0) + 1, np.int64)
    off, total = _offsets(xp, a_ptr, a_idx, b_ptr)
    out_ptr = xp.zeros(n + 1, np.int64)
    if total == 0:
        return out_ptr
    e_row = xp.empty(total, np.int64)
    e_col = xp.empty(total, np.int64)
    _expand_structure[blocks(n), BLOCK](a_ptr, a_idx, b_ptr, b_idx, off,
                                        e_row, e_col)
    _, sr, starts = _runs(xp, e_row, e_col, n, ncols)
    out_ptr[1:] = xp.bincount(sr[starts], minlength=n)
    return scan(xp, out_ptr)


def spgemm_numeric(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv,
                   ncols, out_ptr, add, mul, one):
    """Fill ``A @ B`` given the row pointer from ``spgemm_symbolic``:
    returns (indices, values)."""
    xp = _xp(a_ptr)
    n = a_ptr.size - 1
    # Column indices as the CPU kernel types them: int32 when they fit.
    idx_dtype = index_dtype(ncols)
    nnz = host_int(out_ptr[n]) if n > 0 else 0
    if nnz == 0:
        return xp.zeros(0, idx_dtype), xp.zeros(0, one.dtype)
    off, total = _offsets(xp, a_ptr, a_idx, b_ptr)
    e_row = xp.empty(total, np.int64)
    e_col = xp.empty(total, np.int64)
    e_val = xp.empty(total, one.dtype)
    _expand_values[blocks(n), BLOCK](a_ptr, a_idx, a_val, bool(a_hv), b_ptr,
                                     b_idx, b_val, bool(b_hv), mul, one, off,
                                     e_row, e_col, e_val)
    order, _, starts = _runs(xp, e_row, e_col, n, ncols)
    m = starts.size
    out_idx = xp.empty(m, idx_dtype)
    out_val = xp.empty(m, one.dtype)
    _reduce_runs[blocks(m), BLOCK](order, starts, total, e_col, e_val, add,
                                   out_idx, out_val)
    return out_idx, out_val


def spgemm_gather(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, mul,
                  one):
    """``A @ B`` for an A with at most one entry per row (row gather)."""
    xp = _xp(a_ptr)
    n = a_ptr.size - 1
    out_ptr = xp.zeros(n + 1, np.int64)
    if n > 0:
        _gather_count[blocks(n), BLOCK](a_ptr, a_idx, b_ptr, out_ptr)
        out_ptr = scan(xp, out_ptr)
    nnz = host_int(out_ptr[n])
    out_idx = xp.empty(nnz, b_idx.dtype)
    out_val = xp.empty(nnz, one.dtype)
    if nnz:
        _gather_fill[blocks(n), BLOCK](a_ptr, a_idx, a_val, bool(a_hv), b_ptr,
                                       b_idx, b_val, bool(b_hv), mul, one,
                                       out_ptr, out_idx, out_val)
    return out_ptr, out_idx, out_val
