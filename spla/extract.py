"""Row and column extraction: ``A[rows, :]``, ``A[:, cols]``, ``A[rows, cols]``."""

import numpy as np

from spla import backend
from spla.checks import as_index_array
from spla.arrays import narrow_indices
from spla.matrix import Matrix
from spla.mxm import as_matrix


def extract(A, rows=None, cols=None, *, mask=None, out=None, accum=None, replace=False):
    """The submatrix ``A[rows, cols]``; ``None`` keeps every row or column.

    Index lists may repeat and come in any order: output row ``i`` is input
    row ``rows[i]`` and output column ``t`` is input column ``cols[t]``.

    Parameters
    ----------
    A : Matrix, MxmExpr or Vector
        For a Vector, ``rows`` are the positions taken (``cols`` unused).
    rows, cols : array_like of int, optional
    mask, out, accum, replace
        As in ``spla.mxm`` (see ``spla.mask``), for the extracted shape.

    Returns
    -------
    Matrix (or Vector)
        Shape ``(len(rows), len(cols))`` (or A's own dimension for ``None``).

    Raises
    ------
    IndexOutOfRange
        A negative index, or one not below the dimension it indexes.

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, extract
    >>> A = Matrix.from_dense(np.arange(9.0).reshape(3, 3))
    >>> extract(A, rows=[2, 0], cols=[1, 1]).to_dense()
    array([[7., 7.],
           [1., 1.]])
    """
    func = "extract"
    from spla.vector import Vector
    if isinstance(A, Vector):
        T = Vector._from_row(extract(A._as_row(), None, rows))
        return _written(func, T, mask, out, accum, replace)
    A = as_matrix(func, "A", A)
    if rows is not None:
        rows = as_index_array(func, "rows", rows, A.nrows)
    if cols is not None:
        cols = as_index_array(func, "cols", cols, A.ncols)
    K = backend.kernels_for(A.device)
    hv = A.values is not None
    vals = A.values if hv else A.xp.zeros(0, "float64")
    ptr, idx, nrows = A.indptr, A.indices, A.nrows
    if rows is not None:
        rows = A.xp.asarray(rows)
        ptr, idx, vals = K.extract.gather_rows(ptr, idx, vals, hv, rows)
        nrows = rows.size
    ncols = A.ncols
    if cols is not None:
        cols = A.xp.asarray(cols)
        ptr, idx, vals, _ = K.extract.extract_cols(ptr, idx, vals, hv, cols, A.ncols)
        ncols = cols.size
        idx = narrow_indices(idx, ncols)
    T = Matrix._new(ptr, idx, vals if hv else None, (nrows, ncols))
    return _written(func, T, mask, out, accum, replace)


def _written(func, T, mask, out, accum, replace):
    if mask is None and out is None and accum is None:
        return T
    from spla.mask import check_write, finish
    mask, out, accum = check_write(func, T.shape, type(T), mask, out, accum, replace)
    return finish(func, T, mask, out, accum, replace)


def extract_rows(A, rows):
    """``A[rows, :]``; shorthand for ``extract(A, rows=rows)``.

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, extract_rows
    >>> extract_rows(Matrix.from_dense(np.eye(3)), [2]).to_dense()
    array([[0., 0., 1.]])
    """
    return extract(A, rows=rows)


def extract_cols(A, cols):
    """``A[:, cols]``; shorthand for ``extract(A, cols=cols)``.

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, extract_cols
    >>> extract_cols(Matrix.from_dense(np.eye(2)), [1]).to_dense()
    array([[0.],
           [1.]])
    """
    return extract(A, cols=cols)


def extract_blockwise(A, rows, row_ptr, cols, col_ptr, *, check=True):
    """Block-diagonal extraction: block ``g`` is ``A[rows_g, cols_g]``.

    ``rows_g = rows[row_ptr[g]:row_ptr[g+1]]`` and likewise for columns.
    The blocks are laid out on the diagonal of one matrix, so groups never
    see each other's columns: the per-minibatch extraction of layer-wise
    samplers (LADIES) in one parallel pass.  Columns must be distinct within
    a group; rows may repeat.

    Parameters
    ----------
    A : Matrix or MxmExpr
    rows, row_ptr, cols, col_ptr : arrays of int
    check : bool, default True
        Check ``rows`` and ``cols`` (in range, columns distinct within each
        group).  Callers whose ids spla made (a sampler's frontiers) pass
        False: on a GPU each check is a blocking read.  Host pointers
        (numpy) cost no read either way.

    Returns
    -------
    Matrix
        Shape ``(len(rows), len(cols))``; use ``split_blocks(M, row_ptr,
        col_ptr)`` for the blocks.

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, extract_blockwise
    >>> A = Matrix.from_dense(np.arange(1.0, 10.0).reshape(3, 3))
    >>> extract_blockwise(A, [0, 2], [0, 1, 2], [2, 0, 1], [0, 2, 3]).to_dense()
    array([[3., 1., 0.],
           [0., 0., 8.]])
    """
    from kernels.common import KernelLimitError
    from spla.exceptions import InvalidCSR, DimensionMismatch, InvalidValue
    from spla.matrix import HOST_INDPTR
    from spla.structure import _group_ptr
    from spla.checks import fail
    func = "extract_blockwise"
    A = as_matrix(func, "A", A)
    rows, cols = _index_pair(func, A, rows, cols, check)
    row_ptr = _group_ptr(func, "row_ptr", row_ptr, rows.size)
    col_ptr = _group_ptr(func, "col_ptr", col_ptr, cols.size)
    if row_ptr.size != col_ptr.size:
        fail(DimensionMismatch, func, "col_ptr", f"{row_ptr.size} offsets", f"{col_ptr.size}")
    K = backend.kernels_for(A.device)
    try:
        ptr, idx, src, first_dup, host_ptr = K.groups.extract_groups(
            A.indptr, A.indices, rows, row_ptr, cols, col_ptr, A.ncols, check=check,
            with_host_ptr=True)
    except KernelLimitError as e:
        fail(InvalidValue, func, e.arg, e.expected, e.got)
    if first_dup >= 0:
        fail(InvalidCSR, func, "cols", "distinct columns within each group",
             f"column {int(cols[first_dup])} repeated at position {first_dup}")
    vals = None if A.values is None else A.values[src]
    M = Matrix._new(ptr, narrow_indices(idx, cols.size), vals, (rows.size, cols.size))
    # The row pointer's host copy, read with the output's size: split_blocks
    # cuts the blocks by it without reading the pointer back again.
    M._cache[HOST_INDPTR] = host_ptr
    return M


