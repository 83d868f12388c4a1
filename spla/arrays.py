"""The array checks and conversions behind spla's types (``Matrix``, ``Vector``).

Checked once where data enters: values widened to a dtype the kernels take
without loss, arrays kept on their device (cupy stays cupy, torch tensors
come in through DLPack), CSR arrays checked for canonical form, column
indices narrowed to int32 when they fit.
"""

import numpy as np

from spla import backend
from spla.checks import INDEX_DTYPES, as_shape, describe, fail, index_dtype, value_dtype
from spla.exceptions import (DimensionMismatch, DTypeError, IndexOutOfRange, InvalidCSR,
                             InvalidValue)


def readonly(a):
    """``a`` as a read-only view (host arrays; device arrays are returned as they are)."""
    # Host arrays only: cupy has no read-only flag (and arrays standing in
    # for cupy's must stay writable, as device arrays are).
    if backend.device_of(a) == backend.CPU and a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a


def values_close(func, a, b, rel_tol, abs_tol):
    """Whether two value arrays of one pattern are close entry by entry, as
    ``math.isclose`` says: ``|a - b| <= max(rel_tol * max(|a|, |b|), abs_tol)``
    (infinities close only to themselves, NaN to nothing); None (a
    structural object) counts as ones.  One device read on a GPU."""
    for arg, tol in (("rel_tol", rel_tol), ("abs_tol", abs_tol)):
        if isinstance(tol, bool) or not isinstance(tol, (int, float, np.integer, np.floating)):
            fail(DTypeError, func, arg, "a real number >= 0", repr(tol))
        if not tol >= 0:
            fail(InvalidValue, func, arg, "a real number >= 0", repr(tol))
    if a is None and b is None:
        return True
    xp = backend.xp_of_array(a if a is not None else b)
    x = xp.ones(b.size, np.float64) if a is None else a.astype(np.float64)
    y = xp.ones(a.size, np.float64) if b is None else b.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = xp.abs(x - y)
        tol = xp.maximum(rel_tol * xp.maximum(xp.abs(x), xp.abs(y)), abs_tol)
        ok = (x == y) | (xp.isfinite(x) & xp.isfinite(y) & (diff <= tol))
    return bool(ok.all())


def widen_values(func, arg, values):
    """Values converted to a supported dtype without losing information.

    None for boolean values (a structural matrix); a DTypeError naming
    ``func`` and ``arg`` for dtypes that cannot be held exactly (complex,
    uint64 above the int64 range, objects).
    """
    dtype = np.dtype(values.dtype)
    if dtype in (np.float32, np.float64, np.int32, np.int64):
        return values
    if dtype == np.bool_:
        return None
    if dtype.kind == "f":
        return values.astype(np.float64)  # long double: the widest float the kernels take
    if dtype.kind in "iu" and dtype.itemsize < 8:
        return values.astype(np.int64)
    if dtype == np.uint64 and (values.size == 0 or int(values.max()) <= np.iinfo(np.int64).max):
        return values.astype(np.int64)
    fail(DTypeError, func, arg,
         "real values (float16/32/64, integers that fit in int64, or bool for a pattern)",
         f"dtype {dtype}")


def as_xp_array(x, like=None):
    """(xp, array) keeping cupy arrays on the GPU and numpy-ing the rest."""
    dev = backend.device_of(x)
    if dev == "cuda":
        return backend.xp_of(dev), x
    if like is not None and like is not np:
        return like, like.asarray(x)
    return np, np.asarray(x)


def from_torch(func, arg, x):
    """A torch tensor as a numpy array (CPU) or a cupy array (CUDA, via DLPack); else x."""
    if type(x).__module__.split(".")[0] != "torch" or not hasattr(x, "device"):
        return x
    if x.device.type == "cuda":
        cp = backend.require_cupy(f"{func} (argument {arg!r} is a CUDA tensor)")
        return cp.from_dlpack(x.detach())
    return x.detach().cpu().numpy()


