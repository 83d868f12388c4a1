"""Feature storage and fetching for minibatch training, on one rank or over MPI.

A ``FeatureStore`` holds the node features (``n x f``, float32, dense) in
one of two ways:

* **replicated**: every rank holds all ``n`` rows; ``fetch`` is a local
  gather and moves nothing;
* **partitioned** (1.5D): the rows are cut into ``p/c`` blocks with
  ``spla.layout.chunk`` and block ``i`` is held by the ``c`` ranks of
  process row ``i`` (``c = 1`` is the 1D layout).  ``fetch`` is collective:
  each rank deduplicates the ids it needs, asks the owner of each row *in
  its own process column* (rank ``k`` of the grid's ``col_comm`` holds block
  ``k``) with one all-to-allv of ids, receives the rows with a second one,
  and expands them with the inverse index, so every distinct row travels
  once.  Bytes are counted by ``spla.comm`` under ``'features.request'`` and
  ``'features.reply'``.

Labels and split masks are small and are kept replicated on every rank.
"""

import numpy as np

from spla import comm as C
from spla.checks import as_index_array, as_int, describe, fail
from spla.exceptions import DimensionMismatch, InvalidValue, LayoutError
from spla.layout import chunk, owner_of
from spla.matrix import Matrix

from sampling.validation import as_features, check_labels, host_array, is_sparse

_MODES = ("replicated", "partitioned")


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


def _dense_rows(func, features, start, stop):
    """Rows ``start:stop`` of ``features`` as a checked C-contiguous float32 array.

    Rows are cut before anything is converted or copied to the host, so a
    partitioned store converts, checks and moves only its own block.
    """
    if is_sparse(features):
        import scipy.sparse as sp
        if not isinstance(features, Matrix) and hasattr(features, "tocsr"):
            if not sp.issparse(features):  # cupyx.scipy.sparse: to the host first
                features = features.get()
            features = sp.csr_matrix(features)[start:stop]
            start, stop = 0, int(features.shape[0])
        x = as_features(func, "features", features)
        from spla.dist import row_block
        blk = row_block(x.to("cpu"), start, stop)
        if blk.values is None:
            blk = blk.astype(np.float32)
        return np.ascontiguousarray(blk.to_scipy().toarray(), dtype=np.float32)
    if len(getattr(features, "shape", ())) != 2:
        fail(DimensionMismatch, func, "features", "a 2-D (n, f) matrix", describe(features))
    return as_features(func, "features", features[start:stop])


