"""The distributed SpGEMM ``Q ⊕.⊗ A`` (reached through ``spla.mxm``).

Member j of a process row computes a disjoint row range of its Q block,
fetching (directly) only the rows of A that range needs, and the row
concatenates the ranges.  Moving whole rows of A rather than reducing
partial sums keeps every floating-point sum in the single-process order:
the product is bit-identical to the local ``mxm`` for every semiring.
"""

import numpy as np

from spla import comm as C
from spla.checks import fail
from spla.dist.core import DistMatrix
from spla.dist.scatter import block_sum
from spla.dist.wire import allgather_rows, row_block
from spla.exceptions import DimensionMismatch, DTypeError, LayoutError
from spla.layout import chunk
from spla.matrix import Matrix
from spla.mxm import mxm
from spla.semiring import as_semiring


def dist_mxm(Q, A, semiring):
    """Collective: the distributed product ``Q ⊕.⊗ A``; ``spla.mxm`` calls it.

    Collective: every rank of the operands' communicator must call this.

    Parameters
    ----------
    Q, A : DistMatrix
        On the same communicator and process grid (the same p and c);
        ``Q.ncols == A.nrows``.  A replicated ``A`` needs no
        communication; a replicated ``Q`` needs a replicated ``A``.
    semiring : Semiring or str

    Returns
    -------
    DistMatrix
        With Q's layout.

    Raises
    ------
    DTypeError, DimensionMismatch, LayoutError, InvalidValue
        On every rank, when the operands (or the semiring) are wrong on
        any rank, e.g. a local matrix on one rank.

    Examples
    --------
    >>> import numpy as np, spla
    >>> A = spla.Matrix.from_dense(np.array([[1.0, 2.0], [0.0, 3.0]]))
    >>> D = spla.distribute(A)                                   # on 1 rank
    >>> spla.mxm(D, D).gather().to_dense()
    array([[1., 8.],
           [0., 9.]])
    """
    func = "mxm"
    # mxm dispatches here when either operand is distributed.
    comm = A.comm if isinstance(A, DistMatrix) else Q.comm
    with C.collective_checks(comm):
        for arg, X in (("A", Q), ("B", A)):
            if not isinstance(X, DistMatrix):
                fail(DTypeError, func, arg, "a spla.DistMatrix (distribute both operands, or "
                     "neither)", _kind(X))
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
    Ql = Q.local
    if A.layout.replicated:
        P = mxm(Ql, A.local, sr).new()
        return DistMatrix(P, (Q.nrows, A.ncols), _nnz(Q, P), Q.layout, comm, Q.row_start,
                          Q.partition)
    g = Q.grid
    # Member j of the process row computes a disjoint row range of the Q
    # block, so it fetches only the rows of A that range needs; the row
    # then concatenates the ranges.
    s, e = chunk(Ql.nrows, g.c, g.col)
    Qpart = row_block(Ql.to("cpu"), s, e)
    view = A.rows_view(np.unique(np.asarray(Qpart.indices, np.int64)))
    part = mxm(Qpart, view, sr).new()
    P = allgather_rows(g.row_comm, part, "mxm.rows", A.ncols) if g.c > 1 else part
    if part.values is None:
        P = Matrix._new(P.indptr, P.indices, None, P.shape)
    return DistMatrix(P, (Q.nrows, A.ncols), _nnz(Q, P), Q.layout, comm, Q.row_start,
                      Q.partition)


def _nnz(Q, P):
    return P.nnz if Q.layout.replicated else block_sum(Q.grid, P.nnz)


def _kind(X):
    shape = getattr(X, "shape", None)
    return f"a {type(X).__name__}" + ("" if shape is None else f" of shape {tuple(shape)}")
