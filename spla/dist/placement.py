"""Where the rows of a distributed result live, and the write arguments
(mask, ``out``) placed to match: the checks and row lookups that the
distributed operators (``spla.dist.spgemm``, ``spla.dist.elementwise``) share.

A result is *placed as* an operand ``P`` when it has ``P``'s layout, rows
and partition: each rank then holds the same rows of both, and a
row-by-row step (a mask, an accumulator) needs no communication.
"""

from spla.checks import fail
from spla.dist.core import DistMatrix
from spla.dist.scatter import block_sum
from spla.dist.wire import row_block, row_block_list
from spla.exceptions import DTypeError, LayoutError
from spla.mask import Mask, check_write


def comm_of(*objs):
    """The communicator of the first distributed argument (or mask's parent); None if none.

    Examples
    --------
    >>> comm_of(None, 3) is None
    True
    """
    for X in objs:
        X = X.parent if isinstance(X, Mask) else X
        if isinstance(X, DistMatrix):
            return X.comm
    return None


def kind(X):
    """``X``'s type and shape, for error messages.

    Examples
    --------
    >>> import numpy as np
    >>> kind(np.zeros((2, 3)))
    'a ndarray of shape (2, 3)'
    """
    shape = getattr(X, "shape", None)
    return f"a {type(X).__name__}" + ("" if shape is None else f" of shape {tuple(shape)}")


def placement(D):
    """A DistMatrix's placement in words (layout, rows here, partition)."""
    part = "no partition" if D.partition is None else "a partition"
    return f"{D.layout!r}, rows {D.row_start}:{D.row_stop} here, {part}"


def check_placed(func, arg, X, P, what="the product, i.e. as A"):
    """Fail unless DistMatrix ``X`` is placed as ``P`` on ``P``'s communicator."""
    if X.comm != P.comm:
        fail(LayoutError, func, arg, "a DistMatrix on the communicator of A",
             "one on another communicator")
    if (X.layout != P.layout or X.row_start != P.row_start
            or not (X.partition is P.partition or (X.partition is not None
                                                   and P.partition is not None
                                                   and X.partition == P.partition))):
        fail(LayoutError, func, arg, f"a DistMatrix placed as {what} ({placement(P)})",
             placement(X))


def check_write_placed(func, shape, P, mask, out, accum, replace,
                       what="the product, i.e. as A"):
    """(mask, out, accum, replace) of a result of ``shape`` placed as ``P``, checked.

    The mask may be a DistMatrix's placed as ``P``, a replicated
    DistMatrix's on ``P``'s communicator, or a local Matrix's (the same on
    every rank: each reads its rows); ``out`` a DistMatrix placed as ``P``.
    """
    if isinstance(mask, DistMatrix):
        fail(DTypeError, func, "mask", "a mask: M.S (structure), M.V (values) or ~M.S / ~M.V",
             "a DistMatrix (write M.S or M.V)")
    if out is not None and not isinstance(out, DistMatrix):
        fail(DTypeError, func, "out", f"a spla.DistMatrix placed as {what}", kind(out))
    mask, out, accum = check_write(func, shape, DistMatrix, mask, out, accum, replace)
    M = None if mask is None else mask.parent
    # A replicated mask holds every row on every rank: each reads its own.
    if isinstance(M, DistMatrix) and not (M.layout.replicated and M.comm == P.comm):
        check_placed(func, "mask", M, P, what)
    if out is not None:
        check_placed(func, "out", out, P, what)
    return mask, out, accum, bool(replace)


def rows_of(M, P, s, e):
    """Rows ``s:e`` of ``P``'s block (positions in ``P.local``) of a checked mask matrix."""
    if isinstance(M, DistMatrix) and (not M.layout.replicated or P.layout.replicated):
        return row_block(M.local, s, e)  # placed as P
    full = M.local if isinstance(M, DistMatrix) else M
    if P.partition is None or P.layout.replicated:
        return row_block(full, P.row_start + s, P.row_start + e)
    return row_block_list(full.to("cpu"), P.row_ids[s:e])


def local_mask(mask, P, s, e, device):
    """The local ``Mask`` of rows ``s:e`` of ``P``'s block (None for no mask)."""
    if mask is None:
        return None
    return Mask(rows_of(mask.parent, P, s, e).to(device), mask.structural, mask.complement)


def nnz_of(P, local):
    """The global entry count of a result placed as ``P`` whose block here is ``local``."""
    return local.nnz if P.layout.replicated else block_sum(P.grid, local.nnz)
