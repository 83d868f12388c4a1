"""The wire format of distributed rows, and the row slicing that feeds it.

Rows travel as three typed arrays (no pickle): row lengths, column indices
and values.  Lengths and column indices travel as ``wire_int(ncols)``, row
ids as ``wire_int(nrows)``: int32 whenever the dimension is below 2**31,
which halves their bytes.  Every MPI call goes through ``spla.comm``.
"""

import numpy as np

from spla import comm as C
from spla.backend import to_host
from spla.checks import index_dtype
from spla.extract import extract
from spla.arrays import narrow_indices
from spla.matrix import Matrix
from spla.util import indptr_from_counts

#: message tags of a point-to-point CSR block (head, indptr, indices, values)
_TAGS = (11, 12, 13, 14)


def wire_int(bound):
    """The integer dtype that carries values up to ``bound`` on the wire.

    Column indices are below ``ncols`` and row lengths at most ``ncols``,
    so ``bound = ncols`` covers both, and ``bound = nrows`` covers row ids.
    This is ``spla.checks.index_dtype``: one rule for narrowing indices.

    Examples
    --------
    >>> from spla.dist.wire import wire_int
    >>> wire_int(1000), wire_int(2**31)
    (dtype('int32'), dtype('int64'))
    """
    return index_dtype(bound)


def row_block(M, start, stop):
    """Rows ``start:stop`` of a local matrix (views of its arrays, no copy).

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix
    >>> from spla.dist import row_block
    >>> M = Matrix.from_dense(np.arange(6.0).reshape(3, 2))
    >>> row_block(M, 1, 3).to_dense()
    array([[2., 3.],
           [4., 5.]])
    """
    e0, e1 = int(M.indptr[start]), int(M.indptr[stop])
    vals = None if M.values is None else M.values[e0:e1]
    return Matrix._new(M.indptr[start:stop + 1] - e0, M.indices[e0:e1], vals,
                       (stop - start, M.ncols))


def row_block_list(M, rows):
    """``M[rows, :]`` for a host matrix (``rows``: int64 positions, any order).

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix
    >>> from spla.dist import row_block_list
    >>> M = Matrix.from_dense(np.arange(6.0).reshape(3, 2))
    >>> row_block_list(M, np.array([2, 0])).to_dense()
    array([[4., 5.],
           [0., 1.]])
    """
    if M.nrows == 0 or len(rows) == 0:
        return Matrix._new(np.zeros(len(rows) + 1, np.int64), M.indices[:0],
                           None if M.values is None else M.values[:0], (len(rows), M.ncols))
    return extract(M, rows=np.asarray(rows, np.int64))


def allgather_rows(comm, M, op, ncols):
    """Collective: the local matrices of every rank of ``comm``, stacked in rank order.

    Row lengths and column indices travel as ``wire_int(ncols)``.

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, comm
    >>> from spla.dist.wire import allgather_rows
    >>> M = Matrix.from_dense(np.eye(2))
    >>> allgather_rows(comm.world(), M, "example", 2).shape    # on 1 rank
    (2, 2)
    """
    wire = wire_int(ncols)
    lens, _ = C.allgatherv(comm, np.diff(to_host(M.indptr)).astype(wire), op)
    idx, _ = C.allgatherv(comm, to_host(M.indices).astype(wire, copy=False), op)
    vals = None
    if M.values is not None:
        vals, _ = C.allgatherv(comm, M.values, op)
    return Matrix._new(indptr_from_counts(lens.astype(np.int64)), narrow_indices(idx, ncols),
                       vals, (lens.size, ncols))


def send_csr(comm, M, dest, op):
    """Point to point: send a host matrix's CSR arrays to ``dest`` (see ``recv_csr``).

    Examples
    --------
    >>> from spla.dist.wire import send_csr, recv_csr
    >>> if comm.Get_rank() == 0:                      # doctest: +SKIP
    ...     send_csr(comm, M, 1, "distribute")
    ... elif comm.Get_rank() == 1:
    ...     M = recv_csr(comm, 0, nrows, ncols, dtype)
    """
    head = np.array([M.nnz, M.indices.dtype.itemsize], np.int64)
    C.send_array(comm, head, dest, _TAGS[0], op)
    C.send_array(comm, M.indptr.astype(np.int64, copy=False), dest, _TAGS[1], op)
    C.send_array(comm, M.indices, dest, _TAGS[2], op)
    if M.values is not None:
        C.send_array(comm, M.values, dest, _TAGS[3], op)


def recv_csr(comm, source, nrows, ncols, dtype):
    """Point to point: the ``nrows x ncols`` matrix ``send_csr`` sent from ``source``.

    ``dtype`` is the value dtype (``None``: structural), known to both
    sides from the agreed metadata.

    Examples
    --------
    See ``send_csr``.
    """
    head = C.recv_array(comm, np.empty(2, np.int64), source, _TAGS[0])
    nnz, itemsize = int(head[0]), int(head[1])
    ptr = C.recv_array(comm, np.empty(nrows + 1, np.int64), source, _TAGS[1])
    idx = C.recv_array(comm, np.empty(nnz, np.int32 if itemsize == 4 else np.int64), source,
                       _TAGS[2])
    vals = None
    if dtype is not None:
        vals = C.recv_array(comm, np.empty(nnz, dtype), source, _TAGS[3])
    return Matrix._new(ptr, idx, vals, (nrows, ncols))
