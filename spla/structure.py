"""Operators that rearrange entries: transpose, stacking, column compaction.

They are written with array-module calls (numpy or cupy), so one body
serves both devices; each is a handful of scans, gathers and a stable sort.
"""

import numpy as np

from spla import _backend
from spla._checks import describe, fail
from spla._util import indptr_from_counts, row_ids
from spla.exceptions import DimensionMismatch, InvalidValue
from spla.matrix import Matrix, _narrow_indices
from spla.mxm import as_matrix


def transpose(A):
    """The transpose ``A.T`` as a new canonical matrix.

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, transpose
    >>> transpose(Matrix.from_dense(np.array([[0.0, 1.0], [2.0, 0.0]]))).to_dense()
    array([[0., 2.],
           [1., 0.]])
    """
    A = as_matrix("transpose", "A", A)
    xp = A.xp
    # A stable sort by column keeps rows ascending inside each new row.
    order = xp.argsort(A.indices, kind="stable")
    new_idx = row_ids(A.indptr)[order]
    counts = xp.bincount(A.indices, minlength=A.ncols) if A.nnz else xp.zeros(A.ncols, np.int64)
    vals = None if A.values is None else A.values[order]
    return Matrix._new(indptr_from_counts(counts), _narrow_indices(new_idx, A.nrows),
                       vals, (A.ncols, A.nrows))


def _matrices(func, mats):
    if isinstance(mats, Matrix) or not hasattr(mats, "__len__") or len(mats) == 0:
        fail(InvalidValue, func, "mats", "a non-empty sequence of matrices", describe(mats))
    mats = [as_matrix(func, f"mats[{i}]", m) for i, m in enumerate(mats)]
    _backend.same_device(func, *mats)
    structural = [m.values is None for m in mats]
    if any(structural) and not all(structural):
        fail(InvalidValue, func, "mats", "all structural or all valued matrices",
             "a mix (use .astype(dtype) on the structural ones)")
    return mats


def _concat(mats, col_offsets, shape):
    xp = mats[0].xp
    nnz_off = np.cumsum([0] + [m.nnz for m in mats])
    ptr = xp.concatenate([mats[0].indptr[:1]] + [m.indptr[1:] + int(o)
                                                 for m, o in zip(mats, nnz_off)])
    idx = xp.concatenate([m.indices.astype(np.int64) + int(c) for m, c in zip(mats, col_offsets)])
    vals = None
    if mats[0].values is not None:
        dt = np.result_type(*[m.dtype for m in mats])
        vals = xp.concatenate([m.values.astype(dt, copy=False) for m in mats])
    return Matrix._new(ptr.astype(np.int64), _narrow_indices(idx, shape[1]), vals, shape)


def vstack(mats):
    """Stack matrices with equal column counts on top of each other.

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, vstack
    >>> vstack([Matrix.from_dense(np.eye(2)), Matrix.from_dense(np.ones((1, 2)))]).shape
    (3, 2)
    """
    func = "vstack"
    mats = _matrices(func, mats)
    ncols = mats[0].ncols
    for i, m in enumerate(mats):
        if m.ncols != ncols:
            fail(DimensionMismatch, func, f"mats[{i}]", f"{ncols} columns", f"shape {m.shape}")
    return _concat(mats, [0] * len(mats), (sum(m.nrows for m in mats), ncols))


def block_diag(mats):
    """The block-diagonal matrix with ``mats`` on its diagonal.

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, block_diag
    >>> block_diag([Matrix.from_dense(np.ones((1, 2))), Matrix.from_dense(np.ones((1, 1)))]).to_dense()
    array([[1., 1., 0.],
           [0., 0., 1.]])
    """
    mats = _matrices("block_diag", mats)
    offs = np.cumsum([0] + [m.ncols for m in mats])
    shape = (sum(m.nrows for m in mats), int(offs[-1]))
    return _concat(mats, offs[:-1], shape)


def compact_columns(A):
    """Drop empty columns: ``(matrix, kept column ids)``.

    Column ``t`` of the result is column ``kept[t]`` of ``A``; ``kept`` is
    ascending.

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, compact_columns
    >>> M, kept = compact_columns(Matrix.from_dense(np.array([[0.0, 5.0, 0.0, 6.0]])))
    >>> M.to_dense(), kept
    (array([[5., 6.]]), array([1, 3]))
    """
    A = as_matrix("compact_columns", "A", A)
    xp = A.xp
    used = xp.zeros(A.ncols, bool)
    used[A.indices] = True
    kept = xp.flatnonzero(used).astype(np.int64)
    new_id = xp.cumsum(used, dtype=np.int64) - 1
    idx = new_id[A.indices] if A.nnz else xp.zeros(0, np.int64)
    return (Matrix._new(A.indptr, _narrow_indices(idx, kept.size), A.values,
                        (A.nrows, int(kept.size))), kept)