def first_repeat(rows, cols):
    """(p, q): the first position p whose (row, col) already occurred, at q < p."""
    order = np.lexsort((cols, rows))  # stable: equal pairs keep their input order
    r, c = rows[order], cols[order]
    same = np.zeros(order.size, bool)
    same[1:] = (r[1:] == r[:-1]) & (c[1:] == c[:-1])
    start = np.maximum.accumulate(np.where(same, 0, np.arange(order.size)))
    k = np.flatnonzero(same)
    k = k[np.argmin(order[k])]
    return int(order[k]), int(order[start[k]])


def narrow_indices(idx, ncols):
    """int32 column indices when they fit (halves memory traffic), else int64."""
    return idx.astype(index_dtype(ncols), copy=False)


def checked_csr(func, xp, indptr, indices, values, shape):
    """(indptr, indices, values, shape) of a checked canonical CSR matrix, else the error."""
    if indptr.ndim != 1 or indptr.size < 1:
        fail(InvalidCSR, func, "indptr", "a 1-D array of length nrows + 1", describe(indptr))
    if indptr.dtype.kind not in "iu":
        fail(DTypeError, func, "indptr", "an integer array", describe(indptr))
    if indices.ndim != 1 or (indices.size and indices.dtype.kind not in "iu"):
        fail(DTypeError, func, "indices", "a 1-D integer array", describe(indices))
    indptr = indptr.astype(np.int64, copy=False)
    nrows = indptr.size - 1
    if shape is None:
        shape = (nrows, int(indices.max()) + 1 if indices.size else 0)
    nrows_s, ncols = as_shape(func, shape)
    if nrows_s != nrows:
        fail(DimensionMismatch, func, "indptr", f"length {nrows_s + 1} for shape {shape}",
             f"length {indptr.size}")
    if int(indptr[0]) != 0:
        fail(InvalidCSR, func, "indptr", "an array starting at 0", f"indptr[0] = {int(indptr[0])}")
    if nrows and bool((indptr[1:] < indptr[:-1]).any()):
        pos = int(xp.flatnonzero(indptr[1:] < indptr[:-1])[0])
        fail(InvalidCSR, func, "indptr", "a non-decreasing array",
             f"indptr[{pos + 1}] = {int(indptr[pos + 1])} < indptr[{pos}] = {int(indptr[pos])}")
    if int(indptr[-1]) != indices.size:
        fail(InvalidCSR, func, "indices", f"length indptr[-1] = {int(indptr[-1])}",
             f"length {indices.size}")
    if values is not None:
        if values.ndim != 1 or values.size != indices.size:
            fail(InvalidCSR, func, "values", f"a 1-D array of length {indices.size}",
                 describe(values))
        value_dtype(func, "values", values.dtype)
    if indices.dtype not in INDEX_DTYPES:
        indices = indices.astype(np.int64)
    if indices.dtype == np.int32 and index_dtype(ncols) != np.int32:
        fail(DTypeError, func, "indices", "int64 indices for more than 2**31 - 1 columns",
             "int32")
    if indices.size:
        lo, hi = int(indices.min()), int(indices.max())
        if lo < 0:
            fail(IndexOutOfRange, func, "indices", "non-negative column indices", lo)
        if hi >= ncols:
            fail(IndexOutOfRange, func, "indices", f"column indices below {ncols}", hi)
    K = backend.kernels_for(backend.device_of(indptr))
    bad = int(K.csr.first_unsorted(indptr, indices))
    if bad >= 0:
        fail(InvalidCSR, func, "indices",
             "strictly increasing column indices within each row (canonical CSR; "
             "Matrix.from_coo sorts and sums duplicates)",
             f"{int(indices[bad])} after {int(indices[bad - 1])} at entry {bad}")
    return indptr, indices, values, (nrows, ncols)


__all__ = ["readonly", "widen_values", "as_xp_array", "from_torch", "first_repeat",
           "narrow_indices", "checked_csr"]
