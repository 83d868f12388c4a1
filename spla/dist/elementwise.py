"""Element-wise operators on ``DistMatrix`` operands (reached through
``spla.apply``, ``spla.select``, ``spla.ewise_add`` and ``spla.ewise_mult``).

Each works row by row, so each rank applies the local operator to its own
block (the replicas of a 1.5D block compute the same rows) and the only
message is the sum of the blocks' entry counts.  Operands, masks and
``out`` must be placed alike (``spla.dist.placement``): the same layout,
rows and partition, so that a rank holds the same rows of each.  The
result is placed as ``A`` and is bit-identical, once gathered, to the
local operator on the gathered matrices.

Index predicates of ``select`` (``tril``, ``row<``, a callable
``f(i, j, v)`` ...) see global row ids: a block whose rows are not
``row_start, row_start + 1, ...`` (a partition's vertices) is read through
a view that puts each local row at its global id.
"""

import numpy as np

from spla import comm as C
from spla.checks import fail
from spla.dist.core import DistMatrix
from spla.dist.placement import (check_placed, check_write_placed, comm_of, kind, local_mask,
                                 nnz_of)
from spla.elementwise import apply, ewise_add, ewise_mult, select
from spla.exceptions import DimensionMismatch, DTypeError
from spla.mask import finish
from spla.matrix import Matrix

#: Predicates of ``select`` that read the row index.
_ROW_PREDICATES = ("tril", "triu", "diag", "offdiag", "row<", "row>=")


def dist_apply(A, op, *, mask=None, out=None, accum=None, replace=False):
    """Collective: ``spla.apply`` on a DistMatrix (``spla.apply`` calls it).

    Parameters
    ----------
    A : DistMatrix
    op, accum, replace
        As in ``spla.apply``.
    mask : Mask, optional
        ``M.S``/``M.V`` (or complemented) of a DistMatrix placed as ``A``, of a
        replicated DistMatrix, or of a local Matrix the same on every rank.
    out : DistMatrix, optional
        Placed as ``A``.

    Returns
    -------
    DistMatrix
        Placed as ``A``.

    Raises
    ------
    DTypeError, DimensionMismatch, LayoutError, InvalidValue
        On every rank, when an argument is wrong on any rank.

    Examples
    --------
    >>> import numpy as np, spla
    >>> D = spla.distribute(spla.Matrix.from_dense(np.array([[1.0, -2.0], [0.0, 3.0]])))
    >>> spla.apply(D, "abs").gather().to_dense()                   # on 1 rank
    array([[1., 2.],
           [0., 3.]])
    """
    func = "apply"
    comm = comm_of(A, mask, out)
    with C.collective_checks(comm):
        _check_operand(func, "A", A, "(the mask or out is a DistMatrix's: distribute A too)")
        write = check_write_placed(func, A.shape, A, mask, out, accum, replace, "A")
        T = _written_here(func, A, write, lambda L, **kw: apply(L, op, **kw))
    return _placed_as(A, T)


def dist_select(A, predicate, thunk=0, *, mask=None, out=None, accum=None, replace=False):
    """Collective: ``spla.select`` on a DistMatrix (``spla.select`` calls it).

    Index predicates and callables see global row and column ids.

    Parameters
    ----------
    A : DistMatrix
    predicate, thunk, accum, replace
        As in ``spla.select``.
    mask, out
        As in ``dist_apply``.

    Returns
    -------
    DistMatrix
        Placed as ``A``.

    Examples
    --------
    >>> import numpy as np, spla
    >>> D = spla.distribute(spla.Matrix.from_dense(np.arange(1.0, 5.0).reshape(2, 2)))
    >>> spla.select(D, "tril").gather().to_dense()                 # on 1 rank
    array([[1., 0.],
           [3., 4.]])
    """
    func = "select"
    comm = comm_of(A, mask, out)
    with C.collective_checks(comm):
        _check_operand(func, "A", A, "(the mask or out is a DistMatrix's: distribute A too)")
        mask, out, accum, replace = check_write_placed(func, A.shape, A, mask, out, accum,
                                                       replace, "A")
        T = _select_here(A, predicate, thunk)
        if mask is not None or out is not None:
            dev = T.device
            c = None if out is None else out.local.to(dev)
            T = finish(func, T, local_mask(mask, A, 0, A.local.nrows, dev), c, accum, replace)
    return _placed_as(A, T)


