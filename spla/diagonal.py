"""Diagonal matrices and the products with them: ``diag`` and ``scale_columns``.

``M @ diag(d)`` has one term per entry of ``M``, so it needs no sparse
product: ``scale_columns`` writes it directly, entry for entry what
``mxm(M, diag(d))`` computes (same structure, explicit zeros kept, the same
rounded products), without the product's two passes.  LADIES and FastGCN
weight each sampled column this way.
"""

import numpy as np

from spla import backend
from spla.checks import describe, fail
from spla.exceptions import DeviceMismatch, DimensionMismatch, DTypeError
from spla.matrix import Matrix


def _dense(func, d):
    from spla.vector import Vector
    if isinstance(d, Vector):
        return d.to_dense()
    if not hasattr(d, "dtype") or not hasattr(d, "ndim"):
        d = np.asarray(d)
    if d.ndim != 1:
        fail(DimensionMismatch, func, "d", "a 1-D array or a spla.Vector", describe(d))
    if d.dtype.kind not in "fiu":
        fail(DTypeError, func, "d", "real values", describe(d))
    return d


def column_scale(func, name, M, d):
    """``d`` as the dense column scale of matrix argument ``name`` (``M``),
    checked: ``M`` a Matrix, ``d`` real, 1-D, of length ``M.ncols``, on M's device."""
    if not isinstance(M, Matrix):
        fail(DTypeError, func, name, "a spla.Matrix", describe(M))
    d = _dense(func, d)
    if d.size != M.ncols:
        fail(DimensionMismatch, func, "d", f"length {name}.ncols = {M.ncols}", describe(d))
    if backend.device_of(d) != M.device:
        raise DeviceMismatch(f"{func}: argument 'd' is on {backend.device_of(d)}, {name} on "
                             f"{M.device}; move one of them")
    return d


def diag(d):
    """The ``n x n`` diagonal matrix with ``d`` on its diagonal (zeros kept as entries).

    Parameters
    ----------
    d : 1-D numpy or cupy array, or spla.Vector (densified)

    Returns
    -------
    Matrix
        On ``d``'s device.

    Examples
    --------
    >>> import numpy as np, spla
    >>> spla.diag(np.array([2.0, 0.0, 3.0])).nnz
    3
    """
    d = _dense("diag", d)
    xp = backend.xp_of_array(d)
    n = d.size
    return Matrix.from_csr(xp.arange(n + 1, dtype=np.int64), xp.arange(n, dtype=np.int64), d,
                           (n, n), check=False, copy=False)


def scale_columns(M, d):
    """``M @ diag(d)``: column ``j`` of ``M`` times ``d[j]``, every entry kept.

    Parameters
    ----------
    M : Matrix
        A structural matrix counts its entries as ones.
    d : 1-D array of length ``M.ncols`` (or a spla.Vector), on ``M``'s device

    Returns
    -------
    Matrix
        ``M``'s structure; values ``M[i, j] * d[j]`` in their common dtype.

    Raises
    ------
    DimensionMismatch, DTypeError, DeviceMismatch
        ``d`` of another length, not real, or on another device.

    Examples
    --------
    >>> import numpy as np, spla
    >>> M = spla.Matrix.from_dense(np.array([[1.0, 2.0], [0.0, 3.0]]))
    >>> spla.scale_columns(M, np.array([10.0, 0.5])).to_dense()
    array([[10. ,  1. ],
           [ 0. ,  1.5]])
    """
    func = "scale_columns"
    d = column_scale(func, "M", M, d)
    if M.values is None:
        vals = d[M.indices]
    else:
        # Overflow to inf is the product's result too (mxm does not warn).
        with np.errstate(over="ignore"):
            vals = M.values * d[M.indices]
    return Matrix.from_csr(M.indptr, M.indices, vals, M.shape, check=False, copy=False)


__all__ = ["diag", "scale_columns"]
