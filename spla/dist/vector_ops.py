"""``spla.mxv`` and ``spla.vxm`` with a distributed matrix (reached through them).

The vector operand is replicated (the same on every rank) and so is the
result.  Both products are bit-identical to the single-process ones for
every semiring, because every output entry is folded by one rank, over
the same terms in the same order as ``spla.mxv``/``spla.vxm`` on one
process:

``dist_mxv``
    each process row computes its own rows (a row's terms are all local),
    then the process column concatenates the row pieces (one allgatherv
    of indices and values): every rank gets the whole vector.
``dist_vxm``
    a column's terms are spread over the process rows, and an allreduce
    of partial sums would add them in another order than one process
    does.  Instead every entry goes to the rank of the process column
    that owns its column (columns cut in ``chunk`` blocks; one
    all-to-allv per array), which folds its columns over their rows in
    ascending global row order, as the single-process push does; the
    process column then concatenates the column pieces.

A replicated graph (``replicate_graph=True``) needs no message, and the
local product takes every argument as it is.  Otherwise the mask goes into
the local masked product: ``mxv`` passes each rank its rows' share of the
mask (a size ``D.lshape[0]`` mask), ``vxm`` the mask itself (a rank's
routed matrix holds only its own columns, so the rest of the mask meets no
entry); the concatenated pieces then already lie inside the mask, and
``out``, ``accum`` and ``replace`` apply to the replicated result, with
``spla.mxv``'s semantics.
"""

import numpy as np

from spla import backend
from spla import comm as C
from spla.checks import describe, fail
from spla.dist.core import DistMatrix
from spla.exceptions import DimensionMismatch, DTypeError
from spla.graphblas import mxv, vxm
from spla.layout import chunk_bounds
from spla.mask import Mask, check_write, finish
from spla.matrix import Matrix
from spla.semiring import as_semiring
from spla.vector import Vector


def _check(func, D, u, size, what, semiring, mask, out, accum, replace, out_size):
    """The shared argument checks, collective: every rank raises the same error."""
    with C.collective_checks(D.comm):
        sr = as_semiring(func, semiring)
        if not isinstance(u, Vector):
            fail(DTypeError, func, "u", "a spla.Vector (replicated on every rank)",
                 describe(u))
        if u.size != size:
            fail(DimensionMismatch, func, "u", f"a vector of size {size} ({what})",
                 f"size {u.size}")
        backend.same_device(func, D.local, u)
        mask, out, accum = check_write(func, (out_size,), Vector, mask, out, accum, replace)
        if mask is not None:
            backend.same_device(func, D.local, mask.parent)
    return sr, mask, out, accum


def _write(func, part, mask, out, accum, replace):
    """The replicated result from the concatenated masked product ``part``."""
    if out is None:
        return part  # every piece was computed inside the mask
    return finish(func, part, mask, out, accum, replace)


def _row_share(mask, D):
    """This rank's rows of a size-m Vector mask, as a mask of ``D.local``'s rows."""
    if mask is None:
        return None
    V = mask.parent
    idx = np.asarray(backend.to_host(V.indices), np.int64)
    vals = None if V.values is None else backend.to_host(V.values)
    if D.partition is None:
        lo, hi = np.searchsorted(idx, [D.row_start, D.row_stop])
        pos, keep = idx[lo:hi] - D.row_start, slice(lo, hi)
    else:
        ids = D.row_ids  # ascending
        at = np.minimum(np.searchsorted(ids, idx), max(ids.size - 1, 0))
        keep = ids[at] == idx if ids.size else np.zeros(idx.size, np.bool_)
        pos = at[keep]
    local = Vector._new(pos, None if vals is None else vals[keep], D.local.nrows)
    return Mask(local.to(D.device), mask.structural, mask.complement)


def _concat(cc, part, size, device):
    """The Vector of size ``size`` whose disjoint pieces the ranks of ``cc`` hold."""
    idx, _ = C.allgatherv(cc, np.asarray(backend.to_host(part.indices), np.int64),
                          "vector.pieces")
    vals = None
    if part.values is not None:
        vals, _ = C.allgatherv(cc, np.ascontiguousarray(backend.to_host(part.values)),
                               "vector.pieces")
    return Vector.from_coo(idx, vals, size, duplicates="error").to(device)