def extract_values(A, rows, cols, *, fill=0, check=True):
    """The entries ``A[rows[t], cols[t]]``, one per pair, as a dense 1-D array.

    GraphBLAS's ``extractElement`` for many pairs at once: pair ``t`` gives
    the stored value at row ``rows[t]``, column ``cols[t]`` (1 for a
    structural matrix), or ``fill`` where A stores none.  Each pair is one
    binary search in its row's sorted columns, so the cost is the pairs',
    not the rows'.  Pairs may repeat and come in any order.

    Parameters
    ----------
    A : Matrix or MxmExpr
    rows, cols : 1-D arrays of int, of one length
        The pairs' rows (in ``[0, A.nrows)``) and columns (in ``[0, A.ncols)``).
    fill : int, float or bool, default 0
        The value of a pair A stores nothing at; it must be exact in the
        output's dtype.
    check : bool, default True
        Check the indices' range.  Callers whose pairs spla made (a
        sampler's frontiers) pass False: on a GPU each check is a blocking
        read.

    Returns
    -------
    1-D array, on A's device
        A's value dtype (int64 for a structural matrix).

    Raises
    ------
    IndexOutOfRange
        An index outside its dimension.
    DimensionMismatch
        ``rows`` and ``cols`` of different lengths.
    InvalidValue
        ``fill`` not exact in the output's dtype.
    DeviceMismatch
        Indices on the GPU for a matrix on the host.

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix
    >>> from spla.extract import extract_values
    >>> A = Matrix.from_dense(np.array([[0.0, 2.5], [4.0, 0.0]]))
    >>> extract_values(A, [1, 0, 0], [0, 1, 0])
    array([4. , 2.5, 0. ])
    >>> extract_values(A, [0], [0], fill=-1.0)
    array([-1.])
    """
    from spla.checks import describe, fail
    from spla.exceptions import DeviceMismatch, DimensionMismatch, InvalidValue
    func = "extract_values"
    A = as_matrix(func, "A", A)
    xp = A.xp
    for arg, a in (("rows", rows), ("cols", cols)):
        if backend.device_of(a) != "cpu" and A.device == "cpu":
            raise DeviceMismatch(f"{func}: argument '{arg}' is on {backend.device_of(a)}, A on "
                                 "cpu; move one of them")
    rows, cols = _index_pair(func, A, rows, cols, check)
    if rows.shape != cols.shape or rows.ndim != 1:
        fail(DimensionMismatch, func, "cols", f"a 1-D array of {rows.size} indices (as rows)",
             describe(cols))
    dt = A.dtype if A.values is not None else np.dtype(np.int64)
    if not isinstance(fill, (int, float, bool, np.integer, np.floating, np.bool_)):
        fail(InvalidValue, func, "fill", "a real scalar", describe(fill))
    with np.errstate(all="ignore"):
        f = np.asarray([fill]).astype(dt)
    back = f[0].item()  # a Python number: compared exactly, not in dt
    if not (back == fill or (back != back and fill != fill)):
        fail(InvalidValue, func, "fill", f"a value exact in {dt}", repr(fill))
    vals = A.values if A.values is not None else xp.empty(0, dt)
    K = backend.kernels_for(A.device)
    return K.extract.extract_values(A.indptr, A.indices, vals, A.values is not None, rows, cols,
                                    xp.asarray(f))


def _index_pair(func, A, rows, cols, check):
    """``rows`` and ``cols`` as int64 arrays on A's device, checked against
    A's shape unless the caller made them (``check=False``: on a GPU a
    check is a blocking read)."""
    xp = A.xp
    if check:
        return (xp.asarray(as_index_array(func, "rows", rows, A.nrows)),
                xp.asarray(as_index_array(func, "cols", cols, A.ncols)))
    return (xp.asarray(rows).astype(np.int64, copy=False),
            xp.asarray(cols).astype(np.int64, copy=False))
