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
from spla.diagonal import column_scale
from spla.exceptions import DTypeError
from spla.arrays import narrow_indices
from spla.matrix import HOST_INDPTR, Matrix


def _kernels(device, name="layer_ops"):
    """``kernels.<cpu|cuda>.<name>`` for ``device`` (through spla's dispatch)."""
    package = backend.kernels_for(device)
    # Once imported, a submodule is an attribute of its package: no
    # import-system lookup per call.
    return getattr(package, name, None) or importlib.import_module(package.__name__ + "." + name)


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
    d = column_scale(func, "A", A, d)
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


def reduce_row_groups(A, rows, row_ptr, *, check=True):
    """Sum groups of A's rows: row ``g`` of the result is the sum of
    ``A[i, :]`` over ``i`` in ``rows[row_ptr[g]:row_ptr[g+1]]``.

    That is ``mxm(Q, A)`` for the structural group selection ``Q`` (row g
    holding the group's rows), with the product's values bit for bit on
    every device: each column's terms are added in ascending row order.  On
    a GPU it runs in a dozen launches and two reads (``kernels.cuda.layer_sums``)
    where the general product takes several dozen.  LADIES' probability rows
    are these sums over each minibatch's destinations of ``Â ∘ Â``.

    Parameters
    ----------
    A : Matrix
    rows : 1-D array of int
        Row ids, distinct within each group, in any order.
    row_ptr : 1-D array of int, shape (n_groups + 1,)
        Group offsets into ``rows`` (host arrays cost no read).
    check : bool, default True
        Check ``rows`` (in range, distinct within each group).  Callers whose
        rows spla made (a sampler's frontiers) pass False: on a GPU each
        check is a blocking read.

    Returns
    -------
    Matrix
        Shape ``(n_groups, A.ncols)``, A's value dtype (structural and
        integer matrices: the product's).

    Raises
    ------
    IndexOutOfRange, InvalidValue, InvalidCSR, DTypeError
        A row out of range or repeated in its group, a bad pointer, ``A``
        not a matrix.

    Examples
    --------
    >>> import numpy as np, spla
    >>> from spla.layer_ops import reduce_row_groups
    >>> A = spla.Matrix.from_dense(np.array([[1.0, 0.0], [2.0, 3.0], [0.0, 4.0]]))
    >>> reduce_row_groups(A, [2, 0, 1], [0, 2, 3]).to_dense()
    array([[1., 4.],
           [2., 3.]])
    """
    from spla.checks import as_index_array
    from spla.exceptions import InvalidValue
    from spla.structure import _group_ptr
    func = "reduce_row_groups"
    if not isinstance(A, Matrix):
        fail(DTypeError, func, "A", "a spla.Matrix", describe(A))
    xp = A.xp
    rows = (xp.asarray(as_index_array(func, "rows", rows, A.nrows)) if check
            else xp.asarray(rows).astype(np.int64, copy=False))
    ptr = _group_ptr(func, "row_ptr", row_ptr, rows.size)
    G = ptr.size - 1
    general = A.values is None or A.dtype.kind != "f"
    if general or (check and rows.size):
        group = np.repeat(np.arange(G, dtype=np.int64), np.diff(ptr))
    if check and rows.size:
        key = xp.sort(xp.asarray(group * max(A.nrows, 1)) + rows)
        if bool((key[1:] == key[:-1]).any()):
            fail(InvalidValue, func, "rows", "rows distinct within each group",
                 "a row repeated in its group")
    if general:
        Q = Matrix.from_coo(group, backend.to_host(rows), None, (G, A.nrows))
        return (Q.to(A.device) @ A).new()
    K = _kernels(A.device, "layer_sums")
    out_ptr, idx, vals = K.group_row_sums(A.indptr, A.indices, A.values, rows, ptr, A.ncols)
    return Matrix._new(out_ptr, narrow_indices(idx, A.ncols), vals, (G, A.ncols))


__all__ = ["normalize_scaled_rows", "reduce_row_groups"]
