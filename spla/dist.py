"""Distributed sparse matrices over MPI: ``DistMatrix``, ``distribute``,
sparsity-aware row fetching and the 1.5D SpGEMM.

A ``DistMatrix`` holds, on each rank, the block rows its layout gives it
(``spla.layout``) as a local ``spla.Matrix``, with the global metadata beside
it (``shape``/``lshape``, ``nnz``/``lnnz``).  All functions marked
*Collective* must be called by every rank of the communicator, in the same
order; argument errors are detected on every rank together and raised on
every rank, so a bad call never leaves a rank waiting.

The sparsity-aware fetch (``fetch_rows``; the paper's Algorithm 2 without
its row pooling): each rank reads the rows it needs from its own block
locally, and fetches every other row it needs from the replica of the
owning block in its own process column (every process column holds every
block once), with one Alltoallv of requests and one of replies (row
lengths, column indices, values) in the column communicator.  A rank
receives exactly the remote rows it asked for, and as c grows its block
(about n·c/p rows) holds more of them, so fewer move.

``strategy='pooled'`` keeps the paper's variant: the process row pools its
members' requests, each member fetches a 1/c share of the blocks and the
row shares what its members fetched (an Allgatherv within the row).  Pooling
fetches a row that several members need once, so it moves fewer bytes
between process rows when their requests overlap, but sharing sends every
member the whole union: in total it never moves fewer bytes than the direct
fetch, and helps only where the row communicator is much cheaper than the
column one (e.g. a process row within a node).

Row ids, row lengths and column indices travel as int32 whenever the
dimensions fit (below 2**31), otherwise as int64.

The SpGEMM multiplies locally with the fetched rows, each rank of a process
row computing a disjoint row range of its Q block (and fetching only the rows
of A that range needs), concatenated within the row.  Moving whole rows
rather than reducing partial sums keeps every floating-point sum in the
single-process order: the distributed product is bit-identical to ``mxm``
for every semiring.
"""

import numpy as np

from spla import comm as C
from spla.backend import to_host
from spla.checks import describe, fail
from spla.util import indptr_from_counts
from spla.exceptions import (DimensionMismatch, DTypeError, IndexOutOfRange, InvalidValue,
                             LayoutError, SplaError)
from spla.layout import Layout, chunk, chunk_bounds, owner_of
from spla.matrix import Matrix, _narrow_indices

_DTYPES = [None, np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32),
           np.dtype(np.int64)]


def _dtype_code(dtype):
    # Not list.index: numpy compares np.dtype('float64') == None as True.
    if dtype is None:
        return 0
    return 1 + [d for d in _DTYPES[1:]].index(np.dtype(dtype))


def row_block(M, start, stop):
    """Rows ``start:stop`` of a local matrix (views of its arrays)."""
    e0, e1 = int(M.indptr[start]), int(M.indptr[stop])
    vals = None if M.values is None else M.values[e0:e1]
    return Matrix._new(M.indptr[start:stop + 1] - e0, M.indices[e0:e1], vals,
                       (stop - start, M.ncols))


