"""``DistMatrix``, its factories (``distribute``, ``from_local``,
``from_generator``) and ``fetch_rows``.

Every *Collective* function here checks all its arguments inside one
``spla.comm.collective_checks`` block (then ``check_same`` for values that
must agree between ranks) before its first message, so a bad argument on
any one rank raises the same error on every rank instead of leaving the
others waiting.  The checks they share are in ``spla.dist.checks``.
"""

import numpy as np
import scipy.sparse as sp

from spla import comm as C
from spla.checks import describe, fail
from spla.dist import checks as K
from spla.dist.fetch import IMPLEMENTATIONS, STRATEGIES, fetch_replicated
from spla.dist.scatter import block_sum, gather_blocks, scatter_from_root
from spla.dist.wire import row_block, row_block_list
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue
from spla.layout import layout_of
from spla.matrix import Matrix
from spla.util import indptr_from_counts


class DistMatrix:
    """A sparse matrix distributed by block rows over an MPI communicator.

    Build one with ``distribute``, ``DistMatrix.from_local`` or
    ``DistMatrix.from_generator`` (the constructor trusts its arguments).

    Attributes
    ----------
    local : spla.Matrix
        This rank's rows (``lshape``), global column ids.
    shape, nnz : global dimensions and entry count.
    row_start, row_stop : the range of storage positions held here
        (``P.to_new`` ids with a partition, the rows themselves without);
        ``row_ids`` are the rows.
    layout : spla.layout.Layout
    comm : MPI communicator
    grid : spla.comm.ProcessGrid
    partition : spla.partition.Partition or None
        The partition that placed the rows (``distribute(...,
        partition=P)``): process row ``i`` holds the vertices of part ``i``
        (``row_ids``, i.e. ``P.perm[P.bounds[i]:P.bounds[i + 1]]``); None
        for the user's ids cut into contiguous blocks by ``chunk``.  Every
        id that crosses the API (rows asked for, column indices, gathered
        rows) is a user id either way: the partition changes where rows
        live, never what they are called.

    Examples
    --------
    >>> import numpy as np, spla
    >>> D = spla.distribute(spla.Matrix.from_dense(np.eye(3)))    # on 1 rank
    >>> D.shape, D.lshape, D.nnz
    ((3, 3), (3, 3), 3)
    """

    def __init__(self, local, shape, nnz, layout, comm, row_start, partition=None):
        self.partition = partition
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
    def row_ids(self):
        """The global (user) ids of the rows of ``local``, in order (int64).

        ``arange(row_start, row_stop)`` without a partition; the vertices
        of this rank's part, ascending, with one.

        Examples
        --------
        >>> import numpy as np, spla
        >>> D = spla.distribute(spla.Matrix.from_dense(np.eye(3)))    # on 1 rank
        >>> D.row_ids.tolist()
        [0, 1, 2]
        """
        if self.partition is None or self.layout.replicated:
            return np.arange(self.row_start, self.row_stop, dtype=np.int64)
        return np.asarray(self.partition.perm[self.row_start:self.row_stop], np.int64)

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
                   replicate_graph=False, partition=None):
        """Collective: a DistMatrix from the block each rank already holds.

        Parameters
        ----------
        local : spla.Matrix
            Exactly the rows ``layout.block_rows(n, rank)`` of the global
            matrix (all rows when ``replicate_graph``), global column ids.
        shape : (int, int)
            The global shape, the same on every rank.
        comm, layout, replication, replicate_graph
            As for ``distribute``, the same on every rank.
        partition : spla.partition.Partition, optional
            As for ``distribute``: ``local`` is then the rows of part ``i``
            on process row ``i``, in ascending order of their ids
            (``partition.perm[partition.bounds[i]:partition.bounds[i +
            1]]``), with the user's column ids.  The same on every rank.

        Returns
        -------
        DistMatrix

        Raises
        ------
        DTypeError, InvalidValue, LayoutError, DimensionMismatch
            On every rank, when any rank's arguments are wrong or the ranks
            disagree on ``shape``, the layout or the partition.

        Examples
        --------
        >>> import numpy as np, spla
        >>> A = spla.Matrix.from_dense(np.eye(3))
        >>> spla.DistMatrix.from_local(A, (3, 3)).nnz          # on 1 rank
        3
        """
        func = "DistMatrix.from_local"
        comm = C.as_comm(comm, func)
        with C.collective_checks(comm):
            L = layout_of(func, layout, comm.Get_size(), replication, replicate_graph)
            n, m = K.as_dist_shape(func, shape)
            if not isinstance(local, Matrix):
                fail(DTypeError, func, "local", "a spla.Matrix", describe(local))
            K.check_partition_type(func, partition)
        K.agree_layout(func, comm, L)
        C.check_same(comm, func, "shape", [n, m])
        L = K.partitioned(func, comm, L, partition, n, m)
        start, stop = L.block_rows(n, comm.Get_rank())
        with C.collective_checks(comm):
            if local.shape != (stop - start, m):
                fail(DimensionMismatch, func, "local",
                     f"a matrix of shape {(stop - start, m)} (rows {start}:{stop} of {n} "
                     f"for this rank)", f"shape {local.shape}")
        nnz = local.nnz if L.replicated else block_sum(C.grid(comm, L.c), local.nnz)
        return cls(local, (n, m), nnz, L, comm, start, partition)

    @classmethod
    def from_generator(cls, make_rows, shape, *, comm=None, layout="1d", replication=1,
                       replicate_graph=False):
        """Collective: each rank builds only its own rows with ``make_rows(start, stop)``.

        Parameters
        ----------
        make_rows : callable
            ``make_rows(start, stop)`` returns a ``spla.Matrix`` of shape
            ``(stop - start, shape[1])``: the global rows ``start:stop``.
            An exception it raises on one rank is raised on every rank.
        shape, comm, layout, replication, replicate_graph
            As for ``from_local``.

        Returns
        -------
        DistMatrix

        Examples
        --------
        >>> import spla
        >>> from spla.generators import rmat
        >>> D = spla.DistMatrix.from_generator(lambda s, e: rmat(4, seed=1, rows=(s, e)),
        ...                                    (16, 16))
        >>> D.shape
        (16, 16)
        """
        func = "DistMatrix.from_generator"
        comm = C.as_comm(comm, func)
        with C.collective_checks(comm):
            L = layout_of(func, layout, comm.Get_size(), replication, replicate_graph)
            n, m = K.as_dist_shape(func, shape)
            if not callable(make_rows):
                fail(DTypeError, func, "make_rows", "a callable make_rows(start, stop)",
                     describe(make_rows))
        K.agree_layout(func, comm, L)
        C.check_same(comm, func, "shape", [n, m])
        start, stop = L.block_rows(n, comm.Get_rank())
        with C.collective_checks(comm):
            local = make_rows(start, stop)
        return cls.from_local(local, (n, m), comm=comm, layout=layout,
                              replication=replication, replicate_graph=replicate_graph)

    # -- collectives ---------------------------------------------------------
    def dup(self):
        """Collective: this matrix on duplicated communicators (``comm.Dup()``).

        The result shares this matrix's blocks (no copy) but communicates on
        its own communicators (and its own process grid), so its collectives
        never match those of ``self``: another thread can fetch rows or
        multiply with it while this thread communicates on ``self`` (the MPI
        library must provide ``MPI_THREAD_MULTIPLE``, as the ``mpich`` wheel
        does).  Every rank of ``comm`` must call it, in the same order as its
        other collectives.  The duplicates live until MPI is finalized.

        Returns
        -------
        DistMatrix

        Examples
        --------
        >>> import numpy as np, spla
        >>> D = spla.distribute(spla.Matrix.from_dense(np.eye(3)))    # on 1 rank
        >>> E = D.dup()
        >>> E.local is D.local, E.comm is D.comm, E.gather().isequal(D.gather())
        (True, False, True)
        """
        twin = DistMatrix(self.local, self.shape, self.nnz, self.layout, self.comm.Dup(),
                          self.row_start, self.partition)
        # Derived data (a cached prefix sum, a symmetry flag) belongs to the
        # matrix, not to its communicator.
        twin._cache = self._cache
        return twin

    def gather(self):
        """Collective: the whole matrix on every rank (a host ``spla.Matrix``).

        Collective: every rank of comm must call this.  A replicated matrix
        returns its local matrix.

        Examples
        --------
        >>> import numpy as np, spla
        >>> A = spla.Matrix.from_dense(np.eye(3))
        >>> spla.distribute(A).gather().isequal(A)            # on 1 rank
        True
        """
        G = gather_blocks(self)
        if self.partition is None or self.layout.replicated:
            return G
        # Blocks arrive in storage order; row v of the matrix is position
        # inverse[v] there.
        return row_block_list(G, np.asarray(self.partition.inverse, np.int64))

    def fetch_rows(self, rows, strategy="direct"):
        """Collective: the rows ``rows`` of this matrix, sparsity-aware.

        Collective: every rank of comm must call this (a rank that needs
        no rows passes an empty list).

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
        DTypeError
            On every rank: row ids that are not integers on some rank
            (float ids are refused, never truncated).

        Notes
        -----
        Nothing moves when the matrix is replicated.  On the wire, row ids
        are int32 when ``nrows < 2**31``, and row lengths and column
        indices int32 when ``ncols < 2**31`` (int64 otherwise); values keep
        their dtype.  The bytes each rank sends are counted under
        ``'fetch_rows.request'`` and ``'fetch_rows.reply'`` (pooled also
        ``'fetch_rows.pool'`` and ``'fetch_rows.share'``); the counts are
        in ``docs/distributed.rst``.

        Examples
        --------
        >>> import numpy as np, spla
        >>> D = spla.distribute(spla.Matrix.from_dense(np.eye(4)))   # on 1 rank
        >>> M, ids = D.fetch_rows([3, 1, 3])
        >>> ids.tolist(), M.shape
        ([1, 3], (2, 4))
        """
        return _fetch(self, rows, strategy, "DistMatrix.fetch_rows")

    def rows_view(self, rows, strategy="direct"):
        """Collective: an ``nrows x ncols`` local matrix holding at least ``rows``.

        Collective: every rank of comm must call this, except on a
        replicated matrix, which returns its local matrix without any
        message (the arguments are still checked, on this rank).

        Rows not fetched are empty; the index pointer costs 8 bytes per row
        of the global matrix.  A drop-in for the global matrix in any local
        computation that reads only those rows.  ``rows`` and ``strategy``
        are those of ``fetch_rows``, with the same errors.

        Examples
        --------
        >>> import numpy as np, spla
        >>> D = spla.distribute(spla.Matrix.from_dense(np.eye(4)))   # on 1 rank
        >>> V = D.rows_view([2])
        >>> V.shape, V.row_degrees().tolist()
        ((4, 4), [0, 0, 1, 0])
        """
        func = "DistMatrix.rows_view"
        if self.layout.replicated:
            # Ranks of a replicated graph call this independently (samplers
            # give them different numbers of minibatches): no agreement.
            with C.collective_checks(None):
                K.check_strategy(func, strategy)
                K.as_rows(func, rows, self.nrows)
            return self.local
        M, ids = _fetch(self, rows, strategy, func)
        counts = np.zeros(self.nrows, np.int64)
        counts[ids] = M.row_degrees()
        return Matrix._new(indptr_from_counts(counts), M.indices, M.values, self.shape)


