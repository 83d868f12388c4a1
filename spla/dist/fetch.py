"""The row-fetch strategies behind ``DistMatrix.fetch_rows`` and ``rows_view``.

``fetch_direct``: each rank reads the rows of its own block locally and
fetches every other row it needs from the replica of the owning block in its
own process column (every process column holds every block once): one
Alltoallv of requests and one each of row lengths, column indices and
values, in the column communicator.  A rank receives exactly the remote rows
it asked for; as c grows its block (about n·c/p rows) holds more of them.

``fetch_pooled`` (kept for comparison): the process row pools its members'
requests, member j fetches the rows of the union in blocks ``k % c == j``,
and the row shares what its members fetched.  It fetches a row several
members need once, but sends every member the whole union.

Both take arguments that ``spla.dist.core`` has already checked and the
ranks have agreed on (``rows``: ascending, distinct, int64, in range).
"""

import numpy as np

from spla import comm as C
from spla.dist.wire import allgather_rows, row_block_list, wire_int
from spla.arrays import narrow_indices
from spla.matrix import Matrix
from spla.util import indptr_from_counts

#: the strategies of ``fetch_rows``; the first is the default
STRATEGIES = ("direct", "pooled")


def exchange_rows(D, want, owner):
    """Collective over D's column communicator: rows ``want`` from their owners.

    ``want`` is ascending and ``owner`` (ascending too) its blocks; rank
    ``b`` of the column communicator holds block ``b``, so ``owner`` is
    also the destination of each request.  Returns the fetched rows in the
    order of ``want``.

    Examples
    --------
    >>> import numpy as np, spla
    >>> from spla.dist.fetch import exchange_rows
    >>> D = spla.distribute(spla.Matrix.from_dense(np.eye(3)))          # on 1 rank
    >>> exchange_rows(D, np.array([0, 2]), np.array([0, 0])).to_dense()
    array([[1., 0., 0.],
           [0., 0., 1.]])
    """
    g = D.grid
    A = D.local.to("cpu")
    id_wire, wire = wire_int(D.nrows), wire_int(D.ncols)
    sendcounts = np.bincount(owner, minlength=D.layout.grid_rows)
    req, reqcounts = C.alltoallv(g.col_comm, want.astype(id_wire), sendcounts,
                                 "fetch_rows.request")
    reply = row_block_list(A, req.astype(np.int64) - D.row_start)
    # Entries per requester: the reply's indptr at the requester boundaries.
    bounds = np.zeros(reqcounts.size + 1, np.int64)
    np.cumsum(reqcounts, out=bounds[1:])
    entry_counts = np.diff(reply.indptr[bounds])
    got_lens, _ = C.alltoallv(g.col_comm, np.diff(reply.indptr).astype(wire), reqcounts,
                              "fetch_rows.reply")
    got_idx, _ = C.alltoallv(g.col_comm, reply.indices.astype(wire, copy=False),
                             entry_counts, "fetch_rows.reply")
    got_vals = None
    if A.values is not None:
        got_vals, _ = C.alltoallv(g.col_comm, reply.values, entry_counts, "fetch_rows.reply")
    # Requests went out grouped by owner in ascending order, and each owner
    # answers in request order: the rows come back in the order of ``want``.
    return Matrix._new(indptr_from_counts(got_lens.astype(np.int64)),
                       narrow_indices(got_idx, D.ncols), got_vals, (got_lens.size, D.ncols))


def fetch_direct(D, rows):
    """Collective: ``(M, rows)``, the rows this rank asked for, from its process column.

    Examples
    --------
    >>> import numpy as np, spla
    >>> from spla.dist.fetch import fetch_direct
    >>> D = spla.distribute(spla.Matrix.from_dense(np.eye(3)))          # on 1 rank
    >>> fetch_direct(D, np.array([1]))[0].to_dense()
    array([[0., 1., 0.]])
    """
    A = D.local.to("cpu")
    # ``rows`` is sorted and a block is a contiguous range, so this rank's
    # own rows are the slice rows[a:b] and the remote ones surround it.
    a, b = np.searchsorted(rows, [D.row_start, D.row_stop])
    remote = np.concatenate([rows[:a], rows[b:]])
    fetched = exchange_rows(D, remote, D.layout.owner(remote, D.nrows))
    if a == b:
        return fetched, rows
    own = row_block_list(A, rows[a:b] - D.row_start)
    before = fetched.indptr[a]
    lens = np.concatenate([np.diff(fetched.indptr[:a + 1]), np.diff(own.indptr),
                           np.diff(fetched.indptr[a:])])
    idx = np.concatenate([fetched.indices[:before], own.indices, fetched.indices[before:]])
    vals = None
    if A.values is not None:
        vals = np.concatenate([fetched.values[:before], own.values, fetched.values[before:]])
    return (Matrix._new(indptr_from_counts(lens), narrow_indices(idx, D.ncols), vals,
                        (rows.size, D.ncols)), rows)


def fetch_pooled(D, rows):
    """Collective: ``(M, ids)``, the rows the whole process row asked for.

    The process row pools its needs, member j fetches blocks ``k % c == j``
    from its process column, and the row shares what its members fetched.

    Examples
    --------
    >>> import numpy as np, spla
    >>> from spla.dist.fetch import fetch_pooled
    >>> D = spla.distribute(spla.Matrix.from_dense(np.eye(3)))          # on 1 rank
    >>> fetch_pooled(D, np.array([0, 1]))[1].tolist()
    [0, 1]
    """
    g = D.grid
    id_wire = wire_int(D.nrows)
    if g.c > 1:
        pooled, _ = C.allgatherv(g.row_comm, rows.astype(id_wire), "fetch_rows.pool")
        rows = np.unique(pooled.astype(np.int64))
    owner = D.layout.owner(rows, D.nrows)
    share = owner % g.c == g.col
    mine = rows[share]
    # Rows of this rank's own block go to itself (MPI copies them; the
    # counters record no bytes for self-sends).
    fetched = exchange_rows(D, mine, owner[share])
    if g.c > 1:
        shared = allgather_rows(g.row_comm, fetched, "fetch_rows.share", D.ncols)
        ids, _ = C.allgatherv(g.row_comm, mine.astype(id_wire), "fetch_rows.share")
        order = np.argsort(ids, kind="stable")
        fetched = row_block_list(shared, order)
        mine = ids[order].astype(np.int64)
    return fetched, mine


def fetch_replicated(D, rows):
    """Local: every rank holds the whole matrix, so nothing moves.

    Examples
    --------
    >>> import numpy as np, spla
    >>> from spla.dist.fetch import fetch_replicated
    >>> D = spla.distribute(spla.Matrix.from_dense(np.eye(3)), replicate_graph=True)
    >>> fetch_replicated(D, np.array([2]))[0].to_dense()
    array([[0., 0., 1.]])
    """
    return row_block_list(D.local.to("cpu"), rows), rows


#: strategy name -> implementation (a replicated matrix always reads locally)
IMPLEMENTATIONS = {"direct": fetch_direct, "pooled": fetch_pooled}
