"""Where a feature store's rows live: on every rank, or in 1.5D blocks, and how they travel.

``RowStorage`` holds the rows of one ``FeatureStore``:

* **replicated**: every rank holds all ``n`` rows and reads them locally;
* **partitioned** (1.5D): the rows are cut into ``p/c`` blocks with
  ``spla.layout.chunk`` (or placed by a ``spla.partition.Partition``) and
  block ``i`` is held by the ``c`` ranks of process row ``i``.  Rows of
  other blocks come from their owners in this rank's process column with
  two all-to-allv (``RowStorage.exchange``; ``plan_requests`` is the plan
  of ids one rank sends).

The hot-row cache (``feature_cache``) and the labels (``labels``) are kept
apart from the rows; ``features.FeatureStore`` puts the three together.
"""

import copy
from typing import NamedTuple

import numpy as np

from spla import comm as C
from spla.checks import as_int, describe, fail
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue, LayoutError
from spla.layout import chunk, chunk_bounds, owner_of
from spla.matrix import Matrix

from sampling.datasets.validation import as_features, is_sparse

#: the ways a store holds its rows (``FeatureStore(mode=...)``)
MODES = ("replicated", "partitioned")


def plan_requests(ids, n, parts):
    """What a rank asks for: distinct ids grouped by owner, and how to expand them.

    Parameters
    ----------
    ids : 1-D int array
        Global row ids, any order, repeats allowed.
    n : int
        Number of rows of the whole feature matrix.
    parts : int
        Number of row blocks (``p / c``).

    Returns
    -------
    unique : int64 array
        The distinct ids, ascending (hence grouped by owner block).
    inverse : int64 array
        ``unique[inverse] == ids``.
    sendcounts : int64 array of length ``parts``
        How many of ``unique`` each block's owner is asked for.

    Examples
    --------
    >>> import numpy as np
    >>> u, inv, counts = plan_requests(np.array([7, 1, 7, 4, 1]), 10, 3)
    >>> u.tolist(), counts.tolist(), u[inv].tolist()
    ([1, 4, 7], [1, 1, 1], [7, 1, 7, 4, 1])
    """
    ids = np.asarray(ids, dtype=np.int64)
    unique, inverse = np.unique(ids, return_inverse=True)
    owners = owner_of(unique, n, parts)
    sendcounts = np.bincount(owners, minlength=parts).astype(np.int64)
    return unique, inverse.reshape(-1).astype(np.int64), sendcounts


class Placement(NamedTuple):
    """Which rows a rank holds, as checked before any message (see ``RowStorage.check``).

    Attributes
    ----------
    mode : str
        ``'replicated'`` or ``'partitioned'``.
    p, c : int
        Ranks, and ranks per process row (1 when replicated).
    num_nodes : int
        Rows of the whole matrix.
    row_start, row_stop : int
        The storage positions held here.
    partition : spla.partition.Partition or None
    local : numpy float32 array
        The rows held here, C-contiguous.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.ones((3, 2), np.float32)
    >>> Placement("replicated", 1, 1, 3, 0, 3, None, x).row_stop
    3
    """

    mode: str
    p: int
    c: int
    num_nodes: int
    row_start: int
    row_stop: int
    partition: object
    local: np.ndarray