def distribute(A, comm=None, layout="1d", replication=1, replicate_graph=False, *,
               partition=None):
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
    partition : spla.partition.Partition, optional
        Place the rows by parts (a partition of A's rows; columns keep their
        ids, so a rectangular ``A`` is placed by a partition of its row
        vertices): process row ``i`` holds the
        rows of the vertices of part ``i`` (``D.row_ids``) instead of a
        contiguous block of ids.  Storage follows the partition's
        renumbering (``partition.to_new``), but every id in and out stays
        the user's: fetched rows, gathered matrices, products and the
        samplers' minibatches are those of ``A`` itself, so results do not
        depend on the partition, only the communication does.  It must have
        ``p / c`` parts (any number when ``replicate_graph``, where it
        changes nothing) and be the same on every rank (compared by
        ``Partition.fingerprint``): compute it on every rank (METIS gives
        the same partition for the same seed) or broadcast
        ``partition.part``.  The result keeps it as ``D.partition``.

    Returns
    -------
    DistMatrix

    Raises
    ------
    LayoutError
        On every rank: c does not divide p, an unknown layout, ranks passing
        different global shapes, layouts or partitions, a partition with
        other than ``p / c`` parts.
    DTypeError
        On every rank: ``A`` is not a matrix, or ``partition`` not a
        Partition (on some rank).
    InvalidValue
        On every rank: ``replication`` is not a positive integer, or
        ``replicate_graph`` not a bool (on some rank).
    DimensionMismatch
        On every rank: rank 0 passed no matrix; a partition of another
        number of vertices than A has rows.

    Examples
    --------
    >>> import numpy as np, spla
    >>> D = spla.distribute(spla.Matrix.from_dense(np.eye(4)))   # on 1 rank
    >>> D.gather().nnz
    4
    >>> from spla.partition import Partition
    >>> A = spla.Matrix.from_coo([0, 1], [3, 2], shape=(4, 4))
    >>> P = Partition([0, 0, 0, 0], 1)                           # one part per rank
    >>> spla.distribute(A, partition=P).gather().isequal(A)      # user ids out
    True
    """
    func = "distribute"
    comm = C.as_comm(comm, func)
    rank = comm.Get_rank()
    with C.collective_checks(comm):
        L = layout_of(func, layout, comm.Get_size(), replication, replicate_graph)
        if A is not None and not isinstance(A, Matrix):
            if not sp.issparse(A):
                fail(DTypeError, func, "A", "a spla.Matrix, a scipy.sparse matrix or None",
                     describe(A))
            A = Matrix.from_scipy(A)
        if A is not None:
            A = A.to("cpu")
        if rank == 0 and A is None:
            fail(DimensionMismatch, func, "A", "a matrix on rank 0", "None")
        K.check_partition_type(func, partition)
    K.agree_layout(func, comm, L)
    meta = [-1, -1, -1, -1] if A is None else [A.nrows, A.ncols, A.nnz, C.dtype_code(A.dtype)]
    allm = C.check_same(comm, func, "A", meta, present=A is not None,
                        expected="the same matrix shape, nnz and dtype on every rank that "
                                 "passes it", show=K.show_meta)
    n, m, nnz, dcode = (int(v) for v in allm[0])
    L = K.partitioned(func, comm, L, partition, n, m)
    start, stop = L.block_rows(n, rank)
    has = allm[:, 0] >= 0
    local = None
    placed = partition if partition is not None and not L.replicated else None
    if A is not None:
        local = A if L.replicated else _block_of(A, placed, start, stop)
    if not has.all():
        local = scatter_from_root(comm, A, L, (n, m), C.code_dtype(dcode), local, has,
                                  lambda s, e: _block_of(A, placed, s, e))
    return DistMatrix(local, (n, m), nnz, L, comm, start, partition)


def _block_of(A, partition, start, stop):
    """The rows stored at positions ``start:stop``: a slice, or the part's vertices."""
    if partition is None:
        return row_block(A, start, stop)
    return row_block_list(A, np.asarray(partition.perm[start:stop], np.int64))


