"""Sparse x dense products and the dense operand's dropout, CPU.

``spmm_rows(indptr, indices, values, x, out)`` writes ``out = A @ x`` for a
CSR matrix ``A`` (``values`` of length 0: every stored entry is 1) and a
C-contiguous dense ``x`` of shape ``(ncols, f)``.  Rows are independent, so
the loop runs in parallel over chunks of rows; each chunk holds about the
same number of entries plus rows (a hub row of a transposed block would
otherwise leave one thread with most of the work).  Every output row is
summed by one thread in the row's entry order, so the result does not depend
on the thread count.

``transpose_pattern(indptr, indices, ncols, trows)`` fills ``trows`` and
returns ``(tptr, perm)``: the CSR pattern of ``A^T`` (rows ascending inside
each row of it) and, for each of its entries, the position of the same entry
in ``A``: the
transpose product ``A^T @ g`` is then ``spmm_rows(tptr, trows,
values[perm], g, out)``, a gather per output row, never a scatter with
atomics or per-thread buffers.  A counting sort: ``O(nnz + ncols)``.

``dropout(x, out, key, threshold, scale)`` writes ``out = x * mask *
scale`` over the flattened arrays, with ``mask`` a pure function of ``(key,
element index)``: elements ``2k`` and ``2k + 1`` take the two 32-bit halves
of one splitmix64 hash of ``(key, k)`` (its low half first: the halves are
read through a uint32 view, and every platform numba targets is
little-endian) and are kept when those bits are ``>= threshold``.  Applied to a gradient with the same key it is the exact
backward of the forward call (no mask is stored).

``dropout_rows(x, out, offsets, ...)`` (2-D) and ``dropout_entries(indptr,
indices, values, out, offsets, ...)`` (CSR) apply the same mask to a piece of
a larger array: element ``(i, j)`` takes the bits of flat position
``offsets[i] + j``.  A rank holding some rows and columns of a matrix masks
them exactly as ``dropout`` masks the whole matrix.
"""

import numba
import numpy as np
from numba import prange

from kernels.common import element_bits, mix64
from kernels.parallel import parallel_kernel

_GAMMA = np.uint64(0x9E3779B97F4A7C15)  # splitmix64's increment (kernels.common)
#: Pairs of elements hashed per inner block of ``dropout`` (8 KiB of bits).
_BLOCK = 1024

#: Chunks of rows per parallel call: enough for balance on a few threads,
#: few enough that the chunk bounds cost nothing next to the product.
_CHUNKS = 64


@numba.njit(cache=True, nogil=True)
def _row_chunks(indptr, parts):
    """Row bounds of ``parts`` chunks with about equal ``entries + rows`` each."""
    n = indptr.size - 1
    total = indptr[n] + n
    bounds = np.empty(parts + 1, np.int64)
    bounds[0] = 0
    for k in range(1, parts):
        target = (total * k) // parts
        lo = bounds[k - 1]
        hi = n
        # The smallest row r with indptr[r] + r >= target (a monotone function of r).
        while lo < hi:
            mid = (lo + hi) // 2
            if indptr[mid] + mid < target:
                lo = mid + 1
            else:
                hi = mid
        bounds[k] = lo
    bounds[parts] = n
    return bounds


@parallel_kernel(lambda indptr, indices, values, x, out: (int(indices.size) + out.shape[0])
                 * max(out.shape[1], 1), inputs=("indptr", "indices", "values", "x"))
def spmm_rows(indptr, indices, values, x, out):
    """``out = A @ x`` for CSR ``A`` (no values: ones); returns ``out``."""
    n = indptr.size - 1
    f = x.shape[1]
    parts = min(n, _CHUNKS)
    bounds = _row_chunks(indptr, parts)
    has_values = values.size > 0
    for p in prange(parts):
        for i in range(bounds[p], bounds[p + 1]):
            acc = out[i]
            for c in range(f):
                acc[c] = 0
            if has_values:
                for t in range(indptr[i], indptr[i + 1]):
                    v = values[t]
                    xr = x[indices[t]]
                    for c in range(f):
                        acc[c] += v * xr[c]
            else:
                for t in range(indptr[i], indptr[i + 1]):
                    xr = x[indices[t]]
                    for c in range(f):
                        acc[c] += xr[c]
    return out


