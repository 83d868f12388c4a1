"""Sparse x dense products and the dense operand's dropout, CUDA.

Twin of ``kernels.cpu.spmm`` (see there for the contracts), with the same
names, arguments and returns:

* ``spmm_rows``: one thread per output element ``(i, c)`` sums row ``i``'s
  entries in their stored order, as the CPU kernel does, so a row's sum
  does not depend on the launch shape (the GPU may fuse a multiply and an
  add, so float results agree with the CPU's to rounding, not bit for bit).
* ``transpose_pattern``: the pattern of ``A^T`` by a stable sort of the
  entries by column (entries are in row order, so each transposed row lists
  its rows ascending, as on the CPU), and the row pointer by a count and a
  scan.
* ``dropout``, ``dropout_rows``, ``dropout_entries``: one thread per
  element; the bits come from ``kernels.common.element_bits``, the helper
  the CPU kernels call, so the masks are identical.
"""

import numpy as np
from numba import cuda

from kernels.common import element_bits as _element_bits
from kernels.cuda._util import argsort_stable, device, launch, scan, _xp

element_bits = device(_element_bits)


@cuda.jit(cache=True)
def _spmm_rows(indptr, indices, values, has_values, x, out):
    m = out.shape[0]
    f = out.shape[1]
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for t in range(start, m * f, stride):
        i = t // f
        c = t - i * f
        out[i, c] = 0
        acc = out[i, c]
        if has_values:
            for p in range(indptr[i], indptr[i + 1]):
                acc += values[p] * x[indices[p], c]
        else:
            for p in range(indptr[i], indptr[i + 1]):
                acc += x[indices[p], c]
        out[i, c] = acc


def spmm_rows(indptr, indices, values, x, out):
    """``out = A @ x`` for CSR ``A`` (no values: ones); returns ``out``."""
    m, f = out.shape
    if m * f:
        launch(_spmm_rows, m * f, indptr, indices, values, bool(values.size > 0), x, out)
    return out


@cuda.jit(cache=True)
def _entry_rows(indptr, rows, counts, indices):
    n = indptr.size - 1
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, n, stride):
        for p in range(indptr[i], indptr[i + 1]):
            rows[p] = i
            cuda.atomic.add(counts, indices[p] + 1, 1)


def transpose_pattern(indptr, indices, ncols, trows):
    """Fill ``trows`` (the column indices of ``A^T``); return ``(tptr, perm)``."""
    xp = _xp(indptr)
    n = indptr.size - 1
    counts = xp.zeros(int(ncols) + 1, np.int64)
    rows = xp.empty(indices.size, np.int64)
    if n > 0 and indices.size:
        launch(_entry_rows, n, indptr, rows, counts, indices)
    tptr = scan(xp, counts)
    perm = argsort_stable(xp, indices)
    trows[...] = rows[perm]
    return tptr, perm


@cuda.jit(cache=True)
def _dropout(x, out, key, threshold, scale):
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    zero = scale - scale
    for e in range(start, x.size, stride):
        keep = element_bits(key, np.uint64(e)) >= threshold
        out[e] = x[e] * (scale if keep else zero)


def dropout(x, out, key, threshold, scale):
    """``out = x * keep * scale`` over 1-D arrays, ``keep`` hashed from ``(key, index)``."""
    if x.size:
        launch(_dropout, x.size, x, out, np.uint64(key), np.uint32(threshold), scale)
    return out


@cuda.jit(cache=True)
def _dropout_rows(x, out, offsets, key, threshold, scale):
    m = x.shape[0]
    w = x.shape[1]
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    zero = scale - scale
    for t in range(start, m * w, stride):
        i = t // w
        j = t - i * w
        keep = element_bits(key, np.uint64(offsets[i]) + np.uint64(j)) >= threshold
        out[i, j] = x[i, j] * (scale if keep else zero)


def dropout_rows(x, out, offsets, key, threshold, scale):
    """``out[i, j] = x[i, j] * keep(offsets[i] + j) * scale`` over 2-D arrays."""
    if x.size:
        launch(_dropout_rows, x.size, x, out, offsets, np.uint64(key), np.uint32(threshold),
               scale)
    return out


@cuda.jit(cache=True)
def _dropout_entries(indptr, indices, values, out, offsets, key, threshold, scale):
    n = indptr.size - 1
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    zero = scale - scale
    for i in range(start, n, stride):
        base = np.uint64(offsets[i])
        for t in range(indptr[i], indptr[i + 1]):
            keep = element_bits(key, base + np.uint64(indices[t])) >= threshold
            out[t] = values[t] * (scale if keep else zero)


def dropout_entries(indptr, indices, values, out, offsets, key, threshold, scale):
    """``out[t] = values[t] * keep(offsets[i] + indices[t]) * scale`` for row i's entries t."""
    n = indptr.size - 1
    if n > 0 and values.size:
        launch(_dropout_entries, n, indptr, indices, values, out, offsets, np.uint64(key),
               np.uint32(threshold), scale)
    return out