class DistMatrix:
    """A sparse matrix distributed by block rows over an MPI communicator.

    Build one with ``distribute``, ``DistMatrix.from_local`` or
    ``DistMatrix.from_generator``.

    Attributes
    ----------
    local : spla.Matrix
        This rank's rows (``lshape``), global column ids.
    shape, nnz : global dimensions and entry count.
    row_start, row_stop : global rows held here.
    layout : spla.layout.Layout
    comm : MPI communicator
    grid : spla.comm.ProcessGrid
    """

    def __init__(self, local, shape, nnz, layout, comm, row_start):
        self.local = local
        self.shape = (int(shape[0]), int(shape[1]))
        self.nnz = int(nnz)
        self.layout = layout
        self.comm = comm
        self.grid = C.grid(comm, layout.c)
        self.row_start = int(row_start)
        self.row_stop = self.row_start + local.nrows
        self._cache = {}

    @property
    def lshape(self):
        return self.local.shape

    @property
    def lnnz(self):
        return self.local.nnz

    @property
    def nrows(self):
        return self.shape[0]

    @property
    def ncols(self):
        return self.shape[1]

    @property
    def dtype(self):
        return self.local.dtype

    @property
    def device(self):
        return self.local.device

    def __repr__(self):
        L = self.layout
        return (f"<spla.DistMatrix {self.nrows}x{self.ncols}, nnz={self.nnz}, layout={L.kind}"
                f"{' replicated' if L.replicated else ''}, p={L.p}, c={L.c}; rank "
                f"{self.grid.rank} holds rows {self.row_start}:{self.row_stop} "
                f"(nnz={self.lnnz})>")

    # -- factories ---------------------------------------------------------
    @classmethod
    def from_local(cls, local, shape, *, comm=None, layout="1d", replication=1,
                   replicate_graph=False):
        """Collective: a DistMatrix from the block each rank already holds.

        ``local`` must hold exactly the rows ``layout.block_rows(n, rank)``
        (all rows when ``replicate_graph``), with global column ids.
        """
        func = "DistMatrix.from_local"
        comm = C.as_comm(comm)
        L = _layout(func, comm, layout, replication, replicate_graph)
        err = None
        n, m = int(shape[0]), int(shape[1])
        start, stop = L.block_rows(n, comm.Get_rank())
        if not isinstance(local, Matrix):
            err = DTypeError(f"{func}: argument 'local' must be a spla.Matrix; got {describe(local)}")
        elif local.shape != (stop - start, m):
            err = DimensionMismatch(f"{func}: argument 'local' must have shape {(stop - start, m)} "
                                    f"(rows {start}:{stop} of {n}); got {local.shape}")
        _check_same_everywhere(func, comm, [n, m], "shape", err)
        nnz = local.nnz if L.replicated else _sum(comm, L, local.nnz)
        return cls(local, (n, m), nnz, L, comm, start)

    @classmethod
    def from_generator(cls, make_rows, shape, *, comm=None, layout="1d", replication=1,
                       replicate_graph=False):
        """Collective: each rank builds only its own rows with ``make_rows(start, stop)``.

        ``make_rows`` returns a ``spla.Matrix`` of shape ``(stop - start,
        shape[1])``; e.g. ``lambda s, e: spla.generators.rmat(20, seed=1,
        rows=(s, e))``.
        """
        comm = C.as_comm(comm)
        L = _layout("DistMatrix.from_generator", comm, layout, replication, replicate_graph)
        start, stop = L.block_rows(int(shape[0]), comm.Get_rank())
        return cls.from_local(make_rows(start, stop), shape, comm=comm, layout=layout,
                              replication=replication, replicate_graph=replicate_graph)

    # -- collectives ---------------------------------------------------------
    def gather(self):
        """Collective: the whole matrix on every rank (a ``spla.Matrix``)."""
        if self.layout.replicated:
            return self.local
        # Each process column holds every block exactly once, in row order.
        return _allgather_rows(self.grid.col_comm, self.local, "gather", self.ncols)

    def fetch_rows(self, rows, strategy="direct"):
        """Collective: the rows ``rows`` of this matrix, sparsity-aware.

        Parameters
        ----------
        rows : array_like of int
            The global row ids this rank needs: any order, repeats allowed,
            possibly none.  Ranks may ask for different rows.
        strategy : {'direct', 'pooled'}, default 'direct'
            The same on every rank.  ``'direct'``: this rank reads the rows
            of its own block locally and fetches every other row it asked
            for from the replica of the owning block in its own process
            column (one Alltoallv of requests and replies).  ``'pooled'``:
            the process row pools its members' requests, each member
            fetches a ``1/c`` share of the blocks, and the row shares what
            its members fetched.  Pooling fetches a row that several
            members of a process row ask for once; sharing sends every
            member the whole union.

        Returns
        -------
        M : spla.Matrix
            Shape ``(len(ids), ncols)``, on the host; row ``t`` is global
            row ``ids[t]``.
        ids : numpy.ndarray of int64
            Ascending and distinct.  ``'direct'`` (and any replicated
            matrix): the distinct rows this rank asked for.  ``'pooled'``:
            the distinct rows that any rank of this rank's process row
            asked for.

        Raises
        ------
        InvalidValue
            On every rank: a ``strategy`` other than 'direct' or 'pooled',
            or ranks passing different strategies.
        IndexOutOfRange
            On every rank: a row id outside ``[0, nrows)`` on some rank.

        Notes
        -----
        Nothing moves when the matrix is replicated.  On the wire, row ids
        are int32 when ``nrows < 2**31``, and row lengths and column
        indices int32 when ``ncols < 2**31`` (int64 otherwise); values keep
        their dtype.  The bytes each rank sends are counted under
        ``'fetch_rows.request'`` and ``'fetch_rows.reply'`` (pooled also
        ``'fetch_rows.pool'`` and ``'fetch_rows.share'``); the counts are
        in ``docs/distributed.rst``.
        """
        return _fetch(self, rows, strategy, "DistMatrix.fetch_rows")

    def rows_view(self, rows, strategy="direct"):
        """Collective: an ``nrows x ncols`` local matrix holding at least ``rows``.

        Rows not fetched are empty; the index pointer costs 8 bytes per row
        of the global matrix.  A drop-in for the global matrix in any local
        computation that reads only those rows.  ``strategy`` is that of
        ``fetch_rows``.  A replicated matrix returns its local matrix (no
        collective call).
        """
        func = "DistMatrix.rows_view"
        if self.layout.replicated:
            _check_strategy(func, strategy)
            return self.local
        M, ids = _fetch(self, rows, strategy, func)
        counts = np.zeros(self.nrows, np.int64)
        counts[ids] = M.row_degrees()
        return Matrix._new(indptr_from_counts(counts), M.indices, M.values, self.shape)