def fetch_rows(D, rows, strategy="direct"):
    """Collective: the rows ``rows`` of ``D`` (see ``DistMatrix.fetch_rows``).

    Collective: every rank of D's communicator must call this.  ``D``
    itself is checked on each rank only: a rank with no DistMatrix has no
    communicator to agree over.

    Examples
    --------
    >>> import numpy as np, spla
    >>> from spla.dist import fetch_rows
    >>> D = spla.distribute(spla.Matrix.from_dense(np.eye(4)))   # on 1 rank
    >>> fetch_rows(D, [0])[1].tolist()
    [0]
    """
    func = "fetch_rows"
    if not isinstance(D, DistMatrix):
        fail(DTypeError, func, "D", "a spla.DistMatrix", describe(D))
    return _fetch(D, rows, strategy, func)


def _fetch(D, rows, strategy, func):
    """The one path of every fetch: agreed checks, then the strategy.

    ``func`` is the public name the caller was reached by, for messages.
    """
    with C.collective_checks(D.comm):
        K.check_strategy(func, strategy)
        rows = K.as_rows(func, rows, D.nrows)
    # The strategies exchange different messages, so ranks that disagree
    # would pair unrelated collectives: disagreement is an error too.
    C.check_same(D.comm, func, "strategy", [STRATEGIES.index(strategy)], cls=InvalidValue,
                 show=lambda v: repr(STRATEGIES[int(v[0])]))
    if D.layout.replicated:
        return fetch_replicated(D, rows)
    P = D.partition
    if P is None:
        return IMPLEMENTATIONS[strategy](D, rows)
    # The strategies work on storage positions (contiguous per block);
    # answer in the user's ids, ascending, as without a partition.
    M, slots = IMPLEMENTATIONS[strategy](D, np.sort(P.inverse[rows]))
    ids = np.asarray(P.perm[slots], np.int64)
    order = np.argsort(ids, kind="stable")
    return row_block_list(M, order), ids[order]