def dist_mxv(D, u, semiring="plus_times", *, mask=None, out=None, accum=None, replace=False):
    """Collective: ``w = D ⊕.⊗ u`` for a DistMatrix ``D``; ``spla.mxv`` calls it.

    Parameters
    ----------
    D : DistMatrix, shape (m, n)
    u : Vector of size n, the same on every rank
    semiring, mask, out, accum, replace
        As in ``spla.mxv`` (mask and out replicated too).  Each rank
        hands its rows' share of the mask to the local masked ``mxv``, so
        a mask that is not complemented bounds the rows it computes.

    Returns
    -------
    Vector of size m, the whole product on every rank (bit-identical to
    ``spla.mxv`` of the gathered matrix with the same arguments).

    Raises
    ------
    DTypeError, DimensionMismatch, InvalidValue
        On every rank, when an argument is wrong on any rank.

    Examples
    --------
    >>> import numpy as np, spla
    >>> D = spla.distribute(spla.Matrix.from_dense(np.array([[1.0, 2.0], [0.0, 3.0]])))
    >>> spla.mxv(D, spla.Vector.from_dense(np.array([1.0, 1.0]))).to_dense()
    array([3., 3.])
    >>> m = spla.Vector.from_coo([1], size=2)
    >>> spla.mxv(D, spla.Vector.from_dense(np.array([1.0, 1.0])), mask=m.S).to_dense()
    array([0., 3.])
    """
    func = "mxv"
    sr, mask, out, accum = _check(func, D, u, D.ncols, "D.ncols", semiring, mask, out, accum,
                                  replace, D.nrows)
    if D.layout.replicated:
        return mxv(D.local, u, sr, mask=mask, out=out, accum=accum, replace=replace)
    part = mxv(D.local, u, sr, mask=_row_share(mask, D))
    rows = D.row_ids[np.asarray(backend.to_host(part.indices), np.int64)]
    piece = Vector.from_coo(rows, None if part.values is None else
                            backend.to_host(part.values), D.nrows, duplicates="error")
    part = _concat(D.grid.col_comm, piece, D.nrows, D.device)
    return _write(func, part, mask, out, accum, replace)


def dist_vxm(u, D, semiring="plus_times", *, mask=None, out=None, accum=None, replace=False):
    """Collective: ``w = u ⊕.⊗ D`` for a DistMatrix ``D``; ``spla.vxm`` calls it.

    Parameters
    ----------
    u : Vector of size m, the same on every rank
    D : DistMatrix, shape (m, n)
    semiring, mask, out, accum, replace
        As in ``spla.vxm`` (mask and out replicated too).  The mask goes
        into each rank's local masked ``vxm`` of the columns it owns.

    Returns
    -------
    Vector of size n, the whole product on every rank (bit-identical to
    ``spla.vxm`` of the gathered matrix with the same arguments).

    Raises
    ------
    DTypeError, DimensionMismatch, InvalidValue
        On every rank, when an argument is wrong on any rank.

    Examples
    --------
    >>> import numpy as np, spla
    >>> D = spla.distribute(spla.Matrix.from_dense(np.array([[1.0, 2.0], [0.0, 3.0]])))
    >>> spla.vxm(spla.Vector.from_dense(np.array([1.0, 1.0])), D).to_dense()
    array([1., 5.])
    >>> m = spla.Vector.from_coo([0], size=2)
    >>> spla.vxm(spla.Vector.from_dense(np.array([1.0, 1.0])), D, mask=~m.S).to_dense()
    array([0., 5.])
    """
    func = "vxm"
    sr, mask, out, accum = _check(func, D, u, D.nrows, "D.nrows", semiring, mask, out, accum,
                                  replace, D.ncols)
    if D.layout.replicated:
        return vxm(u, D.local, sr, mask=mask, out=out, accum=accum, replace=replace)
    cc = D.grid.col_comm
    mine = _by_column_owner(D, cc)
    host_mask = None if mask is None else Mask(mask.parent.to("cpu"), mask.structural,
                                               mask.complement)
    part = vxm(u.to("cpu"), mine, sr, mask=host_mask)
    return _write(func, _concat(cc, part, D.ncols, D.device), mask, out, accum, replace)


def _by_column_owner(D, cc):
    """The entries of the process column's rows whose columns this rank owns,
    as an (m x n) matrix indexed by global rows (CPU)."""
    local = D.local.to("cpu")
    m, n = D.shape
    counts = np.diff(np.asarray(local.indptr, np.int64))
    rows = np.repeat(D.row_ids, counts)
    cols = np.asarray(local.indices, np.int64)
    q = cc.Get_size()
    owner = np.searchsorted(chunk_bounds(n, q), cols, side="right") - 1
    order = np.argsort(owner, kind="stable")
    sendcounts = np.bincount(owner, minlength=q).astype(np.int64)
    got_rows, _ = C.alltoallv(cc, rows[order], sendcounts, "vxm.entries")
    got_cols, _ = C.alltoallv(cc, cols[order], sendcounts, "vxm.entries")
    vals = None
    if local.values is not None:
        vals, _ = C.alltoallv(cc, np.ascontiguousarray(local.values[order]), sendcounts,
                              "vxm.entries")
    return Matrix.from_coo(got_rows, got_cols, vals, shape=(m, n), duplicates="error")