def _sum(comm, L, value):
    """Global sum over blocks (each block counted once)."""
    g = C.grid(comm, L.c)
    tot = C.allgather_int(g.col_comm, [value])
    return int(tot.sum())


def _layout(func, comm, layout, replication, replicate_graph):
    """The Layout for a communicator; the same error on every rank if it cannot fit."""
    p = comm.Get_size()
    err = None
    L = None
    try:
        if layout not in ("1d", "1.5d"):
            fail(LayoutError, func, "layout", "'1d' or '1.5d'", repr(layout))
        L = Layout(layout, p=p, c=replication, replicated=bool(replicate_graph))
    except Exception as e:  # noqa: BLE001 - re-raised collectively below
        err = e
    code = [0 if layout == "1d" else 1, int(replication) if isinstance(replication, int) else -1,
            int(bool(replicate_graph))]
    _check_same_everywhere(func, comm, code, "layout/replication", err)
    return L


def _check_same_everywhere(func, comm, values, what, err=None):
    """Raise on every rank if ranks disagree on ``values`` or any rank failed."""
    allv = C.allgather_int(comm, values)
    if err is None and not (allv == allv[0]).all():
        bad = int(np.flatnonzero((allv != allv[0]).any(axis=1))[0])
        err = LayoutError(f"{func}: every rank must pass the same {what}; rank 0 passed "
                          f"{allv[0].tolist()}, rank {bad} passed {allv[bad].tolist()}")
    C.agree(comm, err)


