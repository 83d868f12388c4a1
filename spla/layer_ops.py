"""Fused operators of the layer-wise samplers' compositions.

``normalize_scaled_rows(A, d)`` is ``normalize_rows(scale_columns(A, d))``
(LADIES and FastGCN weight each sampled column by ``1 / (s p)`` and then
normalise the rows) in two kernels and the shared row reduction, with the
same values bit for bit: each product rounds once in the result's dtype,
each row is summed by ``reduce_rowwise`` (one blocked order on every
device) and each entry divided by its row's sum.
"""

import importlib

import numpy as np

from spla import backend
from spla.checks import describe, fail
from spla.diagonal import _dense
from spla.exceptions import DeviceMismatch, DimensionMismatch, DTypeError
from spla.extract import HOST_INDPTR
from spla.matrix import Matrix


def _kernels(device):
    """``kernels.<cpu|cuda>.layer_ops`` for ``device`` (through spla's dispatch)."""
    return importlib.import_module(backend.kernels_for(device).__name__ + ".layer_ops")


def normalize_scaled_rows(A, d):
    """``normalize_rows(scale_columns(A, d))`` in one operator: column ``j``
    scaled by ``d[j]``, then each row scaled to sum 1 (rows summing to 0
    left as they are).

    Parameters
    ----------
    A : Matrix
        A structural matrix counts its entries as ones.
    d : 1-D array of length ``A.ncols`` (or a spla.Vector), on ``A``'s device

    Returns
    -------
    Matrix
        ``A``'s structure; values in the common dtype of A's values and
        ``d`` (float64 where that is an integer dtype), equal bit for bit to
        the two operators' composition.

    Raises
    ------
    DimensionMismatch, DTypeError, DeviceMismatch
        ``d`` of another length, not real, or on another device; ``A`` not
        a matrix.

    Examples
    --------
    >>> import numpy as np, spla
    >>> from spla.layer_ops import normalize_scaled_rows
    >>> A = spla.Matrix.from_dense(np.array([[1.0, 2.0], [0.0, 3.0], [0.0, 0.0]]))
    >>> normalize_scaled_rows(A, np.array([2.0, 0.5])).to_dense()
    array([[0.66666667, 0.33333333],
           [0.        , 1.        ],
           [0.        , 0.        ]])
    """
    from spla.diagonal import scale_columns
    from spla.elementwise import normalize_rows, reduce_rowwise
    func = "normalize_scaled_rows"
    if not isinstance(A, Matrix):
        fail(DTypeError, func, "A", "a spla.Matrix", describe(A))
    d = _dense(func, d)
    if d.size != A.ncols:
        fail(DimensionMismatch, func, "d", f"length A.ncols = {A.ncols}", describe(d))
    if backend.device_of(d) != A.device:
        raise DeviceMismatch(f"{func}: argument 'd' is on {backend.device_of(d)}, A on "
                             f"{A.device}; move one of them")
    dt = d.dtype if A.values is None else np.result_type(A.dtype, d.dtype)
    if dt.kind != "f":
        # Integer products are exact: the composition's float64 division is all.
        return normalize_rows(scale_columns(A, d))
    K = _kernels(A.device)
    xp = A.xp
    vals = A.values if A.values is not None else xp.empty(0, dt)
    # Overflow to inf is the product's result too (scale_columns does not warn).
    scaled = K.scale_entries(A.indices, vals, A.values is not None, d, xp.empty(A.nnz, dt))
    S = Matrix._new(A.indptr, A.indices, scaled, A.shape)
    sums = reduce_rowwise(S, "plus")
    out = Matrix._new(A.indptr, A.indices, K.divide_rows(A.indptr, scaled, sums), A.shape)
    if HOST_INDPTR in A._cache:  # the same row pointer: its host copy too
        out._cache[HOST_INDPTR] = A._cache[HOST_INDPTR]
    return out


__all__ = ["normalize_scaled_rows"]
