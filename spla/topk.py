"""Per-row top-k selection: ``select_topk``.

The deterministic sibling of ``sample_rows``: where ``sample_rows`` draws
``k`` entries per row at random in proportion to their values,
``select_topk`` keeps the ``k`` entries of largest value (PinSAGE's
importance neighbourhoods keep the most visited vertices this way).  Ties are
broken by the smaller column, so the result is one well-defined matrix on
every backend and thread count.
"""


import numpy as np

from spla import backend
from spla.checks import as_int, describe, fail
from spla.exceptions import DTypeError, InvalidValue
from spla.matrix import Matrix
from spla.mxm import MxmExpr, as_matrix

#: a k at or above this keeps every entry (no row holds 2**62 entries); the
#: kernels take k as an int64
_K_ALL = 2 ** 62


def _check_no_nan(func, M):
    """NaN has no rank: refuse it, naming the row and column of the first one."""
    v = M.values
    if v.dtype.kind != "f" or v.size == 0:
        return
    xp = M.xp
    bad = xp.isnan(v)
    if bool(bad.any()):
        pos = int(xp.flatnonzero(bad)[0])
        row = int(xp.searchsorted(M.indptr, pos, side="right")) - 1
        fail(InvalidValue, func, "A", "values without NaN (NaN has no rank; infinities are "
             "fine)", f"NaN at row {row}, column {int(M.indices[pos])}")


def select_topk(A, k, *, largest=True):
    """Keep the ``k`` entries of largest value in every row.

    Parameters
    ----------
    A : Matrix or MxmExpr
        A matrix with values: float32, float64, int32 or int64, no NaN
        (``inf`` and ``-inf`` rank as usual).  A lazy ``Q @ A`` is
        materialised first; for a row selection ``Q`` that is a gather of
        A's rows, the same pass over the entries that the selection makes
        anyway.
    k : int
        Entries kept per row, ``>= 1``; a row with at most ``k`` entries is
        kept whole.  ``k = -1`` keeps every entry.
    largest : bool, default True
        Keep the largest values; ``False`` keeps the smallest.

    Returns
    -------
    Matrix
        Same shape, index dtype and value dtype as ``A``, in canonical CSR
        (each row's kept entries in column order), holding the kept entries
        with their values unchanged.  Among entries of equal value the one in
        the smaller column ranks first, so the kept set is unique: the result
        is the same on every backend and thread count.

    Raises
    ------
    InvalidValue
        ``k`` is not an integer ``>= 1`` or ``-1`` (bools and floats
        refused); ``A`` is structural (no values: nothing to rank) or holds
        a NaN.
    DTypeError
        ``A`` is not a Matrix or lazy expression; ``largest`` is not a bool.

    Notes
    -----
    A structural matrix is refused rather than ranked as all ones: every
    entry would tie, and the rule "smaller column first" would silently keep
    the first ``k`` columns of each row.  That selection is still one call
    away, made explicit: ``select_topk(A.astype(np.int32), k)``.

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, select_topk
    >>> A = Matrix.from_dense(np.array([[3.0, 1.0, 3.0, 2.0],
    ...                                 [0.0, 5.0, 0.0, 0.0]]))
    >>> select_topk(A, 2).to_dense()              # row 0: the two 3s
    array([[3., 0., 3., 0.],
           [0., 5., 0., 0.]])
    >>> select_topk(A, 1).to_dense()              # a tie: the smaller column wins
    array([[3., 0., 0., 0.],
           [0., 5., 0., 0.]])
    >>> select_topk(A, 2, largest=False).values   # row 0: 1 and 2
    array([1., 2., 5.])
    """
    func = "select_topk"
    if not isinstance(A, (Matrix, MxmExpr)):
        fail(DTypeError, func, "A", "a spla.Matrix or a lazy Q @ A", describe(A))
    k = as_int(func, "k", k)
    if k != -1 and k < 1:
        fail(InvalidValue, func, "k", "an integer >= 1, or -1 to keep every entry", k)
    if not isinstance(largest, (bool, np.bool_)):
        fail(DTypeError, func, "largest", "True or False", describe(largest))
    if A.dtype is None:  # before materialising a lazy product
        fail(InvalidValue, func, "A", "a matrix with values to rank (use A.astype(...) to "
             "rank a pattern's entries as equal ones, by column)", "a structural matrix")
    M = as_matrix(func, "A", A)
    _check_no_nan(func, M)
    if k == -1:
        # Every entry: the same arrays (matrices are immutable), no kernel.
        return Matrix._new(M.indptr, M.indices, M.values, M.shape)
    K = backend.kernels_for(M.device).topk
    take = backend.kernels_for(M.device).extract.take
    ptr, pos = K.topk_rows(M.indptr, M.values, np.int64(min(k, _K_ALL)), bool(largest))
    return Matrix._new(ptr, take(M.indices, pos), take(M.values, pos), M.shape)
