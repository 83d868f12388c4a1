"""The distributed SpGEMM ``Q ⊕.⊗ A`` (reached through ``spla.mxm``).

Member j of a process row computes a disjoint row range of its Q block,
fetching (directly) only the rows of A that range needs, and the row
concatenates the ranges.  Moving whole rows of A rather than reducing
partial sums keeps every floating-point sum in the single-process order:
the product is bit-identical to the local ``mxm`` for every semiring.

Masks, ``out``, ``accum`` and ``replace`` act row by row, so each member
hands its rows of the mask and of ``out`` to the local ``mxm``: a mask
that is not complemented bounds the local work (the masked kernels), and
the rows it writes are those of the local masked product on the gathered
matrices.  ``D.S``, ``D.V`` (and their complements) make the mask of a
``DistMatrix``.
"""

import numpy as np

from spla import comm as C
from spla.checks import fail
from spla.dist.core import DistMatrix
from spla.dist.placement import check_write_placed, comm_of, kind, local_mask, nnz_of
from spla.dist.wire import allgather_rows, row_block
from spla.exceptions import DimensionMismatch, DTypeError, LayoutError
from spla.layout import chunk
from spla.mask import Mask
from spla.matrix import Matrix
from spla.mxm import mxm
from spla.semiring import as_semiring


class DistMask(Mask):
    """The mask of a ``DistMatrix`` (``D.S``, ``D.V``, ``~D.S``, ``~D.V``).

    Accepted as ``mask=`` by ``spla.mxm`` on distributed operands, whose
    ranks each read their own rows of it.  A local operator, which would
    need every entry on this rank, refuses it.

    Examples
    --------
    >>> import numpy as np, spla
    >>> D = spla.distribute(spla.Matrix.from_dense(np.eye(2)))      # on 1 rank
    >>> ~D.S
    <spla.Mask ~S of a DistMatrix 2x2>
    """

    __slots__ = ()

    def __invert__(self):
        return DistMask(self.parent, self.structural, not self.complement)

    def __repr__(self):
        kind = ("~" if self.complement else "") + ("S" if self.structural else "V")
        return f"<spla.Mask {kind} of a DistMatrix {self.parent.nrows}x{self.parent.ncols}>"

    def true_keys(self):
        # A local operator reads a mask through these two: refuse cleanly.
        fail(DTypeError, "mask", "mask", "the mask of a local Matrix or Vector here (the mask "
             "of a DistMatrix serves spla.mxm on DistMatrix operands only)", repr(self))

    def allows(self, keys):
        return self.true_keys()


def _dist_mask_property(structural):
    def prop(self):
        return DistMask(self, structural)
    what = ("The structural mask of this matrix (every stored entry)" if structural
            else "The value mask of this matrix (stored entries that are nonzero)")
    prop.__doc__ = f"""{what}, for ``spla.mxm`` on distributed operands.

    Examples
    --------
    >>> import numpy as np, spla
    >>> D = spla.distribute(spla.Matrix.from_dense(np.array([[0.0, 2.0], [1.0, 0.0]])))
    >>> D.{'S' if structural else 'V'}
    <spla.Mask {'S' if structural else 'V'} of a DistMatrix 2x2>
    """
    return property(prop)


# Bound here, beside the operator that reads them, as spla.mask binds
# Matrix.S and Vector.S.
DistMatrix.S = _dist_mask_property(True)
DistMatrix.V = _dist_mask_property(False)