@parallel_kernel(lambda x, out, offsets, key, threshold, scale: x.size, inputs=("x", "offsets"))
def dropout_rows(x, out, offsets, key, threshold, scale):
    """``out[i, j] = x[i, j] * keep(offsets[i] + j) * scale`` over 2-D arrays."""
    m, w = x.shape
    zero = scale - scale
    for i in prange(m):
        base = np.uint64(offsets[i])
        for j in range(w):
            keep = element_bits(key, base + np.uint64(j)) >= threshold
            out[i, j] = x[i, j] * (scale if keep else zero)
    return out


@parallel_kernel(lambda indptr, indices, values, out, offsets, key, threshold, scale:
                 values.size, inputs=("indptr", "indices", "values", "offsets"))
def dropout_entries(indptr, indices, values, out, offsets, key, threshold, scale):
    """``out[t] = values[t] * keep(offsets[i] + indices[t]) * scale`` for row i's entries t."""
    zero = scale - scale
    for i in prange(indptr.size - 1):
        base = np.uint64(offsets[i])
        for t in range(indptr[i], indptr[i + 1]):
            keep = element_bits(key, base + np.uint64(indices[t])) >= threshold
            out[t] = values[t] * (scale if keep else zero)
    return out


@numba.njit(cache=True, nogil=True)
def transpose_pattern(indptr, indices, ncols, trows):
    """Fill ``trows`` (the column indices of ``A^T``); return ``(tptr, perm)``.

    ``perm[q]`` is the position in ``A`` of the entry at position ``q`` of
    ``A^T``.  ``trows`` has ``nnz`` entries of an integer dtype that holds
    ``nrows - 1`` (the caller picks int32 when it can: half the bytes).
    """
    n = indptr.size - 1
    nnz = indices.size
    tptr = np.zeros(ncols + 1, np.int64)
    for t in range(nnz):
        tptr[indices[t] + 1] += 1
    for j in range(ncols):
        tptr[j + 1] += tptr[j]
    fill = tptr[:-1].copy()
    perm = np.empty(nnz, np.int64)
    # Rows in ascending order: each transposed row lists its rows ascending.
    for i in range(n):
        for t in range(indptr[i], indptr[i + 1]):
            j = indices[t]
            q = fill[j]
            trows[q] = i
            perm[q] = t
            fill[j] = q + 1
    return tptr, perm


@parallel_kernel(lambda x, out, key, threshold, scale: x.size, inputs=("x",))
def dropout(x, out, key, threshold, scale):
    """``out = x * keep * scale`` over 1-D arrays, ``keep`` hashed from ``(key, index)``.

    ``threshold`` is a uint32 (an element is kept when its 32 random bits
    are ``>= threshold``), ``scale`` a scalar of ``x``'s dtype.  ``out`` may
    be ``x`` (in place).
    """
    n = x.size
    blocks = (n + 2 * _BLOCK - 1) // (2 * _BLOCK)
    zero = scale - scale
    for b in prange(blocks):
        # Hash a block of pairs first, then mask: two loops the compiler
        # vectorises, where it does not vectorise one interleaved loop.
        buf = np.empty(_BLOCK, np.uint64)
        bits = buf.view(np.uint32)
        start = b * 2 * _BLOCK
        base = np.uint64(b * _BLOCK + 1)
        for k in range(_BLOCK):
            buf[k] = mix64(key + (base + np.uint64(k)) * _GAMMA)
        stop = min(2 * _BLOCK, n - start)
        for k in range(stop):
            out[start + k] = x[start + k] * (scale if bits[k] >= threshold else zero)
    return out