def distribute(A, comm=None, layout="1d", replication=1, replicate_graph=False):
    """Collective: spread a global matrix over the ranks of ``comm``.

    Parameters
    ----------
    A : spla.Matrix, scipy.sparse matrix, or None
        The global matrix: passed by every rank (each keeps its rows, no
        communication), or by rank 0 only (the others pass None; rank 0
        sends each rank its rows).
    comm : MPI communicator, default COMM_WORLD
    layout : {'1d', '1.5d'}
    replication : int, default 1
        c, the number of ranks per process row of the (p/c) x c grid;
        must divide p ('1d' requires 1).
    replicate_graph : bool, default False
        Every rank holds the whole matrix (the graph-replicated mode:
        sampling then needs no communication).

    Returns
    -------
    DistMatrix

    Raises
    ------
    LayoutError
        On every rank: c does not divide p, an unknown layout, ranks passing
        different global shapes or layouts.

    Examples
    --------
    >>> import numpy as np, spla
    >>> D = spla.distribute(spla.Matrix.from_dense(np.eye(4)))   # on 1 rank
    >>> D.gather().nnz
    4
    """
    func = "distribute"
    comm = C.as_comm(comm)
    rank = comm.Get_rank()
    L = _layout(func, comm, layout, replication, replicate_graph)
    err = None
    if A is not None and not isinstance(A, Matrix):
        try:
            A = Matrix.from_scipy(A)
        except Exception as e:  # noqa: BLE001
            err = DTypeError(f"{func}: argument 'A' must be a spla.Matrix, a scipy.sparse "
                             f"matrix or None; got {describe(A)}")
            A = None
    if A is not None:
        A = A.to("cpu")
    if rank == 0 and A is None and err is None:
        err = DimensionMismatch(f"{func}: argument 'A' must be given on rank 0; got None")
    meta = [-1, -1, -1, -1] if A is None else [A.nrows, A.ncols, A.nnz, _dtype_code(A.dtype)]
    allm = C.allgather_int(comm, meta)
    if err is None:
        given = allm[allm[:, 0] >= 0]
        if len(given) and not (given == allm[0]).all():
            bad = int(np.flatnonzero(((allm != allm[0]).any(axis=1)) & (allm[:, 0] >= 0))[0])
            err = LayoutError(f"{func}: every rank that passes 'A' must pass the same matrix "
                              f"shape; rank 0 has {tuple(allm[0][:2])} (nnz {allm[0][2]}), "
                              f"rank {bad} has {tuple(allm[bad][:2])} (nnz {allm[bad][2]})")
    C.agree(comm, err)
    n, m, nnz, dcode = (int(v) for v in allm[0])
    dtype = _DTYPES[dcode]
    start, stop = L.block_rows(n, rank)
    if A is not None:
        local = A if L.replicated else row_block(A, start, stop)
    else:
        local = None
    everyone_has_it = bool((allm[:, 0] >= 0).all())
    if not everyone_has_it:
        local = _scatter_from_root(comm, A, L, n, m, dtype, local)
    return DistMatrix(local, (n, m), nnz, L, comm, start)


def _scatter_from_root(comm, A, L, n, m, dtype, local):
    """Rank 0 sends each rank without the matrix its rows (point to point)."""
    rank = comm.Get_rank()
    has = C.allgather_int(comm, [0 if local is None else 1])[:, 0]
    if rank == 0:
        for r in range(1, comm.Get_size()):
            if has[r]:
                continue
            s, e = L.block_rows(n, r)
            blk = row_block(A, s, e)
            _send_csr(comm, blk, r)
        return local
    if has[rank]:
        return local
    s, e = L.block_rows(n, rank)
    return _recv_csr(comm, 0, e - s, m, dtype)


def _send_csr(comm, M, dest):
    head = np.array([M.nnz, M.indices.dtype.itemsize], np.int64)
    comm.Send(head, dest=dest, tag=11)
    comm.Send(np.ascontiguousarray(M.indptr), dest=dest, tag=12)
    _send_big(comm, np.ascontiguousarray(M.indices), dest, 13)
    if M.values is not None:
        _send_big(comm, np.ascontiguousarray(M.values), dest, 14)
    C.record("distribute", M.indptr.nbytes + M.indices.nbytes
             + (0 if M.values is None else M.values.nbytes))


def _recv_csr(comm, src, nrows, ncols, dtype):
    head = np.empty(2, np.int64)
    comm.Recv(head, source=src, tag=11)
    nnz, isz = int(head[0]), int(head[1])
    ptr = np.empty(nrows + 1, np.int64)
    comm.Recv(ptr, source=src, tag=12)
    idx = np.empty(nnz, np.int32 if isz == 4 else np.int64)
    _recv_big(comm, idx, src, 13)
    vals = None
    if dtype is not None:
        vals = np.empty(nnz, dtype)
        _recv_big(comm, vals, src, 14)
    return Matrix._new(ptr, idx, vals, (nrows, ncols))


def _send_big(comm, arr, dest, tag):
    step = C._INT_MAX // max(1, arr.itemsize)
    for s in range(0, max(arr.size, 1), step):
        comm.Send(arr[s:s + step], dest=dest, tag=tag)


def _recv_big(comm, arr, src, tag):
    step = C._INT_MAX // max(1, arr.itemsize)
    for s in range(0, max(arr.size, 1), step):
        comm.Recv(arr[s:s + step], source=src, tag=tag)


def _wire_int(bound):
    """The integer type that carries values up to ``bound`` on the wire.

    int32 halves the bytes of ids, lengths and column indices, and every
    value fits it when ``bound <= 2**31 - 1``: column indices are below
    ``ncols`` and row lengths at most ``ncols``, so ``bound = ncols`` covers
    both, and ``bound = nrows`` covers row ids.
    """
    return np.dtype(np.int32) if int(bound) <= C._INT_MAX else np.dtype(np.int64)


