"""Scatter and gather of whole matrices: the data movement of ``distribute``
and ``DistMatrix.gather``.

These functions move rows whose layout and metadata the ranks have already
agreed on (the checks are in ``spla.dist.core``); they never validate.
"""

from spla import comm as C
from spla.dist.wire import allgather_rows, recv_csr, row_block, send_csr


def scatter_from_root(comm, A, L, shape, dtype, local, has, block_of=None):
    """Collective: rank 0 sends its rows to every rank that passed no matrix.

    Parameters
    ----------
    comm : MPI communicator
    A : spla.Matrix or None
        The global host matrix on rank 0 (and on any rank that passed it).
    L : spla.layout.Layout
    shape : (int, int)
        The agreed global shape.
    dtype : numpy.dtype or None
        The agreed value dtype (``None``: structural).
    local : spla.Matrix or None
        This rank's block, when it passed the matrix itself.
    has : numpy.ndarray of bool
        Which ranks passed the matrix (the same on every rank).
    block_of : callable, optional
        ``block_of(start, stop)``: the rows stored at positions
        ``start:stop`` (default: that slice of ``A``; a partitioned layout
        stores its parts' vertices there).

    Returns
    -------
    spla.Matrix
        This rank's block.

    Examples
    --------
    Called by ``distribute`` when some ranks pass ``None``:

    >>> import numpy as np, spla
    >>> from spla import comm
    >>> A = spla.Matrix.from_dense(np.eye(4))
    >>> D = spla.distribute(A if comm.world().Get_rank() == 0 else None)
    >>> D.gather().isequal(A)
    True
    """
    rank = comm.Get_rank()
    n, m = shape
    if rank == 0:
        for r in range(1, comm.Get_size()):
            if not has[r]:
                s, e = L.block_rows(n, r)
                block = row_block(A, s, e) if block_of is None else block_of(s, e)
                send_csr(comm, block, r, "distribute")
        return local
    if has[rank]:
        return local
    s, e = L.block_rows(n, rank)
    return recv_csr(comm, 0, e - s, m, dtype)


def gather_blocks(D):
    """Collective: the whole matrix of ``D`` on every rank (host ``spla.Matrix``).

    Each process column holds every block exactly once, in row order, so
    gathering within the column communicator is enough.

    Examples
    --------
    >>> import numpy as np, spla
    >>> from spla.dist.scatter import gather_blocks
    >>> gather_blocks(spla.distribute(spla.Matrix.from_dense(np.eye(3)))).nnz   # 1 rank
    3
    """
    if D.layout.replicated:
        return D.local
    return allgather_rows(D.grid.col_comm, D.local, "gather", D.ncols)


def block_sum(grid, value):
    """Collective: the sum over blocks of a per-rank integer (each block counted once).

    Examples
    --------
    >>> from spla import comm
    >>> from spla.dist.scatter import block_sum
    >>> block_sum(comm.grid(comm.world(), 1), 5)        # on 1 rank
    5
    """
    return int(C.allgather_int(grid.col_comm, [int(value)]).sum())


__all__ = ["scatter_from_root", "gather_blocks", "block_sum"]
