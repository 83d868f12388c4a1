"""Sparse x dense products (``spmm``) and the dense operand's dropout.

The two operations a GNN layer runs on a sampled block: ``spmm(A, X)``,
the aggregation ``A @ X`` of dense feature rows, and ``spmm(A, G,
transpose=True)``, its gradient ``A^T @ G``, computed without forming
``A^T`` as a matrix (the transposed pattern is built once per matrix, by a
counting sort, and cached on it: matrices are immutable).  ``dropout`` masks
a dense array with counter-based random bits, so its backward pass is the
same call on the gradient (no mask kept).

Both run the ``spmm`` kernels of the arrays' backend
(``spla.backend.kernels_for``): on the CPU numba kernels parallel over rows
and bit-identical whatever the thread count, on a GPU their numba.cuda twins
(one thread per output element, summing a row's entries in the same order;
the dropout masks are identical on both).
"""

import numpy as np

from kernels.common import row_key
from spla import backend
from spla.checks import as_index_array, as_u64, describe, fail, index_dtype
from spla.exceptions import DeviceMismatch, DimensionMismatch, DTypeError, InvalidValue
from spla.matrix import Matrix
from spla.mxm import as_matrix

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _dense(func, arg, X):
    """``(xp, X)``: a numpy or cupy float32/float64 array of 1 or 2 dimensions."""
    # The device first: an array module standing in for cupy may subclass
    # numpy's arrays (the simulator tests of the GPU path run on one).
    if backend.device_of(X) == backend.CUDA:
        xp = backend.require_cupy(func)
    elif isinstance(X, np.ndarray):
        xp = np
    else:
        fail(DTypeError, func, arg, "a numpy or cupy array", describe(X))
    if X.dtype not in _FLOATS:
        fail(DTypeError, func, arg, "an array of dtype float32 or float64", describe(X))
    if X.ndim not in (1, 2):
        fail(InvalidValue, func, arg, "a 1-D or 2-D array", describe(X))
    return xp, X


def _check_out(func, out, shape, dtype, xp, X):
    if not isinstance(out, xp.ndarray):
        fail(DTypeError, func, "out", f"a {xp.__name__} array like 'X'", describe(out))
    if tuple(out.shape) != tuple(shape) or out.dtype != dtype:
        fail(DimensionMismatch, func, "out",
             f"an array of shape {tuple(shape)} and dtype {dtype}", describe(out))
    if not out.flags.c_contiguous or (xp is np and not out.flags.writeable):
        fail(InvalidValue, func, "out", "a writeable C-contiguous array",
             "a non-contiguous or read-only one")
    if xp is np and np.shares_memory(out, X):
        fail(InvalidValue, func, "out", "an array that does not overlap 'X'",
             "an overlapping one")


def _values(A, dtype):
    """A's values in ``dtype`` (cached), or an empty array for a structural matrix."""
    if A.values is None:
        return A.xp.zeros(0, dtype)
    if A.values.dtype == dtype:
        return A.values
    key = ("spmm_values", dtype.str)
    vals = A._cache.get(key)
    if vals is None:
        vals = A.values.astype(dtype)
        A._cache[key] = vals
    return vals


def _kernels(device):
    """The ``spmm`` kernel module of a device (``kernels.cpu.spmm`` or its CUDA twin)."""
    return backend.kernels_for(device).spmm


def _transposed(A, dtype):
    """``(tptr, trows, values of A^T in dtype)`` on A's device, built once per matrix."""
    pattern = A._cache.get("spmm_transpose")
    if pattern is None:
        trows = A.xp.empty(A.nnz, index_dtype(max(A.nrows - 1, 0)))
        tptr, perm = _kernels(A.device).transpose_pattern(A.indptr, A.indices, A.ncols, trows)
        pattern = (tptr, trows, perm)
        A._cache["spmm_transpose"] = pattern
    tptr, trows, perm = pattern
    if A.values is None:
        return tptr, trows, A.xp.zeros(0, dtype)
    key = ("spmm_transpose_values", dtype.str)
    vals = A._cache.get(key)
    if vals is None:
        vals = _values(A, dtype)[perm]
        A._cache[key] = vals
    return tptr, trows, vals


