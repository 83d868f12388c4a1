"""Sparse times sparse (SpGEMM) over a semiring, CPU.

Gustavson's row-by-row algorithm in two passes: ``spgemm_symbolic`` counts
each output row with a dense marker, ``spgemm_numeric`` fills it with a dense
accumulator.  Rows are processed in chunks so each worker thread owns one
marker/accumulator pair (a ``last row seen`` marker never needs clearing).

``spgemm_gather`` is the fast path for a left operand with at most one entry
per row (a row selection, the sampler's common case): each output row is one
scaled row of B, so there is nothing to accumulate or sort.

Values arrive already cast to the output dtype; ``one`` (a length-1 array of
that dtype) supplies the implicit value of a structural operand.
"""

import numba
import numpy as np
from numba import prange

from kernels.semiring_ops import ADD_PLUS, MUL_TIMES, add_op, mul_op


def _parts():
    """Row chunks per call: a few per thread, for load balance."""
    return 4 * numba.get_num_threads()


@numba.njit(cache=True)
def _chunks(n, parts):
    parts = max(1, min(n, parts))
    bounds = np.empty(parts + 1, np.int64)
    for c in range(parts + 1):
        bounds[c] = (n * c) // parts
    return bounds


@numba.njit(parallel=True, cache=True)
def _symbolic(a_ptr, a_idx, b_ptr, b_idx, ncols, parts):
    n = a_ptr.size - 1
    out_ptr = np.zeros(n + 1, np.int64)
    bounds = _chunks(n, parts)
    for c in prange(bounds.size - 1):
        marker = np.full(ncols, -1, np.int64)
        for i in range(bounds[c], bounds[c + 1]):
            cnt = 0
            for p in range(a_ptr[i], a_ptr[i + 1]):
                k = a_idx[p]
                for q in range(b_ptr[k], b_ptr[k + 1]):
                    j = b_idx[q]
                    if marker[j] != i:
                        marker[j] = i
                        cnt += 1
            out_ptr[i + 1] = cnt
    for i in range(n):
        out_ptr[i + 1] += out_ptr[i]
    return out_ptr


@numba.njit(cache=True, inline="always")
def _finish_row(out_idx, out_val, acc, marker, i, start, f, lo, hi):
    """Write a row's columns in order: scan [lo, hi] when the row is dense
    in that span (cheaper than sorting), else sort what was touched."""
    cnt = f - start
    span = hi - lo + 1
    if cnt > 16 and span <= 8 * cnt:
        t = start
        for j in range(lo, hi + 1):
            if marker[j] == i:
                out_idx[t] = j
                t += 1
    else:
        out_idx[start:f].sort()
    for t in range(start, f):
        out_val[t] = acc[out_idx[t]]


@numba.njit(parallel=True, cache=True)
def _numeric(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv,
             ncols, out_ptr, add, mul, one, idx_proto, parts):
    n = a_ptr.size - 1
    nnz = out_ptr[n]
    out_idx = np.empty(nnz, idx_proto.dtype)
    out_val = np.empty(nnz, one.dtype)
    onev = one[0]
    # plus_times on valued operands is the common case: a branch-free loop.
    fast = add == ADD_PLUS and mul == MUL_TIMES and a_hv and b_hv
    bounds = _chunks(n, parts)
    for c in prange(bounds.size - 1):
        marker = np.full(ncols, -1, np.int64)
        acc = np.empty(ncols, one.dtype)
        for i in range(bounds[c], bounds[c + 1]):
            start = out_ptr[i]
            f = start
            lo = ncols
            hi = -1
            for p in range(a_ptr[i], a_ptr[i + 1]):
                k = a_idx[p]
                if fast:
                    av = a_val[p]
                    for q in range(b_ptr[k], b_ptr[k + 1]):
                        j = b_idx[q]
                        if marker[j] != i:
                            marker[j] = i
                            acc[j] = av * b_val[q]
                            out_idx[f] = j
                            f += 1
                            lo = min(lo, j)
                            hi = max(hi, j)
                        else:
                            acc[j] += av * b_val[q]
                    continue
                av = a_val[p] if a_hv else onev
                for q in range(b_ptr[k], b_ptr[k + 1]):
                    j = b_idx[q]
                    bv = b_val[q] if b_hv else onev
                    prod = mul_op(mul, av, bv, onev)
                    if marker[j] != i:
                        marker[j] = i
                        acc[j] = prod
                        out_idx[f] = j
                        f += 1
                        lo = min(lo, j)
                        hi = max(hi, j)
                    else:
                        acc[j] = add_op(add, acc[j], prod)
            _finish_row(out_idx, out_val, acc, marker, i, start, f, lo, hi)
    return out_idx, out_val


def spgemm_symbolic(a_ptr, a_idx, b_ptr, b_idx, ncols):
    """Exclusive-scanned row pointer of ``A @ B`` (structure only)."""
    return _symbolic(a_ptr, a_idx, b_ptr, b_idx, ncols, _parts())


def spgemm_numeric(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv,
                   ncols, out_ptr, add, mul, one):
    """Fill ``A @ B`` given the row pointer from ``spgemm_symbolic``:
    returns (indices, values)."""
    # int32 column indices when they fit: half the output traffic.
    proto = np.empty(0, np.int32 if ncols <= np.iinfo(np.int32).max else np.int64)
    return _numeric(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv,
                    ncols, out_ptr, add, mul, one, proto, _parts())


@numba.njit(cache=True, inline="always")
def gather_row_fill(i, a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, mul,
                    onev, f, out_idx, out_val):
    """Row ``i`` of a row-gather product into ``out[f:]`` (the CUDA twin calls it too)."""
    if a_ptr[i + 1] > a_ptr[i]:
        p = a_ptr[i]
        k = a_idx[p]
        av = a_val[p] if a_hv else onev
        for q in range(b_ptr[k], b_ptr[k + 1]):
            bv = b_val[q] if b_hv else onev
            out_idx[f] = b_idx[q]
            out_val[f] = mul_op(mul, av, bv, onev)
            f += 1


@numba.njit(parallel=True, cache=True)
def spgemm_gather(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, mul,
                  one):
    """``A @ B`` for an A with at most one entry per row (row gather)."""
    n = a_ptr.size - 1
    out_ptr = np.zeros(n + 1, np.int64)
    for i in prange(n):
        if a_ptr[i + 1] > a_ptr[i]:
            k = a_idx[a_ptr[i]]
            out_ptr[i + 1] = b_ptr[k + 1] - b_ptr[k]
    for i in range(n):
        out_ptr[i + 1] += out_ptr[i]
    out_idx = np.empty(out_ptr[n], b_idx.dtype)
    out_val = np.empty(out_ptr[n], one.dtype)
    onev = one[0]
    for i in prange(n):
        gather_row_fill(i, a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, mul,
                        onev, out_ptr[i], out_idx, out_val)
    return out_ptr, out_idx, out_val