def dist_mxm(Q, A, semiring, *, mask=None, out=None, accum=None, replace=False):
    """Collective: the distributed product ``Q ⊕.⊗ A``; ``spla.mxm`` calls it.

    Collective: every rank of the operands' communicator must call this.

    Parameters
    ----------
    Q, A : DistMatrix
        On the same communicator and process grid (the same p and c);
        ``Q.ncols == A.nrows``.  A replicated ``A`` needs no
        communication; a replicated ``Q`` needs a replicated ``A``.
    semiring : Semiring or str
    mask : Mask, optional
        Of an ``(Q.nrows, A.ncols)`` matrix: ``M.S``, ``M.V``, ``~M.S`` or
        ``~M.V`` where M is a ``DistMatrix`` placed as the product (the
        layout, rows and partition of ``Q``), a replicated ``DistMatrix``
        on the same communicator, or a local ``Matrix`` that is the same
        on every rank.  Each rank passes its own rows of it to the local
        masked ``mxm``: a mask that is not complemented bounds the work
        (``mxm(L, Lt, plus_pair, mask=L.S)`` forms no L·Lᵀ anywhere); a
        complemented one filters the rows computed.
    out : DistMatrix, optional
        The output operand, placed as the product (as ``Q``).
    accum : BinaryOp, Monoid or str, optional
        Needs ``out``.
    replace : bool, default False
        As in ``spla.mxm`` (GraphBLAS C API semantics, row by row).

    Returns
    -------
    DistMatrix
        With Q's layout; bit-identical, once gathered, to the local
        ``mxm`` with the same arguments on the gathered matrices.

    Raises
    ------
    DTypeError, DimensionMismatch, LayoutError, InvalidValue
        On every rank, when the operands, the semiring or the write
        arguments are wrong on any rank, e.g. a local matrix on one rank,
        a mask of another shape, or a mask or ``out`` placed otherwise
        than the product.

    Examples
    --------
    >>> import numpy as np, spla
    >>> A = spla.Matrix.from_dense(np.array([[1.0, 2.0], [0.0, 3.0]]))
    >>> D = spla.distribute(A)                                   # on 1 rank
    >>> spla.mxm(D, D).gather().to_dense()
    array([[1., 8.],
           [0., 9.]])
    >>> spla.mxm(D, D, mask=~D.S).gather().nnz                  # A·A lies in A's pattern
    0
    >>> spla.mxm(D, D, mask=D.S, out=D, accum="plus").gather().to_dense()
    array([[ 2., 10.],
           [ 0., 12.]])
    """
    func = "mxm"
    comm = comm_of(Q, A, mask, out)
    with C.collective_checks(comm):
        sr = _check_operands(func, Q, A, semiring)
        write = _check_write(func, Q, A, mask, out, accum, replace)
    Ql = Q.local
    if A.layout.replicated:
        P = _local_product(Ql, A.local, sr, Q, 0, Ql.nrows, write)
        return DistMatrix(P, (Q.nrows, A.ncols), nnz_of(Q, P), Q.layout, comm, Q.row_start,
                          Q.partition)
    g = Q.grid
    # Member j of the process row computes a disjoint row range of the Q
    # block, so it fetches only the rows of A that range needs; the row
    # then concatenates the ranges.
    s, e = chunk(Ql.nrows, g.c, g.col)
    Qpart = row_block(Ql.to("cpu"), s, e)
    view = A.rows_view(np.unique(np.asarray(Qpart.indices, np.int64)))
    part = _local_product(Qpart, view, sr, Q, s, e, write)
    P = allgather_rows(g.row_comm, part, "mxm.rows", A.ncols) if g.c > 1 else part
    if part.values is None:
        P = Matrix._new(P.indptr, P.indices, None, P.shape)
    return DistMatrix(P, (Q.nrows, A.ncols), nnz_of(Q, P), Q.layout, comm, Q.row_start,
                      Q.partition)


def _check_operands(func, Q, A, semiring):
    """The semiring, after the operand checks (inside ``collective_checks``)."""
    both = isinstance(Q, DistMatrix) or isinstance(A, DistMatrix)
    for arg, X in (("A", Q), ("B", A)):
        if not isinstance(X, DistMatrix):
            fail(DTypeError, func, arg, "a spla.DistMatrix (distribute both operands, or "
                 "neither)" if both else "a spla.DistMatrix (the mask or out is a "
                 "DistMatrix's: distribute the operands too, or pass local ones)", kind(X))
    sr = as_semiring(func, semiring)
    if Q.comm != A.comm:
        fail(LayoutError, func, "B", "a DistMatrix on the communicator of A",
             "one on another communicator")
    if Q.ncols != A.nrows:
        fail(DimensionMismatch, func, "B", f"a matrix with {Q.ncols} rows (A.ncols)",
             f"shape {A.shape}")
    if Q.layout.c != A.layout.c or Q.layout.p != A.layout.p:
        fail(LayoutError, func, "B", f"a DistMatrix on the process grid of A (c = "
             f"{Q.layout.c})", f"c = {A.layout.c}")
    if Q.layout.replicated and not A.layout.replicated:
        fail(LayoutError, func, "A", "distributed by rows when B is partitioned "
             "(a replicated left operand needs a replicated right one)", "a replicated A")
    return sr


def _check_write(func, Q, A, mask, out, accum, replace):
    """(mask, out, accum, replace) checked: shapes, types and placement."""
    return check_write_placed(func, (Q.nrows, A.ncols), Q, mask, out, accum, replace)


def _local_product(X, Y, sr, Q, s, e, write):
    """X ⊕.⊗ Y written under rows s:e of this rank's block of the mask and out."""
    mask, out, accum, replace = write
    if mask is None and out is None:
        return mxm(X, Y, sr).new()
    dev = X.device
    c = None if out is None else row_block(out.local, s, e).to(dev)
    return mxm(X, Y, sr, mask=local_mask(mask, Q, s, e, dev), out=c, accum=accum,
               replace=replace)