class FeatureStore:
    """Node features (n x f, float32), replicated or partitioned in 1.5D.

    Parameters
    ----------
    features : array or matrix of shape (n, f)
        The whole feature matrix (every rank passes it; each keeps only its
        block when partitioned, densified): a numpy, cupy or torch array
        (CPU or GPU: GPU rows are copied to the host), or a sparse matrix
        (spla.Matrix, scipy.sparse, cupyx.scipy.sparse, sparse torch
        tensor), of any real dtype (kept as float32; a float32 C-contiguous
        numpy array is kept without a copy).  Use
        ``FeatureStore.from_local`` when each rank only has its own block.
    labels : 1-D int array of length n, optional
        Kept replicated (``store.labels``, int64): integer class ids
        ``>= 0``, or -1 for an unknown label, as a numpy, torch or cupy
        array (float labels are refused, not truncated; labels below -1
        too).
    splits : dict of name -> 1-D int array, optional
        Vertex ids of each split (``'train'``, ``'val'``, ``'test'``), kept
        replicated (``store.splits``, ``store.mask(name)``).
    mode : {'replicated', 'partitioned'}, default 'replicated'
    comm : MPI communicator, optional
        Default COMM_WORLD when partitioned.  A replicated store never
        touches MPI.
    replication : int, default 1
        ``c``, the ranks per process row (must divide p).  Only for
        ``mode='partitioned'``.
    num_classes : int, optional
        When given, every known label must be below it.

    Raises
    ------
    InvalidValue
        NaN or infinite features, labels below -1 or not below
        ``num_classes``, a bad ``mode``.
    DTypeError
        Non-numeric features, non-integer labels.
    DimensionMismatch, LayoutError
        Shapes, or a ``replication`` that does not divide the ranks.

    When partitioned every check is collective: each error is raised on
    every rank of ``comm`` (with the failing rank's message).

    Examples
    --------
    >>> import numpy as np
    >>> x = np.arange(12, dtype=np.float32).reshape(6, 2)
    >>> store = FeatureStore(x)
    >>> store.fetch(np.array([5, 0, 5])).tolist()
    [[10.0, 11.0], [0.0, 1.0], [10.0, 11.0]]
    """

    def __init__(self, features, *, labels=None, splits=None, mode="replicated", comm=None,
                 replication=1, num_classes=None, _local=None, _shape=None):
        func = "FeatureStore"
        # A partitioned store is built collectively: its checks agree over
        # the communicator, so a bad argument on one rank raises on every
        # rank.  A replicated store never touches MPI (unless a rank passes
        # a bad mode together with a communicator: then it must still meet
        # the others' agreement).
        if mode == "partitioned":
            check_comm = C.as_comm(comm)
        elif mode not in _MODES:
            check_comm = comm
        else:
            check_comm = None
        with C.collective_checks(check_comm):
            if mode not in _MODES:
                fail(InvalidValue, func, "mode", "'replicated' or 'partitioned'", repr(mode))
            c = as_int(func, "replication", replication, minimum=1)
            if mode == "replicated":
                if c != 1:
                    fail(LayoutError, func, "replication", "1 for a replicated store "
                         "(use mode='partitioned')", c)
                local = _dense_rows(func, features, 0, _rows_of(func, features))
                n, start, stop, p = local.shape[0], 0, local.shape[0], 1
            else:
                p = check_comm.Get_size()
                if p % c:
                    fail(LayoutError, func, "replication",
                         f"a divisor of the number of ranks p = {p}", c)
                n = _rows_of(func, features) if _local is None else int(_shape[0])
                # Process row of this rank in the (p/c) x c grid (ProcessGrid's rule).
                start, stop = chunk(n, p // c, check_comm.Get_rank() // c)
                local = (_dense_rows(func, features, start, stop)
                         if _local is None else _local)
            if num_classes is not None:
                num_classes = as_int(func, "num_classes", num_classes, minimum=1)
            if labels is not None:
                labels = check_labels(func, "labels", labels, n, num_classes)
            checked = {name: np.asarray(as_index_array(
                func, f"splits[{name!r}]", host_array(func, f"splits[{name!r}]", ids), n))
                for name, ids in (splits or {}).items()}
        self.mode = mode
        self.comm = comm if mode == "replicated" else check_comm
        self.p, self.c = p, c
        self.parts = p // c
        self.grid = None if mode == "replicated" else C.grid(self.comm, c)
        self.num_nodes = n
        self.row_start, self.row_stop = start, stop
        self.local = local
        self.num_features = int(local.shape[1]) if local.ndim == 2 else 0
        if mode == "partitioned":
            # Every rank must agree on (n, f): a mismatch would hang the fetch.
            allv = C.allgather_int(self.comm, [self.num_nodes, self.num_features])
            with C.collective_checks(self.comm):
                if not (allv == allv[0]).all():
                    raise DimensionMismatch(f"{func}: every rank must hold the same feature "
                                            f"shape; got {[tuple(r) for r in allv.tolist()]}")
        self.num_classes = num_classes
        self.labels = labels
        self.splits = checked

    @classmethod
    def from_local(cls, local, num_nodes, *, comm=None, replication=1, labels=None,
                   splits=None, num_classes=None):
        """Collective: a partitioned store from this rank's own block of rows.

        ``local`` must hold rows ``chunk(num_nodes, p / c, rank // c)``.
        The other arguments are those of ``FeatureStore``; every check
        raises on every rank.

        Examples
        --------
        >>> import numpy as np
        >>> store = FeatureStore.from_local(np.ones((4, 2), np.float32), 4)  # one rank
        >>> store.shape
        (4, 2)
        """
        func = "FeatureStore.from_local"
        comm = C.as_comm(comm)
        p = comm.Get_size()
        with C.collective_checks(comm):
            c = as_int(func, "replication", replication, minimum=1)
            num_nodes = as_int(func, "num_nodes", num_nodes, minimum=0)
            if p % c:
                fail(LayoutError, func, "replication", f"a divisor of p = {p}", c)
            s, e = chunk(num_nodes, p // c, comm.Get_rank() // c)
            block = _dense_rows(func, local, 0, _rows_of(func, local))
            if block.shape[0] != e - s:
                fail(DimensionMismatch, func, "local", f"{e - s} rows (rows {s}:{e} of "
                     f"{num_nodes})", describe(block))
        return cls(None, labels=labels, splits=splits, mode="partitioned", comm=comm,
                   replication=c, num_classes=num_classes, _local=block,
                   _shape=(num_nodes, block.shape[1]))

    @property
    def replicated(self):
        return self.mode == "replicated"

    @property
    def shape(self):
        return (self.num_nodes, self.num_features)

    def __repr__(self):
        where = ("replicated" if self.replicated else
                 f"partitioned over {self.p} ranks (c = {self.c}), rows "
                 f"{self.row_start}:{self.row_stop} here")
        return f"<FeatureStore {self.num_nodes}x{self.num_features} float32, {where}>"

    def mask(self, name):
        """Boolean mask of split ``name`` (length n)."""
        m = np.zeros(self.num_nodes, bool)
        m[self.splits[name]] = True
        return m

    def fetch(self, ids):
        """The feature rows of ``ids`` (float32, ``len(ids) x f``).

        Collective when partitioned: every rank of the communicator must
        call it (with its own ids, possibly none).  Replicated: local.

        Parameters
        ----------
        ids : 1-D int array (numpy, cupy or torch)
            Global vertex ids, any order, repeats allowed.

        Returns
        -------
        numpy float32 array of shape (len(ids), f)
        """
        func = "FeatureStore.fetch"
        with C.collective_checks(None if self.replicated else self.comm):
            ids = as_index_array(func, "ids", host_array(func, "ids", ids), self.num_nodes)
        if self.replicated:
            return self.local[ids]
        unique, inverse, sendcounts = plan_requests(ids, self.num_nodes, self.parts)
        cc = self.grid.col_comm
        req, reqcounts = C.alltoallv(cc, unique, sendcounts, "features.request")
        f = self.num_features
        rows = self.local[req - self.row_start] if req.size else np.zeros((0, f), np.float32)
        got, _ = C.alltoallv(cc, rows.reshape(-1), reqcounts * f, "features.reply")
        # Requests went out grouped by owner in ascending order, and each
        # owner answers in the order asked: the rows come back as ``unique``.
        return got.reshape(-1, f)[inverse] if f else np.zeros((ids.size, 0), np.float32)

    def fetch_labels(self, ids):
        """Labels of ``ids`` (local: labels are replicated)."""
        func = "FeatureStore.fetch_labels"
        return self.labels[as_index_array(func, "ids", host_array(func, "ids", ids),
                                          self.num_nodes)]


def _rows_of(func, features):
    shape = getattr(features, "shape", None)
    if shape is None or len(shape) != 2:
        fail(DimensionMismatch, func, "features", "a 2-D (n, f) matrix", describe(features))
    return int(shape[0])


__all__ = ["FeatureStore", "plan_requests"]