def _to_host(M):
    return M if M.device == "cpu" else M.to("cpu")


def _allgather_rows(comm, M, op, ncols):
    """Stack the local matrices of every rank of ``comm`` (in rank order).

    Row lengths and column indices travel as ``_wire_int(ncols)``.
    """
    wire = _wire_int(ncols)
    lens, _ = C.allgatherv(comm, np.diff(to_host(M.indptr)).astype(wire), op)
    idx, _ = C.allgatherv(comm, to_host(M.indices).astype(wire, copy=False), op)
    vals = None
    if M.values is not None:
        vals, _ = C.allgatherv(comm, M.values, op)
    return Matrix._new(indptr_from_counts(lens.astype(np.int64)), _narrow_indices(idx, ncols),
                       vals, (lens.size, ncols))


#: the strategies of ``fetch_rows``; the first is the default
STRATEGIES = ("direct", "pooled")


def fetch_rows(D, rows, strategy="direct"):
    """Collective: see ``DistMatrix.fetch_rows``."""
    return _fetch(D, rows, strategy, "fetch_rows")


def _valid_strategy(strategy):
    return isinstance(strategy, str) and strategy in STRATEGIES


def _check_strategy(func, strategy):
    if not _valid_strategy(strategy):
        fail(InvalidValue, func, "strategy", " or ".join(repr(s) for s in STRATEGIES),
             describe(strategy))


def _fetch(D, rows, strategy, func):
    """``fetch_rows`` with the caller's name for error messages."""
    err = None
    try:
        _check_strategy(func, strategy)
        rows = np.unique(np.asarray(rows, dtype=np.int64))
        if rows.size and (rows[0] < 0 or rows[-1] >= D.nrows):
            fail(IndexOutOfRange, func, "rows", f"row ids in [0, {D.nrows})",
                 int(rows[0] if rows[0] < 0 else rows[-1]))
    except (SplaError, TypeError, ValueError) as e:  # raised on every rank by agree
        err = e
    # The strategies exchange different messages, so ranks that disagree
    # would pair unrelated collectives: disagreement is an error too.
    codes = C.allgather_int(D.comm, [STRATEGIES.index(strategy)
                                     if _valid_strategy(strategy) else -1])[:, 0]
    if err is None and (codes >= 0).all() and not (codes == codes[0]).all():
        bad = int(np.flatnonzero(codes != codes[0])[0])
        err = InvalidValue(f"{func}: argument 'strategy' must be the same on every rank; "
                           f"rank 0 passed {STRATEGIES[codes[0]]!r}, rank {bad} passed "
                           f"{STRATEGIES[codes[bad]]!r}")
    C.agree(D.comm, err)
    if D.layout.replicated:
        return row_block_list(_to_host(D.local), rows), rows
    if strategy == "pooled":
        return _fetch_pooled(D, rows)
    return _fetch_direct(D, rows)


def _exchange_rows(D, want, owner):
    """Fetch rows ``want`` (ascending) from their owners in this rank's
    process column: one Alltoallv each of requests, row lengths, column
    indices and values.

    Returns the fetched rows in the order of ``want``.  Rank ``b`` of the
    column communicator holds block ``b``, so ``owner`` (ascending, like
    ``want``) is also the destination of each request.
    """
    g = D.grid
    A = _to_host(D.local)
    id_wire, wire = _wire_int(D.nrows), _wire_int(D.ncols)
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
                       _narrow_indices(got_idx, D.ncols), got_vals, (got_lens.size, D.ncols))


def _fetch_direct(D, rows):
    """Each rank fetches the rows it asked for from its own process column."""
    A = _to_host(D.local)
    # ``rows`` is sorted and a block is a contiguous range, so this rank's
    # own rows are the slice rows[a:b] and the remote ones surround it.
    a, b = np.searchsorted(rows, [D.row_start, D.row_stop])
    remote = np.concatenate([rows[:a], rows[b:]])
    fetched = _exchange_rows(D, remote, owner_of(remote, D.nrows, D.layout.grid_rows))
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
    return (Matrix._new(indptr_from_counts(lens), _narrow_indices(idx, D.ncols), vals,
                        (rows.size, D.ncols)), rows)