def dist_ewise_add(A, B, monoid="plus", *, mask=None, out=None, accum=None, replace=False):
    """Collective: ``spla.ewise_add`` on DistMatrix operands placed alike.

    Parameters
    ----------
    A, B : DistMatrix
        Of one shape, placed alike (layout, rows, partition).
    monoid, accum, replace
        As in ``spla.ewise_add``.
    mask, out
        As in ``dist_apply``.

    Returns
    -------
    DistMatrix
        Placed as ``A``.

    Examples
    --------
    >>> import numpy as np, spla
    >>> D = spla.distribute(spla.Matrix.from_dense(np.array([[1.0, 0.0], [0.0, 3.0]])))
    >>> spla.ewise_add(D, D).gather().to_dense()                   # on 1 rank
    array([[2., 0.],
           [0., 6.]])
    """
    return _binary("ewise_add", ewise_add, A, B, monoid, mask, out, accum, replace)


def dist_ewise_mult(A, B, op="times", *, mask=None, out=None, accum=None, replace=False):
    """Collective: ``spla.ewise_mult`` on DistMatrix operands placed alike.

    Parameters
    ----------
    A, B : DistMatrix
        Of one shape, placed alike (layout, rows, partition).
    op, accum, replace
        As in ``spla.ewise_mult``.
    mask, out
        As in ``dist_apply``.

    Returns
    -------
    DistMatrix
        Placed as ``A``.

    Examples
    --------
    >>> import numpy as np, spla
    >>> D = spla.distribute(spla.Matrix.from_dense(np.array([[1.0, 2.0], [0.0, 3.0]])))
    >>> spla.ewise_mult(D, D, mask=~D.S).gather().nnz              # on 1 rank
    0
    """
    return _binary("ewise_mult", ewise_mult, A, B, op, mask, out, accum, replace)


def _binary(func, local_op, A, B, op, mask, out, accum, replace):
    comm = comm_of(A, B, mask, out)
    with C.collective_checks(comm):
        both = isinstance(A, DistMatrix) or isinstance(B, DistMatrix)
        why = ("(distribute both operands, or neither)" if both else
               "(the mask or out is a DistMatrix's: distribute the operands too)")
        _check_operand(func, "A", A, why)
        _check_operand(func, "B", B, why)
        if A.shape != B.shape:
            fail(DimensionMismatch, func, "B", f"shape {A.shape} (A's shape)",
                 f"shape {B.shape}")
        check_placed(func, "B", B, A, "A")
        write = check_write_placed(func, A.shape, A, mask, out, accum, replace, "A")
        T = _written_here(func, A, write,
                          lambda L, **kw: local_op(L, B.local.to(L.device), op, **kw))
    return _placed_as(A, T)


def _check_operand(func, arg, X, why):
    if not isinstance(X, DistMatrix):
        fail(DTypeError, func, arg, f"a spla.DistMatrix {why}", kind(X))


def _written_here(func, A, write, local_op):
    """``local_op`` on this rank's block of ``A``, written under its rows of the
    mask and ``out``."""
    mask, out, accum, replace = write
    L = A.local
    if mask is None and out is None:
        return local_op(L)
    dev = L.device
    c = None if out is None else out.local.to(dev)
    return local_op(L, mask=local_mask(mask, A, 0, L.nrows, dev), out=c, accum=accum,
                    replace=replace)


def _select_here(A, predicate, thunk):
    """``select`` of this rank's block with global row ids."""
    L = A.local
    if not (callable(predicate) or predicate in _ROW_PREDICATES):
        return select(L, predicate, thunk)
    # Local row i is global row ids[i] (ascending): a view of shape
    # (ids[-1] + 1, n) with row i's entries at row ids[i] has the block's
    # entries in the same order, so its result's rows come back by slicing.
    xp = L.xp
    ids = xp.asarray(A.row_ids)
    if L.nrows == 0:
        return L
    rows = int(ids[-1]) + 1
    counts = xp.zeros(rows + 1, np.int64)
    counts[ids + 1] = xp.diff(L.indptr)
    view = Matrix.from_csr(xp.cumsum(counts), L.indices, L.values, (rows, L.ncols),
                           check=False, copy=False)
    R = select(view, predicate, thunk)
    ptr = xp.concatenate([R.indptr[ids], R.indptr[-1:]])
    return Matrix.from_csr(ptr, R.indices, R.values, L.shape, check=False, copy=False)


def _placed_as(A, T):
    return DistMatrix(T, A.shape, nnz_of(A, T), A.layout, A.comm, A.row_start, A.partition)