def spmm(A, X, *, transpose=False, out=None):
    """Sparse times dense: ``A @ X``, or ``A^T @ X`` with ``transpose=True``.

    Parameters
    ----------
    A : Matrix or MxmExpr, shape (m, n)
        A lazy product is materialised first.  A structural matrix counts
        every entry as 1; integer values are converted to ``X``'s dtype.
    X : numpy or cupy array of float32 or float64, shape (n, f) or (n,)
        (``(m, f)`` or ``(m,)`` with ``transpose=True``), on ``A``'s device.
        A non-contiguous array is copied once.
    transpose : bool, default False
        Multiply by ``A^T``: the gradient of ``A @ X`` with respect to
        ``X``.  The transposed pattern is built on the first such call (a
        counting sort, ``O(nnz + n)``) and cached on ``A``.
    out : array, optional
        C-contiguous, writeable, not overlapping ``X``, of the result's shape
        and ``X``'s dtype: written and returned.

    Returns
    -------
    array of X's dtype, shape (m, f) (``(n, f)`` with ``transpose=True``)
        Computed in ``X``'s precision.  On the CPU each output row is summed
        by one thread in the order of its entries, so the result is the same
        for every thread count; a row without entries is zero.

    Raises
    ------
    DTypeError
        ``A`` is not a matrix; ``X`` is not a float32/float64 array.
    DimensionMismatch
        ``X`` has the wrong number of rows; ``out`` the wrong shape or dtype.
    DeviceMismatch
        ``A`` and ``X`` live on different devices.
    InvalidValue
        ``X`` has more than two dimensions; ``out`` is not writeable and
        contiguous, or overlaps ``X``.

    Examples
    --------
    >>> import numpy as np
    >>> import spla
    >>> A = spla.Matrix.from_dense(np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 0.0]]))
    >>> X = np.arange(6, dtype=np.float32).reshape(3, 2)
    >>> spla.spmm(A, X)
    array([[ 8., 11.],
           [ 0.,  0.]], dtype=float32)
    >>> spla.spmm(A, np.ones((2, 1)), transpose=True).ravel()   # A^T @ G
    array([1., 0., 2.])
    """
    func = "spmm"
    A = as_matrix(func, "A", A)
    xp, X = _dense(func, "X", X)
    if not isinstance(transpose, (bool, np.bool_)):
        fail(DTypeError, func, "transpose", "True or False", describe(transpose))
    if backend.device_of(X) != A.device:
        fail(DeviceMismatch, func, "X", f"an array on A's device ({A.device})",
             f"an array on {backend.device_of(X)} (move one with .to(device) or cupy.asarray)")
    m, n = (A.ncols, A.nrows) if transpose else A.shape
    if X.shape[0] != n:
        what = "A's rows (transpose=True)" if transpose else "A's columns"
        fail(DimensionMismatch, func, "X", f"an array with {n} rows ({what})", describe(X))
    vector = X.ndim == 1
    X2 = X.reshape(n, 1) if vector else X
    shape = (m,) if vector else (m, X2.shape[1])
    if out is not None:
        _check_out(func, out, shape, X.dtype, xp, X)
    X2 = xp.ascontiguousarray(X2)
    res = out.reshape(m, X2.shape[1]) if out is not None else xp.empty((m, X2.shape[1]), X.dtype)
    if transpose:
        tptr, trows, vals = _transposed(A, X.dtype)
        _kernels(A.device).spmm_rows(tptr, trows, vals, X2, res)
    else:
        _kernels(A.device).spmm_rows(A.indptr, A.indices, _values(A, X.dtype), X2, res)
    return out if out is not None else (res.reshape(m) if vector else res)