def _fetch_pooled(D, rows):
    """The process row pools its needs, member j fetches blocks ``k % c == j``
    from its process column, and the row shares what its members fetched."""
    g = D.grid
    id_wire = _wire_int(D.nrows)
    if g.c > 1:
        pooled, _ = C.allgatherv(g.row_comm, rows.astype(id_wire), "fetch_rows.pool")
        rows = np.unique(pooled.astype(np.int64))
    owner = owner_of(rows, D.nrows, D.layout.grid_rows)
    share = owner % g.c == g.col
    mine = rows[share]
    # Rows of this rank's own block go to itself (MPI copies them; the
    # counters record no bytes for self-sends).
    fetched = _exchange_rows(D, mine, owner[share])
    if g.c > 1:
        shared = _allgather_rows(g.row_comm, fetched, "fetch_rows.share", D.ncols)
        ids, _ = C.allgatherv(g.row_comm, mine.astype(id_wire), "fetch_rows.share")
        order = np.argsort(ids, kind="stable")
        fetched = row_block_list(shared, order)
        mine = ids[order].astype(np.int64)
    return fetched, mine


def row_block_list(M, rows):
    """``M[rows, :]`` for a host matrix (rows: int64 positions)."""
    from spla.extract import extract
    if M.nrows == 0 or len(rows) == 0:
        return Matrix._new(np.zeros(len(rows) + 1, np.int64), M.indices[:0],
                           None if M.values is None else M.values[:0], (len(rows), M.ncols))
    return extract(M, rows=np.asarray(rows, np.int64))


def dist_mxm(Q, A, semiring):
    """Collective: the distributed product ``Q ⊕.⊗ A`` (see the module docstring).

    ``Q`` and ``A`` are DistMatrix objects on the same communicator with
    the same replication c; the result has Q's layout.  A replicated ``A``
    needs no communication.
    """
    func = "mxm"
    from spla.mxm import mxm
    if not isinstance(Q, DistMatrix) or not isinstance(A, DistMatrix):
        fail(DTypeError, func, "A/B", "two DistMatrix operands (or two local matrices)",
             f"{type(Q).__name__} and {type(A).__name__}")
    comm = Q.comm
    err = None
    if Q.ncols != A.nrows:
        err = DimensionMismatch(f"{func}: argument 'B' must have {Q.ncols} rows (A.ncols); "
                                f"got shape {A.shape}")
    elif Q.layout.c != A.layout.c or Q.layout.p != A.layout.p:
        err = LayoutError(f"{func}: operands must share the process grid; got c = "
                          f"{Q.layout.c} and c = {A.layout.c}")
    elif Q.layout.replicated and not A.layout.replicated:
        err = LayoutError(f"{func}: a replicated left operand with a partitioned right one "
                          "is not supported; distribute Q by rows")
    C.agree(comm, err)
    Ql = Q.local
    if A.layout.replicated:
        P = mxm(Ql, A.local, semiring).new()
        return DistMatrix(P, (Q.nrows, A.ncols), _sum(comm, Q.layout, P.nnz), Q.layout, comm,
                          Q.row_start)
    g = Q.grid
    # Member j of the process row computes a disjoint row range of the Q
    # block, so it fetches only the rows of A that range needs; the row
    # then concatenates the ranges.
    s, e = chunk(Ql.nrows, g.c, g.col) if not Q.layout.replicated else (0, Ql.nrows)
    Qpart = row_block(_to_host(Ql), s, e)
    view = A.rows_view(np.unique(np.asarray(Qpart.indices, np.int64)))
    part = mxm(Qpart, view, semiring).new()
    P = _allgather_rows(g.row_comm, part, "mxm.rows", A.ncols) if g.c > 1 else part
    if part.values is None:
        P = Matrix._new(P.indptr, P.indices, None, P.shape)
    return DistMatrix(P, (Q.nrows, A.ncols), _sum(comm, Q.layout, P.nnz), Q.layout, comm,
                      Q.row_start)


__all__ = ["DistMatrix", "distribute", "fetch_rows", "dist_mxm", "chunk", "chunk_bounds",
           "Layout"]