class RowStorage:
    """The rows of a feature store held by this rank, replicated or in 1.5D blocks.

    Built from a ``Placement`` (``RowStorage.check``), collectively when
    partitioned: it creates the process grid of ``(comm, c)`` and checks
    that every rank holds the same shape and placement (``LayoutError`` /
    ``DimensionMismatch`` on every rank otherwise).

    Parameters
    ----------
    placement : Placement
    comm : MPI communicator or None
        The store's communicator (kept as given when replicated).
    func : str, default 'FeatureStore'
        The name the agreement errors give.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.arange(6, dtype=np.float32).reshape(3, 2)
    >>> rows = RowStorage(RowStorage.check("f", x, "replicated", None, 1, None), None)
    >>> rows.replicated, rows.row_ids.tolist(), rows.local[2].tolist()
    (True, [0, 1, 2], [4.0, 5.0])
    """

    def __init__(self, placement, comm, func="FeatureStore"):
        pl = placement
        self.mode = pl.mode
        self.comm = comm
        self.p, self.c = pl.p, pl.c
        self.parts = pl.p // pl.c
        self.grid = None if self.replicated else C.grid(comm, pl.c)
        self.num_nodes = pl.num_nodes
        self.row_start, self.row_stop = pl.row_start, pl.row_stop
        self.partition = pl.partition
        # Block boundaries in storage positions (a partition's, or chunk's).
        self.bounds = (None if self.replicated else
                       chunk_bounds(pl.num_nodes, self.parts) if pl.partition is None else
                       np.asarray(pl.partition.bounds, np.int64))
        self.local = pl.local
        self.num_features = int(pl.local.shape[1]) if pl.local.ndim == 2 else 0
        if not self.replicated:
            self._agree(func)

    @staticmethod
    def check_comm(mode, comm):
        """The communicator a store's argument checks agree over (None: no agreement).

        A partitioned store is built collectively, so a bad argument on one
        rank raises on every rank.  A replicated store never touches MPI,
        unless a rank passes a bad mode together with a communicator: then
        it must still meet the others' agreement.

        Examples
        --------
        >>> RowStorage.check_comm("replicated", None) is None
        True
        """
        if mode == "partitioned":
            return C.as_comm(comm)
        return comm if mode not in MODES else None

    @staticmethod
    def check(func, features, mode, comm, replication, partition, local=None, shape=None):
        """The ``Placement`` of a store's rows on this rank, checked locally (no messages).

        Run inside ``spla.comm.collective_checks`` of ``comm`` when
        partitioned.  ``features`` is the whole matrix (each rank keeps
        only its block, densified); or ``local`` is this rank's block
        already checked and ``shape`` the whole matrix's (``from_local``).

        Examples
        --------
        >>> import numpy as np
        >>> from spla import comm as C
        >>> pl = RowStorage.check("f", np.ones((4, 2)), "partitioned", C.as_comm(None), 1, None)
        >>> pl.row_start, pl.row_stop, pl.local.dtype.name
        (0, 4, 'float32')
        """
        if mode not in MODES:
            fail(InvalidValue, func, "mode", "'replicated' or 'partitioned'", repr(mode))
        c = as_int(func, "replication", replication, minimum=1)
        if mode == "replicated":
            if c != 1:
                fail(LayoutError, func, "replication", "1 for a replicated store "
                     "(use mode='partitioned')", c)
            rows = _dense_rows(func, features, 0, _rows_of(func, features))
            n = rows.shape[0]
            placement = Placement(mode, 1, c, n, 0, n, partition, rows)
        else:
            placement = _partitioned_placement(func, features, comm, c, partition, local,
                                               shape)
        if partition is not None and mode == "replicated":
            fail(InvalidValue, func, "partition", "None for a replicated store (every "
                 "rank holds every row; partition applies to mode='partitioned')",
                 describe(partition))
        return placement

    @staticmethod
    def local_block(func, local, num_nodes, comm, replication, partition):
        """This rank's block for ``FeatureStore.from_local``: ``(rows, num_nodes, c)``, checked.

        Run inside ``spla.comm.collective_checks(comm)``: ``local`` must
        hold the rows the placement gives this rank.

        Examples
        --------
        >>> import numpy as np
        >>> from spla import comm as C
        >>> comm = C.as_comm(None)
        >>> rows, n, c = RowStorage.local_block("f", np.ones((4, 2)), 4, comm, 1, None)
        >>> rows.shape, n, c
        ((4, 2), 4, 1)
        """
        p = comm.Get_size()
        c = as_int(func, "replication", replication, minimum=1)
        num_nodes = as_int(func, "num_nodes", num_nodes, minimum=0)
        if p % c:
            fail(LayoutError, func, "replication", f"a divisor of p = {p}", c)
        s, e = chunk(num_nodes, p // c, comm.Get_rank() // c)
        if partition is not None:
            _check_partition(func, partition, num_nodes, p // c)
            i = comm.Get_rank() // c
            s, e = int(partition.bounds[i]), int(partition.bounds[i + 1])
        block = _dense_rows(func, local, 0, _rows_of(func, local))
        if block.shape[0] != e - s:
            fail(DimensionMismatch, func, "local", f"{e - s} rows (rows {s}:{e} of "
                 f"{num_nodes})", describe(block))
        return block, num_nodes, c

    def _agree(self, func):
        """Collective: every rank holds the same (n, f) and places the rows alike.

        A mismatch would hang the fetch or answer with other rows.
        """
        partition = self.partition
        digest = [-1, -1] if partition is None else [partition.parts, partition.fingerprint()]
        C.check_same(self.comm, func, "partition", digest, cls=LayoutError,
                     show=lambda v: ("no partition" if v[0] < 0 else
                                     f"a partition in {v[0]} parts (fingerprint "
                                     f"{int(v[1]):#x})"))
        allv = C.allgather_int(self.comm, [self.num_nodes, self.num_features])
        with C.collective_checks(self.comm):
            if not (allv == allv[0]).all():
                raise DimensionMismatch(f"{func}: every rank must hold the same feature "
                                        f"shape; got {[tuple(r) for r in allv.tolist()]}")

    @property
    def replicated(self):
        """Whether every rank holds every row."""
        return self.mode == "replicated"

    @property
    def row_ids(self):
        """The vertices whose rows ``local`` holds, in order (int64)."""
        if self.partition is None:
            return np.arange(self.row_start, self.row_stop, dtype=np.int64)
        return np.asarray(self.partition.perm[self.row_start:self.row_stop], np.int64)

    def dup(self):
        """Collective when partitioned: the same rows over ``comm.Dup()`` (itself when replicated).

        Examples
        --------
        >>> import numpy as np
        >>> x = np.ones((2, 1), np.float32)
        >>> comm = C.as_comm(None)
        >>> rows = RowStorage(RowStorage.check("f", x, "partitioned", comm, 1, None), comm)
        >>> twin = rows.dup()
        >>> twin.local is rows.local, twin.comm is rows.comm
        (True, False)
        """
        if self.replicated:
            return self
        twin = copy.copy(self)
        twin.comm = self.comm.Dup()
        twin.grid = C.grid(twin.comm, self.c)
        return twin

    def exchange(self, unique, op):
        """Rows of the sorted distinct ``unique`` from their owners (collective).

        Each id goes to the owner of its block in this rank's process
        column (rank ``k`` of ``col_comm`` holds block ``k``), ids with one
        all-to-allv, rows back with a second (counted under ``op +
        '.request'`` / ``'.reply'``).

        Examples
        --------
        >>> import numpy as np
        >>> x = np.arange(6, dtype=np.float32).reshape(3, 2)
        >>> comm = C.as_comm(None)
        >>> rows = RowStorage(RowStorage.check("f", x, "partitioned", comm, 1, None), comm)
        >>> rows.exchange(np.array([0, 2]), "features").tolist()
        [[0.0, 1.0], [4.0, 5.0]]
        """
        slots = self.slots(unique)
        order = None
        if self.partition is not None:
            # Storage positions ascending, hence grouped by owner block.
            order = np.argsort(slots, kind="stable")
            slots = slots[order]
        owner = np.searchsorted(self.bounds, slots, side="right") - 1
        sendcounts = np.bincount(owner, minlength=self.parts).astype(np.int64)
        cc = self.grid.col_comm
        req, reqcounts = C.alltoallv(cc, slots, sendcounts, op + ".request")
        f = self.num_features
        rows = self.local[req - self.row_start] if req.size else np.zeros((0, f), np.float32)
        got, _ = C.alltoallv(cc, rows.reshape(-1), reqcounts * f, op + ".reply")
        # Requests went out grouped by owner in ascending order, and each
        # owner answers in the order asked: the rows come back as ``slots``.
        got = got.reshape(unique.size, f)
        if order is None:
            return got
        out = np.empty_like(got)
        out[order] = got
        return out

    def slots(self, ids):
        """Storage positions of global ids (the ids themselves without a partition)."""
        if self.partition is None:
            return ids
        return np.asarray(self.partition.inverse[ids], np.int64)

    def owned(self, ids):
        """Which of ``ids`` this rank's block holds, and their rows' positions in ``local``."""
        slots = self.slots(ids)
        own = (slots >= self.row_start) & (slots < self.row_stop)
        return own, slots[own] - self.row_start


def _partitioned_placement(func, features, comm, c, partition, local, shape):
    """The ``Placement`` of a partitioned store's block on this rank (checks, no messages)."""
    p = comm.Get_size()
    if p % c:
        fail(LayoutError, func, "replication", f"a divisor of the number of ranks p = {p}", c)
    n = _rows_of(func, features) if local is None else int(shape[0])
    # Process row of this rank in the (p/c) x c grid (ProcessGrid's rule).
    row = comm.Get_rank() // c
    start, stop = chunk(n, p // c, row)
    ids = None
    if partition is not None:
        _check_partition(func, partition, n, p // c)
        start, stop = int(partition.bounds[row]), int(partition.bounds[row + 1])
        ids = np.asarray(partition.perm[start:stop], np.int64)
    rows = _dense_rows(func, features, start, stop, ids) if local is None else local
    return Placement("partitioned", p, c, n, start, stop, partition, rows)


def _dense_rows(func, features, start, stop, ids=None):
    """Rows ``start:stop`` (or the rows ``ids``) of ``features`` as a checked
    C-contiguous float32 array.

    Rows are cut before anything is converted or copied to the host, so a
    partitioned store converts, checks and moves only its own block.
    """
    pick = slice(start, stop) if ids is None else ids
    if is_sparse(features):
        return _dense_sparse_rows(func, features, pick)
    if len(getattr(features, "shape", ())) != 2:
        fail(DimensionMismatch, func, "features", "a 2-D (n, f) matrix", describe(features))
    if ids is not None and features.__class__.__module__.startswith("torch"):
        import torch
        pick = torch.from_numpy(ids).to(features.device)
    return as_features(func, "features", features[pick])


def _dense_sparse_rows(func, features, pick):
    """``_dense_rows`` of a sparse matrix: the rows ``pick`` (a slice or ids), densified."""
    import scipy.sparse as sp
    if not isinstance(features, Matrix) and hasattr(features, "tocsr"):
        if not sp.issparse(features):  # cupyx.scipy.sparse: to the host first
            features = features.get()
        features = sp.csr_matrix(features)[pick]
        pick = slice(0, int(features.shape[0]))
    x = as_features(func, "features", features)
    from spla.dist import row_block, row_block_list
    x = x.to("cpu")
    blk = (row_block(x, pick.start, pick.stop) if isinstance(pick, slice)
           else row_block_list(x, pick))
    if blk.values is None:
        blk = blk.astype(np.float32)
    return np.ascontiguousarray(blk.to_scipy().toarray(), dtype=np.float32)


def _check_partition(func, partition, n, parts):
    from spla.partition import Partition
    if not isinstance(partition, Partition):
        fail(DTypeError, func, "partition", "a spla.partition.Partition or None",
             describe(partition))
    if partition.n != n:
        fail(DimensionMismatch, func, "partition", f"a Partition of the {n} vertices",
             f"one of {partition.n}")
    if partition.parts != parts:
        fail(LayoutError, func, "partition", f"a Partition in p/c = {parts} parts (one per "
             "process row)", f"{partition.parts} parts")


def _rows_of(func, features):
    shape = getattr(features, "shape", None)
    if shape is None or len(shape) != 2:
        fail(DimensionMismatch, func, "features", "a 2-D (n, f) matrix", describe(features))
    return int(shape[0])


__all__ = ["MODES", "Placement", "RowStorage", "plan_requests"]