def dropout(X, p, *, seed, stream=0, out=None, row_offsets=None):
    """Zero each element of ``X`` with probability ``p`` and scale the rest by ``1 / (1 - p)``.

    The mask is a pure function of ``(seed, stream, element index)`` (a
    splitmix64 hash, as every draw of spla): the same call on the gradient
    of the result is the exact backward pass, and the same arguments give
    the same mask on every thread count and device.

    ``row_offsets`` masks a piece of a larger array as the whole would be
    masked: element ``(i, j)`` of ``X`` takes the mask of flat position
    ``row_offsets[i] + j``.  For rows ``r_i`` and columns ``[c, c + w)`` of
    an ``(m, f)`` array, ``row_offsets = r_i * f + c``; a sparse ``X``
    (a ``spla.Matrix``: its stored entries are masked, its pattern kept)
    holding such a piece gets the same values as its dense twin.  This is
    how ranks that each hold some columns of the input features apply the
    dropout that one process would apply to whole rows
    (``sampling.train.p3.P3Model``).

    Parameters
    ----------
    X : numpy or cupy array of float32 or float64, 1-D or 2-D, or spla.Matrix
        A ``spla.Matrix`` (float32/float64 values; a structural one counts
        as all ones in float32) needs ``row_offsets``.
    p : float
        Probability of zeroing an element, ``0 <= p < 1``; represented with
        32 bits (an element is kept when its 32 random bits are at least
        ``round(p * 2**32)``), so the keep probability is exact to 2**-32.
    seed, stream : int
        ``0 <= seed, stream < 2**64``.
    out : array, optional
        C-contiguous, writeable, of ``X``'s shape and dtype; may be ``X``
        itself (in place).  Written and returned.  Dense ``X`` only.
    row_offsets : array_like of int, optional
        One flat position per row of a 2-D or sparse ``X``, each ``>= 0``
        (default ``i * X.shape[1]``: ``X`` is the whole array).

    Returns
    -------
    array of X's shape and dtype, or spla.Matrix
        ``X * mask / (1 - p)``, computed as ``X * s`` with ``s`` either 0 or
        ``1 / (1 - p)`` in ``X``'s dtype (so a NaN stays NaN, as in torch);
        for a sparse ``X``, the same pattern with those values.

    Raises
    ------
    DTypeError
        ``X`` is not a float32/float64 array.
    InvalidValue
        ``p`` is not a number in ``[0, 1)``; ``seed`` or ``stream`` not an
        integer in ``[0, 2**64)``; ``out`` not writeable and contiguous, or
        partly overlapping ``X``.
    DimensionMismatch
        ``out`` has the wrong shape or dtype; ``row_offsets`` not one per row.

    Examples
    --------
    >>> import numpy as np
    >>> import spla
    >>> X = np.ones((2, 4), np.float32)
    >>> Y = spla.dropout(X, 0.5, seed=7)         # kept elements scaled by 1 / (1 - p)
    >>> Y
    array([[0., 0., 0., 0.],
           [2., 0., 2., 2.]], dtype=float32)
    >>> np.array_equal(spla.dropout(Y, 0.5, seed=7), 2 * Y)   # the same mask again
    True

    Columns 2 and 3 of row 1 alone, masked as in the whole ``X``:

    >>> spla.dropout(X[1:, 2:], 0.5, seed=7, row_offsets=[1 * 4 + 2])
    array([[2., 2.]], dtype=float32)
    """
    func = "dropout"
    sparse = isinstance(X, Matrix)
    if sparse:
        if row_offsets is None:
            fail(InvalidValue, func, "row_offsets", "set for a sparse X (the flat position "
                 "of each row's column 0 in the array it is a piece of)", None)
        if out is not None:
            fail(InvalidValue, func, "out", "None for a sparse X (a new Matrix is returned)",
                 describe(out))
        xp = X.xp
    else:
        xp, X = _dense(func, "X", X)
    if isinstance(p, (bool, np.bool_)) or not isinstance(p, (int, float, np.integer, np.floating)):
        fail(InvalidValue, func, "p", "a number in [0, 1)", describe(p))
    p = float(p)
    if not 0.0 <= p < 1.0:
        fail(InvalidValue, func, "p", "a number in [0, 1)", p)
    seed = as_u64(func, "seed", seed)
    stream = as_u64(func, "stream", stream)
    if out is not None:
        if not isinstance(out, xp.ndarray):
            fail(DTypeError, func, "out", f"a {xp.__name__} array like 'X'", describe(out))
        if tuple(out.shape) != tuple(X.shape) or out.dtype != X.dtype:
            fail(DimensionMismatch, func, "out",
                 f"an array of shape {tuple(X.shape)} and dtype {X.dtype}", describe(out))
        if not out.flags.c_contiguous or (xp is np and not out.flags.writeable):
            fail(InvalidValue, func, "out", "a writeable C-contiguous array",
                 "a non-contiguous or read-only one")
        if (xp is np and np.shares_memory(out, X)
                and not (out.ctypes.data == X.ctypes.data and out.strides == X.strides)):
            fail(InvalidValue, func, "out", "'X' itself or an array that does not overlap it",
                 "a partly overlapping one")
    key = np.uint64(row_key(np.uint64(seed), np.uint64(stream), np.uint64(0)))
    threshold = np.uint32(min(round(p * 2.0 ** 32), 2 ** 32 - 1))
    if row_offsets is not None:
        return _dropout_piece(func, xp, X, row_offsets, key, threshold, p, out)
    scale = X.dtype.type(1.0 / (1.0 - p))
    src = xp.ascontiguousarray(X)
    res = out if out is not None else xp.empty(X.shape, X.dtype)
    _kernels(backend.device_of(X)).dropout(src.reshape(-1), res.reshape(-1), key, threshold,
                                           scale)
    return res


def _dropout_piece(func, xp, X, row_offsets, key, threshold, p, out):
    """``dropout`` of a piece of a larger array: row i starts at flat position row_offsets[i]."""
    nrows = X.nrows if isinstance(X, Matrix) else (X.shape[0] if X.ndim == 2 else -1)
    if nrows < 0:
        fail(InvalidValue, func, "row_offsets", "None for a 1-D X (give a 2-D piece)",
             describe(row_offsets))
    if hasattr(row_offsets, "__cuda_array_interface__"):
        row_offsets = backend.to_host(row_offsets)
    offsets = as_index_array(func, "row_offsets", row_offsets)
    if offsets.size != nrows:
        fail(DimensionMismatch, func, "row_offsets", f"one offset per row of X ({nrows})",
             f"{offsets.size} offsets")
    offsets = np.ascontiguousarray(offsets, np.int64)
    if isinstance(X, Matrix):
        K = _kernels(X.device)
        values = X.values if X.values is not None else X.xp.ones(X.nnz, np.float32)
        if values.dtype not in _FLOATS:
            values = values.astype(np.float32)
        scale = values.dtype.type(1.0 / (1.0 - p))
        res = xp.empty_like(values)
        K.dropout_entries(X.indptr, X.indices, values, res, xp.asarray(offsets), key, threshold,
                          scale)
        return X.with_values(res)
    scale = X.dtype.type(1.0 / (1.0 - p))
    res = out if out is not None else xp.empty(X.shape, X.dtype)
    _kernels(backend.device_of(X)).dropout_rows(xp.ascontiguousarray(X), res, xp.asarray(offsets),
                                                key, threshold, scale)
    return res


__all__ = ["spmm", "dropout"]
